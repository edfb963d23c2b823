//! sync, auth, whoAmI, getEphemerals.

use std::future::Future;

use zookeeper_jute::{
    xid, AuthPacket, ClientInfo, Decode, GetEphemeralsRequest, GetEphemeralsResponse, Request,
    SyncRequest, WhoAmIResponse,
};

use super::reply::{at, named, reply};
use crate::client::Client;
use crate::error::{ErrorKind, Result};
use crate::packet::PacketKind;
use crate::secret::Secret;

impl Client {
    /// Waits until the server this client is connected to has caught up with the leader for
    /// `path`, so that a following read sees every write committed before the sync.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static {
        let call = self
            .server_path(path)
            .and_then(|path| self.call(Request::Sync(SyncRequest { path }), None));
        reply(call, at("sync", path), |reply| reply.map(drop))
    }

    /// Adds an identity to the session (for example `("digest", b"user:password")`). It is
    /// replayed after every reconnect once accepted.
    ///
    /// A refused identity fails with [`ErrorKind::AuthFailed`] and ends the session (the server
    /// closes the connection).
    pub fn add_auth(
        &self,
        scheme: &str,
        auth: &[u8],
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let auth = Secret::copy_from(auth);
        let call = if scheme.is_empty() {
            Err(ErrorKind::InvalidArgument("auth scheme is empty".into()).into())
        } else {
            self.call_kind(
                Request::Auth(AuthPacket {
                    auth_type: 0,
                    scheme: scheme.to_owned(),
                    auth: auth.expose().clone(),
                }),
                None,
                PacketKind::Auth {
                    scheme: scheme.to_owned(),
                    auth,
                },
                xid::AUTH,
            )
        };
        reply(call, named("add_auth"), |reply| reply.map(drop))
    }

    /// The identities the server associates with this session (servers 3.7+; older servers
    /// answer [`ErrorKind::Unimplemented`] and drop the connection, which the client re-opens).
    pub fn who_am_i(&self) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send + 'static {
        let call = self.call(Request::WhoAmI, None);
        reply(call, named("who_am_i"), |reply| {
            Ok(WhoAmIResponse::decode(&mut reply?.body)?.client_info)
        })
    }

    /// The paths of this session's ephemeral nodes whose path starts with `prefix` (a string
    /// prefix under the chroot; `/` for all). Paths come back with the chroot stripped; nodes
    /// outside the chroot are left out. Servers 3.6+.
    pub fn get_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static {
        let chroot = self.chroot_ref().clone();
        let call = if !prefix.starts_with('/') || prefix.contains('\0') {
            Err(ErrorKind::InvalidPath {
                path: prefix.to_owned(),
                reason: "prefix must start with '/' and contain no NUL",
            }
            .into())
        } else {
            let server_prefix = match chroot.as_str() {
                Some(root) => format!("{root}{prefix}"),
                None => prefix.to_owned(),
            };
            self.call(
                Request::GetEphemerals(GetEphemeralsRequest {
                    prefix_path: server_prefix,
                }),
                None,
            )
        };
        reply(call, at("get_ephemerals", prefix), move |reply| {
            let response = GetEphemeralsResponse::decode(&mut reply?.body)?;
            Ok(response
                .ephemerals
                .iter()
                .filter_map(|p| chroot.strip_ref(p).map(str::to_owned))
                .collect())
        })
    }
}
