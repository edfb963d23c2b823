//! One `tracing` span per request, with the feature `tracing-spans`; without it every type
//! here is empty and every method a no-op, so the request path carries nothing.
//!
//! The span is made when the request is queued, as a child of the caller's current span, and
//! named after the operation (`get_data`, `create`, ...). It carries OpenTelemetry's database
//! attributes: `db.system.name` (`zookeeper`), `db.operation.name`, `otel.kind` (`client`),
//! and `zookeeper.path` (the path as the caller gave it, without the chroot). The session
//! records where the request went when it writes it (`server.address`, `server.port`,
//! `zookeeper.session_id`, `zookeeper.xid`), and the caller's future how it ended, when the
//! reply is in: on failure `error.type` (the [`ErrorKind`](crate::ErrorKind) in snake case),
//! `db.response.status_code` (the ZooKeeper error code, where there is one),
//! `zookeeper.outcome_unknown` and `otel.status_code` (`ERROR`). The span closes then: its
//! duration is the request's, from the call to the reply.

#[cfg(feature = "tracing-spans")]
use tracing::field::{display, Empty};
#[cfg(feature = "tracing-spans")]
use tracing::{info_span, Span};
use zookeeper_jute::{OpCode, Request};

use crate::connect_string::HostPort;
use crate::error::Result;

/// The span of one request, held by the caller's future until the reply is in.
#[derive(Debug, Default)]
pub(crate) struct RequestSpan {
    #[cfg(feature = "tracing-spans")]
    span: Option<Span>,
}

/// The same span, travelling with the request to the session, which records where it was
/// sent and then drops it.
#[derive(Debug, Default)]
pub(crate) struct SentSpan {
    #[cfg(feature = "tracing-spans")]
    span: Option<Span>,
}

/// Makes the span of a request named `$name`, with every field it may get declared (a span
/// only records the fields it was made with).
#[cfg(feature = "tracing-spans")]
macro_rules! request_span {
    ($name:literal) => {
        info_span!(
            $name,
            otel.kind = "client",
            db.system.name = "zookeeper",
            db.operation.name = $name,
            zookeeper.path = Empty,
            server.address = Empty,
            server.port = Empty,
            zookeeper.session_id = Empty,
            zookeeper.xid = Empty,
            error.type = Empty,
            db.response.status_code = Empty,
            zookeeper.outcome_unknown = Empty,
            otel.status_code = Empty,
        )
    };
}

impl RequestSpan {
    /// The span of a request with `opcode`, a child of the current span; none when no
    /// subscriber wants it. `path` gives the caller's path, asked for only then.
    #[cfg(feature = "tracing-spans")]
    pub(crate) fn start(opcode: OpCode, path: impl FnOnce() -> Option<String>) -> RequestSpan {
        // One call site per name: a span's name is fixed where it is made.
        let span = match opcode {
            OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                request_span!("create")
            }
            OpCode::Delete => request_span!("delete"),
            OpCode::Exists => request_span!("exists"),
            OpCode::GetData => request_span!("get_data"),
            OpCode::SetData => request_span!("set_data"),
            OpCode::GetAcl => request_span!("get_acl"),
            OpCode::SetAcl => request_span!("set_acl"),
            OpCode::GetChildren | OpCode::GetChildren2 => request_span!("get_children"),
            OpCode::Sync => request_span!("sync"),
            OpCode::Multi => request_span!("multi"),
            OpCode::MultiRead => request_span!("multi_read"),
            OpCode::Reconfig => request_span!("reconfig"),
            OpCode::AddWatch => request_span!("add_watch"),
            OpCode::RemoveWatches | OpCode::CheckWatches => request_span!("remove_watches"),
            OpCode::Auth => request_span!("add_auth"),
            OpCode::GetEphemerals => request_span!("get_ephemerals"),
            OpCode::GetAllChildrenNumber => request_span!("get_all_children_number"),
            OpCode::WhoAmI => request_span!("who_am_i"),
            _ => request_span!("request"),
        };
        if span.is_disabled() {
            return RequestSpan::default();
        }
        if let Some(path) = path() {
            span.record("zookeeper.path", path.as_str());
        }
        RequestSpan { span: Some(span) }
    }

    #[cfg(not(feature = "tracing-spans"))]
    #[inline(always)]
    pub(crate) fn start(_opcode: OpCode, _path: impl FnOnce() -> Option<String>) -> RequestSpan {
        RequestSpan {}
    }

    /// The handle the session records the sending on.
    #[inline]
    pub(crate) fn for_session(&self) -> SentSpan {
        SentSpan {
            #[cfg(feature = "tracing-spans")]
            span: self.span.clone(),
        }
    }

    /// Records how the request ended and closes the span.
    #[inline]
    pub(crate) fn finish<T>(&mut self, _outcome: &Result<T>) {
        #[cfg(feature = "tracing-spans")]
        if let Some(span) = self.span.take() {
            if let Err(e) = _outcome {
                span.record("error.type", crate::metrics::error_kind(e.kind()));
                if let Some(code) = e.code() {
                    span.record("db.response.status_code", display(code.as_i32()));
                }
                if e.is_outcome_unknown() {
                    span.record("zookeeper.outcome_unknown", true);
                }
                span.record("otel.status_code", "ERROR");
            }
        }
    }
}

impl SentSpan {
    /// Records that the request was written with `xid`, on the connection to `server`, in
    /// session `session_id`; the session's handle is dropped with `self`.
    #[inline]
    pub(crate) fn sent(self, _xid: i32, _session_id: i64, _server: Option<&HostPort>) {
        #[cfg(feature = "tracing-spans")]
        if let Some(span) = self.span {
            span.record("zookeeper.xid", _xid);
            span.record(
                "zookeeper.session_id",
                display(crate::state::SessionId(_session_id)),
            );
            if let Some(server) = _server {
                span.record("server.address", server.host.as_str());
                span.record("server.port", server.port);
            }
        }
    }
}

/// The path a request names (a server path), if it names one.
pub(crate) fn request_path(request: &Request) -> Option<&str> {
    Some(match request {
        Request::Create(r) | Request::Create2(r) | Request::CreateContainer(r) => &r.path,
        Request::CreateTtl(r) => &r.path,
        Request::Delete(r) => &r.path,
        Request::Exists(r) => &r.path,
        Request::GetData(r) => &r.path,
        Request::SetData(r) => &r.path,
        Request::GetAcl(r) => &r.path,
        Request::SetAcl(r) => &r.path,
        Request::GetChildren(r) => &r.path,
        Request::GetChildren2(r) => &r.path,
        Request::GetAllChildrenNumber(r) => &r.path,
        Request::GetEphemerals(r) => &r.prefix_path,
        Request::Sync(r) => &r.path,
        Request::AddWatch(r) => &r.path,
        Request::CheckWatches(r) => &r.path,
        Request::RemoveWatches(r) => &r.path,
        _ => return None,
    })
}
