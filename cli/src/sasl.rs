//! The SASL flags: a DIGEST-MD5 or a Kerberos login on every connection.
//!
//! A password never comes from the command line, where `ps` shows it to every user: it is read
//! from `ZK_SASL_PASSWORD` or from a file, and only when the session is opened.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Args};
use zookeeper_tokio::ClientBuilder;

use crate::exit::Failure;

/// The variable holding the `--sasl-digest` password.
pub const PASSWORD_VAR: &str = "ZK_SASL_PASSWORD";

/// The longest password file read: a password, not a file that was given by mistake.
const MAX_PASSWORD_FILE: u64 = 64 * 1024;

/// Which SASL login to make.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "SASL")]
pub struct SaslFlags {
    /// Log in with SASL DIGEST-MD5 as USER, a user of the servers' JAAS DigestLoginModule
    /// (the session gets the identity sasl:USER). The password is read from ZK_SASL_PASSWORD
    /// or --sasl-password-file, never from the command line.
    #[arg(
        long = "sasl-digest",
        global = true,
        env = "ZK_SASL_USER",
        value_name = "USER"
    )]
    pub digest_user: Option<String>,

    /// Read the --sasl-digest password from this file (one trailing newline is dropped),
    /// instead of ZK_SASL_PASSWORD.
    #[arg(
        long = "sasl-password-file",
        global = true,
        env = "ZK_SASL_PASSWORD_FILE",
        value_name = "FILE"
    )]
    pub password_file: Option<PathBuf>,

    /// Log in with SASL GSSAPI (Kerberos), with the process's tickets (KRB5CCNAME, after
    /// kinit) or client keytab, to the service principal SERVICE/HOST. Needs a zk built with
    /// the cargo feature `sasl-gssapi`.
    #[arg(
        long = "sasl-gssapi",
        global = true,
        env = "ZK_SASL_GSSAPI",
        action = ArgAction::SetTrue,
        value_parser = BoolishValueParser::new()
    )]
    pub gssapi: bool,

    /// The SERVICE of the servers' Kerberos principal [default: zookeeper].
    #[arg(
        long = "sasl-service",
        global = true,
        env = "ZK_SASL_SERVICE",
        value_name = "SERVICE"
    )]
    pub service: Option<String>,

    /// The HOST of the servers' Kerberos principal, the same for every server [default: each
    /// server's host as written in --server].
    #[arg(
        long = "sasl-host",
        global = true,
        env = "ZK_SASL_HOST",
        value_name = "HOST"
    )]
    pub host: Option<String>,
}

/// The login the flags ask for, checked.
#[derive(Debug, PartialEq)]
enum Login {
    None,
    Digest {
        user: String,
        password: Password,
    },
    Gssapi {
        service: String,
        host: Option<String>,
    },
}

/// A password, kept out of `Debug` output.
#[derive(PartialEq)]
struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<password>")
    }
}

impl SaslFlags {
    /// `builder`, logging in as the flags say.
    pub fn apply(&self, builder: ClientBuilder) -> Result<ClientBuilder, Failure> {
        let login = self.login(std::env::var_os(PASSWORD_VAR))?;
        login_with(builder, login)
    }

    /// What the login is to be, in words, for an error saying it was refused.
    pub fn describe(&self) -> Option<String> {
        if let Some(user) = &self.digest_user {
            Some(format!("the SASL DIGEST-MD5 login of {user:?}"))
        } else if self.gssapi {
            Some("the SASL GSSAPI (Kerberos) login".to_owned())
        } else {
            None
        }
    }

    /// Checks the flags together, with `env_password` the value of `ZK_SASL_PASSWORD`.
    fn login(&self, env_password: Option<OsString>) -> Result<Login, Failure> {
        // An empty variable is an unset one, as for the variables of the other flags.
        let env_password = env_password.filter(|p| !p.is_empty());
        if self.digest_user.is_some() && self.gssapi {
            return Err(Failure::usage(
                "--sasl-digest and --sasl-gssapi exclude each other: one SASL login per session",
            ));
        }
        if !self.gssapi {
            if let Some(flag) = [
                self.service
                    .as_ref()
                    .map(|_| "--sasl-service (ZK_SASL_SERVICE)"),
                self.host.as_ref().map(|_| "--sasl-host (ZK_SASL_HOST)"),
            ]
            .into_iter()
            .flatten()
            .next()
            {
                return Err(Failure::usage(format!(
                    "{flag} is for Kerberos logins: add --sasl-gssapi"
                )));
            }
        }
        let Some(user) = &self.digest_user else {
            if self.password_file.is_some() || env_password.is_some() {
                return Err(Failure::usage(format!(
                    "a SASL password ({}) is set but no user: add --sasl-digest USER (or \
                     ZK_SASL_USER)",
                    if self.password_file.is_some() {
                        "--sasl-password-file"
                    } else {
                        PASSWORD_VAR
                    }
                )));
            }
            if self.gssapi {
                return Ok(Login::Gssapi {
                    service: self
                        .service
                        .clone()
                        .unwrap_or_else(|| "zookeeper".to_owned()),
                    host: self.host.clone(),
                });
            }
            return Ok(Login::None);
        };
        if user.is_empty() {
            return Err(Failure::usage("--sasl-digest needs a user name"));
        }
        let password = match (&self.password_file, env_password) {
            (Some(_), Some(_)) => {
                return Err(Failure::usage(format!(
                    "both {PASSWORD_VAR} and --sasl-password-file are set: give the password \
                     one way"
                )))
            }
            (None, None) => {
                return Err(Failure::usage(format!(
                    "--sasl-digest needs a password: set {PASSWORD_VAR} or give \
                     --sasl-password-file"
                )))
            }
            (Some(file), None) => read_password_file(file)?,
            (None, Some(value)) => value
                .into_string()
                .map_err(|_| Failure::usage(format!("{PASSWORD_VAR} is not valid UTF-8")))?,
        };
        Ok(Login::Digest {
            user: user.clone(),
            password: Password(password),
        })
    }
}

/// The password in `file`, without its line ending.
fn read_password_file(file: &std::path::Path) -> Result<String, Failure> {
    use std::io::Read;

    let shown = file.display();
    let opened = std::fs::File::open(file)
        .map_err(|e| Failure::usage(format!("--sasl-password-file {shown}: {e}")))?;
    let mut bytes = Vec::new();
    opened
        .take(MAX_PASSWORD_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::usage(format!("--sasl-password-file {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_PASSWORD_FILE {
        return Err(Failure::usage(format!(
            "--sasl-password-file {shown}: longer than {MAX_PASSWORD_FILE} bytes, not a password"
        )));
    }
    let mut text = String::from_utf8(bytes)
        .map_err(|_| Failure::usage(format!("--sasl-password-file {shown}: not valid UTF-8")))?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    if text.is_empty() {
        return Err(Failure::usage(format!(
            "--sasl-password-file {shown}: the file is empty"
        )));
    }
    Ok(text)
}

fn login_with(builder: ClientBuilder, login: Login) -> Result<ClientBuilder, Failure> {
    match login {
        Login::None => Ok(builder),
        Login::Digest { user, password } => digest(builder, &user, &password.0),
        Login::Gssapi { service, host } => gssapi(builder, &service, host.as_deref()),
    }
}

#[cfg(feature = "sasl-digest")]
fn digest(builder: ClientBuilder, user: &str, password: &str) -> Result<ClientBuilder, Failure> {
    Ok(builder.sasl_digest(user, password))
}

#[cfg(not(feature = "sasl-digest"))]
fn digest(_: ClientBuilder, _: &str, _: &str) -> Result<ClientBuilder, Failure> {
    Err(Failure::usage(
        "this zk was built without SASL DIGEST-MD5: rebuild it with the cargo feature \
         `sasl-digest` of zookeeper-cli (on by default)",
    ))
}

#[cfg(feature = "sasl-gssapi")]
fn gssapi(
    builder: ClientBuilder,
    service: &str,
    host: Option<&str>,
) -> Result<ClientBuilder, Failure> {
    Ok(builder.sasl_gssapi_service(service, host))
}

#[cfg(not(feature = "sasl-gssapi"))]
fn gssapi(_: ClientBuilder, _: &str, _: Option<&str>) -> Result<ClientBuilder, Failure> {
    Err(Failure::usage(
        "this zk was built without SASL GSSAPI: rebuild it with the cargo feature \
         `sasl-gssapi` of zookeeper-cli (needs the system's libkrb5)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::USAGE;

    fn digest(user: &str) -> SaslFlags {
        SaslFlags {
            digest_user: Some(user.to_owned()),
            ..SaslFlags::default()
        }
    }

    fn refused(flags: &SaslFlags, env: Option<&str>) -> String {
        let failure = flags.login(env.map(OsString::from)).unwrap_err();
        assert_eq!(failure.code, USAGE);
        failure.message.unwrap()
    }

    fn scratch_file(name: &str, contents: &[u8]) -> PathBuf {
        let path = std::env::temp_dir().join(format!("zk-sasl-{name}-{}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn no_flags_no_login() {
        assert_eq!(SaslFlags::default().login(None).unwrap(), Login::None);
        assert_eq!(
            SaslFlags::default().login(Some("".into())).unwrap(),
            Login::None
        );
    }

    #[test]
    fn the_digest_password_comes_from_the_environment() {
        let login = digest("bob").login(Some("s3cret".into())).unwrap();
        assert_eq!(
            login,
            Login::Digest {
                user: "bob".into(),
                password: Password("s3cret".into())
            }
        );
        assert!(!format!("{login:?}").contains("s3cret"), "{login:?}");
    }

    #[test]
    fn a_password_file_loses_its_line_ending_only() {
        for (name, contents, expected) in [
            ("lf", &b"pa ss\n"[..], "pa ss"),
            ("crlf", b"pa ss\r\n", "pa ss"),
            ("bare", b" pa ss ", " pa ss "),
            ("two", b"pass\n\n", "pass\n"),
        ] {
            let file = scratch_file(name, contents);
            let flags = SaslFlags {
                password_file: Some(file.clone()),
                ..digest("bob")
            };
            match flags.login(None).unwrap() {
                Login::Digest { password, .. } => assert_eq!(password.0, expected, "{name}"),
                other => panic!("{other:?}"),
            }
            std::fs::remove_file(file).unwrap();
        }
    }

    #[test]
    fn missing_ambiguous_or_stray_passwords_are_refused() {
        assert!(refused(&digest("bob"), None).contains("needs a password"));
        let empty = scratch_file("empty", b"\n");
        let both = SaslFlags {
            password_file: Some(empty.clone()),
            ..digest("bob")
        };
        assert!(refused(&both, Some("x")).contains("one way"));
        assert!(refused(&both, None).contains("empty"));
        std::fs::remove_file(empty).unwrap();
        let stray = SaslFlags::default();
        assert!(refused(&stray, Some("x")).contains("no user"));
        let missing = SaslFlags {
            password_file: Some("/nonexistent/zk-password".into()),
            ..digest("bob")
        };
        assert!(refused(&missing, None).contains("/nonexistent/zk-password"));
        assert!(refused(&digest(""), Some("x")).contains("user name"));
    }

    #[test]
    fn kerberos_settings_need_kerberos_and_exclude_digest() {
        let both = SaslFlags {
            gssapi: true,
            ..digest("bob")
        };
        assert!(refused(&both, Some("x")).contains("exclude each other"));
        let stray_service = SaslFlags {
            service: Some("zk".into()),
            ..SaslFlags::default()
        };
        assert!(refused(&stray_service, None).contains("--sasl-gssapi"));
        let kerberos = SaslFlags {
            gssapi: true,
            host: Some("zk.example.com".into()),
            ..SaslFlags::default()
        };
        assert_eq!(
            kerberos.login(None).unwrap(),
            Login::Gssapi {
                service: "zookeeper".into(),
                host: Some("zk.example.com".into())
            }
        );
    }
}
