//! Work polled only while its hold is trusted.
//!
//! A recipe that runs the user's work for them (the leader selector's term) runs it in a task
//! of its own, and cancels that task once the hold is in doubt. Cancelling is not enough
//! across a pause: when a stopped process resumes, the work's timer, due long ago, and the
//! loss are ready at once, and the work's task may be polled first, on another worker or
//! earlier in the same turn. So the work is wrapped: before every poll the hold's state is
//! read, against the lease clock, and a hold in doubt ends the work there, unpolled. A paused
//! leader's first poll after resuming is its cancellation, not a step.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::hold_state::HoldState;
use super::holding::Holding;

/// How a fenced work ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fenced {
    /// The work returned.
    Returned,
    /// The hold was in doubt at a poll: the work was dropped unpolled, in `state`.
    Stopped(Holding),
}

/// `work`, polled only until `stops` says yes of the hold's state (read on every poll).
pub(crate) struct FencedWork<W> {
    work: Pin<Box<W>>,
    holding: Arc<HoldState>,
    stops: fn(Holding) -> bool,
}

impl<W: Future<Output = ()>> FencedWork<W> {
    pub(crate) fn new(work: W, holding: Arc<HoldState>, stops: fn(Holding) -> bool) -> Self {
        FencedWork {
            work: Box::pin(work),
            holding,
            stops,
        }
    }
}

impl<W: Future<Output = ()>> Future for FencedWork<W> {
    type Output = Fenced;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fenced> {
        let state = self.holding.current();
        if (self.stops)(state) || state.is_final() {
            return Poll::Ready(Fenced::Stopped(state));
        }
        self.work.as_mut().poll(cx).map(|()| Fenced::Returned)
    }
}
