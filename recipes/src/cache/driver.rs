//! The task behind a cache: sets the watch, makes the engine's reads, feeds it the events and
//! the replies in the order the engine needs (the events a reply may have observed first),
//! ends each reconnect stretch once the client has reported what it missed, and moves to a
//! new session after expiry.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, trace, Instrument};
use zookeeper_tokio::{AddWatchMode, Client, ErrorKind, EventType, SessionState, WatchedEvent};

use super::engine::{Engine, Outcome, Request};
use super::expect::Kind;
use super::shared::Shared;
use crate::cache::view::{CachedNode, NodeState};
use crate::error::Error;
use crate::session::sessions::Sessions;
use crate::session::wait::{reconnected_or_ended, terminal_error, watch_ended};

/// What a cache watches and keeps.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub root: String,
    pub recursive: bool,
    pub stats_only: bool,
    pub max_queued_events: usize,
    pub max_pending: usize,
}

/// Starts the cache's task; it stops when `stop` is cancelled.
pub(crate) fn spawn(sessions: Sessions, options: Options) -> (Arc<Shared>, CancellationToken) {
    let shared = Arc::new(Shared::new(options.max_queued_events));
    let stop = CancellationToken::new();
    let task_shared = shared.clone();
    let task_stop = stop.clone();
    let span = tracing::debug_span!("cache", root = options.root);
    tokio::spawn(
        async move {
            tokio::select! {
                biased;
                _ = task_stop.cancelled() => task_shared.end(Error::Closed),
                e = run(sessions, options, task_shared.clone()) => task_shared.end(e),
            }
        }
        .instrument(span),
    );
    (shared, stop)
}

/// Why a session's part of the run ended.
enum End {
    /// The session is over.
    Session(Error),
    /// Our watch was removed (by `remove_watches` on this session): set it again.
    WatchRemoved,
}

/// Runs until no session can be had; returns why, naming the cache.
async fn run(sessions: Sessions, options: Options, shared: Arc<Shared>) -> Error {
    let what = if options.recursive {
        "tree cache"
    } else {
        "node cache"
    };
    let root = options.root.clone();
    follow_sessions(sessions, options, shared)
        .await
        .at(what, &root)
}

async fn follow_sessions(sessions: Sessions, options: Options, shared: Arc<Shared>) -> Error {
    let mut engine = Engine::new(
        &options.root,
        options.recursive,
        shared,
        options.max_pending,
    );
    let mut client = sessions.client();
    loop {
        match session(&client, &mut engine, &options).await {
            End::WatchRemoved => continue,
            End::Session(e) if e.is_session_terminal() => match sessions.replace(&client).await {
                Ok(next) => {
                    if next.session_id() != client.session_id() {
                        info!(root = options.root, "cache moves to a new session");
                    }
                    client = next;
                }
                Err(e) => return e,
            },
            End::Session(e) => return e,
        }
    }
}

/// What a spawned read reports.
enum Done {
    Read(u64, Outcome<NodeState>),
    List(u64, Outcome<Option<Vec<String>>>),
    Probe(u64, Outcome<Option<i64>>),
    /// The barrier `add_watch` of stretch `epoch` returned.
    Barrier(u64, zookeeper_tokio::Result<()>),
    /// The read after the barrier returned.
    Check(u64, zookeeper_tokio::Result<()>),
    /// A read failed because the session is over.
    Over(zookeeper_tokio::Error),
}

/// Where the end of a reconnect stretch stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Barrier {
    Idle,
    /// A stretch is open: set the watch again once connected. The client answers that call
    /// only once its own reads after the reconnect are done, that is once every change missed
    /// while cut off has been reported on our stream.
    Needed,
    Adding(u64),
    /// The call returned: one more request must come back with no disconnect seen, since a
    /// lost connection also releases such a call.
    Checking(u64),
}

async fn session(client: &Client, engine: &mut Engine, options: &Options) -> End {
    let mode = if options.recursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    };
    let mut states = client.state_watcher();
    states.borrow_and_update();
    let mut watch = loop {
        match client.add_watch(&options.root, mode).await {
            Ok(watch) => break watch,
            Err(e) if e.is_retryable() => {
                if let Err(e) = reconnected_or_ended(client).await {
                    return End::Session(e);
                }
            }
            Err(e) => return End::Session(e.into()),
        }
    };
    debug!(root = options.root, session = %client.session_id(), "cache watch set");
    engine.start_fresh();
    let mut tasks: JoinSet<Done> = JoinSet::new();
    let mut barrier = Barrier::Idle;
    let mut epoch = 0u64;
    if let Err(end) = saw_state(
        &mut states,
        engine,
        engine.position(),
        &mut epoch,
        &mut barrier,
    ) {
        return end;
    }
    loop {
        let connected = client.state().is_connected();
        for request in engine.requests(connected) {
            spawn_request(&mut tasks, client, options.stats_only, request);
        }
        if barrier == Barrier::Needed && connected {
            barrier = Barrier::Adding(epoch);
            let call = client.add_watch(&options.root, mode);
            let e = epoch;
            tasks.spawn(async move { Done::Barrier(e, call.await.map(drop)) });
        }
        // Biased (a simulated run is a function of its seed), with the events last: they
        // alone can keep coming, and every branch takes the events already there first.
        tokio::select! {
            biased;
            done = tasks.join_next(), if !tasks.is_empty() => {
                let mut next = done;
                // Every reply ready now, then one step of the view.
                while let Some(done) = next {
                    if let Ok(done) = done {
                        // The events the reply may have observed come first.
                        let from = engine.position();
                        if let Err(end) = take(None, &mut watch, engine) {
                            return end;
                        }
                        if let Err(end) = saw_state(&mut states, engine, from, &mut epoch, &mut barrier) {
                            return end;
                        }
                        let answered = answer(done, engine, &mut barrier, client, options, &mut tasks);
                        if let Err(end) = answered {
                            return end;
                        }
                    }
                    next = tasks.try_join_next();
                }
            }
            changed = states.changed() => {
                if changed.is_err() {
                    return End::Session(Error::Client(ErrorKind::Closed.into()));
                }
                let from = engine.position();
                if let Err(end) = take(None, &mut watch, engine) {
                    return end;
                }
                // `changed` marked the state seen: look at it here.
                if let Err(end) = new_state(*states.borrow_and_update(), engine, from, &mut epoch, &mut barrier) {
                    return end;
                }
            }
            event = watch.next() => {
                let Some(event) = event else {
                    return End::Session(terminal_error(client.state()));
                };
                let from = engine.position();
                if let Err(end) = take(Some(event), &mut watch, engine) {
                    return end;
                }
                if let Err(end) = saw_state(&mut states, engine, from, &mut epoch, &mut barrier) {
                    return end;
                }
            }
        }
        engine.step();
    }
}

/// Hands a completed read to the engine, or moves the barrier on.
fn answer(
    done: Done,
    engine: &mut Engine,
    barrier: &mut Barrier,
    client: &Client,
    options: &Options,
    tasks: &mut JoinSet<Done>,
) -> Result<(), End> {
    match done {
        Done::Read(ticket, outcome) => engine.on_read(ticket, outcome),
        Done::List(ticket, outcome) => engine.on_listing(ticket, outcome),
        Done::Probe(ticket, outcome) => {
            for request in engine.on_probe(ticket, outcome) {
                spawn_request(tasks, client, options.stats_only, request);
            }
        }
        Done::Barrier(e, result) if *barrier == Barrier::Adding(e) => match result {
            Ok(()) => {
                *barrier = Barrier::Checking(e);
                let call = client.exists(&options.root);
                tasks.spawn(async move { Done::Check(e, call.await.map(drop)) });
            }
            Err(err) if err.is_session_terminal() => return Err(End::Session(err.into())),
            Err(_) => *barrier = Barrier::Needed,
        },
        Done::Check(e, result) if *barrier == Barrier::Checking(e) => match result {
            Ok(()) => {
                *barrier = Barrier::Idle;
                engine.end_stretch();
            }
            Err(err) if err.is_session_terminal() => return Err(End::Session(err.into())),
            Err(_) => *barrier = Barrier::Needed,
        },
        Done::Barrier(..) | Done::Check(..) => {}
        Done::Over(e) => return Err(End::Session(e.into())),
    }
    Ok(())
}

/// Feeds the engine `first` and every event the stream holds now.
fn take(
    first: Option<WatchedEvent>,
    watch: &mut zookeeper_tokio::PersistentWatcher,
    engine: &mut Engine,
) -> Result<(), End> {
    let mut batch = Vec::new();
    let mut end = None;
    for event in first
        .into_iter()
        .chain(std::iter::from_fn(|| watch.try_next()))
    {
        match event.event_type {
            EventType::NodeCreated => batch.push((Kind::Created, event.path)),
            EventType::NodeDataChanged => batch.push((Kind::Changed, event.path)),
            EventType::NodeDeleted => batch.push((Kind::Deleted, event.path)),
            EventType::NodeChildrenChanged => batch.push((Kind::Children, event.path)),
            EventType::PersistentWatchRemoved => {
                end = Some(End::WatchRemoved);
                break;
            }
            EventType::None => {
                end = Some(End::Session(watch_ended(&event)));
                break;
            }
            _ => {}
        }
    }
    if !batch.is_empty() {
        trace!(events = ?batch, "watch events taken");
    }
    engine.on_events(batch);
    end.map_or(Ok(()), Err)
}

/// Looks at the session state: a change since last looked means the connection may have been
/// lost, so the events taken from position `from` on are unordered until the barrier.
fn saw_state(
    states: &mut watch::Receiver<SessionState>,
    engine: &mut Engine,
    from: u64,
    epoch: &mut u64,
    barrier: &mut Barrier,
) -> Result<(), End> {
    if !states.has_changed().unwrap_or(true) {
        return Ok(());
    }
    let state = *states.borrow_and_update();
    new_state(state, engine, from, epoch, barrier)
}

fn new_state(
    state: SessionState,
    engine: &mut Engine,
    from: u64,
    epoch: &mut u64,
    barrier: &mut Barrier,
) -> Result<(), End> {
    if state.is_terminal() {
        return Err(End::Session(terminal_error(state)));
    }
    *epoch += 1;
    engine.begin_stretch(from);
    *barrier = Barrier::Needed;
    debug!(
        ?state,
        "session state changed: waiting for the missed changes"
    );
    Ok(())
}

fn spawn_request(tasks: &mut JoinSet<Done>, client: &Client, stats_only: bool, request: Request) {
    // Each call is queued by the client when made, here, in the engine's order.
    match request {
        Request::Read { ticket, path } if stats_only => {
            let call = client.exists(&path);
            tasks.spawn(async move {
                match call.await {
                    Ok(stat) => Done::Read(ticket, Outcome::Done(present(None, stat))),
                    Err(e) => failed(e, |o| Done::Read(ticket, o)),
                }
            });
        }
        Request::Read { ticket, path } => {
            let call = client.get_data(&path);
            let client = client.clone();
            tasks.spawn(async move {
                match call.await {
                    // Copied out of the reply: a slice would keep the whole frame alive for
                    // as long as the node is cached.
                    Ok((data, stat)) => Done::Read(
                        ticket,
                        Outcome::Done(NodeState::Present(CachedNode {
                            data: Some(bytes::Bytes::copy_from_slice(&data)),
                            stat,
                        })),
                    ),
                    Err(e) if e == ErrorKind::NoNode => {
                        Done::Read(ticket, Outcome::Done(NodeState::Absent))
                    }
                    // Seen but not readable: cached with its stat only.
                    Err(e) if e == ErrorKind::NoAuth => match client.exists(&path).await {
                        Ok(stat) => Done::Read(ticket, Outcome::Done(present(None, stat))),
                        Err(e) => failed(e, |o| Done::Read(ticket, o)),
                    },
                    Err(e) => failed(e, |o| Done::Read(ticket, o)),
                }
            });
        }
        Request::List { ticket, path } => {
            let call = client.get_children(&path);
            tasks.spawn(async move {
                match call.await {
                    Ok((names, _)) => Done::List(ticket, Outcome::Done(Some(names))),
                    Err(e) if e == ErrorKind::NoNode => Done::List(ticket, Outcome::Done(None)),
                    Err(e) => failed(e, |o| Done::List(ticket, o)),
                }
            });
        }
        Request::Probe { ticket, path } => {
            let call = client.exists(&path);
            tasks.spawn(async move {
                match call.await {
                    Ok(stat) => {
                        Done::Probe(ticket, Outcome::Done(stat.map(|s| s.pzxid.max(s.mzxid))))
                    }
                    Err(e) => failed(e, |o| Done::Probe(ticket, o)),
                }
            });
        }
    }
}

fn present(data: Option<bytes::Bytes>, stat: Option<zookeeper_tokio::Stat>) -> NodeState {
    match stat {
        Some(stat) => NodeState::Present(CachedNode { data, stat }),
        None => NodeState::Absent,
    }
}

/// A failed read: the session's end, or worth another try. Anything else (an ACL refusing
/// even `exists`, say) is retried too: the view must not pretend to know the node.
fn failed<T>(e: zookeeper_tokio::Error, done: impl FnOnce(Outcome<T>) -> Done) -> Done {
    if e.is_session_terminal() {
        Done::Over(e)
    } else {
        debug!(error = %e, "cache read failed; it will be made again");
        done(Outcome::Retry)
    }
}

/// A running cache, owned by its handles: the task stops when the last one is dropped.
pub(crate) struct Running {
    pub shared: Arc<Shared>,
    pub sessions: Sessions,
    pub path: String,
    stop: CancellationToken,
}

impl Running {
    /// Checks the options and starts the task (inside a tokio runtime).
    pub fn start(sessions: Sessions, options: Options) -> crate::error::Result<Running> {
        if options.root != "/" {
            crate::node::ensure_path::validate(&options.root)?;
        }
        let path = options.root.clone();
        let (shared, stop) = spawn(sessions.clone(), options);
        Ok(Running {
            shared,
            sessions,
            path,
            stop,
        })
    }

    /// Waits for the first complete view; fails if the cache stopped first.
    pub async fn ready(&self) -> crate::error::Result<()> {
        let mut status = self.shared.status();
        let status = status
            .wait_for(|s| *s != super::shared::Status::Starting)
            .await
            .map_err(|_| Error::Closed)?;
        match &*status {
            super::shared::Status::Ended(e) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Why the cache stopped, if it did.
    pub fn ended(&self) -> Option<Error> {
        match &*self.shared.status().borrow() {
            super::shared::Status::Ended(e) => Some(e.clone()),
            _ => None,
        }
    }

    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
