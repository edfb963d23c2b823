//! Every client-side record of `zookeeper.jute` (3.4 through 3.9), one module per group.
//!
//! Type names are the jute names in Rust case; fields are in wire order. Nullable buffers and
//! strings that servers really send as null are `Option`s; elsewhere a null reads as empty.

mod acl;
mod auth;
mod children;
mod create;
mod data;
mod delete;
mod handshake;
mod headers;
mod multi;
mod node_data;
mod reconfig;
mod redact;
mod sasl;
mod sync;
mod watches;

pub use acl::{GetAclRequest, GetAclResponse, SetAclRequest, SetAclResponse};
pub use auth::{AuthPacket, WhoAmIResponse};
pub use children::{
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Request,
    GetChildren2Response, GetChildrenRequest, GetChildrenResponse, GetEphemeralsRequest,
    GetEphemeralsResponse,
};
pub use create::{Create2Response, CreateRequest, CreateResponse, CreateTtlRequest};
pub use data::{Acl, ClientInfo, Id, Stat};
pub use delete::DeleteRequest;
pub use handshake::{ConnectRequest, ConnectResponse, PASSWORD_LEN};
pub use headers::{ReplyHeader, RequestHeader};
pub use multi::{
    CheckVersionRequest, ErrorResponse, MultiHeader, MultiOp, MultiOpResult, MultiRequest,
    MultiResponse,
};
pub use node_data::{
    ExistsRequest, ExistsResponse, GetDataRequest, GetDataResponse, SetDataRequest, SetDataResponse,
};
pub use reconfig::ReconfigRequest;
pub use sasl::{GetSaslRequest, SetSaslResponse};
pub use sync::{SyncRequest, SyncResponse};
pub use watches::{
    AddWatchRequest, CheckWatchesRequest, RemoveWatchesRequest, SetWatches, SetWatches2,
    WatcherEvent,
};
