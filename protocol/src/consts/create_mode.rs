//! Create modes (`CreateMode`) and the create flags they put on the wire.

use super::OpCode;

/// The kind of node a create makes. The wire carries [`CreateMode::flags`]; the mode also
/// decides the opcode ([`CreateMode::opcode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CreateMode {
    /// A node that lives until deleted.
    #[default]
    Persistent,
    /// A node deleted when the creating session ends.
    Ephemeral,
    /// A persistent node whose name gets a 10-digit sequence suffix.
    PersistentSequential,
    /// An ephemeral node whose name gets a 10-digit sequence suffix.
    EphemeralSequential,
    /// A node the server deletes once its last child is gone (3.5.1+).
    Container,
    /// A persistent node deleted after its TTL if it has no children (3.5.3+, server opt-in).
    PersistentWithTtl,
    /// A sequential persistent node with a TTL (3.5.3+, server opt-in).
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// The `flags` value of the create request.
    pub const fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
            CreateMode::PersistentWithTtl => 5,
            CreateMode::PersistentSequentialWithTtl => 6,
        }
    }

    /// The mode for a `flags` value; `None` for values servers reject.
    pub const fn from_flags(flags: i32) -> Option<CreateMode> {
        Some(match flags {
            0 => CreateMode::Persistent,
            1 => CreateMode::Ephemeral,
            2 => CreateMode::PersistentSequential,
            3 => CreateMode::EphemeralSequential,
            4 => CreateMode::Container,
            5 => CreateMode::PersistentWithTtl,
            6 => CreateMode::PersistentSequentialWithTtl,
            _ => return None,
        })
    }

    /// True for the modes whose node ends with the session.
    pub const fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// True for the modes that add a sequence suffix.
    pub const fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// True for the modes that need a TTL (and opcode `createTTL`).
    pub const fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// True for [`CreateMode::Container`].
    pub const fn is_container(self) -> bool {
        matches!(self, CreateMode::Container)
    }

    /// The opcode a create of this mode must use: `createContainer` (19) for containers,
    /// `createTTL` (21) for TTL modes, otherwise `create2` (15), whose reply carries the new
    /// node's stat. (`create` (1) would also accept the plain modes but returns only the path.)
    pub const fn opcode(self) -> OpCode {
        if self.is_container() {
            OpCode::CreateContainer
        } else if self.is_ttl() {
            OpCode::CreateTtl
        } else {
            OpCode::Create2
        }
    }
}
