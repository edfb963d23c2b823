//! The client against a hostile server and a careless caller. The server here is scripted,
//! because a real ZooKeeper never sends malformed frames, lies about lengths, floods
//! notifications or accepts handshakes only to close: each test asserts the typed outcome and
//! bounds on time, on connection attempts and, where the server could make it grow, on memory.

#[path = "../common/mod.rs"]
mod common;

mod builder;
mod flood;
mod foreign;
mod framing;
mod gathered_writes;
mod late_handshake;
mod meter;
mod notifications;
mod oversized;
mod recursive_flood;
mod runtimes;
mod server;
mod silence;
mod storm;
mod wire_order;
