//! Constant tables: every known number maps to its variant and back, unknown numbers survive.

use zookeeper_jute::*;

#[test]
fn every_number_round_trips() {
    for n in -300..300 {
        assert_eq!(OpCode::from(n).as_i32(), n);
        assert_eq!(i32::from(ErrorCode::from(n)), n);
        assert_eq!(EventType::from(n).as_i32(), n);
        assert_eq!(KeeperState::from(n).as_i32(), n);
        assert_eq!(WatcherType::from(n).as_i32(), n);
        assert_eq!(AddWatchMode::from(n).as_i32(), n);
    }
    for n in [i32::MIN, i32::MAX] {
        assert_eq!(OpCode::from(n), OpCode::Unknown(n));
        assert_eq!(ErrorCode::from(n), ErrorCode::Unknown(n));
    }
}

#[test]
fn opcode_numbers() {
    let table = [
        (OpCode::Notification, 0),
        (OpCode::Create, 1),
        (OpCode::Delete, 2),
        (OpCode::Exists, 3),
        (OpCode::GetData, 4),
        (OpCode::SetData, 5),
        (OpCode::GetAcl, 6),
        (OpCode::SetAcl, 7),
        (OpCode::GetChildren, 8),
        (OpCode::Sync, 9),
        (OpCode::Ping, 11),
        (OpCode::GetChildren2, 12),
        (OpCode::Check, 13),
        (OpCode::Multi, 14),
        (OpCode::Create2, 15),
        (OpCode::Reconfig, 16),
        (OpCode::CheckWatches, 17),
        (OpCode::RemoveWatches, 18),
        (OpCode::CreateContainer, 19),
        (OpCode::DeleteContainer, 20),
        (OpCode::CreateTtl, 21),
        (OpCode::MultiRead, 22),
        (OpCode::Auth, 100),
        (OpCode::SetWatches, 101),
        (OpCode::Sasl, 102),
        (OpCode::GetEphemerals, 103),
        (OpCode::GetAllChildrenNumber, 104),
        (OpCode::SetWatches2, 105),
        (OpCode::AddWatch, 106),
        (OpCode::WhoAmI, 107),
        (OpCode::CreateSession, -10),
        (OpCode::CloseSession, -11),
        (OpCode::Error, -1),
    ];
    for (opcode, n) in table {
        assert_eq!(opcode.as_i32(), n);
        assert_eq!(OpCode::from(n), opcode);
    }
    assert_eq!(OpCode::from(10), OpCode::Unknown(10));
}

#[test]
fn error_code_numbers() {
    let table = [
        (ErrorCode::Ok, 0),
        (ErrorCode::SystemError, -1),
        (ErrorCode::RuntimeInconsistency, -2),
        (ErrorCode::DataInconsistency, -3),
        (ErrorCode::ConnectionLoss, -4),
        (ErrorCode::MarshallingError, -5),
        (ErrorCode::Unimplemented, -6),
        (ErrorCode::OperationTimeout, -7),
        (ErrorCode::BadArguments, -8),
        (ErrorCode::UnknownSession, -12),
        (ErrorCode::NewConfigNoQuorum, -13),
        (ErrorCode::ReconfigInProgress, -14),
        (ErrorCode::ApiError, -100),
        (ErrorCode::NoNode, -101),
        (ErrorCode::NoAuth, -102),
        (ErrorCode::BadVersion, -103),
        (ErrorCode::NoChildrenForEphemerals, -108),
        (ErrorCode::NodeExists, -110),
        (ErrorCode::NotEmpty, -111),
        (ErrorCode::SessionExpired, -112),
        (ErrorCode::InvalidCallback, -113),
        (ErrorCode::InvalidAcl, -114),
        (ErrorCode::AuthFailed, -115),
        (ErrorCode::SessionMoved, -118),
        (ErrorCode::NotReadOnly, -119),
        (ErrorCode::EphemeralOnLocalSession, -120),
        (ErrorCode::NoWatcher, -121),
        (ErrorCode::RequestTimeout, -122),
        (ErrorCode::ReconfigDisabled, -123),
        (ErrorCode::SessionClosedRequireSaslAuth, -124),
        (ErrorCode::QuotaExceeded, -125),
        (ErrorCode::ThrottledOp, -127),
    ];
    for (code, n) in table {
        assert_eq!(code.as_i32(), n);
        assert_eq!(ErrorCode::from(n), code);
    }
    assert_eq!(ErrorCode::from(-126), ErrorCode::Unknown(-126));
    assert_eq!(ErrorCode::NoNode.to_string(), "NONODE (-101)");
    assert_eq!(ErrorCode::Unknown(-126).to_string(), "UNKNOWN (-126)");
    assert_eq!(ErrorCode::default(), ErrorCode::Ok);
}

#[test]
fn watch_constants() {
    let events = [
        (EventType::None, -1),
        (EventType::NodeCreated, 1),
        (EventType::NodeDeleted, 2),
        (EventType::NodeDataChanged, 3),
        (EventType::NodeChildrenChanged, 4),
        (EventType::DataWatchRemoved, 5),
        (EventType::ChildWatchRemoved, 6),
        (EventType::PersistentWatchRemoved, 7),
    ];
    for (event, n) in events {
        assert_eq!(EventType::from(n), event);
    }
    let states = [
        (KeeperState::Disconnected, 0),
        (KeeperState::NoSyncConnected, 1),
        (KeeperState::SyncConnected, 3),
        (KeeperState::AuthFailed, 4),
        (KeeperState::ConnectedReadOnly, 5),
        (KeeperState::SaslAuthenticated, 6),
        (KeeperState::Expired, -112),
        (KeeperState::Closed, 7),
    ];
    for (state, n) in states {
        assert_eq!(KeeperState::from(n), state);
    }
    assert_eq!(KeeperState::from(-1), KeeperState::Unknown(-1));
    assert_eq!(KeeperState::from(2), KeeperState::Unknown(2));
    for (kind, n) in [
        (WatcherType::Children, 1),
        (WatcherType::Data, 2),
        (WatcherType::Any, 3),
        (WatcherType::Persistent, 4),
        (WatcherType::PersistentRecursive, 5),
    ] {
        assert_eq!(WatcherType::from(n), kind);
    }
    assert_eq!(AddWatchMode::from(0), AddWatchMode::Persistent);
    assert_eq!(AddWatchMode::from(1), AddWatchMode::PersistentRecursive);
}

#[test]
fn create_modes() {
    use CreateMode::*;
    // (mode, flags, ephemeral, sequential, ttl, container, opcode)
    let table = [
        (Persistent, 0, false, false, false, false, OpCode::Create2),
        (Ephemeral, 1, true, false, false, false, OpCode::Create2),
        (
            PersistentSequential,
            2,
            false,
            true,
            false,
            false,
            OpCode::Create2,
        ),
        (
            EphemeralSequential,
            3,
            true,
            true,
            false,
            false,
            OpCode::Create2,
        ),
        (
            Container,
            4,
            false,
            false,
            false,
            true,
            OpCode::CreateContainer,
        ),
        (
            PersistentWithTtl,
            5,
            false,
            false,
            true,
            false,
            OpCode::CreateTtl,
        ),
        (
            PersistentSequentialWithTtl,
            6,
            false,
            true,
            true,
            false,
            OpCode::CreateTtl,
        ),
    ];
    for (mode, flags, ephemeral, sequential, ttl, container, opcode) in table {
        assert_eq!(mode.flags(), flags);
        assert_eq!(CreateMode::from_flags(flags), Some(mode));
        assert_eq!(mode.is_ephemeral(), ephemeral, "{mode:?}");
        assert_eq!(mode.is_sequential(), sequential, "{mode:?}");
        assert_eq!(mode.is_ttl(), ttl, "{mode:?}");
        assert_eq!(mode.is_container(), container, "{mode:?}");
        assert_eq!(mode.opcode(), opcode, "{mode:?}");
    }
    assert_eq!(CreateMode::from_flags(7), None);
    assert_eq!(CreateMode::from_flags(-1), None);
}

#[test]
fn perms_xids_and_well_known_ids() {
    assert_eq!(
        [
            perms::READ,
            perms::WRITE,
            perms::CREATE,
            perms::DELETE,
            perms::ADMIN,
            perms::ALL
        ],
        [1, 2, 4, 8, 16, 31]
    );
    assert_eq!(
        [xid::NOTIFICATION, xid::PING, xid::AUTH, xid::SET_WATCHES],
        [-1, -2, -4, -8]
    );
    assert_eq!(
        Id::anyone(),
        Id {
            scheme: "world".into(),
            id: "anyone".into()
        }
    );
    assert_eq!(
        Id::auth(),
        Id {
            scheme: "auth".into(),
            id: String::new()
        }
    );
    assert_eq!(
        Acl::open_unsafe(),
        vec![Acl {
            perms: 31,
            id: Id::anyone()
        }]
    );
    assert_eq!(
        Acl::read_unsafe(),
        vec![Acl {
            perms: 1,
            id: Id::anyone()
        }]
    );
    assert_eq!(
        Acl::creator_all(),
        vec![Acl {
            perms: 31,
            id: Id::auth()
        }]
    );
    assert_eq!(consts::paths::CONFIG_NODE, "/zookeeper/config");
}
