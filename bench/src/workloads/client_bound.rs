//! Workload 3: client-bound throughput against the instant in-process server, so that the
//! client is the bottleneck; one session and 8 sessions, our client on both runtime shapes,
//! with the raw socket as the limit.

use super::throughput::{compare, Setup, Targets};
use super::{NODE, NODE_DATA_LEN};
use crate::instant_server::InstantServer;
use crate::report::{Report, Target};
use crate::{BenchError, Ctx};

pub async fn run(ctx: &Ctx, report: &mut Report) -> Result<(), BenchError> {
    let server = InstantServer::start(NODE_DATA_LEN)?;
    for sessions in [1, 8] {
        compare(
            Setup {
                name: &format!("instant.{sessions}s"),
                addr: server.addr(),
                path: NODE,
                total: ctx.opts.count(1_000_000),
                window: 1_000,
                sessions,
                rounds: ctx.opts.rounds,
                excluded: &[server.clock()],
                current_thread: Targets {
                    throughput_ratio: Some(Target::AtLeast(0.3)),
                    cpu_ratio: None,
                    ours_ops: (sessions == 1).then_some(Target::AtLeast(1_500_000.0)),
                },
                multi_thread: Targets {
                    ours_ops: (sessions == 1).then_some(Target::AtLeast(1_000_000.0)),
                    ..Targets::default()
                },
                mt: &ctx.mt,
            },
            report,
        )
        .await?;
    }
    Ok(())
}
