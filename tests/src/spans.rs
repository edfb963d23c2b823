//! Reading the `tracing` spans a workload made (with the cargo feature `spans`).
//!
//! [`capture`] installs a subscriber as the default of the calling thread that remembers every
//! span: its name, its parent's name, its fields (recorded at creation or later) and whether
//! it closed. On a current-thread runtime of that thread everything the workload's tasks do
//! is seen; a span made on another thread is not, though fields recorded on another thread
//! into a span made here are (a span records through the subscriber that made it).
//!
//! ```no_run
//! let (spans, _guard) = zookeeper_testkit::spans::capture();
//! // run the workload on this thread
//! let get = &spans.named("get_data")[0];
//! assert_eq!(get.field("db.operation.name"), Some("get_data"));
//! assert!(get.closed);
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

/// A span as the subscriber saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    id: u64,
    /// The span's name.
    pub name: &'static str,
    /// Its parent's name; `None` for a root span.
    pub parent: Option<&'static str>,
    /// Every field given a value, as text (`Debug` of the value, strings as they are).
    pub fields: HashMap<String, String>,
    /// Whether it closed (every handle on it dropped).
    pub closed: bool,
}

impl Seen {
    /// The field's value as text, if it was given one.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// What [`capture`] saw; clones share it.
#[derive(Clone, Default)]
pub struct Spans(Arc<Mutex<Vec<Seen>>>);

impl Spans {
    /// Every span named `name`, in the order they were made.
    pub fn named(&self, name: &str) -> Vec<Seen> {
        self.lock()
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }

    /// Every span, in the order they were made.
    pub fn all(&self) -> Vec<Seen> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Seen>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_open(&self, id: &Id, f: impl FnOnce(&mut Seen)) {
        let mut all = self.lock();
        // Ids are reused once a span closed: the open one is meant.
        if let Some(seen) = all
            .iter_mut()
            .rev()
            .find(|s| s.id == id.into_u64() && !s.closed)
        {
            f(seen);
        }
    }
}

/// Installs a subscriber remembering every span as the default of this thread, until the
/// guard drops.
pub fn capture() -> (Spans, tracing::subscriber::DefaultGuard) {
    let spans = Spans::default();
    let subscriber = Registry::default().with(spans.clone());
    (spans, tracing::subscriber::set_default(subscriber))
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|p| p.metadata().name());
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.lock().push(Seen {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent,
            fields,
            closed: false,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        self.with_open(id, |seen| values.record(&mut Fields(&mut seen.fields)));
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        self.with_open(&id, |seen| seen.closed = true);
    }
}
