//! Server-side counts read through `mntr`, so that Curator and our recipes are measured by the
//! same meter.

use std::net::SocketAddr;

use crate::BenchError;

/// Watch notifications the server has sent so far: the sums of the per-event watcher counts.
pub async fn notifications_sent(zk: SocketAddr) -> Result<i64, BenchError> {
    let mntr = zookeeper_testkit::mntr(zk).await?;
    let mut total = 0;
    for event in ["created", "deleted", "children", "changed"] {
        let key = format!("zk_sum_node_{event}_watch_count");
        total += mntr
            .get_i64(&key)
            .ok_or_else(|| format!("mntr has no {key}"))?;
    }
    Ok(total)
}

/// Packets the server has received so far (requests, pings and handshakes, all sessions).
pub async fn packets_received(zk: SocketAddr) -> Result<i64, BenchError> {
    let mntr = zookeeper_testkit::mntr(zk).await?;
    mntr.get_i64("zk_packets_received")
        .ok_or_else(|| "mntr has no zk_packets_received".into())
}
