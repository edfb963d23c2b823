//! Our client, driven the way the getData workloads need it.

use std::net::SocketAddr;

use crate::BenchError;

/// Placeholder until the client crate exposes its API.
pub struct OurClient;

pub async fn connect(_addr: SocketAddr) -> Result<OurClient, BenchError> {
    Err("the client is not available yet".into())
}

pub async fn pipelined_get_data(
    _client: &OurClient,
    _path: &str,
    _total: u64,
    _window: usize,
) -> Result<(), BenchError> {
    Err("the client is not available yet".into())
}

pub async fn get_data(_client: &OurClient, _path: &str) -> Result<(), BenchError> {
    Err("the client is not available yet".into())
}

pub async fn close(_client: OurClient) {}
