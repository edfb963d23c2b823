//! [`Response`]: the body of a successful reply, decoded by the opcode of its request.

use bytes::{Bytes, BytesMut};

use crate::consts::OpCode;
use crate::error::DecodeError;
use crate::jute::{Decode, Encode};
use crate::records::*;
use crate::Result;

/// The body of a reply whose header has `err == 0`: one variant per response record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// No body: `delete`, `setWatches`, `setWatches2`, `checkWatches`, `removeWatches`,
    /// `auth`, `ping`, `closeSession`.
    Empty,
    /// `create` (1).
    Create(CreateResponse),
    /// `create2`, `createContainer`, `createTTL`.
    Create2(Create2Response),
    /// `exists`.
    Exists(ExistsResponse),
    /// `getData`, and `reconfig` (the new configuration).
    GetData(GetDataResponse),
    /// `setData`.
    SetData(SetDataResponse),
    /// `getACL`.
    GetAcl(GetAclResponse),
    /// `setACL`.
    SetAcl(SetAclResponse),
    /// `getChildren`.
    GetChildren(GetChildrenResponse),
    /// `getChildren2`.
    GetChildren2(GetChildren2Response),
    /// `getAllChildrenNumber`.
    GetAllChildrenNumber(GetAllChildrenNumberResponse),
    /// `getEphemerals`.
    GetEphemerals(GetEphemeralsResponse),
    /// `sync`.
    Sync(SyncResponse),
    /// `multi` and `multiRead`.
    Multi(MultiResponse),
    /// `addWatch`: an [`ErrorResponse`] holding 0.
    AddWatch(ErrorResponse),
    /// `whoAmI`.
    WhoAmI(WhoAmIResponse),
    /// `sasl`.
    Sasl(SetSaslResponse),
}

impl Response {
    /// Decodes the body of a successful reply to a request with opcode `opcode`.
    ///
    /// Bytes after the record are left in `body` (newer servers may append fields; the Java
    /// client ignores them too). Opcodes that have no reply a client could be waiting for
    /// fail with [`DecodeError::UnexpectedOpCode`].
    pub fn decode(opcode: OpCode, body: &mut Bytes) -> Result<Response> {
        Ok(match opcode {
            OpCode::Delete
            | OpCode::SetWatches
            | OpCode::SetWatches2
            | OpCode::CheckWatches
            | OpCode::RemoveWatches
            | OpCode::Auth
            | OpCode::Ping
            | OpCode::CloseSession => Response::Empty,
            OpCode::Create => Response::Create(CreateResponse::decode(body)?),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                Response::Create2(Create2Response::decode(body)?)
            }
            OpCode::Exists => Response::Exists(ExistsResponse::decode(body)?),
            OpCode::GetData | OpCode::Reconfig => Response::GetData(GetDataResponse::decode(body)?),
            OpCode::SetData => Response::SetData(SetDataResponse::decode(body)?),
            OpCode::GetAcl => Response::GetAcl(GetAclResponse::decode(body)?),
            OpCode::SetAcl => Response::SetAcl(SetAclResponse::decode(body)?),
            OpCode::GetChildren => Response::GetChildren(GetChildrenResponse::decode(body)?),
            OpCode::GetChildren2 => Response::GetChildren2(GetChildren2Response::decode(body)?),
            OpCode::GetAllChildrenNumber => {
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse::decode(body)?)
            }
            OpCode::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::decode(body)?),
            OpCode::Sync => Response::Sync(SyncResponse::decode(body)?),
            OpCode::Multi | OpCode::MultiRead => Response::Multi(MultiResponse::decode(body)?),
            OpCode::AddWatch => Response::AddWatch(ErrorResponse::decode(body)?),
            OpCode::WhoAmI => Response::WhoAmI(WhoAmIResponse::decode(body)?),
            OpCode::Sasl => Response::Sasl(SetSaslResponse::decode(body)?),
            OpCode::Check
            | OpCode::DeleteContainer
            | OpCode::Notification
            | OpCode::CreateSession
            | OpCode::Error
            | OpCode::Unknown(_) => {
                return Err(DecodeError::UnexpectedOpCode {
                    what: "response",
                    opcode: opcode.as_i32(),
                })
            }
        })
    }

    fn body(&self) -> Option<&dyn Encode> {
        Some(match self {
            Response::Empty => return None,
            Response::Create(r) => r,
            Response::Create2(r) => r,
            Response::Exists(r) => r,
            Response::GetData(r) => r,
            Response::SetData(r) => r,
            Response::GetAcl(r) => r,
            Response::SetAcl(r) => r,
            Response::GetChildren(r) => r,
            Response::GetChildren2(r) => r,
            Response::GetAllChildrenNumber(r) => r,
            Response::GetEphemerals(r) => r,
            Response::Sync(r) => r,
            Response::Multi(r) => r,
            Response::AddWatch(r) => r,
            Response::WhoAmI(r) => r,
            Response::Sasl(r) => r,
        })
    }
}

impl Encode for Response {
    #[inline]
    fn encode(&self, buf: &mut BytesMut) {
        if let Some(body) = self.body() {
            body.encode(buf);
        }
    }

    #[inline]
    fn encoded_len(&self) -> usize {
        self.body().map_or(0, Encode::encoded_len)
    }
}
