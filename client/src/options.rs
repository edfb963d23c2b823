//! Options of `create`.

use std::time::Duration;

use zookeeper_jute::{Acl, CreateMode};

use crate::error::{ErrorKind, Result};

/// Largest TTL servers accept (2^40 − 1 ms).
pub const MAX_TTL: Duration = Duration::from_millis((1 << 40) - 1);

/// How to create a node: mode, ACL, (for TTL modes) the TTL, and what to do about missing
/// ancestors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateOptions {
    /// The node's kind.
    pub mode: CreateMode,
    /// The node's ACL (default: open to everyone).
    pub acl: Vec<Acl>,
    /// Time to live, required for the TTL modes and refused for the others.
    pub ttl: Option<Duration>,
    /// Whether `create` first makes the missing ancestors (default: no, it fails with
    /// [`ErrorKind::NoNode`]).
    pub parents: Parents,
}

/// What `create` does when the new node's parent does not exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Parents {
    /// Fail with [`ErrorKind::NoNode`], as the server does.
    #[default]
    Fail,
    /// Create every missing ancestor as a persistent node with the new node's ACL, as
    /// Curator's `creatingParentsIfNeeded` and kazoo's `makepath` do.
    Persistent,
    /// Create every missing ancestor as a container node (removed by the server once its last
    /// child is gone), as Curator's `creatingParentContainersIfNeeded` does.
    Container,
}

impl CreateOptions {
    /// Options for `mode` with an open ACL.
    pub fn new(mode: CreateMode) -> CreateOptions {
        CreateOptions {
            mode,
            acl: Acl::open_unsafe(),
            ttl: None,
            parents: Parents::Fail,
        }
    }

    /// A persistent node.
    pub fn persistent() -> CreateOptions {
        CreateOptions::new(CreateMode::Persistent)
    }

    /// An ephemeral node.
    pub fn ephemeral() -> CreateOptions {
        CreateOptions::new(CreateMode::Ephemeral)
    }

    /// A persistent node with a sequence suffix.
    pub fn persistent_sequential() -> CreateOptions {
        CreateOptions::new(CreateMode::PersistentSequential)
    }

    /// An ephemeral node with a sequence suffix.
    pub fn ephemeral_sequential() -> CreateOptions {
        CreateOptions::new(CreateMode::EphemeralSequential)
    }

    /// A container node (removed by the server once its last child is gone).
    pub fn container() -> CreateOptions {
        CreateOptions::new(CreateMode::Container)
    }

    /// A persistent node removed after `ttl` without changes or children (the server needs
    /// `zookeeper.extendedTypesEnabled=true`, else [`ErrorKind::Unimplemented`]).
    pub fn with_ttl(ttl: Duration) -> CreateOptions {
        CreateOptions::new(CreateMode::PersistentWithTtl).ttl(ttl)
    }

    /// Sets the ACL.
    pub fn acl(mut self, acl: Vec<Acl>) -> CreateOptions {
        self.acl = acl;
        self
    }

    /// Sets the TTL (TTL modes only).
    pub fn ttl(mut self, ttl: Duration) -> CreateOptions {
        self.ttl = Some(ttl);
        self
    }

    /// Creates missing ancestors first, as persistent nodes with this ACL
    /// ([`Parents::Persistent`]).
    pub fn creating_parents(mut self) -> CreateOptions {
        self.parents = Parents::Persistent;
        self
    }

    /// Creates missing ancestors first, as container nodes with this ACL
    /// ([`Parents::Container`]).
    pub fn creating_parent_containers(mut self) -> CreateOptions {
        self.parents = Parents::Container;
        self
    }

    /// Checks what the server would reject, so that it is never sent. Returns the TTL in ms
    /// for TTL modes.
    pub(crate) fn validate(&self) -> Result<Option<i64>> {
        if self.acl.is_empty() {
            return Err(ErrorKind::InvalidAcl.into());
        }
        match (self.mode.is_ttl(), self.ttl) {
            (true, Some(ttl)) => {
                if ttl.is_zero() || ttl > MAX_TTL || ttl.as_millis() == 0 {
                    return Err(ErrorKind::InvalidArgument(format!(
                        "TTL {ttl:?} outside 1 ms ..= {MAX_TTL:?}"
                    ))
                    .into());
                }
                Ok(Some(ttl.as_millis() as i64))
            }
            (true, None) => {
                Err(ErrorKind::InvalidArgument(format!("mode {:?} needs a TTL", self.mode)).into())
            }
            (false, Some(_)) => {
                Err(ErrorKind::InvalidArgument(format!("mode {:?} takes no TTL", self.mode)).into())
            }
            (false, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rules() {
        assert_eq!(
            CreateOptions::with_ttl(Duration::from_secs(1)).validate(),
            Ok(Some(1000))
        );
        assert!(CreateOptions::new(CreateMode::PersistentWithTtl)
            .validate()
            .is_err());
        assert!(CreateOptions::persistent()
            .ttl(Duration::from_secs(1))
            .validate()
            .is_err());
        assert!(CreateOptions::with_ttl(Duration::ZERO).validate().is_err());
        assert!(CreateOptions::with_ttl(Duration::from_micros(10))
            .validate()
            .is_err());
        assert!(CreateOptions::with_ttl(MAX_TTL + Duration::from_millis(1))
            .validate()
            .is_err());
        assert_eq!(
            CreateOptions::persistent().acl(vec![]).validate(),
            Err(ErrorKind::InvalidAcl.into())
        );
    }
}
