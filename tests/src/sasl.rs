//! SASL on the server side: a JAAS `Server` section written into each server's directory,
//! the `sasl` auth provider, and optionally a server that refuses clients without SASL.
//!
//! One server speaks one mechanism (ZooKeeper picks GSSAPI when its JAAS login has a Kerberos
//! principal, DIGEST-MD5 otherwise), so [`ServerBuilder::sasl_digest`] and
//! [`ServerBuilder::sasl_kerberos`] exclude each other.

use crate::ensemble::EnsembleBuilder;
use crate::kdc::Kdc;
use crate::server::ServerBuilder;

/// The JAAS file's name in the server's directory.
pub const JAAS_FILE: &str = "jaas.conf";
/// The digest-uri host ZooKeeper's DIGEST-MD5 server expects (`zookeeper/zk-sasl-md5`), also
/// its realm.
pub const DIGEST_SERVER_NAME: &str = "zk-sasl-md5";

const SASL_PROVIDER: &str = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

/// The JAAS configuration for DIGEST-MD5 users: `user_<name>="<password>"` options of
/// ZooKeeper's `DigestLoginModule`.
pub fn digest_jaas(users: &[(&str, &str)]) -> String {
    let mut text =
        String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
    for (user, password) in users {
        text.push_str(&format!("\n  user_{user}=\"{}\"", escape(password)));
    }
    text.push_str(";\n};\n");
    text
}

/// The JAAS configuration for a Kerberos service: the KDC's `zookeeper/localhost` principal
/// from its keytab.
pub fn kerberos_jaas(kdc: &Kdc) -> String {
    format!(
        "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n  \
         keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  principal=\"{}\";\n}};\n",
        escape(&kdc.service_keytab().display().to_string()),
        kdc.service_principal()
    )
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Generates the SASL setters on a builder that has the option setters.
macro_rules! sasl_setters {
    () => {
        /// Accepts SASL DIGEST-MD5 logins of these `(user, password)` pairs: a JAAS
        /// `DigestLoginModule` section and the `sasl` auth provider. An authenticated client
        /// has the identity `sasl:<user>`.
        pub fn sasl_digest(self, users: &[(&str, &str)]) -> Self {
            self.sasl_jaas(digest_jaas(users))
        }

        /// Accepts SASL GSSAPI (Kerberos) logins against `kdc`, as the service principal
        /// `zookeeper/localhost`. An authenticated client has the identity
        /// `sasl:<principal>@<realm>`. The KDC must outlive the server.
        pub fn sasl_kerberos(self, kdc: &Kdc) -> Self {
            self.sasl_jaas(kerberos_jaas(kdc))
                .system_property(
                    "java.security.krb5.conf",
                    kdc.krb5_conf().display().to_string(),
                )
                // Java must not look for a better name of `localhost`.
                .system_property("sun.security.krb5.disableReferrals", "true")
        }

        /// Closes the session of any client that sends a request before authenticating with
        /// SASL (`zookeeper.enforce.auth.enabled`, schemes `sasl`; ZooKeeper 3.7+), answering
        /// it with `SESSIONCLOSEDREQUIRESASLAUTH`; a failed SASL login gets that code too.
        pub fn require_sasl(self) -> Self {
            self.system_property("zookeeper.enforce.auth.enabled", "true")
                .system_property("zookeeper.enforce.auth.schemes", "sasl")
        }

        /// A server with this JAAS text as its login configuration and the `sasl` provider.
        fn sasl_jaas(self, jaas: String) -> Self {
            self.file(JAAS_FILE, jaas)
                // Relative to the server's working directory, its own directory.
                .system_property("java.security.auth.login.config", JAAS_FILE)
                .system_property("zookeeper.authProvider.sasl", SASL_PROVIDER)
        }
    };
}

impl ServerBuilder {
    sasl_setters!();
}

impl EnsembleBuilder {
    sasl_setters!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_jaas_lists_every_user_with_escaped_passwords() {
        let text = digest_jaas(&[("bob", "pw"), ("eve", "a\"b")]);
        assert!(text.starts_with("Server {"));
        assert!(text.contains("user_bob=\"pw\""));
        assert!(text.contains("user_eve=\"a\\\"b\""));
        assert!(text.trim_end().ends_with("};"));
    }
}
