//! Our client, driven the way the getData workloads need it.

use std::net::SocketAddr;

use zookeeper_tokio::Client;

use crate::BenchError;

pub async fn connect(addr: SocketAddr) -> Result<Client, BenchError> {
    Ok(Client::connect(&addr.to_string()).await?)
}

/// `total` getData of `path` with `window` in flight: `window` tasks on one session, each
/// issuing its share back to back, the way a service's request handlers would share a client.
///
/// Tasks rather than one `FuturesUnordered`: with tokio's cooperative budget, a
/// `FuturesUnordered` of a thousand oneshot-backed futures spends most of its time re-polling
/// futures that yield only because the budget ran out (measured: 0.36 M vs 1.0 M ops/s).
pub async fn pipelined_get_data(
    client: &Client,
    path: &str,
    total: u64,
    window: usize,
) -> Result<(), BenchError> {
    let window = window.min(total as usize).max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..window as u64 {
        // Spread the remainder so that exactly `total` requests are made.
        let share = total / window as u64 + u64::from(i < total % window as u64);
        let client = client.clone();
        let path = path.to_string();
        tasks.spawn(async move {
            for _ in 0..share {
                client.get_data(&path).await?;
            }
            Ok::<(), zookeeper_tokio::Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// `total` getData of `path` from one loop keeping `window` calls in flight, each awaited in
/// call order: a batch job, a migration script, a command-line tool, any `main` that calls
/// the client directly.
pub async fn windowed_get_data(
    client: &Client,
    path: &str,
    total: u64,
    window: usize,
) -> Result<(), BenchError> {
    let window = window.max(1);
    let mut in_flight = std::collections::VecDeque::with_capacity(window);
    for _ in 0..total {
        if in_flight.len() == window {
            if let Some(call) = in_flight.pop_front() {
                call.await?;
            }
        }
        in_flight.push_back(client.get_data(path));
    }
    while let Some(call) = in_flight.pop_front() {
        call.await?;
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
