//! `create` with missing ancestors made first (`CreateOptions::creating_parents`).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use zookeeper_jute::{CreateMode, Stat};

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::options::{CreateOptions, Parents};

/// How many times the ancestors are made again when the node's parent keeps vanishing (a
/// concurrent recursive delete, or the server removing an emptied container). Each round is
/// one round trip.
const ROUNDS: usize = 10;

/// The future of `create`: its first attempt, then, if that found no parent and parents were
/// asked for, the round that makes them. Written by hand: futures are moved on every call, and
/// an `async` block would hold the first attempt's future beside its own state.
pub(crate) struct CreateReply<F> {
    first: F,
    then: Then,
}

/// What a create returns.
type Created = Result<(String, Stat)>;

enum Then {
    /// No parents asked for, or the first attempt is done.
    Nothing,
    Parents(Box<MissingParents>),
    Retry(Pin<Box<dyn Future<Output = Created> + Send>>),
}

impl<F> CreateReply<F> {
    pub(crate) fn new(first: F, parents: Option<Box<MissingParents>>) -> CreateReply<F> {
        CreateReply {
            first,
            then: parents.map_or(Then::Nothing, Then::Parents),
        }
    }
}

impl<F> Future for CreateReply<F>
where
    F: Future<Output = Result<(String, Stat)>> + Unpin,
{
    type Output = Result<(String, Stat)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Then::Retry(retry) = &mut this.then {
            return retry.as_mut().poll(cx);
        }
        let result = ready!(Pin::new(&mut this.first).poll(cx));
        match (result, std::mem::replace(&mut this.then, Then::Nothing)) {
            (Err(e), Then::Parents(parents)) if e == ErrorKind::NoNode => {
                let mut retry = Box::pin(parents.create_all());
                let poll = retry.as_mut().poll(cx);
                this.then = Then::Retry(retry);
                poll
            }
            (result, _) => Poll::Ready(result),
        }
    }
}

/// What a create with parents needs once its first attempt found no parent: owned, since the
/// caller's borrows are gone by then.
pub(crate) struct MissingParents {
    client: Client,
    path: String,
    data: Bytes,
    options: CreateOptions,
}

impl MissingParents {
    /// `None` when `options` do not ask for parents: the first attempt's `NoNode` stands.
    pub(crate) fn new(
        client: &Client,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> Option<Box<MissingParents>> {
        (options.parents != Parents::Fail).then(|| {
            Box::new(MissingParents {
                client: client.clone(),
                path: path.to_owned(),
                data: Bytes::copy_from_slice(data),
                options: options.clone(),
            })
        })
    }

    /// Creates every ancestor and then the node, all queued back to back: the server applies
    /// one session's requests in order, so a single round trip makes what is missing (an
    /// ancestor that exists answers `NodeExists`, which is fine) and then the node. A racing
    /// creator of the same ancestors is harmless for the same reason; an ancestor deleted again
    /// before the node is created sends us round once more.
    async fn create_all(self: Box<Self>) -> Result<(String, Stat)> {
        let mode = match self.options.parents {
            Parents::Container => CreateMode::Container,
            _ => CreateMode::Persistent,
        };
        let ancestor = CreateOptions::new(mode).acl(self.options.acl.clone());
        let node = CreateOptions {
            parents: Parents::Fail,
            ..self.options.clone()
        };
        let mut last = None;
        for _ in 0..ROUNDS {
            // The first ancestor that could not be made, for when the node then finds no
            // parent: "create /a: not authorised" says more than "no node".
            let mut refused: Option<Error> = None;
            let mut note = |reply: Result<_>| match reply {
                Ok(_) => {}
                Err(e) if e == ErrorKind::NodeExists => {}
                Err(e) => {
                    refused.get_or_insert(e);
                }
            };
            // Made in order, a window of them in flight: the requests of a path of n
            // segments hold its prefixes, n²/2 bytes together, all queued at once (1.3 GB
            // for a 40 KB path of 20,000 segments).
            let mut in_flight = VecDeque::new();
            let mut bytes = 0;
            for a in ancestors(&self.path) {
                while bytes > ANCESTOR_BYTES_IN_FLIGHT {
                    let (reply, len) = in_flight.pop_front().expect("bytes are in flight");
                    bytes -= len;
                    note(reply.await);
                }
                in_flight.push_back((self.client.create(a, b"", &ancestor), a.len()));
                bytes += a.len();
            }
            let created = self.client.create(&self.path, &self.data, &node);
            for (reply, _) in in_flight {
                note(reply.await);
            }
            match created.await {
                Err(e) if e == ErrorKind::NoNode => match refused {
                    Some(r) if !r.is_retryable() => return Err(r),
                    _ => last = Some(e),
                },
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| ErrorKind::NoNode.into()))
    }
}

/// Bytes of ancestors' paths whose creates are in flight at once, beyond the last one made.
const ANCESTOR_BYTES_IN_FLIGHT: usize = 256 * 1024;

/// The proper ancestors of `path`, root first, without `/` itself: `/a/b/c` gives `/a`, `/a/b`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .map(move |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::ancestors;

    #[test]
    fn ancestors_root_first_without_the_root() {
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
        assert_eq!(ancestors("/").count(), 0);
        assert_eq!(ancestors("/a/b/lock-").collect::<Vec<_>>(), ["/a", "/a/b"]);
    }
}
