//! Operation codes (`ZooDefs.OpCode`), the `type` of a `RequestHeader` and of a `MultiHeader`.

use super::int_enum::int_enum;

int_enum! {
    /// An operation code. Some are server-internal and never sent by a client; they are listed
    /// so that logs and decoders can name them.
    pub enum OpCode {
        /// Internal marker for watch notifications; never a request.
        Notification = 0 => "NOTIFICATION",
        /// `create` (reply: path only).
        Create = 1 => "CREATE",
        /// `delete`.
        Delete = 2 => "DELETE",
        /// `exists`.
        Exists = 3 => "EXISTS",
        /// `getData`.
        GetData = 4 => "GETDATA",
        /// `setData`.
        SetData = 5 => "SETDATA",
        /// `getACL`.
        GetAcl = 6 => "GETACL",
        /// `setACL`.
        SetAcl = 7 => "SETACL",
        /// `getChildren`.
        GetChildren = 8 => "GETCHILDREN",
        /// `sync`.
        Sync = 9 => "SYNC",
        /// `ping` (xid −2).
        Ping = 11 => "PING",
        /// `getChildren2` (children and stat).
        GetChildren2 = 12 => "GETCHILDREN2",
        /// `check`: a version check, valid only inside `multi`. Servers 3.8.5+/3.9.3+ reject it
        /// standalone and older servers corrupt their log with it: never send it alone.
        Check = 13 => "CHECK",
        /// `multi` (atomic writes).
        Multi = 14 => "MULTI",
        /// `create2` (reply: path and stat), 3.5+.
        Create2 = 15 => "CREATE2",
        /// `reconfig`, 3.5+.
        Reconfig = 16 => "RECONFIG",
        /// `checkWatches`, 3.5+.
        CheckWatches = 17 => "CHECKWATCHES",
        /// `removeWatches`, 3.5+.
        RemoveWatches = 18 => "REMOVEWATCHES",
        /// `createContainer`, 3.5.1+.
        CreateContainer = 19 => "CREATECONTAINER",
        /// `deleteContainer`: server-internal, clients must not send it.
        DeleteContainer = 20 => "DELETECONTAINER",
        /// `createTTL`, 3.5.3+ (needs `zookeeper.extendedTypesEnabled=true`).
        CreateTtl = 21 => "CREATETTL",
        /// `multiRead`, 3.6+.
        MultiRead = 22 => "MULTIREAD",
        /// `auth` (xid −4).
        Auth = 100 => "AUTH",
        /// `setWatches`.
        SetWatches = 101 => "SETWATCHES",
        /// `sasl`.
        Sasl = 102 => "SASL",
        /// `getEphemerals`, 3.6+.
        GetEphemerals = 103 => "GETEPHEMERALS",
        /// `getAllChildrenNumber`, 3.6+.
        GetAllChildrenNumber = 104 => "GETALLCHILDRENNUMBER",
        /// `setWatches2` (with persistent watches), 3.6+.
        SetWatches2 = 105 => "SETWATCHES2",
        /// `addWatch`, 3.6+.
        AddWatch = 106 => "ADDWATCH",
        /// `whoAmI`, 3.7+.
        WhoAmI = 107 => "WHOAMI",
        /// Server-internal: a `ConnectRequest` becomes this transaction.
        CreateSession = -10 => "CREATESESSION",
        /// `closeSession`.
        CloseSession = -11 => "CLOSESESSION",
        /// Internal error transaction; also the type of an error result inside a multi reply.
        Error = -1 => "ERROR",
    }
}
