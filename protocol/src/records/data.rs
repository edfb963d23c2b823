//! Data records (`org.apache.zookeeper.data`): `Id`, `ACL`, `Stat`, `ClientInfo`.

use bytes::{Buf, Bytes, BytesMut};

use crate::consts::perms;
use crate::error::DecodeError;
use crate::jute::{record, Decode, Encode, Field};
use crate::Result;

record! {
    /// An identity: an auth scheme and an id within it, for example `world:anyone`.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Id {
        /// Auth scheme: `world`, `auth`, `digest`, `ip`, `sasl`, `x509`, ...
        pub scheme: String,
        /// The id within the scheme.
        pub id: String,
    }
}

impl Id {
    /// `world:anyone`, everybody (`ZooDefs.Ids.ANYONE_ID_UNSAFE`).
    pub fn anyone() -> Id {
        Id {
            scheme: "world".into(),
            id: "anyone".into(),
        }
    }

    /// `auth:` — in an ACL being set, the server replaces it with every identity the session
    /// has authenticated as (`ZooDefs.Ids.AUTH_IDS`).
    pub fn auth() -> Id {
        Id {
            scheme: "auth".into(),
            id: String::new(),
        }
    }
}

record! {
    /// One ACL entry: the permissions (`perms` bits) granted to an identity.
    #[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Acl {
        /// Bit mask of [`perms`](crate::perms).
        pub perms: i32,
        /// Who gets them.
        pub id: Id,
    }
}

impl Acl {
    /// Everything for everybody (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id::anyone(),
        }]
    }

    /// Read for everybody (`ZooDefs.Ids.READ_ACL_UNSAFE`).
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: perms::READ,
            id: Id::anyone(),
        }]
    }

    /// Everything for the session's authenticated identities (`ZooDefs.Ids.CREATOR_ALL_ACL`);
    /// the server answers INVALIDACL if the session has authenticated as nobody.
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl {
            perms: perms::ALL,
            id: Id::auth(),
        }]
    }
}

/// The metadata of a znode. Always 68 bytes on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Stat {
    /// zxid of the create.
    pub czxid: i64,
    /// zxid of the last data change.
    pub mzxid: i64,
    /// Creation time, ms since the Unix epoch.
    pub ctime: i64,
    /// Last modification time, ms since the Unix epoch.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Children version.
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Owning session of an ephemeral node, else 0 (also 0 for container and TTL nodes).
    pub ephemeral_owner: i64,
    /// Length of the data.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
    /// zxid of the last change to the children list.
    pub pzxid: i64,
}

impl Stat {
    /// Bytes of a `Stat` on the wire.
    pub const LEN: usize = 68;
}

impl Encode for Stat {
    #[inline]
    fn encode(&self, buf: &mut BytesMut) {
        // Assembled on the stack and appended with one copy: one bounds check instead of
        // eleven.
        let mut b = [0u8; Stat::LEN];
        b[0..8].copy_from_slice(&self.czxid.to_be_bytes());
        b[8..16].copy_from_slice(&self.mzxid.to_be_bytes());
        b[16..24].copy_from_slice(&self.ctime.to_be_bytes());
        b[24..32].copy_from_slice(&self.mtime.to_be_bytes());
        b[32..36].copy_from_slice(&self.version.to_be_bytes());
        b[36..40].copy_from_slice(&self.cversion.to_be_bytes());
        b[40..44].copy_from_slice(&self.aversion.to_be_bytes());
        b[44..52].copy_from_slice(&self.ephemeral_owner.to_be_bytes());
        b[52..56].copy_from_slice(&self.data_length.to_be_bytes());
        b[56..60].copy_from_slice(&self.num_children.to_be_bytes());
        b[60..68].copy_from_slice(&self.pzxid.to_be_bytes());
        buf.extend_from_slice(&b);
    }

    #[inline]
    fn encoded_len(&self) -> usize {
        Self::LEN
    }
}

impl Stat {
    /// Reads a `Stat` from its 68 wire bytes, every field at its fixed offset.
    #[inline]
    pub fn from_wire(b: &[u8; Stat::LEN]) -> Stat {
        let long = |at: usize| {
            i64::from_be_bytes([
                b[at],
                b[at + 1],
                b[at + 2],
                b[at + 3],
                b[at + 4],
                b[at + 5],
                b[at + 6],
                b[at + 7],
            ])
        };
        let int = |at: usize| i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        Stat {
            czxid: long(0),
            mzxid: long(8),
            ctime: long(16),
            mtime: long(24),
            version: int(32),
            cversion: int(36),
            aversion: int(40),
            ephemeral_owner: long(44),
            data_length: int(52),
            num_children: int(56),
            pzxid: long(60),
        }
    }
}

impl Decode for Stat {
    #[inline]
    fn decode(buf: &mut Bytes) -> Result<Self> {
        let wire =
            buf.chunk()
                .first_chunk::<{ Stat::LEN }>()
                .ok_or(DecodeError::UnexpectedEof {
                    what: "Stat",
                    needed: Self::LEN,
                    remaining: buf.len(),
                })?;
        let stat = Stat::from_wire(wire);
        buf.advance(Self::LEN);
        Ok(stat)
    }
}

impl Field for Stat {
    const MIN_LEN: usize = Stat::LEN;
    #[inline]
    fn write(&self, buf: &mut BytesMut) {
        self.encode(buf);
    }
    #[inline]
    fn wire_len(&self) -> usize {
        Self::LEN
    }
    #[inline]
    fn read(buf: &mut Bytes, _what: &'static str) -> Result<Self> {
        Stat::decode(buf)
    }
}

record! {
    /// One identity of the session, as reported by `whoAmI` (3.7+).
    #[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
    pub struct ClientInfo {
        /// Auth scheme, for example `ip` or `digest`.
        pub auth_scheme: String,
        /// The identity within the scheme.
        pub user: String,
    }
}
