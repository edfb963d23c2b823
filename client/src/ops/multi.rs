//! multi (atomic writes) and multiRead.

use std::future::Future;

use bytes::Bytes;
use zookeeper_jute::{
    CheckVersionRequest, Decode, DeleteRequest, ErrorCode, GetChildrenRequest, GetDataRequest,
    MultiOpResult, MultiRequest, MultiResponse, Request, SetDataRequest, Stat,
};

use super::node::create_request;
use super::reply::{locate_with, named, reply};
use crate::client::{Call, Client};
use crate::error::{Error, ErrorKind, Result};
use crate::options::{CreateOptions, Parents};
use crate::packet::{detach, RawReply};
use crate::path::Chroot;

/// One write of a [`Client::multi`] transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiOp {
    /// Create a node.
    Create {
        /// Client path.
        path: String,
        /// Data.
        data: Bytes,
        /// Mode, ACL, TTL.
        options: CreateOptions,
    },
    /// Delete a node (`version` `None` = any).
    Delete {
        /// Client path.
        path: String,
        /// Expected version.
        version: Option<i32>,
    },
    /// Replace a node's data (`version` `None` = any).
    SetData {
        /// Client path.
        path: String,
        /// New data.
        data: Bytes,
        /// Expected version.
        version: Option<i32>,
    },
    /// Require the node's data version to be `version`.
    Check {
        /// Client path.
        path: String,
        /// Required version.
        version: i32,
    },
}

impl MultiOp {
    /// A create.
    pub fn create(path: &str, data: &[u8], options: &CreateOptions) -> MultiOp {
        MultiOp::Create {
            path: path.to_owned(),
            data: Bytes::copy_from_slice(data),
            options: options.clone(),
        }
    }

    /// A delete.
    pub fn delete(path: &str, version: Option<i32>) -> MultiOp {
        MultiOp::Delete {
            path: path.to_owned(),
            version,
        }
    }

    /// A data write.
    pub fn set_data(path: &str, data: &[u8], version: Option<i32>) -> MultiOp {
        MultiOp::SetData {
            path: path.to_owned(),
            data: Bytes::copy_from_slice(data),
            version,
        }
    }

    /// A version check.
    pub fn check(path: &str, version: i32) -> MultiOp {
        MultiOp::Check {
            path: path.to_owned(),
            version,
        }
    }
}

impl TransactionOp for MultiOp {
    fn to_wire(&self, chroot: &Chroot) -> Result<zookeeper_jute::MultiOp> {
        use zookeeper_jute::MultiOp as W;
        Ok(match self {
            MultiOp::Create {
                path,
                data,
                options,
            } if options.parents != Parents::Fail => {
                return Err(ErrorKind::InvalidArgument(format!(
                    "{path}: a create inside a multi cannot create its parents"
                ))
                .into())
            }
            MultiOp::Create {
                path,
                data,
                options,
            } => match create_request(
                chroot.to_server_create(path, options.mode.is_sequential())?,
                data,
                options,
            )? {
                Request::Create2(r) => W::Create2(r),
                Request::CreateContainer(r) => W::CreateContainer(r),
                Request::CreateTtl(r) => W::CreateTtl(r),
                Request::Create(r) => W::Create(r),
                _ => return Err(ErrorKind::InvalidArgument("not a create".into()).into()),
            },
            MultiOp::Delete { path, version } => W::Delete(DeleteRequest {
                path: chroot.to_server(path)?,
                version: version.unwrap_or(-1),
            }),
            MultiOp::SetData {
                path,
                data,
                version,
            } => W::SetData(SetDataRequest {
                path: chroot.to_server(path)?,
                data: Some(data.clone()),
                version: version.unwrap_or(-1),
            }),
            MultiOp::Check { path, version } => W::Check(CheckVersionRequest {
                path: chroot.to_server(path)?,
                version: *version,
            }),
        })
    }

    fn largest_reply(ops: &[zookeeper_jute::MultiOp]) -> Option<usize> {
        use zookeeper_jute::MultiOp as W;
        // Each result: a header (type, done, err: 9 bytes), then the created path with its
        // sequence suffix and the stat, or the stat, or nothing; in a failed transaction, an
        // error code (4) in its place.
        const HEADER: usize = 9;
        const STAT: usize = 68;
        let created = |path: &str| HEADER + 4 + path.len() + 10 + STAT;
        let result = |op: &W| {
            let success = match op {
                W::Create(r) | W::Create2(r) | W::CreateContainer(r) => created(&r.path),
                W::CreateTtl(r) => created(&r.path),
                W::SetData(_) => HEADER + STAT,
                _ => HEADER,
            };
            success.max(HEADER + 4)
        };
        // The reply header (16) and the end marker (a header).
        Some(16 + HEADER + ops.iter().map(result).sum::<usize>())
    }

    fn operation(&self) -> &'static str {
        match self {
            MultiOp::Create { .. } => "create",
            MultiOp::Delete { .. } => "delete",
            MultiOp::SetData { .. } => "set_data",
            MultiOp::Check { .. } => "check",
        }
    }

    fn path(&self) -> &str {
        match self {
            MultiOp::Create { path, .. }
            | MultiOp::Delete { path, .. }
            | MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. } => path,
        }
    }

    fn into_path(self) -> String {
        match self {
            MultiOp::Create { path, .. }
            | MultiOp::Delete { path, .. }
            | MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. } => path,
        }
    }
}

/// The result of one write of a successful [`Client::multi`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiResult {
    /// The node was created at `path` (chroot stripped).
    Create {
        /// Actual path.
        path: String,
        /// The new node's stat, when the server gives it: ZooKeeper 3.5 to 3.8 answer a
        /// create inside a transaction with its path alone (`None`).
        stat: Option<Stat>,
    },
    /// The node was deleted.
    Delete,
    /// The data was written.
    SetData {
        /// The node's new stat.
        stat: Stat,
    },
    /// The check passed.
    Check,
}

/// One read of a [`Client::multi_read`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOp {
    /// Read a node's data.
    GetData(String),
    /// List a node's children.
    GetChildren(String),
}

impl ReadOp {
    /// A data read.
    pub fn get_data(path: &str) -> ReadOp {
        ReadOp::GetData(path.to_owned())
    }

    /// A child listing.
    pub fn get_children(path: &str) -> ReadOp {
        ReadOp::GetChildren(path.to_owned())
    }
}

impl TransactionOp for ReadOp {
    fn to_wire(&self, chroot: &Chroot) -> Result<zookeeper_jute::MultiOp> {
        use zookeeper_jute::MultiOp as W;
        // Watches are ignored inside a multiRead; send false as the reference client does.
        Ok(match self {
            ReadOp::GetData(p) => W::GetData(GetDataRequest {
                path: chroot.to_server(p)?,
                watch: false,
            }),
            ReadOp::GetChildren(p) => W::GetChildren(GetChildrenRequest {
                path: chroot.to_server(p)?,
                watch: false,
            }),
        })
    }

    fn largest_reply(_: &[zookeeper_jute::MultiOp]) -> Option<usize> {
        // Data and listings have no bound short of the limit itself; a read that meets it
        // fails alone, and changes nothing.
        None
    }

    fn operation(&self) -> &'static str {
        match self {
            ReadOp::GetData(_) => "get_data",
            ReadOp::GetChildren(_) => "get_children",
        }
    }

    fn path(&self) -> &str {
        match self {
            ReadOp::GetData(p) | ReadOp::GetChildren(p) => p,
        }
    }

    fn into_path(self) -> String {
        match self {
            ReadOp::GetData(p) | ReadOp::GetChildren(p) => p,
        }
    }
}

/// The result of one read of a [`Client::multi_read`]; each read succeeds or fails alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadResult {
    /// Data and stat.
    Data {
        /// Data (empty for null).
        data: Bytes,
        /// Stat.
        stat: Stat,
    },
    /// Child names.
    Children {
        /// Bare names, unordered.
        children: Vec<String>,
    },
    /// This read failed; the error names the read and its path.
    Error(Error),
}

impl Client {
    /// Applies every write atomically, or none.
    ///
    /// On failure returns [`ErrorKind::MultiFailed`] with the index and code of the first
    /// failing operation; nothing was applied. The error displays that operation and its path
    /// (`multi: operation 1 (create /a/b) failed: node already exists`), and
    /// [`Error::multi_cause`] gives its own error. An empty list succeeds at once without a
    /// round trip.
    ///
    /// A transaction whose reply could exceed
    /// [`ClientBuilder::max_incoming_frame`](crate::ClientBuilder::max_incoming_frame) (each
    /// write's result takes 77 bytes for a `set_data`, up to 91 and its path for a create)
    /// fails with [`ErrorKind::ReplyTooLarge`] before anything is sent: the server would apply
    /// it, and the client could not read that it had. Split it, or raise the limit.
    ///
    /// A transaction that failed with [`Error::is_outcome_unknown`] may have been applied,
    /// whole (never in part). A `check` of a version it also bumps makes it safe to repeat:
    /// applied once, the repetition fails at that check.
    pub fn multi(
        &self,
        ops: Vec<MultiOp>,
    ) -> impl Future<Output = Result<Vec<MultiResult>>> + Send + 'static {
        let chroot = self.chroot_ref().clone();
        let call = self.transaction("multi", &ops, Request::Multi);
        let sites = sites(ops);
        let locate = locate_with("multi", move |e: Error| match *e.kind() {
            ErrorKind::MultiFailed { index, .. } => match sites.into_iter().nth(index) {
                Some((op, path)) => e.at_multi_op("multi", index, op, path),
                None => e.at("multi", None),
            },
            _ => e.at("multi", None),
        });
        let decode = move |reply: Result<RawReply>| {
            let response = MultiResponse::decode(&mut reply?.body)?;
            if let Some((index, code)) = first_failure(&response) {
                return Err(ErrorKind::MultiFailed { index, code }.into());
            }
            response
                .results
                .into_iter()
                .map(|r| match r {
                    MultiOpResult::Create { path } => Ok(MultiResult::Create {
                        path: chroot.strip(&path),
                        stat: None,
                    }),
                    MultiOpResult::Create2 { path, stat } => Ok(MultiResult::Create {
                        path: chroot.strip(&path),
                        stat: Some(stat),
                    }),
                    MultiOpResult::Delete => Ok(MultiResult::Delete),
                    MultiOpResult::SetData { stat } => Ok(MultiResult::SetData { stat }),
                    MultiOpResult::Check => Ok(MultiResult::Check),
                    other => Err(
                        ErrorKind::Protocol(format!("unexpected multi result {other:?}")).into(),
                    ),
                })
                .collect()
        };
        // Made now, so that the request is timed from the call, as every other one is.
        let reply = call.map(|call| reply(call, locate, decode));
        async move {
            match reply {
                Some(reply) => reply.await,
                None => Ok(Vec::new()),
            }
        }
    }

    /// Runs several reads in one round trip (servers 3.6+). Each read succeeds or fails on its
    /// own, with an error naming it and its path (`get_data /a: node does not exist`); no
    /// watches are set.
    pub fn multi_read(
        &self,
        ops: Vec<ReadOp>,
    ) -> impl Future<Output = Result<Vec<ReadResult>>> + Send + 'static {
        let call = self.transaction("multi_read", &ops, Request::MultiRead);
        let sites = sites(ops);
        let decode = move |reply: Result<RawReply>| {
            let response = MultiResponse::decode(&mut reply?.body)?;
            let mut sites = sites.into_iter();
            response
                .results
                .into_iter()
                .map(|r| {
                    let site = sites.next();
                    match r {
                        MultiOpResult::GetData { data, stat } => Ok(ReadResult::Data {
                            data: detach(data.unwrap_or_default()),
                            stat,
                        }),
                        MultiOpResult::GetChildren { children } => {
                            Ok(ReadResult::Children { children })
                        }
                        MultiOpResult::Error { err } => {
                            let e = Error::from_code(err);
                            Ok(ReadResult::Error(match site {
                                Some((op, path)) => e.at(op, Some(path)),
                                None => e,
                            }))
                        }
                        other => Err(ErrorKind::Protocol(format!(
                            "unexpected multiRead result {other:?}"
                        ))
                        .into()),
                    }
                })
                .collect()
        };
        let reply = call.map(|call| reply(call, named("multi_read"), decode));
        async move {
            match reply {
                Some(reply) => reply.await,
                None => Ok(Vec::new()),
            }
        }
    }
}

impl Client {
    /// Queues a multi or multiRead of `ops` now; `None` for an empty list, which needs no round
    /// trip (the reference client does not send one either). An operation refused before
    /// sending names itself, its index and its path in the error.
    fn transaction<T: TransactionOp>(
        &self,
        operation: &'static str,
        ops: &[T],
        request: fn(MultiRequest) -> Request,
    ) -> Option<Result<Call>> {
        if ops.is_empty() {
            return None;
        }
        let chroot = self.chroot_ref();
        Some(
            ops.iter()
                .enumerate()
                .map(|(index, op)| {
                    op.to_wire(chroot).map_err(|e| {
                        e.at_multi_op(operation, index, op.operation(), op.path().to_owned())
                    })
                })
                .collect::<Result<Vec<_>>>()
                .and_then(|ops| {
                    let max = self.max_incoming_frame();
                    match T::largest_reply(&ops) {
                        Some(size) if size > max => {
                            Err(ErrorKind::ReplyTooLarge { size, max }.into())
                        }
                        _ => self.call(request(MultiRequest { ops }), None),
                    }
                }),
        )
    }
}

/// One operation of a transaction: its wire form, and what an error calls it.
trait TransactionOp {
    /// The wire operation, with the server path.
    fn to_wire(&self, chroot: &Chroot) -> Result<zookeeper_jute::MultiOp>;
    /// The largest reply a transaction of these operations can get, if it is bounded. A write
    /// transaction whose reply could exceed the incoming limit is not sent: the server would
    /// apply it, and the client could not read that it had.
    fn largest_reply(ops: &[zookeeper_jute::MultiOp]) -> Option<usize>;
    /// The client method this operation stands for (`"create"`, `"get_data"`, ...).
    fn operation(&self) -> &'static str;
    /// The path as the caller gave it.
    fn path(&self) -> &str;
    /// The path, moved out.
    fn into_path(self) -> String;
}

/// Each operation's name and client path, kept until the reply to name a failing one; the
/// paths are moved, not copied, and the operations' data is freed once the request is queued.
fn sites<T: TransactionOp>(ops: Vec<T>) -> Vec<(&'static str, String)> {
    ops.into_iter()
        .map(|op| (op.operation(), op.into_path()))
        .collect()
}

/// A failed multi reports every op as an error result: OK before the failure, the real code at
/// it, RUNTIMEINCONSISTENCY after it.
fn first_failure(response: &MultiResponse) -> Option<(usize, ErrorCode)> {
    response
        .results
        .iter()
        .enumerate()
        .find_map(|(i, r)| match r {
            MultiOpResult::Error { err }
                if *err != ErrorCode::Ok && *err != ErrorCode::RuntimeInconsistency =>
            {
                Some((i, *err))
            }
            _ => None,
        })
        .or_else(|| {
            response
                .results
                .iter()
                .enumerate()
                .find_map(|(i, r)| match r {
                    MultiOpResult::Error { err } if *err != ErrorCode::Ok => Some((i, *err)),
                    _ => None,
                })
        })
}
