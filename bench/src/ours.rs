//! Our client, driven the way the getData workloads need it.

use std::net::SocketAddr;

use futures_util::stream::{FuturesUnordered, StreamExt};
use zk_client::Client;

use crate::BenchError;

pub type OurClient = Client;

pub async fn connect(addr: SocketAddr) -> Result<Client, BenchError> {
    Ok(Client::connect(&addr.to_string()).await?)
}

/// `total` getData of `path` keeping `window` in flight: each completion queues the next, the
/// way an application fanning out reads would drive the client.
pub async fn pipelined_get_data(
    client: &Client,
    path: &str,
    total: u64,
    window: usize,
) -> Result<(), BenchError> {
    let mut in_flight = FuturesUnordered::new();
    let mut sent = 0u64;
    while sent < total && in_flight.len() < window {
        in_flight.push(client.get_data(path));
        sent += 1;
    }
    while let Some(reply) = in_flight.next().await {
        reply?;
        if sent < total {
            in_flight.push(client.get_data(path));
            sent += 1;
        }
    }
    Ok(())
}

pub async fn get_data(client: &Client, path: &str) -> Result<(), BenchError> {
    client.get_data(path).await?;
    Ok(())
}

pub async fn close(client: Client) {
    client.close().await;
}
