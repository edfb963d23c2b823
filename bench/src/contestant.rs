//! The getData contestants behind one interface: the raw socket (the limit) and our client on
//! each runtime shape.

use std::future::Future;
use std::net::SocketAddr;

use futures_util::future::try_join_all;
use tokio::runtime::Handle;

use crate::measure::{self, Sample};
use crate::raw_socket::RawSession;
use crate::rusage::ThreadClock;
use crate::{ours, BenchError};

/// The runtime our client (its session task and its callers) runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A current-thread runtime: callers and the session task share one thread.
    CurrentThread,
    /// The multi-thread runtime (`#[tokio::main]`'s shape), with `--threads` workers (2 by
    /// default): callers and the session task are tasks any worker may run.
    MultiThread,
}

impl Shape {
    pub const BOTH: [Shape; 2] = [Shape::CurrentThread, Shape::MultiThread];

    /// The contestant's name in figure names: `ours` keeps the names of earlier runs.
    pub fn name(self) -> &'static str {
        match self {
            Shape::CurrentThread => "ours",
            Shape::MultiThread => "ours_mt",
        }
    }
}

/// Runs `work` on the runtime of `shape`: in place on the bench's own current-thread runtime,
/// or as a task of the multi-thread runtime (so that everything it starts, the client's session
/// task included, lives there).
pub async fn on_shape<F, T>(shape: Shape, mt: &Handle, work: F) -> Result<T, BenchError>
where
    F: Future<Output = Result<T, BenchError>> + Send + 'static,
    T: Send + 'static,
{
    match shape {
        Shape::CurrentThread => work.await,
        Shape::MultiThread => mt.spawn(work).await?,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contestant {
    /// Raw pipelined socket.
    Limit,
    /// Our client on a runtime shape.
    Ours(Shape),
}

/// What one pipelined run does.
#[derive(Clone, Debug)]
pub struct Run {
    pub addr: SocketAddr,
    pub path: String,
    pub total: u64,
    pub window: usize,
    pub sessions: usize,
    pub excluded: Vec<ThreadClock>,
}

/// `sessions` sessions each doing `total / sessions` getData of `path` with `window` in flight;
/// connecting and closing are not measured.
pub async fn pipelined(who: Contestant, run: Run, mt: &Handle) -> Result<Sample, BenchError> {
    match who {
        Contestant::Limit => limit_pipelined(run).await,
        Contestant::Ours(shape) => on_shape(shape, mt, ours_pipelined(run)).await,
    }
}

async fn limit_pipelined(run: Run) -> Result<Sample, BenchError> {
    let per_session = run.total / run.sessions as u64;
    let ops = per_session * run.sessions as u64;
    let mut raws = try_join_all((0..run.sessions).map(|_| RawSession::connect(run.addr))).await?;
    let sample = measure::throughput(ops, &run.excluded, async {
        try_join_all(
            raws.iter_mut()
                .map(|r| r.pipelined_get_data(&run.path, per_session, run.window)),
        )
        .await
        .map(|_| ())
    })
    .await?;
    for raw in raws {
        raw.close().await?;
    }
    Ok(sample)
}

async fn ours_pipelined(run: Run) -> Result<Sample, BenchError> {
    let per_session = run.total / run.sessions as u64;
    let ops = per_session * run.sessions as u64;
    let clients = try_join_all((0..run.sessions).map(|_| ours::connect(run.addr))).await?;
    let sample = measure::throughput(ops, &run.excluded, async {
        try_join_all(
            clients
                .iter()
                .map(|c| ours::pipelined_get_data(c, &run.path, per_session, run.window)),
        )
        .await
        .map(|_| ())
    })
    .await?;
    for client in clients {
        ours::close(client).await;
    }
    Ok(sample)
}
