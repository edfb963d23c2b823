//! [`Request`]: every request a client sends after the handshake, tied to its opcode.

use bytes::{Bytes, BytesMut};

use crate::consts::OpCode;
use crate::error::DecodeError;
use crate::jute::{Decode, Encode};
use crate::records::*;
use crate::Result;

/// A client request: one variant per opcode a client may send (standalone `check` is left out
/// on purpose: it is only valid inside a multi). Encoding writes the body only; frames add the
/// length prefix and the [`RequestHeader`] ([`encode_request_frame`](crate::encode_request_frame)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `create` (1): the reply carries only the path.
    Create(CreateRequest),
    /// `create2` (15): the reply carries the path and the stat.
    Create2(CreateRequest),
    /// `createContainer` (19).
    CreateContainer(CreateRequest),
    /// `createTTL` (21).
    CreateTtl(CreateTtlRequest),
    /// `delete` (2).
    Delete(DeleteRequest),
    /// `exists` (3).
    Exists(ExistsRequest),
    /// `getData` (4).
    GetData(GetDataRequest),
    /// `setData` (5).
    SetData(SetDataRequest),
    /// `getACL` (6).
    GetAcl(GetAclRequest),
    /// `setACL` (7).
    SetAcl(SetAclRequest),
    /// `getChildren` (8).
    GetChildren(GetChildrenRequest),
    /// `getChildren2` (12).
    GetChildren2(GetChildren2Request),
    /// `getAllChildrenNumber` (104).
    GetAllChildrenNumber(GetAllChildrenNumberRequest),
    /// `getEphemerals` (103).
    GetEphemerals(GetEphemeralsRequest),
    /// `sync` (9).
    Sync(SyncRequest),
    /// `multi` (14): write ops only.
    Multi(MultiRequest),
    /// `multiRead` (22): `getData`/`getChildren` ops only.
    MultiRead(MultiRequest),
    /// `auth` (100), sent with xid −4.
    Auth(AuthPacket),
    /// `setWatches` (101).
    SetWatches(SetWatches),
    /// `setWatches2` (105).
    SetWatches2(SetWatches2),
    /// `addWatch` (106).
    AddWatch(AddWatchRequest),
    /// `checkWatches` (17).
    CheckWatches(CheckWatchesRequest),
    /// `removeWatches` (18).
    RemoveWatches(RemoveWatchesRequest),
    /// `reconfig` (16).
    Reconfig(ReconfigRequest),
    /// `sasl` (102).
    Sasl(GetSaslRequest),
    /// `whoAmI` (107); no body.
    WhoAmI,
    /// `ping` (11), sent with xid −2; no body.
    Ping,
    /// `closeSession` (−11); no body.
    CloseSession,
}

impl Request {
    /// The opcode of the request.
    pub fn opcode(&self) -> OpCode {
        match self {
            Request::Create(_) => OpCode::Create,
            Request::Create2(_) => OpCode::Create2,
            Request::CreateContainer(_) => OpCode::CreateContainer,
            Request::CreateTtl(_) => OpCode::CreateTtl,
            Request::Delete(_) => OpCode::Delete,
            Request::Exists(_) => OpCode::Exists,
            Request::GetData(_) => OpCode::GetData,
            Request::SetData(_) => OpCode::SetData,
            Request::GetAcl(_) => OpCode::GetAcl,
            Request::SetAcl(_) => OpCode::SetAcl,
            Request::GetChildren(_) => OpCode::GetChildren,
            Request::GetChildren2(_) => OpCode::GetChildren2,
            Request::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            Request::GetEphemerals(_) => OpCode::GetEphemerals,
            Request::Sync(_) => OpCode::Sync,
            Request::Multi(_) => OpCode::Multi,
            Request::MultiRead(_) => OpCode::MultiRead,
            Request::Auth(_) => OpCode::Auth,
            Request::SetWatches(_) => OpCode::SetWatches,
            Request::SetWatches2(_) => OpCode::SetWatches2,
            Request::AddWatch(_) => OpCode::AddWatch,
            Request::CheckWatches(_) => OpCode::CheckWatches,
            Request::RemoveWatches(_) => OpCode::RemoveWatches,
            Request::Reconfig(_) => OpCode::Reconfig,
            Request::Sasl(_) => OpCode::Sasl,
            Request::WhoAmI => OpCode::WhoAmI,
            Request::Ping => OpCode::Ping,
            Request::CloseSession => OpCode::CloseSession,
        }
    }

    /// Decodes the body of a request with the given opcode (the server side of the protocol).
    ///
    /// Opcodes a client may not send standalone (`check`, `deleteContainer`, internal and
    /// unknown opcodes) fail with [`DecodeError::UnexpectedOpCode`]. Bytes after the record
    /// are left in `body`.
    pub fn decode(opcode: OpCode, body: &mut Bytes) -> Result<Request> {
        Ok(match opcode {
            OpCode::Create => Request::Create(CreateRequest::decode(body)?),
            OpCode::Create2 => Request::Create2(CreateRequest::decode(body)?),
            OpCode::CreateContainer => Request::CreateContainer(CreateRequest::decode(body)?),
            OpCode::CreateTtl => Request::CreateTtl(CreateTtlRequest::decode(body)?),
            OpCode::Delete => Request::Delete(DeleteRequest::decode(body)?),
            OpCode::Exists => Request::Exists(ExistsRequest::decode(body)?),
            OpCode::GetData => Request::GetData(GetDataRequest::decode(body)?),
            OpCode::SetData => Request::SetData(SetDataRequest::decode(body)?),
            OpCode::GetAcl => Request::GetAcl(GetAclRequest::decode(body)?),
            OpCode::SetAcl => Request::SetAcl(SetAclRequest::decode(body)?),
            OpCode::GetChildren => Request::GetChildren(GetChildrenRequest::decode(body)?),
            OpCode::GetChildren2 => Request::GetChildren2(GetChildren2Request::decode(body)?),
            OpCode::GetAllChildrenNumber => {
                Request::GetAllChildrenNumber(GetAllChildrenNumberRequest::decode(body)?)
            }
            OpCode::GetEphemerals => Request::GetEphemerals(GetEphemeralsRequest::decode(body)?),
            OpCode::Sync => Request::Sync(SyncRequest::decode(body)?),
            OpCode::Multi => Request::Multi(MultiRequest::decode(body)?),
            OpCode::MultiRead => Request::MultiRead(MultiRequest::decode(body)?),
            OpCode::Auth => Request::Auth(AuthPacket::decode(body)?),
            OpCode::SetWatches => Request::SetWatches(SetWatches::decode(body)?),
            OpCode::SetWatches2 => Request::SetWatches2(SetWatches2::decode(body)?),
            OpCode::AddWatch => Request::AddWatch(AddWatchRequest::decode(body)?),
            OpCode::CheckWatches => Request::CheckWatches(CheckWatchesRequest::decode(body)?),
            OpCode::RemoveWatches => Request::RemoveWatches(RemoveWatchesRequest::decode(body)?),
            OpCode::Reconfig => Request::Reconfig(ReconfigRequest::decode(body)?),
            OpCode::Sasl => Request::Sasl(GetSaslRequest::decode(body)?),
            OpCode::WhoAmI => Request::WhoAmI,
            OpCode::Ping => Request::Ping,
            OpCode::CloseSession => Request::CloseSession,
            OpCode::Check
            | OpCode::DeleteContainer
            | OpCode::Notification
            | OpCode::CreateSession
            | OpCode::Error
            | OpCode::Unknown(_) => {
                return Err(DecodeError::UnexpectedOpCode {
                    what: "request",
                    opcode: opcode.as_i32(),
                })
            }
        })
    }
}

/// Applies `$body` to the request record bound as `$r`, or evaluates `$none` for the bodiless
/// requests. A `match` rather than `&dyn Encode` so the hot path (getData) inlines.
macro_rules! with_body {
    ($request:expr, $r:ident => $body:expr, none => $none:expr) => {
        match $request {
            Request::Create($r) | Request::Create2($r) | Request::CreateContainer($r) => $body,
            Request::CreateTtl($r) => $body,
            Request::Delete($r) => $body,
            Request::Exists($r) => $body,
            Request::GetData($r) => $body,
            Request::SetData($r) => $body,
            Request::GetAcl($r) => $body,
            Request::SetAcl($r) => $body,
            Request::GetChildren($r) => $body,
            Request::GetChildren2($r) => $body,
            Request::GetAllChildrenNumber($r) => $body,
            Request::GetEphemerals($r) => $body,
            Request::Sync($r) => $body,
            Request::Multi($r) | Request::MultiRead($r) => $body,
            Request::Auth($r) => $body,
            Request::SetWatches($r) => $body,
            Request::SetWatches2($r) => $body,
            Request::AddWatch($r) => $body,
            Request::CheckWatches($r) => $body,
            Request::RemoveWatches($r) => $body,
            Request::Reconfig($r) => $body,
            Request::Sasl($r) => $body,
            Request::WhoAmI | Request::Ping | Request::CloseSession => $none,
        }
    };
}

impl Encode for Request {
    #[inline]
    fn encode(&self, buf: &mut BytesMut) {
        with_body!(self, r => r.encode(buf), none => ())
    }

    #[inline]
    fn encoded_len(&self) -> usize {
        with_body!(self, r => r.encoded_len(), none => 0)
    }
}
