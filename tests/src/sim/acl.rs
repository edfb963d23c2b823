//! ACLs as the server checks them: the identities a connection holds (`ip`, and `digest`
//! ones added by `addAuth`), an ACL made whole before it is stored (`fixupACL`: duplicates
//! dropped, `auth` expanded, schemes and ids checked), and the check of one permission.

use base64::Engine;
use zookeeper_jute::{Acl, ErrorCode, Id};

/// The address the model gives every connection, as `whoAmI` and `ip` ACLs see it.
pub(crate) const CLIENT_IP: &str = "127.0.0.1";

/// The identity `addAuth digest user:password` gives: `user:base64(sha1(user:password))`.
pub(crate) fn digest_id(auth: &[u8]) -> String {
    let text = String::from_utf8_lossy(auth);
    let user = text.split(':').next().unwrap_or_default();
    let sha1 = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, text.as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(sha1.as_ref());
    format!("{user}:{hash}")
}

/// The ACL a create or `setACL` stores, or `InvalidACL`: duplicates dropped, `auth` replaced
/// by the connection's authenticated identities (not its address), every other id checked
/// by its scheme; an empty ACL, an unknown scheme or a malformed id is invalid.
pub(crate) fn fixup(acl: &[Acl], ids: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !unique.contains(&a) {
            unique.push(a);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::with_capacity(unique.len());
    for a in unique {
        let id = &a.id;
        if id.scheme == "world" && id.id == "anyone" {
            out.push(a.clone());
        } else if id.scheme == "auth" {
            let mut any = false;
            for held in ids.iter().filter(|held| held.scheme == "digest") {
                any = true;
                out.push(Acl {
                    perms: a.perms,
                    id: held.clone(),
                });
            }
            if !any {
                return Err(ErrorCode::InvalidAcl);
            }
        } else if valid_id(&id.scheme, &id.id) {
            out.push(a.clone());
        } else {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(out)
}

fn valid_id(scheme: &str, id: &str) -> bool {
    match scheme {
        // Java's `id.split(":").length == 2`: trailing empty parts do not count.
        "digest" => {
            let mut parts: Vec<&str> = id.split(':').collect();
            while parts.last() == Some(&"") {
                parts.pop();
            }
            parts.len() == 2
        }
        "ip" => ip_range(id).is_some(),
        _ => false,
    }
}

/// An `ip` ACL's address and prefix length.
fn ip_range(id: &str) -> Option<(std::net::IpAddr, u32)> {
    let (addr, bits) = match id.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits)),
        None => (id, None),
    };
    let addr: std::net::IpAddr = addr.parse().ok()?;
    let width = if addr.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        Some(b) => b.parse::<u32>().ok().filter(|&b| b <= width)?,
        None => width,
    };
    Some((addr, bits))
}

fn ip_matches(held: &str, acl: &str) -> bool {
    let (Ok(held), Some((range, bits))) = (held.parse::<std::net::IpAddr>(), ip_range(acl)) else {
        return false;
    };
    let (held, range) = match (held, range) {
        (std::net::IpAddr::V4(h), std::net::IpAddr::V4(r)) => (
            u128::from(u32::from(h)) << 96,
            u128::from(u32::from(r)) << 96,
        ),
        (std::net::IpAddr::V6(h), std::net::IpAddr::V6(r)) => (u128::from(h), u128::from(r)),
        _ => return false,
    };
    let mask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    held & mask == range & mask
}

/// Whether `ids` may do `perm` (any of its bits) on a node with `acl`: an empty ACL lets
/// everybody, `world:anyone` too, else an identity of the ACL's scheme must match its id.
pub(crate) fn check(acl: &[Acl], perm: i32, ids: &[Id]) -> Result<(), ErrorCode> {
    if acl.is_empty() {
        return Ok(());
    }
    let allowed = acl.iter().filter(|a| a.perms & perm != 0).any(|a| {
        (a.id.scheme == "world" && a.id.id == "anyone")
            || ids.iter().any(|held| {
                held.scheme == a.id.scheme
                    && match held.scheme.as_str() {
                        "digest" => held.id == a.id.id,
                        "ip" => ip_matches(&held.id, &a.id.id),
                        _ => false,
                    }
            })
    });
    if allowed {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

/// The ACL `getACL` shows a caller without ADMIN: digest ids' hashes hidden.
pub(crate) fn redacted(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| match a.id.id.split_once(':') {
            Some((user, _)) if a.id.scheme == "digest" => Acl {
                perms: a.perms,
                id: Id {
                    scheme: a.id.scheme.clone(),
                    id: format!("{user}:x"),
                },
            },
            _ => a.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_jute::perms;

    fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }
    }

    #[test]
    fn a_digest_identity_is_the_servers() {
        // `DigestAuthenticationProvider.generateDigest("super:test")`, as its documentation
        // gives it.
        assert_eq!(
            digest_id(b"super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn ids_are_checked_by_scheme() {
        assert!(valid_id("digest", "u:h"));
        assert!(valid_id("digest", ":h"));
        assert!(!valid_id("digest", "u:"));
        assert!(!valid_id("digest", "u:h:x"));
        assert!(valid_id("ip", "10.0.0.0/8"));
        assert!(!valid_id("ip", "10.0.0.0/33"));
        assert!(!valid_id("ip", "host"));
        assert!(!valid_id("world", "someone"));
        assert!(ip_matches("127.0.0.1", "127.0.0.0/8"));
        assert!(!ip_matches("127.0.0.1", "10.0.0.0/8"));
    }

    #[test]
    fn a_permission_needs_an_entry_that_grants_it_to_a_held_identity() {
        let ids = [Id {
            scheme: "digest".into(),
            id: "u:h".into(),
        }];
        let a = [
            acl(perms::READ, "world", "anyone"),
            acl(perms::WRITE, "digest", "u:h"),
        ];
        assert_eq!(check(&a, perms::READ, &[]), Ok(()));
        assert_eq!(check(&a, perms::WRITE, &[]), Err(ErrorCode::NoAuth));
        assert_eq!(check(&a, perms::WRITE, &ids), Ok(()));
        assert_eq!(check(&a, perms::READ | perms::ADMIN, &[]), Ok(()));
        assert_eq!(check(&[], perms::ADMIN, &[]), Ok(()));
        let expanded = fixup(
            &[acl(perms::ALL, "auth", ""), acl(perms::ALL, "auth", "")],
            &ids,
        );
        assert_eq!(expanded, Ok(vec![acl(perms::ALL, "digest", "u:h")]));
        assert_eq!(
            fixup(&[acl(perms::ALL, "auth", "")], &[]),
            Err(ErrorCode::InvalidAcl)
        );
    }
}
