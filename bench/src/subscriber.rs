//! With the `tracing-spans` feature: the client and the recipes make a span per request and
//! per recipe operation, into a `tracing` subscriber installed here for the whole process, so
//! that the figures include what the spans cost.
//!
//! The subscriber is tracing-subscriber's `Registry`, the base that exporting layers
//! (`tracing-opentelemetry`, `fmt`) sit on: it takes every span, keeps its data until it
//! closes, and exports nothing, so the figures hold the client's part and the registry's
//! bookkeeping, not an exporter's.
//!
//! With `ZOOKEEPER_BENCH_SUBSCRIBER=none` no subscriber is installed: each request then pays
//! only the check that finds its span's call site disabled.

/// Installs the subscriber for the whole process; false when the environment asks for none.
pub fn install() -> bool {
    if std::env::var("ZOOKEEPER_BENCH_SUBSCRIBER").as_deref() == Ok("none") {
        return false;
    }
    tracing::subscriber::set_global_default(tracing_subscriber::Registry::default())
        .expect("no other subscriber is installed");
    true
}
