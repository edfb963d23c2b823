//! Picking loopback ports that are free now and not handed out twice by this process.
//!
//! Ports come from below the kernel's default ephemeral range (32768+), so outgoing
//! connections of other tests cannot take them between the check and the server's bind.
//! Another process can still race us; server start-up detects a failed bind and retries
//! with new ports.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

use crate::error::{Error, Result};

const FIRST: u16 = 20_000;
const END: u16 = 32_000;

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A loopback TCP port that nothing listens on right now and that this process has not
/// handed out before.
pub fn free_port() -> Result<u16> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    for _ in 0..1000 {
        let port = FIRST + (random() % u64::from(END - FIRST)) as u16;
        if handed_out.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            handed_out.insert(port);
            return Ok(port);
        }
    }
    Err(Error::io(
        "picking a free loopback port",
        std::io::Error::new(std::io::ErrorKind::AddrInUse, "no free port found"),
    ))
}

fn random() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(std::process::id() as u64);
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}
