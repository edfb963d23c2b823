//! Real ZooKeeper servers, ensembles and network faults for integration tests.
//!
//! * [`ZkServer`]: a standalone server on a free loopback port in its own temporary
//!   directory; killed and cleaned up on drop.
//! * [`shared_server`] and [`chroot_for`]: one server per test binary, a chroot per test.
//! * [`Ensemble`]: N members on loopback; find the leader or the member serving a session,
//!   kill, restart, pause, resume.
//! * [`ReconfigEnsemble`]: an ensemble with dynamic configuration that starts new members
//!   (participants or observers) and adds and removes them with `reconfig`.
//! * SASL servers: [`ServerBuilder::sasl_digest`] (DIGEST-MD5 users),
//!   [`ServerBuilder::sasl_kerberos`] (GSSAPI against a [`Kdc`] on loopback),
//!   [`ServerBuilder::require_sasl`]; the same on [`EnsembleBuilder`].
//! * [`Proxy`]: a TCP proxy a client connects through, to drop connections, refuse them,
//!   black-hole them, add latency, hold replies, or cut a connection right after a given
//!   request; it can also log the frames it passes on, in order ([`FrameEvent`]).
//! * [`tls`]: servers and ensembles with a secure (TLS) client port, certificates made at
//!   test time, optional client-certificate authentication, and client certificates to mint
//!   (trusted, from another authority) for every case a client must handle.
//! * [`ZkServer::set_sequence_counter`]: a parent's sequence counter set near its wrap (in the
//!   stopped server's data, by ZooKeeper's own classes), where 2^31 creates would take days.
//! * [`bounded`]: awaits a step of a test, failing it with what hung past [`HANG_BOUND`].
//! * [`four_letter()`] and its parsed forms ([`Srvr`], [`Mntr`], ...) for assertions.
//! * [`peers`]: Curator and kazoo, for peer programs in Java and Python.
//! * `metrics` (cargo feature `metrics`): runs a workload with a `metrics` recorder of its
//!   own and reads the counters, gauges and histograms it recorded.
//!
//! Servers run Debian's ZooKeeper (`scripts/setup` installs it); set `ZK_TESTS_JAVA` and
//! `ZK_TESTS_CLASSPATH` (or `ZOOKEEPER_HOME`) to use another one. No Java process outlives
//! the test process, even when it panics, aborts or is killed.
//!
//! Defaults: `tickTime` 200 ms, session timeouts clamped to 400 ms..60 s, every four-letter
//! word enabled, no AdminServer, no fsync.
//!
//! Start-up waits, proxy latency and black-hole durations run on tokio's clock, so do not use
//! these helpers under `#[tokio::test(start_paused = true)]`: a paused clock jumps ahead
//! whenever the runtime idles and would fire those timeouts while a real JVM is still starting.
//!
//! ```no_run
//! use std::time::Duration;
//! use zookeeper_testkit::{chroot_for, shared_server, Ensemble, Proxy, ZkServer};
//!
//! #[tokio::test]
//! async fn my_test() -> zookeeper_testkit::Result<()> {
//!     // One server per test binary; each test works under its own (created) chroot.
//!     let connect = shared_server().connect_string_with_chroot(&chroot_for("my_test"));
//!
//!     // A server of its own, with TTL nodes enabled, behind a fault-injecting proxy.
//!     let server = ZkServer::builder().extended_types().start().await?;
//!     let proxy = Proxy::start(server.addr()).await?;
//!     // ... connect the client under test to proxy.connect_string(), then:
//!     proxy.drop_all(); // every connection closes now
//!     proxy.black_hole_for(Duration::from_secs(2)); // connected, but silent (a partition)
//!     let cut = proxy.cut_after_next(1); // the next create is applied, its reply lost
//!     assert_eq!(server.mntr().await?.ephemerals_count(), Some(0));
//!
//!     // Three members; fail the leader over.
//!     let ensemble = Ensemble::start(3).await?;
//!     let leader = ensemble.leader().await?;
//!     ensemble.kill(leader)?;
//!     assert_ne!(ensemble.leader().await?, leader);
//!     ensemble.restart(leader).await?;
//!     Ok(())
//! }
//! ```
#![warn(missing_docs)]

mod bounded;
mod ensemble;
mod error;
pub mod four_letter;
mod install;
mod kdc;
#[cfg(feature = "metrics")]
pub mod metrics;
mod node;
pub mod options;
pub mod peers;
mod ports;
mod process;
pub mod proxy;
mod raw_client;
mod raw_reconfig;
mod reconfig;
mod sasl;
mod sequence_seed;
mod server;
mod shared;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "spans")]
pub mod spans;
mod tempdir;
pub mod tls;

pub use bounded::{bounded, bounded_by, ended_within, HANG_BOUND};
pub use ensemble::{Ensemble, EnsembleBuilder};
pub use error::{Error, Result, SETUP_COMMAND};
pub use four_letter::{
    cons, ephemerals, four_letter, four_letter_blocking, mntr, srvr, wchc, Connection, Mntr, Mode,
    Srvr,
};
pub use install::{Installation, CLASSPATH_ENV, HOME_ENV, JAVA_ENV};
pub use kdc::Kdc;
pub use options::Options;
pub use ports::free_port;
pub use proxy::{Cut, FrameEvent, Proxy, Upstreams};
pub use reconfig::{
    config_ids, ReconfigEnsemble, ReconfigEnsembleBuilder, Role, SUPER_PASSWORD, SUPER_USER,
};
pub use sasl::{digest_jaas, kerberos_jaas, DIGEST_SERVER_NAME, JAAS_FILE};
pub use server::{ServerBuilder, ZkServer};
pub use shared::{chroot_for, keep_until_exit, shared_server, unique_chroot, CHROOT_PARENT};
pub use tempdir::{KEEP_DIRS_ENV, TMPDIR_ENV};
pub use tls::{CertificateAuthority, ClientAuth, Identity, ServerTls, TlsOptions};

// The README's examples, compiled and run with this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
