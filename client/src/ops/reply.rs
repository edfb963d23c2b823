//! The future every operation returns, and where its errors get their context.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::kept_path::KeptPath;
use crate::client::Call;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::RequestTimer;
use crate::packet::RawReply;

/// The future of one operation: waits for the reply of `call` and decodes it with `decode`.
/// Every error of the operation, found before sending (`call` is then an error) or in the
/// reply, passes once through `locate`, which names the operation and its path: the one place
/// where an operation's errors get their context, and its outcome its metrics.
pub(crate) fn reply<T, L, D>(mut call: Result<Call>, locate: L, decode: D) -> Reply<L, D>
where
    L: Locate,
    D: FnOnce(Result<RawReply>) -> Result<T> + Unpin,
{
    let metrics = call.as_mut().ok().map(Call::take_metrics);
    Reply {
        timer: RequestTimer::start(locate.operation(), metrics),
        call,
        finish: Some((locate, decode)),
    }
}

/// See [`reply`]. Written by hand rather than as an `async` block, which would hold its
/// captures twice: every operation returns one of these, and futures are moved on every call.
pub(crate) struct Reply<L, D> {
    call: Result<Call>,
    timer: RequestTimer,
    /// Taken when the reply is in.
    finish: Option<(L, D)>,
}

impl<T, L, D> Future for Reply<L, D>
where
    L: Locate,
    D: FnOnce(Result<RawReply>) -> Result<T> + Unpin,
{
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        let reply = match &mut this.call {
            Ok(call) => match Pin::new(call).poll(cx) {
                Poll::Ready(reply) => reply,
                Poll::Pending => return Poll::Pending,
            },
            // The placeholder is never seen: the future is done after this poll.
            Err(e) => Err(std::mem::replace(e, ErrorKind::Closed.into())),
        };
        let (locate, decode) = this
            .finish
            .take()
            .expect("operation future polled after completion");
        let outcome = decode(reply).map_err(|e| locate.locate(e));
        this.timer.finish(&outcome);
        if let Ok(call) = &mut this.call {
            call.finish_span(&outcome);
        }
        Poll::Ready(outcome)
    }
}

/// Names an operation, and places its errors (see [`reply`]).
pub(crate) trait Locate: Unpin {
    /// The client method, e.g. `"get_data"`.
    fn operation(&self) -> &'static str;
    /// Names the operation (and its path) in `e`.
    fn locate(self, e: Error) -> Error;
}

/// A [`Locate`] for an operation and, if it takes one, its path as the caller gave it.
pub(crate) struct At {
    operation: &'static str,
    path: Option<KeptPath>,
}

impl Locate for At {
    fn operation(&self) -> &'static str {
        self.operation
    }

    fn locate(self, e: Error) -> Error {
        e.at(self.operation, self.path.map(KeptPath::into_string))
    }
}

/// A [`Locate`] for [`reply`]: names `operation` and `path` as the caller gave it. The path is
/// copied now, since the future outlives the caller's borrow.
pub(crate) fn at(operation: &'static str, path: &str) -> At {
    At {
        operation,
        path: Some(KeptPath::new(path)),
    }
}

/// A [`Locate`] for [`reply`]: names `operation`, which takes no path.
pub(crate) fn named(operation: &'static str) -> At {
    At {
        operation,
        path: None,
    }
}

/// A [`Locate`] for `operation` whose errors `locate` places itself.
pub(crate) struct LocateWith<F> {
    operation: &'static str,
    locate: F,
}

impl<F: FnOnce(Error) -> Error + Unpin> Locate for LocateWith<F> {
    fn operation(&self) -> &'static str {
        self.operation
    }

    fn locate(self, e: Error) -> Error {
        (self.locate)(e)
    }
}

/// See [`LocateWith`].
pub(crate) fn locate_with<F: FnOnce(Error) -> Error + Unpin>(
    operation: &'static str,
    locate: F,
) -> LocateWith<F> {
    LocateWith { operation, locate }
}
