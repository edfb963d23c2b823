//! An ensemble whose membership changes at run time: dynamic configuration
//! (`reconfigEnabled=true`, `server.N=host:quorum:election:role;host:client` lines), new
//! members started on demand, and `reconfig` to add and remove them.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::{four_letter_with_timeout, Mode, Srvr};
use crate::install::Installation;
use crate::node::{wait_ready, Node};
use crate::options::{option_setters, Options, Ports};
use crate::ports::free_port;
use crate::raw_reconfig::{self, Change};
use crate::server::{blocking, BIND_ATTEMPTS};
use crate::tls::ServerTls;

/// The `digest` user allowed to `reconfig` (ZooKeeper's super user on these ensembles).
pub const SUPER_USER: &str = "super";
/// The super user's password.
pub const SUPER_PASSWORD: &str = "zk-testkit-super";
/// `super:base64(sha1("super:zk-testkit-super"))`, as `superDigest` wants it.
const SUPER_DIGEST: &str = "super:/KqBwIfgRkQMgOf8zKRfgVselWw=";

/// ZooKeeper's error codes that say "try the reconfig again shortly".
const NEW_CONFIG_NO_QUORUM: i32 = -13;
const RECONFIG_IN_PROGRESS: i32 = -14;

/// A member's vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Votes and may lead.
    Participant,
    /// Follows without voting.
    Observer,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Participant => "participant",
            Role::Observer => "observer",
        }
    }
}

#[derive(Debug)]
struct Member {
    id: u32,
    ports: Ports,
    role: Role,
    node: Node,
}

/// `server.N=...` as it appears in the dynamic configuration, key and value.
fn config_line(id: u32, p: &Ports, role: Role) -> (String, String) {
    (
        format!("server.{id}"),
        format!(
            "127.0.0.1:{}:{}:{};127.0.0.1:{}",
            p.quorum,
            p.election,
            role.as_str(),
            p.client
        ),
    )
}

impl Member {
    fn client_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.ports.client))
    }
}

/// An ensemble with dynamic reconfiguration enabled. Members are named by their server id
/// (`myid`, from 1). New members are started with [`ReconfigEnsemble::start_member`] (they
/// know the ensemble, the ensemble does not know them yet) and joined with
/// [`ReconfigEnsemble::join`]; [`ReconfigEnsemble::remove`] takes one out of the
/// configuration and stops it. `reconfig` needs the `digest` identity
/// [`SUPER_USER`]:[`SUPER_PASSWORD`]. Dropping the ensemble kills every member.
///
/// ```no_run
/// # async fn demo() -> zookeeper_testkit::Result<()> {
/// use zookeeper_testkit::{ReconfigEnsemble, Role};
/// let ensemble = ReconfigEnsemble::start(3).await?;
/// let four = ensemble.start_member(Role::Participant).await?;
/// ensemble.join(four).await?;
/// assert_eq!(ensemble.config_ids().await?, vec![1, 2, 3, 4]);
/// ensemble.remove(four).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReconfigEnsemble {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    members: Mutex<Vec<Member>>,
    options: Options,
    installation: Installation,
    tls: Option<Arc<ServerTls>>,
}

/// Configures a [`ReconfigEnsemble`] before starting it.
#[derive(Clone, Debug)]
pub struct ReconfigEnsembleBuilder {
    size: usize,
    options: Options,
}

impl ReconfigEnsembleBuilder {
    option_setters!();

    /// Starts the participants and waits until they serve under one leader.
    pub async fn start(self) -> Result<ReconfigEnsemble> {
        blocking(move || self.start_blocking()).await
    }

    /// Blocking form of [`ReconfigEnsembleBuilder::start`].
    pub fn start_blocking(self) -> Result<ReconfigEnsemble> {
        let mut options = self.options;
        let installation = match &options.installation {
            Some(i) => i.clone(),
            None => Installation::locate()?,
        };
        let tls = crate::tls::prepare(&mut options)?;
        let size = self.size.max(1) as u32;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let planned = (1..=size)
                .map(|id| Ok((id, new_ports(tls.as_ref())?, Role::Participant)))
                .collect::<Result<Vec<_>>>()?;
            let mut members = Vec::new();
            for (id, ports, role) in &planned {
                let node = prepare_member(&options, &installation, &planned, *id, ports.clone())?;
                members.push(Member {
                    id: *id,
                    ports: ports.clone(),
                    role: *role,
                    node,
                });
            }
            for member in &mut members {
                member.node.spawn()?;
            }
            let what = format!("reconfig ensemble of {size}");
            let mut refs: Vec<&mut Node> = members.iter_mut().map(|m| &mut m.node).collect();
            let ready = wait_ready(&mut refs, &what, options.start_timeout, |answers| {
                let serving = answers
                    .iter()
                    .all(|a| a.as_ref().is_some_and(|s| s.mode.is_serving()));
                let leaders = answers
                    .iter()
                    .filter(|a| a.as_ref().is_some_and(|s| s.mode == Mode::Leader))
                    .count();
                serving && leaders == 1
            });
            match ready {
                Ok(_) => {
                    return Ok(ReconfigEnsemble {
                        inner: Arc::new(Inner {
                            members: Mutex::new(members),
                            options,
                            installation,
                            tls,
                        }),
                    })
                }
                Err(_)
                    if attempt < BIND_ATTEMPTS && members.iter().any(|m| m.node.bind_failed()) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn new_ports(tls: Option<&Arc<ServerTls>>) -> Result<Ports> {
    Ok(Ports {
        client: free_port()?,
        quorum: free_port()?,
        election: free_port()?,
        secure_client: crate::tls::secure_port(tls)?,
    })
}

/// Writes member `id`'s files: the common options, dynamic `server.N` lines for `planned`
/// (which includes the member itself), reconfig enabled and the super user.
fn prepare_member(
    options: &Options,
    installation: &Installation,
    planned: &[(u32, Ports, Role)],
    id: u32,
    ports: Ports,
) -> Result<Node> {
    let mut options = options.clone();
    // Appended after the caller's lines; `server.N` keys are the membership itself.
    let mut lines = vec![
        ("reconfigEnabled".to_string(), "true".to_string()),
        // A lone participant must still run the quorum code, or it could never grow.
        ("standaloneEnabled".to_string(), "false".to_string()),
    ];
    for (member, member_ports, role) in planned {
        lines.push(config_line(*member, member_ports, *role));
    }
    options.config.extend(lines);
    options.system_properties.push((
        "zookeeper.DigestAuthenticationProvider.superDigest".into(),
        SUPER_DIGEST.into(),
    ));
    let node = Node::prepare(
        &format!("reconfig-{id}"),
        &options,
        installation,
        std::slice::from_ref(&ports),
        0,
    )?;
    let myid = node.dir().join("data").join("myid");
    std::fs::write(&myid, format!("{id}\n"))
        .map_err(|e| Error::io(format!("writing {}", myid.display()), e))?;
    Ok(node)
}

impl ReconfigEnsemble {
    /// A builder for `size` participants with non-default settings.
    pub fn builder(size: usize) -> ReconfigEnsembleBuilder {
        ReconfigEnsembleBuilder {
            size,
            options: Options::default(),
        }
    }

    /// Starts `size` participants with the default settings and waits for a leader.
    pub async fn start(size: usize) -> Result<ReconfigEnsemble> {
        Self::builder(size).start().await
    }

    fn members(&self) -> MutexGuard<'_, Vec<Member>> {
        self.inner.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server ids of every member started and not removed.
    pub fn ids(&self) -> Vec<u32> {
        self.members().iter().map(|m| m.id).collect()
    }

    /// Member `id`'s client address.
    pub fn addr(&self, id: u32) -> Result<SocketAddr> {
        self.with_member(id, |m| m.client_addr())
    }

    /// `server.N=127.0.0.1:quorum:election:role;127.0.0.1:client` for member `id`: what
    /// `reconfig` takes to add it.
    pub fn server_spec(&self, id: u32) -> Result<String> {
        self.with_member(id, |m| {
            let (key, value) = config_line(m.id, &m.ports, m.role);
            format!("{key}={value}")
        })
    }

    /// The connect string of the given members.
    pub fn connect_string_of(&self, ids: &[u32]) -> Result<String> {
        let addrs = ids
            .iter()
            .map(|id| self.addr(*id).map(|a| a.to_string()))
            .collect::<Result<Vec<_>>>()?;
        Ok(addrs.join(","))
    }

    /// The connect string of every member started and not removed.
    pub fn connect_string(&self) -> String {
        let parts: Vec<String> = self
            .members()
            .iter()
            .map(|m| m.client_addr().to_string())
            .collect();
        parts.join(",")
    }

    /// The settings the members run with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The certificates and files of the members' secure client ports, when started with
    /// [`ReconfigEnsembleBuilder::tls`]; members started later get the same.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.inner.tls.as_deref()
    }

    /// The secure connect string (`localhost:PORT,...`, the certificate's name) of every
    /// member started and not removed, when started with [`ReconfigEnsembleBuilder::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        let tls = self.inner.tls.as_ref()?;
        let ports: Vec<u16> = self
            .members()
            .iter()
            .filter_map(|m| m.ports.secure_client)
            .collect();
        Some(tls.connect_string(ports))
    }

    /// The last `lines` lines of member `id`'s log.
    pub fn log_tail(&self, id: u32, lines: usize) -> Result<String> {
        self.with_member(id, |m| m.node.log_tail(lines))
    }

    fn with_member<T>(&self, id: u32, f: impl FnOnce(&mut Member) -> T) -> Result<T> {
        let mut members = self.members();
        let size = members.len();
        members
            .iter_mut()
            .find(|m| m.id == id)
            .map(f)
            .ok_or(Error::NoSuchMember {
                index: id as usize,
                size,
            })
    }

    /// Starts a new member with the next free id, configured with the ensemble's current
    /// configuration plus itself, and waits until it follows the leader and serves clients
    /// (before [`ReconfigEnsemble::join`] adds it: a reconfig that adds a member needs only
    /// a quorum of the new configuration, so it may commit before a slow member is up,
    /// and clients sent there would find nothing listening). Returns its id.
    pub async fn start_member(&self, role: Role) -> Result<u32> {
        let config = self.config().await?;
        let inner = self.inner.clone();
        let id = blocking(move || {
            let mut members = inner.members.lock().unwrap_or_else(|e| e.into_inner());
            let id = members.iter().map(|m| m.id).max().unwrap_or(0) + 1;
            let ports = new_ports(inner.tls.as_ref())?;
            // The ensemble as it is configured now (not every started member is in it).
            let mut planned: Vec<(u32, Ports, Role)> = members
                .iter()
                .filter(|m| config_ids(&config).contains(&m.id))
                .map(|m| (m.id, m.ports.clone(), m.role))
                .collect();
            planned.push((id, ports.clone(), role));
            let mut node = prepare_member(
                &inner.options,
                &inner.installation,
                &planned,
                id,
                ports.clone(),
            )?;
            node.spawn()?;
            members.push(Member {
                id,
                ports,
                role,
                node,
            });
            Ok(id)
        })
        .await?;
        self.wait_serving(id).await?;
        Ok(id)
    }

    /// Adds started member `id` to the configuration (`reconfig -add`), retrying while the
    /// ensemble says it has no synced quorum yet or another reconfig runs, then waits until
    /// the member serves. Returns the new configuration text.
    pub async fn join(&self, id: u32) -> Result<String> {
        let spec = self.server_spec(id)?;
        let config = self
            .reconfig(Change {
                joining: Some(&spec),
                ..Change::default()
            })
            .await?;
        self.wait_serving(id).await?;
        Ok(config)
    }

    /// Takes member `id` out of the configuration (`reconfig -remove`), then stops it and
    /// forgets it. Returns the new configuration text.
    pub async fn remove(&self, id: u32) -> Result<String> {
        self.addr(id)?;
        let leaving = id.to_string();
        let config = self
            .reconfig(Change {
                leaving: Some(&leaving),
                ..Change::default()
            })
            .await?;
        self.members().retain(|m| m.id != id);
        Ok(config)
    }

    /// Stops member `id` and forgets it, without a reconfig: for a member that a client
    /// already took out of the configuration.
    pub fn stop(&self, id: u32) -> Result<()> {
        self.addr(id)?;
        self.members().retain(|m| m.id != id);
        Ok(())
    }

    async fn reconfig(&self, change: Change<'_>) -> Result<String> {
        let joining = change.joining.map(str::to_owned);
        let leaving = change.leaving.map(str::to_owned);
        let new_members = change.new_members.map(str::to_owned);
        let inner = self.inner.clone();
        let timeout = inner.options.start_timeout;
        let candidates = self.serving_addrs();
        blocking(move || {
            let auth = format!("{SUPER_USER}:{SUPER_PASSWORD}");
            let change = Change {
                joining: joining.as_deref(),
                leaving: leaving.as_deref(),
                new_members: new_members.as_deref(),
            };
            each_member_until(
                &candidates,
                timeout,
                "reconfig",
                |addr| match raw_reconfig::reconfig(addr, &auth, &change) {
                    Ok((0, config)) => Attempt::Done(config),
                    Ok((code, _)) => {
                        let refused = Error::ServerError {
                            what: format!("reconfig {change:?}"),
                            code,
                        };
                        if code == NEW_CONFIG_NO_QUORUM || code == RECONFIG_IN_PROGRESS {
                            Attempt::Later(refused)
                        } else {
                            Attempt::Fail(refused)
                        }
                    }
                    Err(e) => Attempt::Next(e),
                },
            )
        })
        .await
    }

    fn serving_addrs(&self) -> Vec<SocketAddr> {
        self.members()
            .iter_mut()
            .filter_map(|m| m.node.is_running().then(|| m.client_addr()))
            .collect()
    }

    /// `/zookeeper/config` as a running member has it: `server.N=...` lines and
    /// `version=<hex>`. Retried, up to the start timeout, while no member answers.
    pub async fn config(&self) -> Result<String> {
        let candidates = self.serving_addrs();
        let timeout = self.inner.options.start_timeout;
        blocking(move || {
            each_member_until(&candidates, timeout, "reading /zookeeper/config", |addr| {
                match raw_reconfig::get_config(addr) {
                    Ok(config) => Attempt::Done(config),
                    Err(e) => Attempt::Next(e),
                }
            })
        })
        .await
    }

    /// The server ids in the current configuration, ascending.
    pub async fn config_ids(&self) -> Result<Vec<u32>> {
        Ok(config_ids(&self.config().await?))
    }

    /// Kills member `id` (SIGKILL); it stays in the configuration.
    pub fn kill(&self, id: u32) -> Result<()> {
        self.with_member(id, |m| m.node.kill())
    }

    /// Starts a killed member again with its last configuration and data.
    pub async fn restart(&self, id: u32) -> Result<()> {
        self.with_member(id, |m| m.node.spawn())??;
        self.wait_serving(id).await
    }

    /// Waits until member `id` serves (leader, follower or observer).
    pub async fn wait_serving(&self, id: u32) -> Result<()> {
        let addr = self.addr(id)?;
        let timeout = self.inner.options.start_timeout;
        let inner = self.inner.clone();
        blocking(move || {
            let start = Instant::now();
            loop {
                let srvr = four_letter_with_timeout(addr, "srvr", Duration::from_secs(1))
                    .ok()
                    .and_then(|t| Srvr::parse(&t));
                if srvr.as_ref().is_some_and(|s| s.mode.is_serving()) {
                    return Ok(());
                }
                if start.elapsed() > timeout {
                    let members = inner.members.lock().unwrap_or_else(|e| e.into_inner());
                    let log_tail = members
                        .iter()
                        .find(|m| m.id == id)
                        .map(|m| m.node.log_tail(30))
                        .unwrap_or_default();
                    return Err(Error::NotReady {
                        what: format!("reconfig member {id} ({addr})"),
                        waited: start.elapsed(),
                        last: format!("{:?}", srvr.map(|s| s.mode)),
                        log_tail,
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .await
    }

    /// `srvr` of each member by id right now; `None` where it does not answer or serve.
    pub async fn states(&self) -> Vec<(u32, Option<Srvr>)> {
        let targets: Vec<(u32, SocketAddr)> = self
            .members()
            .iter()
            .map(|m| (m.id, m.client_addr()))
            .collect();
        blocking(move || {
            Ok(targets
                .into_iter()
                .map(|(id, addr)| {
                    let srvr = four_letter_with_timeout(addr, "srvr", Duration::from_secs(1))
                        .ok()
                        .and_then(|t| Srvr::parse(&t));
                    (id, srvr)
                })
                .collect())
        })
        .await
        .unwrap_or_default()
    }
}

/// The server ids named by `server.N=` lines of a configuration text, ascending.
pub fn config_ids(config: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = config
        .lines()
        .filter_map(|line| line.trim().strip_prefix("server."))
        .filter_map(|rest| rest.split('=').next()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}

/// What one attempt on one member came to.
enum Attempt<T> {
    Done(T),
    /// This member could not answer: try the next.
    Next(Error),
    /// The ensemble is busy (no synced quorum yet, another reconfig): wait for the next round.
    Later(Error),
    /// Refused for good.
    Fail(Error),
}

/// Runs `attempt` on each of `candidates` in turn, round after round (100 ms apart), until one
/// is done or refused for good; after `timeout`, the last error. Members close their client
/// connections while they re-synchronise with a leader, which a reconfig or a loaded machine
/// can cause, so a round in which none answers is no verdict.
fn each_member_until<T>(
    candidates: &[SocketAddr],
    timeout: Duration,
    what: &str,
    mut attempt: impl FnMut(SocketAddr) -> Attempt<T>,
) -> Result<T> {
    let start = Instant::now();
    loop {
        let mut last = Error::NotReady {
            what: what.into(),
            waited: start.elapsed(),
            last: "no member running".into(),
            log_tail: String::new(),
        };
        for addr in candidates {
            match attempt(*addr) {
                Attempt::Done(found) => return Ok(found),
                Attempt::Fail(e) => return Err(e),
                Attempt::Next(e) => last = e,
                Attempt::Later(e) => {
                    last = e;
                    break;
                }
            }
        }
        if candidates.is_empty() || start.elapsed() > timeout {
            return Err(last);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_server_lines() {
        let config = "server.2=127.0.0.1:1:2:participant;127.0.0.1:3\n\
                      server.10=127.0.0.1:4:5:observer;127.0.0.1:6\nversion=100000000\n";
        assert_eq!(config_ids(config), vec![2, 10]);
    }
}
