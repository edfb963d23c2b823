//! create, delete, exists, getData, setData.

use std::future::Future;

use bytes::Bytes;
use tokio::sync::oneshot;
use zookeeper_jute::{
    Create2Response, CreateMode, CreateRequest, CreateTtlRequest, Decode, DeleteRequest,
    ExistsResponse, GetDataResponse, OpCode, Request, SetDataRequest, SetDataResponse, Stat,
};

use super::parents::{CreateReply, MissingParents};
use super::reply::{at, locate_with, reply};
use crate::client::{Call, Client};
#[cfg(doc)]
use crate::error::Error;
use crate::error::{ErrorKind, Result};
use crate::options::CreateOptions;
use crate::packet::{detach, RawReply, WatchRegistration};
use crate::watcher::OneshotWatcher;

impl Client {
    /// Creates a node and returns its actual path (with the sequence suffix for sequential
    /// modes, chroot stripped) and its stat.
    ///
    /// With [`CreateOptions::creating_parents`] (or `creating_parent_containers`), a missing
    /// parent is not an error: every missing ancestor is created first (persistent or
    /// container nodes with the node's ACL; racing creators of the same ancestors are fine),
    /// in one more round trip.
    ///
    /// A sequential node's path is checked with its suffix, as the server does: `/queue/`
    /// creates `/queue/0000000007`, and `/` a numbered child of the root (of the chroot, under
    /// one).
    ///
    /// Errors: [`ErrorKind::NodeExists`], [`ErrorKind::NoNode`] (no parent),
    /// [`ErrorKind::NoChildrenForEphemerals`], [`ErrorKind::InvalidAcl`], [`ErrorKind::NoAuth`],
    /// [`ErrorKind::Unimplemented`] (TTL modes on a server without extended types), and, before
    /// anything is sent, [`ErrorKind::InvalidPath`], [`ErrorKind::DataTooLarge`] or
    /// [`ErrorKind::InvalidArgument`] (TTL missing or out of range).
    ///
    /// A create that failed with [`Error::is_outcome_unknown`] may have made the node (its
    /// reply was lost): repeated, a plain create then fails with [`ErrorKind::NodeExists`],
    /// and a sequential one makes a second node. Look for the first before repeating a
    /// sequential create (a name prefix of your own makes it recognisable).
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static {
        let call = self.create_call(path, data, options);
        let chroot = self.chroot_ref().clone();
        let locate = {
            let chroot = chroot.clone();
            let path = path.to_owned();
            locate_with("create", move |e| {
                // A node right under the chroot has the chroot itself for its parent.
                let under_root = path.rfind('/') == Some(0);
                let e = e.at("create", Some(path));
                match chroot.as_str() {
                    Some(root) if under_root && e == ErrorKind::NoNode => e.in_missing_chroot(root),
                    _ => e,
                }
            })
        };
        let first = reply(call, locate, move |reply| {
            let response = Create2Response::decode(&mut reply?.body)?;
            Ok((chroot.strip(&response.path), response.stat))
        });
        // Parents are made only once the node turned out to need them: when they exist, a
        // create with parents costs what a plain one does.
        CreateReply::new(first, MissingParents::new(self, path, data, options))
    }

    fn create_call(&self, path: &str, data: &[u8], options: &CreateOptions) -> Result<Call> {
        let path = self
            .chroot_ref()
            .to_server_create(path, options.mode.is_sequential())?;
        let request = create_request(path, data, options)?;
        self.call(request, None)
    }

    /// Deletes a node, if `version` is `None` or matches.
    ///
    /// Errors: [`ErrorKind::NoNode`], [`ErrorKind::BadVersion`], [`ErrorKind::NotEmpty`],
    /// [`ErrorKind::NoAuth`].
    ///
    /// A delete that failed with [`Error::is_outcome_unknown`] may have deleted the node:
    /// repeated, it then fails with [`ErrorKind::NoNode`] (or, had someone re-created the
    /// node meanwhile, deletes theirs unless `version` is given).
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let call = self.server_path(path).and_then(|path| {
            self.call(
                Request::Delete(DeleteRequest {
                    path,
                    version: version.unwrap_or(-1),
                }),
                None,
            )
        });
        reply(call, at("delete", path), |reply| reply.map(drop))
    }

    /// The node's stat, or `None` if it does not exist.
    pub fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'static {
        reply(
            self.exists_call(path, None),
            at("exists", path),
            exists_reply,
        )
    }

    /// Like [`Client::exists`], and watches the node: the watcher fires on its creation,
    /// deletion or data change.
    pub fn exists_and_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let call = self.exists_call(path, Some(tx));
        let watcher = OneshotWatcher::new(rx, path.to_owned());
        reply(call, at("exists_and_watch", path), move |reply| {
            Ok((exists_reply(reply)?, watcher))
        })
    }

    fn exists_call(
        &self,
        path: &str,
        watch: Option<oneshot::Sender<crate::WatchedEvent>>,
    ) -> Result<Call> {
        self.path_watch_call(
            OpCode::Exists,
            path,
            watch.map(|tx| move |p| WatchRegistration::Exists(p, tx)),
        )
    }

    /// The node's data and stat.
    ///
    /// Errors: [`ErrorKind::NoNode`], [`ErrorKind::NoAuth`].
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static {
        reply(
            self.get_data_call(path, None),
            at("get_data", path),
            get_data_reply,
        )
    }

    /// Like [`Client::get_data`], and watches the node: the watcher fires on its next data
    /// change or deletion. No watch is set if the node does not exist.
    pub fn get_data_and_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat, OneshotWatcher)>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let call = self.get_data_call(path, Some(tx));
        let watcher = OneshotWatcher::new(rx, path.to_owned());
        reply(call, at("get_data_and_watch", path), move |reply| {
            let (data, stat) = get_data_reply(reply)?;
            Ok((data, stat, watcher))
        })
    }

    fn get_data_call(
        &self,
        path: &str,
        watch: Option<oneshot::Sender<crate::WatchedEvent>>,
    ) -> Result<Call> {
        self.path_watch_call(
            OpCode::GetData,
            path,
            watch.map(|tx| move |p| WatchRegistration::Data(p, tx)),
        )
    }

    /// Replaces the node's data, if `version` is `None` or matches; returns the new stat.
    ///
    /// Errors: [`ErrorKind::NoNode`], [`ErrorKind::BadVersion`], [`ErrorKind::NoAuth`], and
    /// [`ErrorKind::DataTooLarge`] before anything is sent.
    ///
    /// A write that failed with [`Error::is_outcome_unknown`] may have been applied:
    /// repeated with the same `version`, it then fails with [`ErrorKind::BadVersion`];
    /// without one, it may overwrite a later writer's data. Read the node back to know.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static {
        let call = self.server_path(path).and_then(|path| {
            self.call(
                Request::SetData(SetDataRequest {
                    path,
                    data: Some(Bytes::copy_from_slice(data)),
                    version: version.unwrap_or(-1),
                }),
                None,
            )
        });
        reply(call, at("set_data", path), |reply| {
            Ok(SetDataResponse::decode(&mut reply?.body)?.stat)
        })
    }
}

/// The create request for a server path: the opcode follows the mode (create2 for the plain
/// modes so that the stat comes back, createContainer, createTTL).
pub(crate) fn create_request(
    path: String,
    data: &[u8],
    options: &CreateOptions,
) -> Result<Request> {
    let ttl = options.validate()?;
    let data = Some(Bytes::copy_from_slice(data));
    let acl = options.acl.clone();
    let flags = options.mode.flags();
    Ok(match (options.mode, ttl) {
        (_, Some(ttl)) => Request::CreateTtl(CreateTtlRequest {
            path,
            data,
            acl,
            flags,
            ttl,
        }),
        (CreateMode::Container, None) => Request::CreateContainer(CreateRequest {
            path,
            data,
            acl,
            flags,
        }),
        _ => Request::Create2(CreateRequest {
            path,
            data,
            acl,
            flags,
        }),
    })
}

fn exists_reply(reply: Result<RawReply>) -> Result<Option<Stat>> {
    match reply {
        Ok(mut reply) => Ok(Some(ExistsResponse::decode(&mut reply.body)?.stat)),
        Err(e) if e == ErrorKind::NoNode => Ok(None),
        Err(e) => Err(e),
    }
}

pub(crate) fn get_data_reply(reply: Result<RawReply>) -> Result<(Bytes, Stat)> {
    let response = GetDataResponse::decode(&mut reply?.body)?;
    Ok((detach(response.data.unwrap_or_default()), response.stat))
}
