//! The variables a command run under `lock`, `rwlock`, `semaphore` or `elect` gets, so that it
//! can run `zk` as its caller did: the effective server and chroot, and every setting given by
//! flag in the variable that `zk` reads it from. Values are passed, never printed.

use std::ffi::OsString;
use std::path::Path;

use crate::connection::Connection;

/// A variable for the command's environment.
pub type Var = (&'static str, OsString);

/// The connection's settings as the variables `zk` reads them from.
pub fn settings(conn: &Connection) -> Vec<Var> {
    let mut vars = vec![("ZK_SERVER", effective_server(conn).into())];
    if let Some(auth) = &conn.auth {
        vars.push(("ZK_AUTH", auth.into()));
    }
    let tls = &conn.tls;
    if tls.enabled {
        vars.push(("ZK_TLS", "1".into()));
    }
    // The variable holds one file: several --tls-ca cannot be passed on that way.
    if let [ca] = tls.ca.as_slice() {
        vars.push(("ZK_TLS_CA", absolute(ca)));
    }
    if let Some(cert) = &tls.cert {
        vars.push(("ZK_TLS_CERT", absolute(cert)));
    }
    if let Some(key) = &tls.key {
        vars.push(("ZK_TLS_KEY", absolute(key)));
    }
    if tls.no_hostname_verify {
        vars.push(("ZK_TLS_NO_HOSTNAME_VERIFY", "1".into()));
    }
    let sasl = &conn.sasl;
    if let Some(user) = &sasl.digest_user {
        vars.push(("ZK_SASL_USER", user.into()));
    }
    if let Some(file) = &sasl.password_file {
        vars.push(("ZK_SASL_PASSWORD_FILE", absolute(file)));
    }
    if sasl.gssapi {
        vars.push(("ZK_SASL_GSSAPI", "1".into()));
    }
    if let Some(service) = &sasl.service {
        vars.push(("ZK_SASL_SERVICE", service.into()));
    }
    if let Some(host) = &sasl.host {
        vars.push(("ZK_SASL_HOST", host.into()));
    }
    vars
}

/// `--server` with the chroot in effect: `--chroot` if given, else the server string's own.
pub fn effective_server(conn: &Connection) -> String {
    let (hosts, own_chroot) = match conn.server.find('/') {
        Some(i) => (&conn.server[..i], Some(&conn.server[i..])),
        None => (conn.server.as_str(), None),
    };
    match conn.chroot.as_deref().or(own_chroot) {
        Some(chroot) if chroot != "/" => format!("{hosts}{chroot}"),
        _ => hosts.to_owned(),
    }
}

/// `node`, a path under the client's `chroot`, from the root of the ensemble.
pub fn full_path(chroot: Option<&str>, node: &str) -> String {
    match chroot {
        Some(root) => format!("{root}{node}"),
        None => node.to_owned(),
    }
}

/// A file named relative to our directory, for a command that may change its own.
fn absolute(path: &Path) -> OsString {
    match std::env::current_dir() {
        Ok(dir) if path.is_relative() => dir.join(path).into_os_string(),
        _ => path.as_os_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn conn(args: &[&str]) -> Connection {
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            connection: Connection,
        }
        let mut argv = vec!["zk"];
        argv.extend(args);
        Flags::try_parse_from(argv).unwrap().connection
    }

    #[test]
    fn the_server_carries_the_chroot_in_effect() {
        let server = |args: &[&str]| effective_server(&conn(args));
        assert_eq!(server(&["-S", "a:1,b:2"]), "a:1,b:2");
        assert_eq!(server(&["-S", "a:1/app"]), "a:1/app");
        assert_eq!(
            server(&["-S", "a:1/app", "--chroot", "/other"]),
            "a:1/other"
        );
        assert_eq!(server(&["-S", "a:1", "--chroot", "/x"]), "a:1/x");
        assert_eq!(server(&["-S", "a:1/app", "--chroot", "/"]), "a:1");
    }

    #[test]
    fn full_paths_begin_at_the_root() {
        assert_eq!(full_path(Some("/app"), "/l/n-1"), "/app/l/n-1");
        assert_eq!(full_path(None, "/l/n-1"), "/l/n-1");
    }
}
