//! Workload 3: client-bound throughput against the instant in-process server, so that the
//! client is the bottleneck; one session and 8 sessions, our client called from every place,
//! with the raw socket as the limit.

use super::throughput::{compare, Setup, Targets};
use super::{NODE, NODE_DATA_LEN};
use crate::contestant::{Caller, Shape};
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
                targets: Caller::ALL.map(|caller| {
                    // No shape below 1 M ops/s on one session; the current-thread one, which
                    // nothing crosses threads in, higher, and near the raw socket.
                    let ops = if caller == Caller::Tasks(Shape::CurrentThread) {
                        1_500_000.0
                    } else {
                        1_000_000.0
                    };
                    Targets {
                        throughput_ratio: (caller == Caller::Tasks(Shape::CurrentThread))
                            .then_some(Target::AtLeast(0.3)),
                        cpu_ratio: None,
                        ours_ops: (sessions == 1).then_some(Target::AtLeast(ops)),
                    }
                }),
                mt: &ctx.mt,
            },
            report,
        )
        .await?;
    }
    Ok(())
}
