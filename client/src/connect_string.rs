//! Parsing `host:port,host:port/chroot`.

use crate::error::{ErrorKind, Result};
use crate::path::validate_path;

/// The port used when a host has none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server address from the connect string, unresolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl HostPort {
    /// The `host:port` form that `tokio::net::lookup_host` accepts.
    pub fn to_addr_string(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A parsed connect string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectString {
    /// The servers, in the order given.
    pub hosts: Vec<HostPort>,
    /// The chroot, if any (never `/`).
    pub chroot: Option<String>,
}

impl ConnectString {
    /// Parses `host[:port][,host[:port]...][/chroot]`. IPv6 hosts go in brackets.
    pub fn parse(input: &str) -> Result<ConnectString> {
        let bad = |reason: &str| {
            ErrorKind::InvalidConnectString {
                input: input.to_owned(),
                reason: reason.to_owned(),
            }
            .into()
        };
        // `zk://host:2181` would otherwise read as the host `zk:` under the chroot `//host:2181`.
        if let Some((scheme, rest)) = input.split_once("://") {
            let is_scheme = !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if is_scheme {
                return Err(bad(&format!(
                    "a connect string has no scheme: write {rest:?}, without {scheme}://"
                )));
            }
        }
        let (host_part, chroot) = match input.find('/') {
            Some(i) => (&input[..i], Some(&input[i..])),
            None => (input, None),
        };
        let chroot = match chroot {
            None | Some("/") => None,
            Some(c) => {
                validate_path(c).map_err(|e| bad(&format!("chroot: {e}")))?;
                Some(c.to_owned())
            }
        };
        let mut hosts = Vec::new();
        for entry in host_part.split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            hosts.push(parse_host(entry).map_err(|r| bad(&r))?);
        }
        if hosts.is_empty() {
            return Err(bad("no host"));
        }
        Ok(ConnectString { hosts, chroot })
    }
}

fn parse_host(entry: &str) -> std::result::Result<HostPort, String> {
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| format!("unclosed '[' in {entry:?}"))?;
        let host = &rest[..end];
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected {after:?} after IPv6 address")),
        };
        (host, port)
    } else {
        match entry.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (entry, None),
        }
    };
    if host.is_empty() {
        return Err(format!("empty host in {entry:?}"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("invalid port {p:?}"))?,
    };
    Ok(HostPort {
        host: host.to_owned(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(host: &str, port: u16) -> HostPort {
        HostPort {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn hosts_and_chroot() {
        let cs = ConnectString::parse("a:1, b:2,c/app/x").unwrap();
        assert_eq!(
            cs.hosts,
            vec![hp("a", 1), hp("b", 2), hp("c", DEFAULT_PORT)]
        );
        assert_eq!(cs.chroot.as_deref(), Some("/app/x"));
    }

    #[test]
    fn root_chroot_is_none() {
        let cs = ConnectString::parse("127.0.0.1:2181/").unwrap();
        assert_eq!(cs.chroot, None);
    }

    #[test]
    fn ipv6() {
        let cs = ConnectString::parse("[::1]:2182,[fe80::1]").unwrap();
        assert_eq!(cs.hosts, vec![hp("::1", 2182), hp("fe80::1", DEFAULT_PORT)]);
        assert_eq!(cs.hosts[0].to_addr_string(), "[::1]:2182");
    }

    #[test]
    fn a_scheme_is_refused_as_such() {
        let err = ConnectString::parse("zk://127.0.0.1:2181/app").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid connect string \"zk://127.0.0.1:2181/app\": a connect string has no \
             scheme: write \"127.0.0.1:2181/app\", without zk://"
        );
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            "", "/app", "a:x", "a:0", "a:70000", ":1", "a:1/app/", "a:1/a//b", "[::1",
        ] {
            assert!(
                matches!(
                    ConnectString::parse(bad),
                    Err(e) if matches!(e.kind(), ErrorKind::InvalidConnectString { .. })
                ),
                "{bad:?} accepted"
            );
        }
    }
}
