//! `multi` (14) and `multiRead` (22): a sequence of `MultiHeader` + record pairs ended by a
//! terminator header `{type −1, done true, err −1}`, with no count prefix, in both directions.
//!
//! A failed `multi` still has `err == 0` in its `ReplyHeader`: every result is then
//! [`MultiOpResult::Error`], OK before the failing op, the real code at it, and
//! RUNTIMEINCONSISTENCY after it. `multiRead` results fail independently.

use bytes::{Bytes, BytesMut};

use super::{
    Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, DeleteRequest,
    GetChildrenRequest, GetChildrenResponse, GetDataRequest, GetDataResponse, SetDataRequest,
    SetDataResponse, Stat,
};
use crate::consts::{ErrorCode, OpCode};
use crate::error::DecodeError;
use crate::jute::{record, Decode, Encode};
use crate::Result;

record! {
    /// Precedes every op of a multi request and every result of a multi reply.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MultiHeader {
        /// The op's opcode; −1 (`OpCode::Error`) for error results and the terminator.
        pub opcode: OpCode,
        /// True only on the terminator.
        pub done: bool,
        /// −1 in requests; the error code of an error result, 0 otherwise.
        pub err: i32,
    }
}

impl MultiHeader {
    /// Bytes of a `MultiHeader` on the wire.
    pub const LEN: usize = 9;

    /// The header that ends a multi request or reply.
    pub const TERMINATOR: MultiHeader = MultiHeader {
        opcode: OpCode::Error,
        done: true,
        err: -1,
    };
}

record! {
    /// A version check (`check`, 13), valid only inside a multi.
    #[derive(Clone, Debug, PartialEq, Eq, Default)]
    pub struct CheckVersionRequest {
        /// Node path.
        pub path: String,
        /// Expected data version.
        pub version: i32,
    }
}

record! {
    /// The body of an error result in a multi reply, and of the `addWatch` reply.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct ErrorResponse {
        /// The error code (0 in an `addWatch` reply).
        pub err: i32,
    }
}

/// One operation of a multi request. Each variant has a fixed opcode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiOp {
    /// `create` (1); its result carries only the path.
    Create(CreateRequest),
    /// `create2` (15); its result carries the path and the stat.
    Create2(CreateRequest),
    /// `createContainer` (19), flags 4.
    CreateContainer(CreateRequest),
    /// `createTTL` (21).
    CreateTtl(CreateTtlRequest),
    /// `delete` (2).
    Delete(DeleteRequest),
    /// `setData` (5).
    SetData(SetDataRequest),
    /// `check` (13).
    Check(CheckVersionRequest),
    /// `getData` (4), only in `multiRead`; `watch` is ignored by servers.
    GetData(GetDataRequest),
    /// `getChildren` (8), only in `multiRead`; `watch` is ignored by servers.
    GetChildren(GetChildrenRequest),
}

impl MultiOp {
    /// The op's opcode.
    pub fn opcode(&self) -> OpCode {
        match self {
            MultiOp::Create(_) => OpCode::Create,
            MultiOp::Create2(_) => OpCode::Create2,
            MultiOp::CreateContainer(_) => OpCode::CreateContainer,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetData(_) => OpCode::GetData,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
        }
    }

    /// True for the ops of a `multiRead`; a request must not mix reads and writes.
    pub fn is_read(&self) -> bool {
        matches!(self, MultiOp::GetData(_) | MultiOp::GetChildren(_))
    }

    fn body(&self) -> &dyn Encode {
        match self {
            MultiOp::Create(r) | MultiOp::Create2(r) | MultiOp::CreateContainer(r) => r,
            MultiOp::CreateTtl(r) => r,
            MultiOp::Delete(r) => r,
            MultiOp::SetData(r) => r,
            MultiOp::Check(r) => r,
            MultiOp::GetData(r) => r,
            MultiOp::GetChildren(r) => r,
        }
    }

    fn decode_body(opcode: OpCode, buf: &mut Bytes) -> Result<MultiOp> {
        Ok(match opcode {
            OpCode::Create => MultiOp::Create(CreateRequest::decode(buf)?),
            OpCode::Create2 => MultiOp::Create2(CreateRequest::decode(buf)?),
            OpCode::CreateContainer => MultiOp::CreateContainer(CreateRequest::decode(buf)?),
            OpCode::CreateTtl => MultiOp::CreateTtl(CreateTtlRequest::decode(buf)?),
            OpCode::Delete => MultiOp::Delete(DeleteRequest::decode(buf)?),
            OpCode::SetData => MultiOp::SetData(SetDataRequest::decode(buf)?),
            OpCode::Check => MultiOp::Check(CheckVersionRequest::decode(buf)?),
            OpCode::GetData => MultiOp::GetData(GetDataRequest::decode(buf)?),
            OpCode::GetChildren => MultiOp::GetChildren(GetChildrenRequest::decode(buf)?),
            other => {
                return Err(DecodeError::InvalidMultiOp {
                    what: "MultiRequest",
                    opcode: other.as_i32(),
                })
            }
        })
    }
}

/// The request of `multi` and `multiRead`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The operations, in order.
    pub ops: Vec<MultiOp>,
}

impl Encode for MultiRequest {
    fn encode(&self, buf: &mut BytesMut) {
        for op in &self.ops {
            MultiHeader {
                opcode: op.opcode(),
                done: false,
                err: -1,
            }
            .encode(buf);
            op.body().encode(buf);
        }
        MultiHeader::TERMINATOR.encode(buf);
    }

    fn encoded_len(&self) -> usize {
        let ops: usize = self
            .ops
            .iter()
            .map(|op| MultiHeader::LEN + op.body().encoded_len())
            .sum();
        ops + MultiHeader::LEN
    }
}

impl Decode for MultiRequest {
    /// Reads ops until a header with `done` set. Every op takes at least a 9-byte header, so
    /// the loop ends with the input.
    fn decode(buf: &mut Bytes) -> Result<Self> {
        let mut ops = Vec::new();
        loop {
            let header = MultiHeader::decode(buf)?;
            if header.done {
                return Ok(MultiRequest { ops });
            }
            ops.push(MultiOp::decode_body(header.opcode, buf)?);
        }
    }
}

/// The result of one op of a multi reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiOpResult {
    /// Result of `create` (1).
    Create {
        /// The actual path.
        path: String,
    },
    /// Result of `create2`, `createContainer` and `createTTL` (sent as type 15).
    Create2 {
        /// The actual path.
        path: String,
        /// The new node's stat.
        stat: Stat,
    },
    /// Result of `delete`.
    Delete,
    /// Result of `setData`.
    SetData {
        /// The node's stat after the write.
        stat: Stat,
    },
    /// Result of `check`.
    Check,
    /// Result of `getData` in a `multiRead`.
    GetData {
        /// The node's data; `None` for null data.
        data: Option<Bytes>,
        /// The node's stat.
        stat: Stat,
    },
    /// Result of `getChildren` in a `multiRead`.
    GetChildren {
        /// Bare child names.
        children: Vec<String>,
    },
    /// An error result (type −1). In a failed `multi`, OK marks ops before the failure and
    /// RUNTIMEINCONSISTENCY ops after it.
    Error {
        /// The op's error code.
        err: ErrorCode,
    },
}

impl MultiOpResult {
    fn header(&self) -> MultiHeader {
        let (opcode, err) = match self {
            MultiOpResult::Create { .. } => (OpCode::Create, 0),
            MultiOpResult::Create2 { .. } => (OpCode::Create2, 0),
            MultiOpResult::Delete => (OpCode::Delete, 0),
            MultiOpResult::SetData { .. } => (OpCode::SetData, 0),
            MultiOpResult::Check => (OpCode::Check, 0),
            MultiOpResult::GetData { .. } => (OpCode::GetData, 0),
            MultiOpResult::GetChildren { .. } => (OpCode::GetChildren, 0),
            MultiOpResult::Error { err } => (OpCode::Error, err.as_i32()),
        };
        MultiHeader {
            opcode,
            done: false,
            err,
        }
    }

    fn encode_body(&self, buf: &mut BytesMut) {
        use crate::jute::{write_buffer, write_i32, write_string, write_vec};
        match self {
            MultiOpResult::Create { path } => write_string(buf, Some(path)),
            MultiOpResult::Create2 { path, stat } => {
                write_string(buf, Some(path));
                stat.encode(buf);
            }
            MultiOpResult::Delete | MultiOpResult::Check => {}
            MultiOpResult::SetData { stat } => stat.encode(buf),
            MultiOpResult::GetData { data, stat } => {
                write_buffer(buf, data.as_deref());
                stat.encode(buf);
            }
            MultiOpResult::GetChildren { children } => {
                write_vec(buf, children, |c, b| write_string(b, Some(c)))
            }
            MultiOpResult::Error { err } => write_i32(buf, err.as_i32()),
        }
    }

    fn body_len(&self) -> usize {
        match self {
            MultiOpResult::Create { path } => 4 + path.len(),
            MultiOpResult::Create2 { path, .. } => 4 + path.len() + Stat::LEN,
            MultiOpResult::Delete | MultiOpResult::Check => 0,
            MultiOpResult::SetData { .. } => Stat::LEN,
            MultiOpResult::GetData { data, .. } => {
                4 + data.as_ref().map_or(0, Bytes::len) + Stat::LEN
            }
            MultiOpResult::GetChildren { children } => {
                4 + children.iter().map(|c| 4 + c.len()).sum::<usize>()
            }
            MultiOpResult::Error { .. } => 4,
        }
    }

    fn decode_body(opcode: OpCode, buf: &mut Bytes) -> Result<MultiOpResult> {
        Ok(match opcode {
            OpCode::Create => MultiOpResult::Create {
                path: CreateResponse::decode(buf)?.path,
            },
            // Servers report every stat-returning create as type 15; accept the other create
            // opcodes too, as the Java client does.
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                let Create2Response { path, stat } = Create2Response::decode(buf)?;
                MultiOpResult::Create2 { path, stat }
            }
            OpCode::Delete => MultiOpResult::Delete,
            OpCode::SetData => MultiOpResult::SetData {
                stat: SetDataResponse::decode(buf)?.stat,
            },
            OpCode::Check => MultiOpResult::Check,
            OpCode::GetData => {
                let GetDataResponse { data, stat } = GetDataResponse::decode(buf)?;
                MultiOpResult::GetData { data, stat }
            }
            OpCode::GetChildren => MultiOpResult::GetChildren {
                children: GetChildrenResponse::decode(buf)?.children,
            },
            // The ErrorResponse body, not the header, carries the code the Java client uses.
            OpCode::Error => MultiOpResult::Error {
                err: ErrorCode::from_i32(ErrorResponse::decode(buf)?.err),
            },
            other => {
                return Err(DecodeError::InvalidMultiOp {
                    what: "MultiResponse",
                    opcode: other.as_i32(),
                })
            }
        })
    }
}

/// The reply body of `multi` and `multiRead`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// One result per op, in request order.
    pub results: Vec<MultiOpResult>,
}

impl MultiResponse {
    /// The index and code of the first failed op of a `multi`, if the transaction failed.
    pub fn first_error(&self) -> Option<(usize, ErrorCode)> {
        self.results.iter().enumerate().find_map(|(i, r)| match r {
            MultiOpResult::Error { err } if !err.is_ok() => Some((i, *err)),
            _ => None,
        })
    }
}

impl Encode for MultiResponse {
    fn encode(&self, buf: &mut BytesMut) {
        for result in &self.results {
            result.header().encode(buf);
            result.encode_body(buf);
        }
        MultiHeader::TERMINATOR.encode(buf);
    }

    fn encoded_len(&self) -> usize {
        let results: usize = self
            .results
            .iter()
            .map(|r| MultiHeader::LEN + r.body_len())
            .sum();
        results + MultiHeader::LEN
    }
}

impl Decode for MultiResponse {
    /// Reads results until a header with `done` set. Every result takes at least a 9-byte
    /// header, so the loop ends with the input.
    fn decode(buf: &mut Bytes) -> Result<Self> {
        let mut results = Vec::new();
        loop {
            let header = MultiHeader::decode(buf)?;
            if header.done {
                return Ok(MultiResponse { results });
            }
            results.push(MultiOpResult::decode_body(header.opcode, buf)?);
        }
    }
}
