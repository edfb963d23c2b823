//! Shared helpers of the integration tests: hex parsing and one sample of every record.
#![allow(dead_code)]

use bytes::Bytes;
use zookeeper_jute::*;

/// Parses whitespace-separated hex bytes.
pub fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("test vector is hex"))
        .collect()
}

pub fn stat(seed: i64) -> Stat {
    Stat {
        czxid: seed,
        mzxid: seed + 1,
        ctime: 1_700_000_000_000 + seed,
        mtime: 1_700_000_000_001 + seed,
        version: 3,
        cversion: -2,
        aversion: i32::MAX,
        ephemeral_owner: 0x0100_0006_79b3_0000,
        data_length: 100,
        num_children: 7,
        pzxid: i64::MIN,
    }
}

pub fn acl() -> Vec<Acl> {
    vec![
        Acl {
            perms: perms::READ | perms::ADMIN,
            id: Id {
                scheme: "digest".into(),
                id: "bob:x".into(),
            },
        },
        Acl::open_unsafe().remove(0),
    ]
}

fn create() -> CreateRequest {
    CreateRequest {
        path: "/app/lock-".into(),
        data: Some(Bytes::from_static(b"payload")),
        acl: acl(),
        flags: CreateMode::EphemeralSequential.flags(),
    }
}

fn create_ttl() -> CreateTtlRequest {
    CreateTtlRequest {
        path: "/ttl".into(),
        data: None,
        acl: Acl::open_unsafe(),
        flags: CreateMode::PersistentWithTtl.flags(),
        ttl: 0xFF_FFFF_FFFF,
    }
}

pub fn multi_write_ops() -> Vec<MultiOp> {
    vec![
        MultiOp::Create(create()),
        MultiOp::Create2(create()),
        MultiOp::CreateContainer(CreateRequest {
            flags: 4,
            ..create()
        }),
        MultiOp::CreateTtl(create_ttl()),
        MultiOp::Delete(DeleteRequest {
            path: "/d".into(),
            version: -1,
        }),
        MultiOp::SetData(SetDataRequest {
            path: "/s".into(),
            data: Some(Bytes::from_static(b"y")),
            version: 4,
        }),
        MultiOp::Check(CheckVersionRequest {
            path: "/c".into(),
            version: 9,
        }),
    ]
}

pub fn multi_read_ops() -> Vec<MultiOp> {
    vec![
        MultiOp::GetData(GetDataRequest {
            path: "/g".into(),
            watch: false,
        }),
        MultiOp::GetChildren(GetChildrenRequest {
            path: "/".into(),
            watch: false,
        }),
    ]
}

/// One request of every variant, with non-trivial field values.
pub fn requests() -> Vec<Request> {
    vec![
        Request::Create(create()),
        Request::Create2(create()),
        Request::CreateContainer(CreateRequest {
            flags: 4,
            data: None,
            ..create()
        }),
        Request::CreateTtl(create_ttl()),
        Request::Delete(DeleteRequest {
            path: "/a/b".into(),
            version: 17,
        }),
        Request::Exists(ExistsRequest {
            path: "/e".into(),
            watch: true,
        }),
        Request::GetData(GetDataRequest {
            path: "/foo".into(),
            watch: true,
        }),
        Request::SetData(SetDataRequest {
            path: "/foo".into(),
            data: Some(Bytes::from(vec![0xAB; 300])),
            version: -1,
        }),
        Request::GetAcl(GetAclRequest {
            path: "/acl".into(),
        }),
        Request::SetAcl(SetAclRequest {
            path: "/acl".into(),
            acl: acl(),
            version: 2,
        }),
        Request::GetChildren(GetChildrenRequest {
            path: "/kids".into(),
            watch: false,
        }),
        Request::GetChildren2(GetChildren2Request {
            path: "/kids".into(),
            watch: true,
        }),
        Request::GetAllChildrenNumber(GetAllChildrenNumberRequest { path: "/".into() }),
        Request::GetEphemerals(GetEphemeralsRequest {
            prefix_path: "/app".into(),
        }),
        Request::Sync(SyncRequest { path: "/s".into() }),
        Request::Multi(MultiRequest {
            ops: multi_write_ops(),
        }),
        Request::Multi(MultiRequest { ops: vec![] }),
        Request::MultiRead(MultiRequest {
            ops: multi_read_ops(),
        }),
        Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Bytes::from_static(b"bob:pw"),
        }),
        Request::SetWatches(SetWatches {
            relative_zxid: 0x41,
            data_watches: vec!["/w".into(), "/w/x".into()],
            exist_watches: vec!["/nothere".into()],
            child_watches: vec![],
        }),
        Request::SetWatches2(SetWatches2 {
            relative_zxid: 0x42,
            data_watches: vec!["/w".into()],
            exist_watches: vec![],
            child_watches: vec!["/c".into()],
            persistent_watches: vec!["/p".into()],
            persistent_recursive_watches: vec!["/r".into(), "/r2".into()],
        }),
        Request::AddWatch(AddWatchRequest {
            path: "/w".into(),
            mode: AddWatchMode::PersistentRecursive.as_i32(),
        }),
        Request::CheckWatches(CheckWatchesRequest {
            path: "/w".into(),
            watcher_type: WatcherType::Data.as_i32(),
        }),
        Request::RemoveWatches(RemoveWatchesRequest {
            path: "/w".into(),
            watcher_type: WatcherType::Any.as_i32(),
        }),
        Request::Reconfig(ReconfigRequest {
            joining_servers: Some("server.4=127.0.0.1:2888:3888;2181".into()),
            leaving_servers: None,
            new_members: None,
            cur_config_id: -1,
        }),
        Request::Sasl(GetSaslRequest {
            token: Some(Bytes::new()),
        }),
        Request::Sasl(GetSaslRequest { token: None }),
        Request::WhoAmI,
        Request::Ping,
        Request::CloseSession,
    ]
}

/// One successful response of every variant, with the opcode it answers.
pub fn responses() -> Vec<(OpCode, Response)> {
    vec![
        (OpCode::Delete, Response::Empty),
        (
            OpCode::Create,
            Response::Create(CreateResponse {
                path: "/app/lock-0000000001".into(),
            }),
        ),
        (
            OpCode::Create2,
            Response::Create2(Create2Response {
                path: "/app/lock-0000000002".into(),
                stat: stat(2),
            }),
        ),
        (
            OpCode::Exists,
            Response::Exists(ExistsResponse { stat: stat(3) }),
        ),
        (
            OpCode::GetData,
            Response::GetData(GetDataResponse {
                data: Some(Bytes::from(vec![7; 100])),
                stat: stat(4),
            }),
        ),
        (
            OpCode::GetData,
            Response::GetData(GetDataResponse {
                data: None,
                stat: stat(5),
            }),
        ),
        (
            OpCode::SetData,
            Response::SetData(SetDataResponse { stat: stat(6) }),
        ),
        (
            OpCode::GetAcl,
            Response::GetAcl(GetAclResponse {
                acl: acl(),
                stat: stat(7),
            }),
        ),
        (
            OpCode::SetAcl,
            Response::SetAcl(SetAclResponse { stat: stat(8) }),
        ),
        (
            OpCode::GetChildren,
            Response::GetChildren(GetChildrenResponse {
                children: vec!["a".into(), "b".into(), "".into()],
            }),
        ),
        (
            OpCode::GetChildren2,
            Response::GetChildren2(GetChildren2Response {
                children: vec!["lock-0000000001".into()],
                stat: stat(9),
            }),
        ),
        (
            OpCode::GetAllChildrenNumber,
            Response::GetAllChildrenNumber(GetAllChildrenNumberResponse { total_number: 42 }),
        ),
        (
            OpCode::GetEphemerals,
            Response::GetEphemerals(GetEphemeralsResponse {
                ephemerals: vec!["/app/e1".into(), "/app/e2".into()],
            }),
        ),
        (
            OpCode::Sync,
            Response::Sync(SyncResponse { path: "/s".into() }),
        ),
        (
            OpCode::Multi,
            Response::Multi(MultiResponse {
                results: vec![
                    MultiOpResult::Create { path: "/a".into() },
                    MultiOpResult::Create2 {
                        path: "/b".into(),
                        stat: stat(10),
                    },
                    MultiOpResult::Delete,
                    MultiOpResult::SetData { stat: stat(11) },
                    MultiOpResult::Check,
                ],
            }),
        ),
        (
            OpCode::Multi,
            Response::Multi(MultiResponse {
                results: vec![
                    MultiOpResult::Error { err: ErrorCode::Ok },
                    MultiOpResult::Error {
                        err: ErrorCode::NodeExists,
                    },
                    MultiOpResult::Error {
                        err: ErrorCode::RuntimeInconsistency,
                    },
                ],
            }),
        ),
        (
            OpCode::MultiRead,
            Response::Multi(MultiResponse {
                results: vec![
                    MultiOpResult::GetData {
                        data: Some(Bytes::from_static(b"x")),
                        stat: stat(12),
                    },
                    MultiOpResult::GetChildren {
                        children: vec!["k".into()],
                    },
                    MultiOpResult::GetData {
                        data: None,
                        stat: stat(13),
                    },
                    MultiOpResult::Error {
                        err: ErrorCode::NoNode,
                    },
                ],
            }),
        ),
        (
            OpCode::AddWatch,
            Response::AddWatch(ErrorResponse { err: 0 }),
        ),
        (
            OpCode::WhoAmI,
            Response::WhoAmI(WhoAmIResponse {
                client_info: vec![
                    ClientInfo {
                        auth_scheme: "ip".into(),
                        user: "127.0.0.1".into(),
                    },
                    ClientInfo {
                        auth_scheme: "digest".into(),
                        user: "bob".into(),
                    },
                ],
            }),
        ),
        (
            OpCode::Sasl,
            Response::Sasl(SetSaslResponse {
                token: Some(Bytes::from_static(b"challenge")),
            }),
        ),
        (
            OpCode::Sasl,
            Response::Sasl(SetSaslResponse { token: None }),
        ),
        (
            OpCode::Reconfig,
            Response::GetData(GetDataResponse {
                data: Some(Bytes::from_static(
                    b"server.1=127.0.0.1:2888:3888;2181\nversion=1",
                )),
                stat: stat(14),
            }),
        ),
    ]
}

pub fn connect_request() -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0x20,
        timeout: 6000,
        session_id: 0x0100_0008_321d_000b,
        passwd: Bytes::from_static(&[9; 16]),
        read_only: Some(true),
    }
}

pub fn connect_response() -> ConnectResponse {
    ConnectResponse {
        protocol_version: 0,
        timeout: 4000,
        session_id: 0x0100_0008_321d_000b,
        passwd: Bytes::from_static(&[9; 16]),
        read_only: Some(false),
    }
}

pub fn watcher_event() -> WatcherEvent {
    WatcherEvent {
        event_type: EventType::NodeDataChanged,
        state: KeeperState::SyncConnected,
        path: "/foo".into(),
    }
}

pub mod fuzz_checks;
