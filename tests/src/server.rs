//! A standalone ZooKeeper server on a free loopback port.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::Result;
use crate::four_letter::{self, Connection, Mntr, Mode, Srvr};
use crate::install::Installation;
use crate::node::{wait_ready, Node};
use crate::options::{option_setters, Options, Ports};
use crate::ports::free_port;
use crate::tls::ServerTls;

/// How many times start-up is retried with new ports when another process took one.
pub(crate) const BIND_ATTEMPTS: usize = 5;

/// A standalone ZooKeeper server in its own temporary directory, listening on
/// `127.0.0.1:<free port>`. Dropping it kills the JVM and removes the directory.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zookeeper_testkit::Result<()> {
/// let server = zookeeper_testkit::ZkServer::start().await?;
/// let connect = server.connect_string(); // "127.0.0.1:PORT"
/// assert_eq!(server.srvr().await?.mode, zookeeper_testkit::Mode::Standalone);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ZkServer {
    node: Arc<Mutex<Node>>,
    addr: SocketAddr,
    options: Options,
    tls: Option<Arc<ServerTls>>,
    secure_addr: Option<SocketAddr>,
}

/// Configures a [`ZkServer`] before starting it.
#[derive(Clone, Debug, Default)]
pub struct ServerBuilder {
    options: Options,
}

impl ServerBuilder {
    option_setters!();

    /// Starts the server and waits until it serves requests (async; the JVM is started and
    /// polled on tokio's blocking pool).
    pub async fn start(self) -> Result<ZkServer> {
        blocking(move || self.start_blocking()).await
    }

    /// Starts the server and waits until it serves requests, blocking the calling thread.
    pub fn start_blocking(self) -> Result<ZkServer> {
        let mut options = self.options;
        let installation = match &options.installation {
            Some(i) => i.clone(),
            None => Installation::locate()?,
        };
        let tls = crate::tls::prepare(&mut options)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let ports = [Ports {
                client: free_port()?,
                quorum: 0,
                election: 0,
                secure_client: crate::tls::secure_port(tls.as_ref())?,
            }];
            let mut node = Node::prepare("server", &options, &installation, &ports, 0)?;
            node.spawn()?;
            let addr = node.client_addr();
            let secure_addr = node.secure_addr();
            match wait_standalone(&mut node, &options) {
                Ok(()) => {
                    return Ok(ZkServer {
                        node: Arc::new(Mutex::new(node)),
                        addr,
                        options,
                        tls,
                        secure_addr,
                    })
                }
                Err(_) if attempt < BIND_ATTEMPTS && node.bind_failed() => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

fn wait_standalone(node: &mut Node, options: &Options) -> Result<()> {
    let what = format!("ZooKeeper server {}", node.client_addr());
    wait_ready(&mut [node], &what, options.start_timeout, |answers| {
        answers[0]
            .as_ref()
            .is_some_and(|srvr| srvr.mode == Mode::Standalone)
    })
    .map(|_| ())
}

/// Runs blocking harness work off the async runtime.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}

impl ZkServer {
    /// A builder for a server with non-default settings.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Starts a server with the default settings (see [`crate::options`]).
    pub async fn start() -> Result<ZkServer> {
        Self::builder().start().await
    }

    /// Blocking form of [`ZkServer::start`].
    pub fn start_blocking() -> Result<ZkServer> {
        Self::builder().start_blocking()
    }

    /// The client address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The connect string with a chroot suffix, `127.0.0.1:PORT/chroot`.
    pub fn connect_string_with_chroot(&self, chroot: &str) -> String {
        format!("{}{}", self.addr, chroot)
    }

    /// The settings the server runs with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The certificates and files of the secure client port, when started with
    /// [`ServerBuilder::tls`].
    pub fn tls(&self) -> Option<&ServerTls> {
        self.tls.as_deref()
    }

    /// The secure (TLS) client address, `127.0.0.1:PORT`, when started with
    /// [`ServerBuilder::tls`].
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// The connect string of the secure client port with the name its certificate carries,
    /// `localhost:PORT` by default, when started with [`ServerBuilder::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        let tls = self.tls.as_ref()?;
        Some(tls.connect_string([self.secure_addr?.port()]))
    }

    fn node(&self) -> MutexGuard<'_, Node> {
        self.node.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The JVM's process id, `None` after [`ZkServer::kill`].
    pub fn pid(&self) -> Option<u32> {
        self.node().pid()
    }

    /// The server's working directory (`zoo.cfg`, `data/`, `zookeeper.log`).
    pub fn dir(&self) -> PathBuf {
        self.node().dir().to_path_buf()
    }

    /// Every directory the server owns: its working directory, and its TLS files if any.
    pub(crate) fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.dir()];
        dirs.extend(self.tls.as_ref().map(|tls| tls.dir().to_path_buf()));
        dirs
    }

    /// The last `lines` lines of the server's log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        self.node().log_tail(lines)
    }

    /// Kills the JVM (SIGKILL) at once; data stays for [`ZkServer::restart`].
    pub fn kill(&self) {
        self.node().kill();
    }

    /// Starts the server again on the same port with the same data (sessions survive if
    /// their timeout has not passed), and waits until it serves.
    pub async fn restart(&self) -> Result<()> {
        let node = self.node.clone();
        let options = self.options.clone();
        blocking(move || {
            let mut node = node.lock().unwrap_or_else(|e| e.into_inner());
            node.spawn()?;
            wait_standalone(&mut node, &options)
        })
        .await
    }

    /// Freezes the JVM (SIGSTOP): connections stay open but nothing is answered.
    pub fn pause(&self) -> Result<()> {
        self.node().pause()
    }

    /// Lets a paused JVM run again (SIGCONT).
    pub fn resume(&self) -> Result<()> {
        self.node().signal(libc::SIGCONT)
    }

    /// Sends a four-letter word and returns the answer.
    pub async fn four_letter(&self, command: &str) -> Result<String> {
        four_letter::four_letter(self.addr, command).await
    }

    /// `srvr`, parsed: mode and zxid.
    pub async fn srvr(&self) -> Result<Srvr> {
        four_letter::srvr(self.addr).await
    }

    /// `mntr`, parsed: watch count, ephemerals, sessions...
    pub async fn mntr(&self) -> Result<Mntr> {
        four_letter::mntr(self.addr).await
    }

    /// `wchc`: data and exist watch paths by session id.
    pub async fn wchc(&self) -> Result<BTreeMap<u64, Vec<String>>> {
        four_letter::wchc(self.addr).await
    }

    /// `cons`: client connections with their session ids and timeouts.
    pub async fn cons(&self) -> Result<Vec<Connection>> {
        four_letter::cons(self.addr).await
    }

    /// `dump`'s ephemeral section: ephemeral paths by owner session id.
    pub async fn ephemerals(&self) -> Result<BTreeMap<u64, Vec<String>>> {
        four_letter::ephemerals(self.addr).await
    }

    /// Creates `path` and its missing parents as empty persistent nodes (blocking; uses a
    /// minimal built-in client, so it works without any client crate).
    pub fn create_path(&self, path: &str) -> Result<()> {
        crate::raw_client::create_all(self.addr, path)
    }

    /// Stops the server now (same as dropping it).
    pub fn stop(self) {}
}
