//! The workloads, one file each.

mod blocking;
mod cache;
mod client_bound;
mod codec;
mod latency;
mod locks;
mod pipeline;
mod scale;
mod spans;
mod subtree;
mod throughput;
mod tls;
mod wide_tree;

use crate::report::Report;
use crate::{BenchError, Ctx};

/// Path of the 100-byte node every getData workload reads.
pub const NODE: &str = "/zk-bench-node";
/// Size of its data.
pub const NODE_DATA_LEN: usize = 100;

pub async fn run(name: &str, ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    match name {
        "pipeline" => pipeline::run(ctx, report).await,
        "pipeline-tls" => tls::pipeline(ctx, report).await,
        "latency-tls" => tls::latency(ctx, report).await,
        "latency" => latency::run(ctx, report).await,
        "client-bound" => client_bound::run(ctx, report).await,
        "locks" => locks::run(ctx, report).await,
        "codec" => codec::run(ctx, report).await,
        "scale" => scale::run(ctx, report).await,
        "cache" => cache::run(ctx, report).await,
        "spans" => spans::run(ctx, report).await,
        "blocking" => blocking::run(ctx, report).await,
        other => {
            report.not_measured(other, "", "not implemented yet");
            Ok(())
        }
    }
}

/// Creates the node the getData workloads read on the real server.
pub async fn ensure_node(ctx: &Ctx) -> Result<(), BenchError> {
    ensure_node_at(ctx.zk).await
}

/// Creates the node the getData workloads read on the server at `addr`.
pub async fn ensure_node_at(addr: std::net::SocketAddr) -> Result<(), BenchError> {
    let mut raw = crate::raw_socket::RawSession::connect(addr).await?;
    raw.ensure_node(NODE, &[b'x'; NODE_DATA_LEN]).await?;
    raw.close().await?;
    Ok(())
}
