//! An ensemble of N ZooKeeper servers on loopback, with member faults.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::{four_letter_with_timeout, Mode, Srvr};
use crate::install::Installation;
use crate::node::{wait_ready, Node};
use crate::options::{option_setters, Options, Ports};
use crate::ports::free_port;
use crate::server::{blocking, BIND_ATTEMPTS};
use crate::tls::ServerTls;

#[derive(Debug)]
struct Member {
    node: Node,
    paused: bool,
}

/// N ZooKeeper servers forming one ensemble on `127.0.0.1`, each with its own directory and
/// ports. Members are numbered from 0 (their `myid` is index + 1). Dropping the ensemble
/// kills every member and removes their directories.
///
/// ```no_run
/// # async fn demo() -> zookeeper_testkit::Result<()> {
/// let ensemble = zookeeper_testkit::Ensemble::start(3).await?;
/// let leader = ensemble.leader().await?;
/// ensemble.kill(leader)?;
/// let new_leader = ensemble.leader().await?;
/// assert_ne!(leader, new_leader);
/// ensemble.restart(leader).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Ensemble {
    members: Arc<Vec<Mutex<Member>>>,
    addrs: Vec<SocketAddr>,
    options: Options,
    tls: Option<Arc<ServerTls>>,
    secure_addrs: Vec<SocketAddr>,
}

/// Configures an [`Ensemble`] before starting it.
#[derive(Clone, Debug)]
pub struct EnsembleBuilder {
    size: usize,
    options: Options,
}

impl EnsembleBuilder {
    option_setters!();

    /// Starts every member and waits until they serve under one leader (async; the JVMs
    /// are started and polled on tokio's blocking pool).
    pub async fn start(self) -> Result<Ensemble> {
        blocking(move || self.start_blocking()).await
    }

    /// Blocking form of [`EnsembleBuilder::start`].
    pub fn start_blocking(self) -> Result<Ensemble> {
        let mut options = self.options;
        let installation = match &options.installation {
            Some(i) => i.clone(),
            None => Installation::locate()?,
        };
        let tls = crate::tls::prepare(&mut options)?;
        let size = self.size.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let ports = (0..size)
                .map(|_| {
                    Ok(Ports {
                        client: free_port()?,
                        quorum: free_port()?,
                        election: free_port()?,
                        secure_client: crate::tls::secure_port(tls.as_ref())?,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let mut nodes = (0..size)
                .map(|me| {
                    Node::prepare(
                        &format!("ensemble-{}", me + 1),
                        &options,
                        &installation,
                        &ports,
                        me,
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            for node in &mut nodes {
                node.spawn()?;
            }
            let addrs: Vec<SocketAddr> = nodes.iter().map(Node::client_addr).collect();
            let secure_addrs: Vec<SocketAddr> =
                nodes.iter().filter_map(Node::secure_addr).collect();
            let what = format!("ensemble {addrs:?}");
            let mut refs: Vec<&mut Node> = nodes.iter_mut().collect();
            let ready = wait_ready(&mut refs, &what, options.start_timeout, |answers| {
                let serving = answers
                    .iter()
                    .all(|a| a.as_ref().is_some_and(|s| s.mode.is_serving()));
                let leaders = answers
                    .iter()
                    .filter(|a| a.as_ref().is_some_and(|s| s.mode == Mode::Leader))
                    .count();
                serving && (leaders == 1 || size == 1)
            });
            match ready {
                Ok(_) => {
                    let members = nodes
                        .into_iter()
                        .map(|node| {
                            Mutex::new(Member {
                                node,
                                paused: false,
                            })
                        })
                        .collect();
                    return Ok(Ensemble {
                        members: Arc::new(members),
                        addrs,
                        options,
                        tls,
                        secure_addrs,
                    });
                }
                Err(_) if attempt < BIND_ATTEMPTS && nodes.iter().any(Node::bind_failed) => {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Ensemble {
    /// A builder for an ensemble of `size` members with non-default settings.
    pub fn builder(size: usize) -> EnsembleBuilder {
        EnsembleBuilder {
            size,
            options: Options::default(),
        }
    }

    /// Starts `size` members with the default settings and waits for a leader.
    pub async fn start(size: usize) -> Result<Ensemble> {
        Self::builder(size).start().await
    }

    /// Blocking form of [`Ensemble::start`].
    pub fn start_blocking(size: usize) -> Result<Ensemble> {
        Self::builder(size).start_blocking()
    }

    /// The number of members.
    pub fn size(&self) -> usize {
        self.addrs.len()
    }

    /// Every member's client address, by index.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Member `index`'s client address.
    pub fn addr(&self, index: usize) -> Result<SocketAddr> {
        self.check(index)?;
        Ok(self.addrs[index])
    }

    /// `127.0.0.1:P1,127.0.0.1:P2,...` for all members.
    pub fn connect_string(&self) -> String {
        let parts: Vec<String> = self.addrs.iter().map(SocketAddr::to_string).collect();
        parts.join(",")
    }

    /// `127.0.0.1:P1,...` for every member but `skip`: a session connected with it is kept
    /// off that member (off the leader, say, whose death would start an election and drop
    /// every client until it ends).
    pub fn connect_string_without(&self, skip: usize) -> Result<String> {
        self.check(skip)?;
        let parts: Vec<String> = self
            .addrs
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != skip)
            .map(|(_, addr)| addr.to_string())
            .collect();
        Ok(parts.join(","))
    }

    /// The index of the running, unpaused member whose connections (`cons`) list the session
    /// `session_id`; `None` when none does (the session is between members, say).
    pub async fn member_serving(&self, session_id: i64) -> Option<usize> {
        for (index, addr) in self.addrs.iter().enumerate() {
            if !self.is_answering(index) {
                continue;
            }
            let Ok(connections) = crate::four_letter::cons(*addr).await else {
                continue;
            };
            if connections
                .iter()
                .any(|c| c.session_id == Some(session_id as u64))
            {
                return Some(index);
            }
        }
        None
    }

    /// The settings the members run with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The certificates and files of the members' secure client ports (one authority, one
    /// server certificate for all), when started with [`EnsembleBuilder::tls`].
    pub fn tls(&self) -> Option<&ServerTls> {
        self.tls.as_deref()
    }

    /// Every member's secure (TLS) client address, by index; empty without TLS.
    pub fn secure_addrs(&self) -> &[SocketAddr] {
        &self.secure_addrs
    }

    /// `localhost:S1,localhost:S2,...`: every member's secure client port with the name the
    /// certificate carries, when started with [`EnsembleBuilder::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        let tls = self.tls.as_ref()?;
        Some(tls.connect_string(self.secure_addrs.iter().map(SocketAddr::port)))
    }

    fn check(&self, index: usize) -> Result<()> {
        if index < self.size() {
            Ok(())
        } else {
            Err(Error::NoSuchMember {
                index,
                size: self.size(),
            })
        }
    }

    // A paused member would hold a four-letter word until its timeout.
    fn is_answering(&self, index: usize) -> bool {
        self.member(index)
            .is_ok_and(|mut member| member.node.is_running() && !member.paused)
    }

    fn member(&self, index: usize) -> Result<MutexGuard<'_, Member>> {
        self.check(index)?;
        Ok(self.members[index]
            .lock()
            .unwrap_or_else(|e| e.into_inner()))
    }

    /// Member `index`'s JVM process id, `None` while it is killed.
    pub fn pid(&self, index: usize) -> Result<Option<u32>> {
        Ok(self.member(index)?.node.pid())
    }

    /// The last `lines` lines of member `index`'s log.
    pub fn log_tail(&self, index: usize, lines: usize) -> Result<String> {
        Ok(self.member(index)?.node.log_tail(lines))
    }

    /// Kills member `index` (SIGKILL) at once; its data stays for [`Ensemble::restart`].
    pub fn kill(&self, index: usize) -> Result<()> {
        let mut member = self.member(index)?;
        member.node.kill();
        member.paused = false;
        Ok(())
    }

    /// Starts a killed member again with the same configuration and data, and waits until
    /// it serves as leader or follower.
    pub async fn restart(&self, index: usize) -> Result<()> {
        self.check(index)?;
        let members = self.members.clone();
        let timeout = self.options.start_timeout;
        blocking(move || {
            let mut member = members[index].lock().unwrap_or_else(|e| e.into_inner());
            member.paused = false;
            member.node.spawn()?;
            let what = format!("ensemble member {index} ({})", member.node.client_addr());
            wait_ready(&mut [&mut member.node], &what, timeout, |answers| {
                answers[0].as_ref().is_some_and(|s| s.mode.is_serving())
            })
            .map(|_| ())
        })
        .await
    }

    /// Freezes member `index` (SIGSTOP): its connections stay open, nothing is answered,
    /// and the other members stop hearing from it.
    pub fn pause(&self, index: usize) -> Result<()> {
        let mut member = self.member(index)?;
        member.node.pause()?;
        member.paused = true;
        Ok(())
    }

    /// Lets a paused member run again (SIGCONT).
    pub fn resume(&self, index: usize) -> Result<()> {
        let mut member = self.member(index)?;
        member.node.signal(libc::SIGCONT)?;
        member.paused = false;
        Ok(())
    }

    /// Kills every member.
    pub fn stop_all(&self) {
        for member in self.members.iter() {
            let mut member = member.lock().unwrap_or_else(|e| e.into_inner());
            member.node.kill();
            member.paused = false;
        }
    }

    /// Each member's `srvr` answer right now; `None` for members that are killed, paused,
    /// or not serving (e.g. during an election).
    pub async fn states(&self) -> Vec<Option<Srvr>> {
        let members = self.members.clone();
        blocking(move || Ok(poll_states(&members)))
            .await
            .unwrap_or_default()
    }

    /// The index of the leader, waiting (up to the start timeout) until exactly one running
    /// member says it leads, e.g. while an election after a kill is under way.
    pub async fn leader(&self) -> Result<usize> {
        self.wait_for("a leader", |states| {
            let leaders: Vec<usize> = states
                .iter()
                .enumerate()
                .filter(|(_, s)| s.as_ref().is_some_and(|s| s.mode == Mode::Leader))
                .map(|(i, _)| i)
                .collect();
            (leaders.len() == 1).then(|| leaders[0])
        })
        .await
    }

    /// Waits until every running, unpaused member serves, under one leader; returns the
    /// leader's index.
    pub async fn wait_serving(&self) -> Result<usize> {
        let members = self.members.clone();
        self.wait_for("all running members serving", move |states| {
            let mut leader = None;
            for (i, state) in states.iter().enumerate() {
                let member = members[i].lock().unwrap_or_else(|e| e.into_inner());
                let expected = member.node.pid().is_some() && !member.paused;
                drop(member);
                let serving = state.as_ref().is_some_and(|s| s.mode.is_serving());
                if expected && !serving {
                    return None;
                }
                let leads = state.as_ref().is_some_and(|s| s.mode == Mode::Leader);
                if leads && leader.replace(i).is_some() {
                    return None;
                }
            }
            leader
        })
        .await
    }

    async fn wait_for<T: Send + 'static>(
        &self,
        what: &str,
        done: impl Fn(&[Option<Srvr>]) -> Option<T> + Send + 'static,
    ) -> Result<T> {
        let members = self.members.clone();
        let timeout = self.options.start_timeout;
        let what = format!("ensemble {}: {what}", self.connect_string());
        blocking(move || {
            let start = Instant::now();
            loop {
                let states = poll_states(&members);
                if let Some(found) = done(&states) {
                    return Ok(found);
                }
                if start.elapsed() > timeout {
                    let mut log_tail = String::new();
                    for member in members.iter() {
                        let member = member.lock().unwrap_or_else(|e| e.into_inner());
                        log_tail.push_str(&member.node.log_tail(10));
                    }
                    return Err(Error::NotReady {
                        what,
                        waited: start.elapsed(),
                        last: format!(
                            "{:?}",
                            states
                                .iter()
                                .map(|s| s.as_ref().map(|s| &s.mode))
                                .collect::<Vec<_>>()
                        ),
                        log_tail,
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .await
    }
}

/// `srvr` of each running, unpaused member (locks are not held while asking).
fn poll_states(members: &[Mutex<Member>]) -> Vec<Option<Srvr>> {
    members
        .iter()
        .map(|member| {
            let (addr, alive) = {
                let mut member = member.lock().unwrap_or_else(|e| e.into_inner());
                let alive = member.node.is_running() && !member.paused;
                (member.node.client_addr(), alive)
            };
            if !alive {
                return None;
            }
            four_letter_with_timeout(addr, "srvr", Duration::from_secs(1))
                .ok()
                .and_then(|text| Srvr::parse(&text))
        })
        .collect()
}
