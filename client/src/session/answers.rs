//! Replies decided while reading one buffer, handed to their callers together at its end.
//!
//! A caller blocked outside the runtime's workers (the body of `#[tokio::main]`,
//! `Runtime::block_on`, the blocking client) is woken by the first reply it waits for. Sent
//! as each frame is decoded, the replies of one read would wake it one at a time: it takes
//! the first, asks again and parks before the next is decoded, one park and one cross-thread
//! unpark per reply. Sent together, the first wakes it and the others are ready when it looks.
//!
//! Only the plain answers of ordered replies wait here. Whatever else the session hands out
//! while reading (a watch event, a reply held for its watch, the failure of later requests)
//! sends these first, so callers still see everything in the order the server sent it.

use crate::error::Result;
use crate::packet::{RawReply, ReplyTx};

#[derive(Debug, Default)]
pub(super) struct Answers {
    ready: Vec<(ReplyTx, Result<RawReply>)>,
}

impl Answers {
    pub fn push(&mut self, reply: ReplyTx, answer: Result<RawReply>) {
        self.ready.push((reply, answer));
    }

    /// Sends every answer waiting, in the order they were decided.
    pub fn send_all(&mut self) {
        for (reply, answer) in self.ready.drain(..) {
            let _ = reply.send(answer);
        }
    }
}
