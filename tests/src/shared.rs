//! One server per test binary, and a unique chroot per test.
//!
//! Tests that only need isolation by path share one server: starting a JVM costs about a
//! second of CPU, so a suite of a hundred tests would otherwise spend minutes starting servers.
//! Tests that inject faults into the server or its connections start their own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::server::ZkServer;

/// Parent node of all chroots handed out by [`chroot_for`].
pub const CHROOT_PARENT: &str = "/zookeeper-testkit";

/// The server shared by all tests of this process, started on first use (blocking) and
/// killed when the process exits.
///
/// Panics with the start-up error (which names the setup command if ZooKeeper is missing),
/// since a test cannot run without its server.
pub fn shared_server() -> &'static ZkServer {
    static SHARED: OnceLock<Result<&'static ZkServer, String>> = OnceLock::new();
    let server = SHARED.get_or_init(|| match ZkServer::start_blocking() {
        Ok(server) => Ok(keep_until_exit(server)),
        Err(e) => Err(e.to_string()),
    });
    match server {
        Ok(server) => server,
        Err(e) => panic!("cannot start the shared ZooKeeper server: {e}"),
    }
}

/// Keeps `server` for the rest of the process, for a server of a special kind (TLS, other
/// settings) that the tests of one binary share through a `static` `OnceLock`: like
/// [`shared_server`], it is killed and its directories removed when the process exits.
pub fn keep_until_exit(server: ZkServer) -> &'static ZkServer {
    if let Some(pid) = server.pid() {
        for dir in server.dirs() {
            crate::process::kill_at_exit(pid, dir);
        }
    }
    Box::leak(Box::new(server))
}

/// A path unique to this process and call, e.g. `/zookeeper-testkit/my_test-4242-7`; not created.
pub fn unique_chroot(test_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name: String = test_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{CHROOT_PARENT}/{name}-{}-{n}", std::process::id())
}

/// A fresh chroot for one test on the [`shared_server`], created (empty) on it.
///
/// Connect with `shared_server().connect_string_with_chroot(&chroot)`.
pub fn chroot_for(test_name: &str) -> String {
    let chroot = unique_chroot(test_name);
    if let Err(e) = shared_server().create_path(&chroot) {
        panic!("cannot create chroot {chroot} on the shared server: {e}");
    }
    chroot
}
