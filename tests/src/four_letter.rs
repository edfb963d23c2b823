//! Four-letter words: send one to a server's client port and parse the answers tests need.
//!
//! Servers started by this crate whitelist every command (`4lw.commands.whitelist=*`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, Result};

/// How long one four-letter exchange may take before it fails.
pub const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `command` (e.g. `"srvr"`) on a new connection and returns everything the server
/// writes before it closes the connection.
pub async fn four_letter(addr: SocketAddr, command: &str) -> Result<String> {
    let what = || format!("four-letter word `{command}` to {addr}");
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(command.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(FOUR_LETTER_TIMEOUT, exchange)
        .await
        .map_err(|_| Error::io(what(), std::io::ErrorKind::TimedOut.into()))?
        .map_err(|e| Error::io(what(), e))?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Blocking form of [`four_letter`], for code outside a runtime.
pub fn four_letter_blocking(addr: SocketAddr, command: &str) -> Result<String> {
    four_letter_with_timeout(addr, command, FOUR_LETTER_TIMEOUT)
}

pub(crate) fn four_letter_with_timeout(
    addr: SocketAddr,
    command: &str,
    timeout: Duration,
) -> Result<String> {
    let exchange = || -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.write_all(command.as_bytes())?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        Ok(answer)
    };
    let answer =
        exchange().map_err(|e| Error::io(format!("four-letter word `{command}` to {addr}"), e))?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// `srvr` of the server at `addr`, parsed.
pub async fn srvr(addr: SocketAddr) -> Result<Srvr> {
    let text = four_letter(addr, "srvr").await?;
    Srvr::parse(&text).ok_or_else(|| Error::UnexpectedAnswer {
        command: "srvr".into(),
        addr: addr.to_string(),
        answer: text,
    })
}

/// `mntr` of the server at `addr`, parsed.
pub async fn mntr(addr: SocketAddr) -> Result<Mntr> {
    Ok(Mntr::parse(&four_letter(addr, "mntr").await?))
}

/// `wchc` of the server at `addr`: data and exist watch paths by session id.
pub async fn wchc(addr: SocketAddr) -> Result<BTreeMap<u64, Vec<String>>> {
    Ok(parse_wchc(&four_letter(addr, "wchc").await?))
}

/// `cons` of the server at `addr`: its client connections.
pub async fn cons(addr: SocketAddr) -> Result<Vec<Connection>> {
    Ok(parse_cons(&four_letter(addr, "cons").await?))
}

/// The ephemeral section of `dump` (leader or standalone): paths by owner session id.
pub async fn ephemerals(addr: SocketAddr) -> Result<BTreeMap<u64, Vec<String>>> {
    Ok(parse_dump_ephemerals(&four_letter(addr, "dump").await?))
}

/// What role a server plays, from `srvr`'s `Mode:` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A single server, not part of an ensemble.
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A voting member following the leader.
    Follower,
    /// A non-voting member.
    Observer,
    /// A partitioned member serving reads only (`readonlymode.enabled`).
    ReadOnly,
    /// Anything else the server reported.
    Other(String),
}

impl Mode {
    fn parse(text: &str) -> Mode {
        match text {
            "standalone" => Mode::Standalone,
            "leader" => Mode::Leader,
            "follower" => Mode::Follower,
            "observer" => Mode::Observer,
            "read-only" => Mode::ReadOnly,
            other => Mode::Other(other.to_string()),
        }
    }

    /// True when the server serves reads and writes (standalone, leader, follower, observer).
    pub fn is_serving(&self) -> bool {
        matches!(
            self,
            Mode::Standalone | Mode::Leader | Mode::Follower | Mode::Observer
        )
    }
}

/// The parsed answer to `srvr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srvr {
    /// The server's role.
    pub mode: Mode,
    /// The last zxid the server has seen.
    pub zxid: i64,
    /// The number of znodes.
    pub node_count: Option<u64>,
    /// The number of client connections (including the `srvr` one).
    pub connections: Option<u64>,
    /// The whole answer.
    pub raw: String,
}

impl Srvr {
    /// Parses a `srvr` (or `stat`) answer; `None` when it has no `Mode:` and `Zxid:`
    /// (e.g. "This ZooKeeper instance is not currently serving requests").
    pub fn parse(text: &str) -> Option<Srvr> {
        let mut mode = None;
        let mut zxid = None;
        let mut node_count = None;
        let mut connections = None;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "Mode" => mode = Some(Mode::parse(value)),
                "Zxid" => {
                    let hex = value.trim_start_matches("0x");
                    zxid = u64::from_str_radix(hex, 16).ok().map(|z| z as i64);
                }
                "Node count" => node_count = value.parse().ok(),
                "Connections" => connections = value.parse().ok(),
                _ => {}
            }
        }
        Some(Srvr {
            mode: mode?,
            zxid: zxid?,
            node_count,
            connections,
            raw: text.to_string(),
        })
    }
}

/// The parsed answer to `mntr`: `zk_<key>\t<value>` lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mntr {
    /// Every key (with its `zk_` prefix) and value.
    pub values: BTreeMap<String, String>,
}

impl Mntr {
    /// Parses a `mntr` answer.
    pub fn parse(text: &str) -> Mntr {
        let values = text
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        Mntr { values }
    }

    /// The value of `key`, given with or without the `zk_` prefix.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .or_else(|| self.values.get(&format!("zk_{key}")))
            .map(String::as_str)
    }

    /// The value of `key` as an integer.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key)?.parse().ok()
    }

    /// `zk_watch_count`: data/exist watches plus child watches, per (session, path).
    pub fn watch_count(&self) -> Option<i64> {
        self.get_i64("zk_watch_count")
    }

    /// `zk_ephemerals_count`.
    pub fn ephemerals_count(&self) -> Option<i64> {
        self.get_i64("zk_ephemerals_count")
    }

    /// `zk_global_sessions`: live sessions of the ensemble.
    pub fn global_sessions(&self) -> Option<i64> {
        self.get_i64("zk_global_sessions")
    }

    /// `zk_num_alive_connections` (includes the `mntr` connection itself).
    pub fn alive_connections(&self) -> Option<i64> {
        self.get_i64("zk_num_alive_connections")
    }

    /// `zk_znode_count`.
    pub fn znode_count(&self) -> Option<i64> {
        self.get_i64("zk_znode_count")
    }

    /// `zk_server_state`: `standalone`, `leader`, `follower`...
    pub fn server_state(&self) -> Option<&str> {
        self.get("zk_server_state")
    }
}

/// Parses `wchc`: data and exist watches (not child watches) by session id.
pub fn parse_wchc(text: &str) -> BTreeMap<u64, Vec<String>> {
    let mut watches: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(path) = line.strip_prefix('\t') {
            if let Some(session) = current {
                watches.entry(session).or_default().push(path.to_string());
            }
        } else if let Some(session) = parse_session_id(line) {
            current = Some(session);
            watches.entry(session).or_default();
        }
    }
    watches
}

/// One line of `cons`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The client's address as the server sees it.
    pub remote: String,
    /// The session id, absent for connections without a session (like the `cons` one).
    pub session_id: Option<u64>,
    /// The negotiated session timeout in milliseconds (`to=`).
    pub timeout_ms: Option<u64>,
    /// The whole line.
    pub raw: String,
}

/// Parses `cons`: one entry per client connection.
pub fn parse_cons(text: &str) -> Vec<Connection> {
    text.lines()
        .map(str::trim)
        .filter(|line| line.starts_with('/'))
        .map(|line| {
            let remote = line.split('[').next().unwrap_or("").to_string();
            let field = |name: &str| -> Option<&str> {
                let start = line.find(&format!("{name}="))? + name.len() + 1;
                let rest = &line[start..];
                Some(rest.split([',', ')']).next().unwrap_or(""))
            };
            Connection {
                remote,
                session_id: field("sid").and_then(parse_session_id),
                timeout_ms: field("to").and_then(|t| t.parse().ok()),
                raw: line.to_string(),
            }
        })
        .collect()
}

/// Parses the ephemeral section of `dump` (leader or standalone only): paths by owner session.
pub fn parse_dump_ephemerals(text: &str) -> BTreeMap<u64, Vec<String>> {
    let mut ephemerals: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut in_section = false;
    let mut current = None;
    for line in text.lines() {
        if line.starts_with("Sessions with Ephemerals") {
            in_section = true;
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some(path) = line.strip_prefix('\t') {
            if let Some(session) = current {
                ephemerals
                    .entry(session)
                    .or_default()
                    .push(path.trim().to_string());
            }
        } else if let Some(session) = parse_session_id(line.trim_end_matches(':')) {
            current = Some(session);
            ephemerals.entry(session).or_default();
        } else if !line.trim().is_empty() {
            break;
        }
    }
    ephemerals
}

fn parse_session_id(text: &str) -> Option<u64> {
    let hex = text.trim().strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_srvr() {
        let text = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/1.9/12\nReceived: 3\n\
                    Sent: 2\nConnections: 1\nOutstanding: 0\nZxid: 0x100000044\nMode: follower\n\
                    Node count: 5\n";
        let srvr = Srvr::parse(text).unwrap();
        assert_eq!(srvr.mode, Mode::Follower);
        assert_eq!(srvr.zxid, 0x1_0000_0044);
        assert_eq!(srvr.node_count, Some(5));
        assert_eq!(srvr.connections, Some(1));
        assert!(
            Srvr::parse("This ZooKeeper instance is not currently serving requests\n").is_none()
        );
    }

    #[test]
    fn parses_mntr() {
        let mntr = Mntr::parse("zk_version\t3.8.0\nzk_watch_count\t4\nzk_server_state\tleader\n");
        assert_eq!(mntr.watch_count(), Some(4));
        assert_eq!(mntr.get("version"), Some("3.8.0"));
        assert_eq!(mntr.server_state(), Some("leader"));
        assert_eq!(mntr.ephemerals_count(), None);
    }

    #[test]
    fn parses_wchc() {
        let watches = parse_wchc("0x100000679b30010\n\t/p\n\t/d\n0x2\n\t/x\n\n");
        assert_eq!(watches[&0x0100_0006_79b3_0010], vec!["/p", "/d"]);
        assert_eq!(watches[&2], vec!["/x"]);
    }

    #[test]
    fn parses_cons() {
        let text = " /127.0.0.1:44458[1](queued=0,recved=1,sent=1,sid=0x100000679b30010,lop=SESS,\
                    est=1,to=30000,lcxid=0x0)\n /127.0.0.1:44460[0](queued=0,recved=1,sent=0)\n\n";
        let cons = parse_cons(text);
        assert_eq!(cons.len(), 2);
        assert_eq!(cons[0].session_id, Some(0x0100_0006_79b3_0010));
        assert_eq!(cons[0].timeout_ms, Some(30000));
        assert_eq!(cons[0].remote, "/127.0.0.1:44458");
        assert_eq!(cons[1].session_id, None);
    }

    #[test]
    fn parses_dump_ephemerals() {
        let text = "SessionTracker dump:\nSession Sets (1)/(1):\n0 expire at x:\n\t0x5\n\
                    ephemeral nodes dump:\nSessions with Ephemerals (1):\n0x5:\n\t/a\n\t/b\n\
                    Connections dump:\n";
        let eph = parse_dump_ephemerals(text);
        assert_eq!(eph.len(), 1);
        assert_eq!(eph[&5], vec!["/a", "/b"]);
    }
}
