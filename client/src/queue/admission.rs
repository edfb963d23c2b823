//! Ticketed admission: requests leave in call order even when the queue is full, and a flood
//! of calls waits rather than piles up.
//!
//! Each call takes a ticket at call time; tickets are admitted strictly in order while fewer
//! than `limit` requests are outstanding (queued or in flight on the connection). A call that
//! finds the queue full keeps its encoded request inside its own future ([`Admit`]) until its
//! ticket comes up. Capacity is returned when a request completes, so `limit` bounds the
//! memory held for requests.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use super::{Item, RequestQueue};
use crate::packet::Packet;

/// The tickets handed out and admitted, and the room left.
#[derive(Debug)]
pub(super) struct Tickets {
    /// Admitted requests not yet completed (queued or in flight).
    outstanding: usize,
    limit: usize,
    next_ticket: u64,
    next_admit: u64,
    /// Tickets whose future was dropped before admission: skipped.
    abandoned: BTreeSet<u64>,
    waiters: BTreeMap<u64, Waker>,
}

impl Tickets {
    pub fn new(limit: usize) -> Tickets {
        Tickets {
            outstanding: 0,
            limit: limit.max(1),
            next_ticket: 0,
            next_admit: 0,
            abandoned: BTreeSet::new(),
            waiters: BTreeMap::new(),
        }
    }

    /// Admits a call at once if nobody waits before it and there is room.
    pub fn admit_now(&mut self) -> bool {
        if self.next_ticket == self.next_admit && self.outstanding < self.limit {
            self.next_ticket += 1;
            self.next_admit += 1;
            self.outstanding += 1;
            return true;
        }
        false
    }

    /// Returns room for `n` completed requests, and wakes the next waiter if it fits now.
    pub fn release(&mut self, n: usize) {
        self.outstanding = self.outstanding.saturating_sub(n);
        self.wake_next();
    }

    /// Every waiter, to wake once the queue is closed (their polls then fail them).
    pub fn take_waiters(&mut self) -> BTreeMap<u64, Waker> {
        std::mem::take(&mut self.waiters)
    }

    #[cfg(test)]
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    /// Takes a ticket, admitted at once if its turn has come and there is room.
    fn take(&mut self) -> (u64, bool) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        (ticket, self.turn_of(ticket))
    }

    /// Admits `ticket` if its turn has come and there is room.
    fn turn_of(&mut self, ticket: u64) -> bool {
        if ticket == self.next_admit && self.outstanding < self.limit {
            self.next_admit += 1;
            self.outstanding += 1;
            return true;
        }
        false
    }

    /// Skips abandoned tickets and wakes the one whose turn it is, if there is room.
    fn wake_next(&mut self) {
        while self.abandoned.remove(&self.next_admit) {
            self.next_admit += 1;
        }
        if self.outstanding < self.limit {
            if let Some(w) = self.waiters.remove(&self.next_admit) {
                w.wake();
            }
        }
    }
}

/// The outcome of queueing a request at call time.
pub(crate) enum Admission {
    /// Queued, and the session task knows (or is told with something queued before).
    Admitted,
    /// Queued, and nobody told the session task yet: the caller owes a
    /// [`RequestQueue::flush`] when it first waits for the reply.
    Deferred,
    /// The queue was full: wait with [`Admit`] (boxed: it holds the whole request, and the
    /// caller's future keeps it only in this case).
    Wait(Box<Admit>),
}

impl RequestQueue {
    /// Queues an encoded request at call time, or hands back a ticket to wait with.
    pub fn submit(self: &Arc<Self>, packet: Packet) -> Admission {
        let mut inner = self.lock();
        if let Some(err) = &inner.closed {
            let err = err.clone();
            drop(inner);
            packet.fail(err);
            return Admission::Admitted;
        }
        let (ticket, admitted) = inner.tickets.take();
        if admitted {
            inner.items.push(Item::Packet(packet));
            self.tell(&mut inner);
            return Admission::Admitted;
        }
        Admission::Wait(Box::new(Admit {
            queue: self.clone(),
            ticket,
            packet: Some(packet),
        }))
    }

    /// Returns capacity for `n` completed requests (session task).
    pub fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.lock().tickets.release(n);
    }
}

/// Waits for a ticket's turn, then queues its request.
pub(crate) struct Admit {
    queue: Arc<RequestQueue>,
    ticket: u64,
    packet: Option<Packet>,
}

impl Future for Admit {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let Some(packet) = this.packet.take() else {
            return Poll::Ready(());
        };
        let mut inner = this.queue.lock();
        if let Some(err) = &inner.closed {
            let err = err.clone();
            drop(inner);
            packet.fail(err);
            return Poll::Ready(());
        }
        if inner.tickets.turn_of(this.ticket) {
            inner.items.push(Item::Packet(packet));
            this.queue.tell(&mut inner);
            inner.tickets.wake_next();
            return Poll::Ready(());
        }
        inner
            .tickets
            .waiters
            .insert(this.ticket, cx.waker().clone());
        drop(inner);
        this.packet = Some(packet);
        Poll::Pending
    }
}

impl Drop for Admit {
    fn drop(&mut self) {
        if self.packet.is_some() {
            let mut inner = self.queue.lock();
            inner.tickets.waiters.remove(&self.ticket);
            inner.tickets.abandoned.insert(self.ticket);
            inner.tickets.wake_next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{packet, poll, tags};
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn full_queue_keeps_call_order() {
        let q = RequestQueue::new(2);
        let mut rxs = Vec::new();
        for t in 1..=2 {
            let (p, rx) = packet(t);
            rxs.push(rx);
            assert!(matches!(q.submit(p), Admission::Admitted));
        }
        let (p3, _r3) = packet(3);
        let Admission::Wait(mut a3) = q.submit(p3) else {
            panic!("3 admitted over the limit")
        };
        assert_eq!(tags(&q), vec![1, 2]);
        // Capacity frees up before call 3's future is polled; call 4 must still queue behind 3.
        q.release(1);
        let (p4, _r4) = packet(4);
        let Admission::Wait(mut a4) = q.submit(p4) else {
            panic!("4 overtook 3")
        };
        assert!(poll(&mut a4).is_pending());
        assert!(poll(&mut a3).is_ready());
        assert!(poll(&mut a4).is_pending(), "limit reached again");
        q.release(1);
        assert!(poll(&mut a4).is_ready());
        assert_eq!(tags(&q), vec![3, 4]);
        assert_eq!(q.outstanding(), 2);
    }

    #[test]
    fn abandoned_ticket_does_not_block_the_next() {
        let q = RequestQueue::new(1);
        let (p1, _r1) = packet(1);
        assert!(matches!(q.submit(p1), Admission::Admitted));
        let (p2, _r2) = packet(2);
        let Admission::Wait(a2) = q.submit(p2) else {
            panic!()
        };
        let (p3, _r3) = packet(3);
        let Admission::Wait(mut a3) = q.submit(p3) else {
            panic!()
        };
        drop(a2);
        q.release(1);
        assert!(poll(&mut a3).is_ready());
        assert_eq!(tags(&q), vec![1, 3]);
    }

    #[test]
    fn close_fails_queued_waiting_and_later_requests() {
        let q = RequestQueue::new(1);
        let (p1, mut r1) = packet(1);
        assert!(matches!(q.submit(p1), Admission::Admitted));
        let (p2, mut r2) = packet(2);
        let Admission::Wait(mut a2) = q.submit(p2) else {
            panic!()
        };
        q.close(ErrorKind::SessionExpired.into());
        assert_eq!(
            r1.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
        assert!(poll(&mut a2).is_ready());
        assert_eq!(
            r2.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
        let (p3, mut r3) = packet(3);
        assert!(matches!(q.submit(p3), Admission::Admitted));
        assert_eq!(
            r3.try_recv().unwrap().unwrap_err(),
            ErrorKind::SessionExpired
        );
    }
}
