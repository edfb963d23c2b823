//! A recipe's stream of states as a blocking iterator.

use std::pin::Pin;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use futures_core::Stream;
use zookeeper_tokio::blocking::Client;

/// Every state of a recipe, in order, as a blocking iterator: the current state first, then
/// each transition, ending after a final state. Wraps the recipe's async stream
/// ([`HoldingChanges`](crate::HoldingChanges)); it reads the lease clock as they do. It
/// holds a handle on the session, which stays open while it lives.
#[derive(Debug)]
pub struct Changes<S> {
    stream: S,
    client: Client,
}

impl<S: Stream + Unpin> Changes<S> {
    pub(crate) fn new(stream: S, client: &Client) -> Changes<S> {
        Changes {
            stream,
            client: client.clone(),
        }
    }

    /// The next state, waiting at most `timeout`: [`RecvTimeoutError::Timeout`] when none
    /// came by then, [`RecvTimeoutError::Disconnected`] after the final state.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<S::Item, RecvTimeoutError> {
        let next = std::future::poll_fn(|cx| Pin::new(&mut self.stream).poll_next(cx));
        // The timer is made within the runtime, where `block_on` enters it.
        match self
            .client
            .block_on(async move { tokio::time::timeout(timeout, next).await })
        {
            Ok(Some(state)) => Ok(state),
            Ok(None) => Err(RecvTimeoutError::Disconnected),
            Err(_) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// The async stream, to await it instead.
    pub fn into_async(self) -> S {
        self.stream
    }
}

impl<S: Stream + Unpin> Iterator for Changes<S> {
    type Item = S::Item;

    fn next(&mut self) -> Option<S::Item> {
        let stream = &mut self.stream;
        self.client.block_on(std::future::poll_fn(|cx| {
            Pin::new(&mut *stream).poll_next(cx)
        }))
    }
}
