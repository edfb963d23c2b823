//! Where a long-lived recipe gets its session, and a new one when that session expires.
//!
//! A `Client` is one session, and expiry ends it for good. Recipes that live as long as the
//! process (a cache, a shared counter, a node that must exist while we run) need a way to open
//! a new session: [`Sessions`] holds the current client and, when given one, the function
//! that opens the next. Several recipes may share one `Sessions`: the first to find the
//! session expired opens the new one, and the others take it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tracing::{info, warn};
use zookeeper_tokio::{Client, ClientBuilder, SessionState};

use crate::error::Result;

type Opened = Pin<Box<dyn Future<Output = zookeeper_tokio::Result<Client>> + Send>>;
type Open = Arc<dyn Fn() -> Opened + Send + Sync>;

/// The first wait between failed attempts to open a new session; doubled up to
/// [`MAX_RENEW_BACKOFF`].
const FIRST_RENEW_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between failed attempts to open a new session.
const MAX_RENEW_BACKOFF: Duration = Duration::from_secs(5);

/// The session a recipe runs on, and how to open the next one after expiry.
///
/// Made from a `&Client` (`Sessions::from(&client)`, or just `&client` where a recipe takes
/// `impl Into<Sessions>`), a recipe ends with the session: its calls fail with
/// [`ErrorKind::SessionExpired`](zookeeper_tokio::ErrorKind::SessionExpired). Made with
/// [`Sessions::renewing`] or [`Sessions::connect`], it opens a new session when the current
/// one expires and carries on there (ephemeral nodes are created again, caches re-read what
/// they watch). Clones share the current session.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::Sessions;
/// use zookeeper_tokio::Client;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_sessions"));
/// // A new session, with the same settings, whenever the current one expires.
/// let sessions =
///     Sessions::connect(Client::builder(servers).session_timeout(Duration::from_secs(10))).await?;
/// let client = sessions.client(); // the current session
/// client.exists("/").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    current: StdMutex<Client>,
    open: Option<Open>,
    /// One renewal at a time: the others wait for it and take its session.
    renewing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("session", &self.client().session_id())
            .field("renews", &self.inner.open.is_some())
            .finish()
    }
}

impl From<&Client> for Sessions {
    fn from(client: &Client) -> Sessions {
        Sessions::fixed(client)
    }
}

impl From<Client> for Sessions {
    fn from(client: Client) -> Sessions {
        Sessions::fixed(&client)
    }
}

impl From<&Sessions> for Sessions {
    fn from(sessions: &Sessions) -> Sessions {
        sessions.clone()
    }
}

impl Sessions {
    /// Only `client`'s session: recipes end when it ends.
    pub fn fixed(client: &Client) -> Sessions {
        Sessions::make(client.clone(), None)
    }

    /// Starts on `client` and calls `open` for a new session whenever the current one has
    /// expired. A failing `open` is retried, with a backoff of up to 5 seconds, until it
    /// succeeds or the waiting recipe is dropped.
    pub fn renewing<F, Fut>(client: Client, open: F) -> Sessions
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = zookeeper_tokio::Result<Client>> + Send + 'static,
    {
        Sessions::make(client, Some(Arc::new(move || Box::pin(open()) as Opened)))
    }

    /// Connects with `builder`, and again with the same settings whenever the session expires.
    pub async fn connect(builder: ClientBuilder) -> Result<Sessions> {
        let client = builder.clone().connect().await?;
        Ok(Sessions::renewing(client, move || {
            builder.clone().connect()
        }))
    }

    fn make(client: Client, open: Option<Open>) -> Sessions {
        Sessions {
            inner: Arc::new(Inner {
                current: StdMutex::new(client),
                open,
                renewing: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The current session's client.
    pub fn client(&self) -> Client {
        self.inner
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The current client, replaced first if its session is over and new sessions can be
    /// opened: what a recipe's next call should use, or a recipe made on a bare `Client`
    /// after an expiry.
    pub async fn live(&self) -> Result<Client> {
        let client = self.client();
        if client.state().is_terminal() && self.renews() {
            return self.replace(&client).await;
        }
        Ok(client)
    }

    /// Runs `attempt` on the current session, and again on the next one whenever the session
    /// ends under it (when new sessions can be opened): a lock waiter whose session expired
    /// queues again by itself. Other errors, and the session's end without a way to open
    /// another, are returned.
    pub(crate) async fn each_session<T, F, Fut>(&self, mut attempt: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        loop {
            let client = self.live().await?;
            match attempt(client.clone()).await {
                Err(e) if e.is_session_terminal() && self.renews() => {
                    info!(error = %e, "the session ended while waiting: trying again on the next");
                    self.replace(&client).await?;
                }
                outcome => return outcome,
            }
        }
    }

    /// Whether a new session is opened after expiry.
    pub fn renews(&self) -> bool {
        self.inner.open.is_some()
    }

    /// A live session to use instead of `ended`: `ended` itself if it turns out alive
    /// (connected again), the current one if someone already replaced it, else a new one.
    /// Fails with the end of `ended` when there is no way to open sessions, or when it was
    /// closed (closing a client is its owner's decision, not an accident to repair).
    pub(crate) async fn replace(&self, ended: &Client) -> Result<Client> {
        // A session is over only once the client says so (the server said expired, or the
        // session timeout passed without a server): replacing a live one would leave its
        // ephemeral nodes behind, beside ours.
        let mut states = ended.state_watcher();
        let end = loop {
            let state = *states.borrow_and_update();
            if state.is_terminal() {
                break state;
            }
            if state.is_connected() {
                return Ok(ended.clone());
            }
            if states.changed().await.is_err() {
                break SessionState::Closed;
            }
        };
        let Some(open) = self.inner.open.clone() else {
            return Err(crate::session::wait::terminal_error(end));
        };
        if end == SessionState::Closed {
            return Err(crate::session::wait::terminal_error(end));
        }
        let _one_at_a_time = self.inner.renewing.lock().await;
        let current = self.client();
        if current.session_id() != ended.session_id() && !current.state().is_terminal() {
            return Ok(current);
        }
        let mut backoff = FIRST_RENEW_BACKOFF;
        loop {
            match open().await {
                Ok(client) => {
                    info!(session = %client.session_id(), "opened a new session after expiry");
                    *self.inner.current.lock().unwrap_or_else(|e| e.into_inner()) = client.clone();
                    return Ok(client);
                }
                Err(e) => {
                    warn!(error = %e, "could not open a new session; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_RENEW_BACKOFF);
                }
            }
        }
    }
}
