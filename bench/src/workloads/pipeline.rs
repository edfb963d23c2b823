//! Workload 1: pipelined getData throughput against the real server, 1,000 in flight on one
//! session, our client called from every place (tasks of either runtime, a loop in `main`,
//! the blocking API) against the raw socket.

use super::throughput::{compare, Setup, Targets};
use super::{ensure_node, NODE};
use crate::report::{Report, Target};
use crate::{BenchError, Ctx};

/// The same for every calling shape.
const TARGETS: Targets = Targets {
    throughput_ratio: Some(Target::AtLeast(0.95)),
    cpu_ratio: Some(Target::AtMost(1.5)),
    ours_ops: None,
};

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    ensure_node(ctx).await?;
    compare(
        Setup {
            name: "pipeline",
            addr: ctx.zk,
            path: NODE,
            total: ctx.opts.count(200_000),
            window: 1_000,
            sessions: 1,
            rounds: ctx.opts.heavy_rounds(),
            excluded: &[],
            targets: [TARGETS; 4],
            mt: &ctx.mt,
        },
        report,
    )
    .await
}
