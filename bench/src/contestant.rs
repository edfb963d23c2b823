//! The getData contestants behind one interface: the raw socket (the limit) and our client
//! called from each place a program calls it from.

use std::future::Future;
use std::net::SocketAddr;

use futures_util::future::try_join_all;
use tokio::runtime::Handle;
use zookeeper_tokio::Client;

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

    /// The contestant's name in figure names, for tasks of this runtime.
    pub fn name(self) -> &'static str {
        Caller::Tasks(self).name()
    }
}

/// Where our client's calls are made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// Tasks of the runtime the client lives on.
    Tasks(Shape),
    /// A thread outside the multi-thread runtime's workers blocking on the calls, the client
    /// living on that runtime: the body of `#[tokio::main]`, which runs on the main thread.
    Main,
    /// A plain thread through the blocking API, the session on the thread it starts.
    Blocking,
}

impl Caller {
    /// Every calling shape, in the order figures are printed.
    pub const ALL: [Caller; 4] = [
        Caller::Tasks(Shape::CurrentThread),
        Caller::Tasks(Shape::MultiThread),
        Caller::Main,
        Caller::Blocking,
    ];

    /// The contestant's name in figure names: `ours` and `ours_mt` keep the names of earlier
    /// runs.
    pub fn name(self) -> &'static str {
        match self {
            Caller::Tasks(Shape::CurrentThread) => "ours",
            Caller::Tasks(Shape::MultiThread) => "ours_mt",
            Caller::Main => "ours_mt_main",
            Caller::Blocking => "ours_blocking",
        }
    }

    /// The position of this shape in [`Caller::ALL`] (and in arrays of targets).
    pub fn index(self) -> usize {
        Caller::ALL
            .iter()
            .position(|c| *c == self)
            .expect("every caller is listed")
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

/// Runs `f` on a plain thread (outside every runtime) and awaits its result, so that the
/// bench's runtime, and any session on it, keep running meanwhile.
pub async fn on_plain_thread<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BenchError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    Ok(rx.await?)
}

/// Our client, connected for a caller: the blocking API has a handle of its own.
pub enum Ours {
    Async(Client),
    Blocking(zookeeper_tokio::blocking::Client),
}

impl Ours {
    /// Connects a session where `caller` wants it: on the runtime the tasks run on, on the
    /// multi-thread runtime for `Main`, on a session thread of its own for `Blocking`.
    pub async fn connect(
        caller: Caller,
        addr: SocketAddr,
        mt: &Handle,
    ) -> Result<Ours, BenchError> {
        match caller {
            Caller::Tasks(shape) => {
                Ok(Ours::Async(on_shape(shape, mt, ours::connect(addr)).await?))
            }
            Caller::Main => Ok(Ours::Async(
                on_shape(Shape::MultiThread, mt, ours::connect(addr)).await?,
            )),
            Caller::Blocking => {
                let connect = move || zookeeper_tokio::blocking::Client::connect(&addr.to_string());
                Ok(Ours::Blocking(on_plain_thread(connect).await??))
            }
        }
    }

    /// Closes the session from where it lives.
    pub async fn close(self, caller: Caller, mt: &Handle) -> Result<(), BenchError> {
        match self {
            Ours::Async(client) => {
                let shape = match caller {
                    Caller::Tasks(shape) => shape,
                    Caller::Main | Caller::Blocking => Shape::MultiThread,
                };
                on_shape(shape, mt, async move {
                    ours::close(client).await;
                    Ok(())
                })
                .await
            }
            Ours::Blocking(client) => on_plain_thread(move || client.close()).await,
        }
    }

    /// Runs `work` on the async handle from where `caller` calls: a task of the client's
    /// runtime, a thread blocking on the multi-thread runtime, or a plain thread waiting
    /// through the blocking API's `block_on`.
    pub async fn call_from<F, Fut, T>(
        &self,
        caller: Caller,
        mt: &Handle,
        work: F,
    ) -> Result<T, BenchError>
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, BenchError>> + Send + 'static,
        T: Send + 'static,
    {
        match (caller, self) {
            (Caller::Tasks(shape), Ours::Async(client)) => {
                on_shape(shape, mt, work(client.clone())).await
            }
            (Caller::Main, Ours::Async(client)) => {
                let work = work(client.clone());
                let mt = mt.clone();
                on_plain_thread(move || mt.block_on(work)).await?
            }
            (Caller::Blocking, Ours::Blocking(client)) => {
                let client = client.clone();
                on_plain_thread(move || client.block_on(work(client.as_async().clone()))).await?
            }
            _ => Err("a client connected for another caller".into()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contestant {
    /// Raw pipelined socket.
    Limit,
    /// Our client, called from one place.
    Ours(Caller),
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
        Contestant::Ours(Caller::Tasks(shape)) => on_shape(shape, mt, tasks_pipelined(run)).await,
        Contestant::Ours(caller) => loop_pipelined(caller, run, mt).await,
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

/// Tasks of the client's runtime sharing the window (see [`ours::pipelined_get_data`]).
async fn tasks_pipelined(run: Run) -> Result<Sample, BenchError> {
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

/// One loop per session keeping the window in flight, awaited in call order (see
/// [`ours::windowed_get_data`]), run from outside the workers (`Main`: one thread for every
/// session) or through the blocking API (a thread per session, each on its own session).
async fn loop_pipelined(caller: Caller, run: Run, mt: &Handle) -> Result<Sample, BenchError> {
    let per_session = run.total / run.sessions as u64;
    let ops = per_session * run.sessions as u64;
    let mut clients = Vec::new();
    for _ in 0..run.sessions {
        clients.push(Ours::connect(caller, run.addr, mt).await?);
    }
    let (path, window) = (run.path.clone(), run.window);
    let sample = measure::throughput(ops, &run.excluded, async {
        match caller {
            Caller::Main => {
                let handles = clients.iter().filter_map(|c| match c {
                    Ours::Async(c) => Some(c.clone()),
                    Ours::Blocking(_) => None,
                });
                let handles: Vec<Client> = handles.collect();
                let mt = mt.clone();
                on_plain_thread(move || {
                    mt.block_on(try_join_all(
                        handles
                            .iter()
                            .map(|c| ours::windowed_get_data(c, &path, per_session, window)),
                    ))
                })
                .await?
                .map(|_| ())
            }
            _ => try_join_all(clients.iter().map(|c| {
                let path = path.clone();
                c.call_from(caller, mt, move |client| async move {
                    ours::windowed_get_data(&client, &path, per_session, window).await
                })
            }))
            .await
            .map(|_| ()),
        }
    })
    .await?;
    for client in clients {
        client.close(caller, mt).await?;
    }
    Ok(sample)
}
