//! The ensemble's dynamic configuration, as `/zookeeper/config` and `reconfig` give it:
//! `server.N=host:quorumPort:electionPort[:role][;[clientHost:]clientPort]` lines and
//! `version=<hex>`.

use std::fmt;

use crate::connect_string::HostPort;
use crate::error::{Error, ErrorKind, Result};

/// The configuration node. The same server path whatever the client's chroot.
pub(crate) const CONFIG_NODE: &str = "/zookeeper/config";

/// Whether a member votes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemberRole {
    /// Votes and may lead.
    Participant,
    /// Follows without voting.
    Observer,
}

/// One `server.N` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnsembleMember {
    /// The server id (`N`, the member's `myid`).
    pub id: u64,
    /// Host and port the members use to follow the leader.
    pub quorum: HostPort,
    /// Host and port of leader election.
    pub election: HostPort,
    /// Participant or observer.
    pub role: MemberRole,
    /// Where clients connect; `None` for a member without a client port.
    pub client: Option<HostPort>,
}

impl fmt::Display for EnsembleMember {
    /// The line as `reconfig` takes it: `server.N=host:port:port:role;host:port`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = match self.role {
            MemberRole::Participant => "participant",
            MemberRole::Observer => "observer",
        };
        write!(
            f,
            "server.{}={}:{}:{role}",
            self.id,
            self.quorum.to_addr_string(),
            self.election.port
        )?;
        if let Some(client) = &self.client {
            write!(f, ";{}", client.to_addr_string())?;
        }
        Ok(())
    }
}

/// The ensemble's configuration.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct EnsembleConfig {
    /// The members, in the order the server listed them.
    pub members: Vec<EnsembleMember>,
    /// The configuration's version (`version=`, hexadecimal on the wire): the zxid that
    /// committed it. Pass it as `from_config` to `reconfig` to change only this version.
    pub version: i64,
}

impl EnsembleConfig {
    /// Parses the text of `/zookeeper/config`. Lines other than `server.N=` and `version=`
    /// are ignored.
    pub fn parse(text: &str) -> Result<EnsembleConfig> {
        let mut config = EnsembleConfig::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let bad = |reason: &str| -> Error {
                ErrorKind::InvalidArgument(format!("configuration line {line:?}: {reason}")).into()
            };
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if key == "version" {
                config.version = i64::from_str_radix(value.trim(), 16)
                    .map_err(|_| bad("version is not hexadecimal"))?;
            } else if let Some(id) = key.strip_prefix("server.") {
                let id = id.parse().map_err(|_| bad("server id is not a number"))?;
                config
                    .members
                    .push(parse_member(id, value).map_err(|r| bad(&r))?);
            }
        }
        Ok(config)
    }

    /// The client addresses of every member that has one, as a connect string
    /// (`host:port,host:port`); empty if none has.
    pub fn connect_string(&self) -> String {
        let hosts: Vec<String> = self
            .client_hosts()
            .iter()
            .map(HostPort::to_addr_string)
            .collect();
        hosts.join(",")
    }

    /// The client addresses of every member that has one.
    pub fn client_hosts(&self) -> Vec<HostPort> {
        self.members
            .iter()
            .filter_map(|m| m.client.clone())
            .collect()
    }
}

fn parse_member(id: u64, value: &str) -> std::result::Result<EnsembleMember, String> {
    let (server, client) = match value.split_once(';') {
        Some((s, c)) => (s.trim(), Some(c.trim())),
        None => (value.trim(), None),
    };
    // host:quorum:election[:role], where host may be a bracketed IPv6 address.
    let (host, rest) = split_host(server)?;
    let mut parts = rest.split(':');
    let port = |p: Option<&str>, what: &str| {
        p.and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| format!("bad {what} port"))
    };
    let quorum = port(parts.next(), "quorum")?;
    let election = port(parts.next(), "election")?;
    let role = match parts.next() {
        None | Some("participant") => MemberRole::Participant,
        Some("observer") => MemberRole::Observer,
        Some(other) => return Err(format!("unknown role {other:?}")),
    };
    let client = match client {
        None | Some("") => None,
        Some(c) => Some(match c.rsplit_once(':') {
            // `clientPort` alone listens on every address; reach it by the member's host.
            None => HostPort {
                host: host.clone(),
                port: port(Some(c), "client")?,
            },
            Some(_) => {
                let (chost, cport) = split_host(c)?;
                let chost = if chost == "0.0.0.0" || chost == "::" {
                    host.clone()
                } else {
                    chost
                };
                HostPort {
                    host: chost,
                    port: port(Some(&cport), "client")?,
                }
            }
        }),
    };
    Ok(EnsembleMember {
        id,
        quorum: HostPort {
            host: host.clone(),
            port: quorum,
        },
        election: HostPort {
            host,
            port: election,
        },
        role,
        client,
    })
}

/// Splits `host:rest` (or `[v6]:rest`) into the host and what follows its colon.
fn split_host(s: &str) -> std::result::Result<(String, String), String> {
    if let Some(v6) = s.strip_prefix('[') {
        let (host, rest) = v6.split_once(']').ok_or("unclosed '['")?;
        let rest = rest.strip_prefix(':').ok_or("no port after the address")?;
        return Ok((host.to_owned(), rest.to_owned()));
    }
    let (host, rest) = s.split_once(':').ok_or("no port")?;
    if host.is_empty() {
        return Err("empty host".into());
    }
    Ok((host.to_owned(), rest.to_owned()))
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
    fn parses_what_zookeeper_writes() {
        let text = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
                    server.2=zk2:2889:3889:observer;0.0.0.0:2182\n\
                    server.3=zk3:2890:3890;2183\n\
                    server.4=[::1]:2891:3891:participant;[::1]:2184\n\
                    server.5=zk5:2892:3892\n\
                    version=10000000a\n";
        let config = EnsembleConfig::parse(text).unwrap();
        assert_eq!(config.version, 0x1_0000_000a);
        let ids: Vec<u64> = config.members.iter().map(|m| m.id).collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5]);
        assert_eq!(config.members[1].role, MemberRole::Observer);
        assert_eq!(config.members[1].client, Some(hp("zk2", 2182)));
        assert_eq!(config.members[2].client, Some(hp("zk3", 2183)));
        assert_eq!(config.members[3].client, Some(hp("::1", 2184)));
        assert_eq!(config.members[4].client, None);
        assert_eq!(
            config.connect_string(),
            "127.0.0.1:2181,zk2:2182,zk3:2183,[::1]:2184"
        );
        assert_eq!(
            config.members[0].to_string(),
            "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181"
        );
        assert_eq!(
            EnsembleConfig::parse(&config.members[3].to_string())
                .unwrap()
                .members[0],
            config.members[3]
        );
    }

    #[test]
    fn refuses_malformed_lines() {
        for bad in [
            "server.x=h:1:2",
            "server.1=h:1",
            "server.1=h:1:2:leader",
            "server.1=:1:2",
            "server.1=h:1:2;h:x",
            "server.1=[::1:1:2",
            "version=xyz",
        ] {
            assert!(EnsembleConfig::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            EnsembleConfig::parse("").unwrap(),
            EnsembleConfig::default()
        );
    }
}
