//! Workload `spans`: what the client's span per request costs where the client is the
//! bottleneck (the instant server). Sequential getData latency against the raw socket, and
//! pipelined getData throughput and CPU per request on one session, our client on both
//! runtime shapes. The figures mean something only beside the same workload of a build with
//! the feature `tracing-spans` toggled (see BENCHMARKS.md, "What spans cost"); the run's
//! header says which this is.

use super::latency::measure_against;
use super::throughput::{compare, Setup, Targets};
use super::{NODE, NODE_DATA_LEN};
use crate::instant_server::InstantServer;
use crate::report::Report;
use crate::{BenchError, Ctx};

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let server = InstantServer::start(NODE_DATA_LEN)?;
    let n = ctx.opts.count(20_000) as usize;
    measure_against("spans.latency", ctx, server.addr(), n, [None; 4], report).await?;
    compare(
        Setup {
            name: "spans.instant.1s",
            addr: server.addr(),
            path: NODE,
            total: ctx.opts.count(1_000_000),
            window: 1_000,
            sessions: 1,
            rounds: ctx.opts.rounds,
            excluded: &[server.clock()],
            targets: [Targets::default(); 4],
            mt: &ctx.mt,
        },
        report,
    )
    .await
}
