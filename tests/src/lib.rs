//! Real ZooKeeper servers, ensembles and network faults for integration tests.
//!
//! * [`ZkServer`]: a standalone server on a free loopback port in its own temporary
//!   directory; killed and cleaned up on drop.
//! * [`shared_server`] and [`chroot_for`]: one server per test binary, a chroot per test.
//! * [`Ensemble`]: N members on loopback; find the leader, kill, restart, pause, resume.
//! * [`Proxy`]: a TCP proxy a client connects through, to drop connections, refuse them,
//!   black-hole them, add latency, or cut a connection right after a given request.
//! * [`four_letter`] and its parsed forms ([`Srvr`], [`Mntr`], ...) for assertions.
//!
//! Servers run Debian's ZooKeeper (`scripts/setup` installs it); set `ZK_TESTS_JAVA` and
//! `ZK_TESTS_CLASSPATH` (or `ZOOKEEPER_HOME`) to use another one. No Java process outlives
//! the test process, even when it panics, aborts or is killed.
//!
//! Defaults: `tickTime` 200 ms, session timeouts clamped to 400 ms..60 s, every four-letter
//! word enabled, no AdminServer, no fsync.
//!
//! ```no_run
//! # async fn demo() -> zk_tests::Result<()> {
//! use zk_tests::{chroot_for, shared_server, Proxy, ZkServer};
//!
//! // Most tests: the shared server, isolated by a chroot.
//! let server = shared_server();
//! let connect = server.connect_string_with_chroot(&chroot_for("my_test"));
//!
//! // Fault tests: an own server behind a proxy.
//! let server = ZkServer::start().await?;
//! let proxy = Proxy::start(server.addr()).await?;
//! let connect = proxy.connect_string();
//! proxy.drop_all();
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod ensemble;
mod error;
pub mod four_letter;
mod install;
mod node;
pub mod options;
mod ports;
mod process;
pub mod proxy;
mod raw_client;
mod server;
mod shared;
mod tempdir;

pub use ensemble::{Ensemble, EnsembleBuilder};
pub use error::{Error, Result, SETUP_COMMAND};
pub use four_letter::{
    cons, ephemerals, four_letter, four_letter_blocking, mntr, srvr, wchc, Connection, Mntr, Mode,
    Srvr,
};
pub use install::{Installation, CLASSPATH_ENV, HOME_ENV, JAVA_ENV};
pub use options::Options;
pub use ports::free_port;
pub use proxy::{Cut, Proxy, Upstreams};
pub use server::{ServerBuilder, ZkServer};
pub use shared::{chroot_for, shared_server, unique_chroot, CHROOT_PARENT};
pub use tempdir::{KEEP_DIRS_ENV, TMPDIR_ENV};
