//! getACL, setACL.

use std::future::Future;

use zookeeper_jute::{
    Acl, Decode, GetAclRequest, GetAclResponse, Request, SetAclRequest, SetAclResponse, Stat,
};

use super::reply::{at, reply};
use crate::client::Client;
use crate::error::{ErrorKind, Result};

impl Client {
    /// The node's ACL and stat.
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'static {
        let call = self
            .server_path(path)
            .and_then(|path| self.call(Request::GetAcl(GetAclRequest { path }), None));
        reply(call, at("get_acl", path), |reply| {
            let response = GetAclResponse::decode(&mut reply?.body)?;
            Ok((response.acl, response.stat))
        })
    }

    /// Replaces the node's ACL, if `version` (the ACL version) is `None` or matches.
    ///
    /// Errors: [`ErrorKind::NoNode`], [`ErrorKind::BadVersion`], [`ErrorKind::NoAuth`],
    /// [`ErrorKind::InvalidAcl`] (also before anything is sent, for an empty ACL).
    ///
    /// A call that failed with [`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown)
    /// may have replaced the ACL: repeated with the same `version`, it then fails with
    /// [`ErrorKind::BadVersion`]. Read the ACL back to know.
    pub fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static {
        let call = if acl.is_empty() {
            Err(ErrorKind::InvalidAcl.into())
        } else {
            self.server_path(path).and_then(|path| {
                self.call(
                    Request::SetAcl(SetAclRequest {
                        path,
                        acl,
                        version: version.unwrap_or(-1),
                    }),
                    None,
                )
            })
        };
        reply(call, at("set_acl", path), |reply| {
            Ok(SetAclResponse::decode(&mut reply?.body)?.stat)
        })
    }
}
