//! Group membership, compatible with Curator's `GroupMember`.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use zookeeper_tokio::CreateOptions;

use crate::cache::{CacheEvents, TreeCache};

use crate::coordination::persistent_node::{PersistentNode, PersistentNodeState};
use crate::error::{Error, Result};
use crate::node::path::join;
use crate::session::sessions::Sessions;

/// A member of a group, and the group as it stands (Curator's `GroupMember`): our member is
/// an ephemeral `<group>/<id>` holding our payload, kept by a [`PersistentNode`] (created again
/// if deleted, and in a new session after expiry with renewing [`Sessions`]); the members are
/// the children of `<group>`, kept by a [`TreeCache`]. Curator's and our members see each other.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zookeeper_recipes::GroupMember;
///
/// let servers = "127.0.0.1:2181";
/// # let servers = &zookeeper_testkit::shared_server()
/// #     .connect_string_with_chroot(&zookeeper_testkit::chroot_for("doc_group_member"));
/// let client = zookeeper_tokio::Client::connect(servers).await?;
/// let a = GroupMember::start(&client, "/workers", "a", b"10.0.0.1").await?;
/// let b = GroupMember::start(&client, "/workers", "b", b"10.0.0.2").await?;
/// let mut changes = a.changes();
/// while a.members().len() < 2 {
///     changes.next().await?;
/// }
/// assert_eq!(&a.members()["b"][..], b"10.0.0.2");
/// b.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct GroupMember {
    node: PersistentNode,
    cache: TreeCache,
    group: String,
    id: String,
}

impl GroupMember {
    /// Joins the group at `group` as `id` (a node name: no `/`) with `payload`, and waits until
    /// the group is read and our member exists. A member with our `id` from another session
    /// holds us back until it goes (see [`PersistentNode`]); this waits for at most 30
    /// seconds for that, and fails with a timeout error after, leaving nothing behind.
    pub async fn start(
        sessions: impl Into<Sessions>,
        group: &str,
        id: &str,
        payload: &[u8],
    ) -> Result<GroupMember> {
        if id.is_empty() || id.contains('/') || id == "." || id == ".." {
            return Err(Error::InvalidArgument(
                "a member id is a node name: not empty, no '/'",
            ));
        }
        let sessions = sessions.into();
        let node = PersistentNode::start(
            &sessions,
            &join(group, id),
            payload,
            CreateOptions::ephemeral(),
        )?;
        let cache = match TreeCache::start(&sessions, group).await {
            Ok(cache) => cache,
            Err(e) => {
                node.close().await?;
                return Err(e);
            }
        };
        let member = GroupMember {
            node,
            cache,
            group: group.to_owned(),
            id: id.to_owned(),
        };
        match member.node.wait_for_initial_create(JOIN_WAIT).await {
            Ok(true) => Ok(member),
            Ok(false) => {
                member.close().await?;
                Err(Error::Client(zookeeper_tokio::ErrorKind::Timeout.into()))
            }
            Err(e) => {
                let _ = member.close().await;
                Err(e)
            }
        }
    }

    /// Our id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The group's path.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The members and their payloads, as the cache last saw them; we are always among them
    /// (with the payload we hold, even while our node is being created again).
    pub fn members(&self) -> BTreeMap<String, Bytes> {
        let mut members = BTreeMap::new();
        for name in self.cache.children(&self.group).unwrap_or_default() {
            let node = self.cache.get(&join(&self.group, &name));
            let payload = node.and_then(|n| n.data).unwrap_or_default();
            members.insert(name, payload);
        }
        members
            .entry(self.id.clone())
            .or_insert_with(|| Bytes::from(self.node.data()));
        members
    }

    /// Changes of the group (members coming, going, changing their payload), as cache
    /// events of the group's subtree.
    pub fn changes(&self) -> CacheEvents {
        self.cache.events()
    }

    /// Our member's node.
    pub fn state(&self) -> PersistentNodeState {
        self.node.state()
    }

    /// Changes our payload.
    pub fn set_payload(&self, payload: &[u8]) {
        self.node.set_data(payload);
    }

    /// Leaves the group: our node is deleted, the cache stopped.
    pub async fn close(&self) -> Result<()> {
        self.cache.close();
        self.node.close().await
    }
}

/// How long `start` waits for our member to exist.
const JOIN_WAIT: Duration = Duration::from_secs(30);
