//! getChildren2, getAllChildrenNumber.

use std::future::Future;

use tokio::sync::oneshot;
use zookeeper_jute::{
    Decode, GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Response,
    OpCode, Request, Stat,
};

use super::reply::{at, reply};
use crate::client::{Call, Client};
use crate::error::Result;
use crate::packet::{RawReply, WatchRegistration};
use crate::watcher::OneshotWatcher;

impl Client {
    /// The names of the node's children (unordered) and the node's stat.
    ///
    /// Errors: [`ErrorKind::NoNode`](crate::ErrorKind::NoNode),
    /// [`ErrorKind::NoAuth`](crate::ErrorKind::NoAuth).
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send + 'static {
        reply(
            self.children_call(path, None),
            at("get_children", path),
            children_reply,
        )
    }

    /// Like [`Client::get_children`], and watches the child list: the watcher fires when a
    /// child is added or removed, or the node is deleted. No watch is set if the node does not
    /// exist.
    pub fn get_children_and_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher)>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let call = self.children_call(path, Some(tx));
        let watcher = OneshotWatcher::new(rx, path.to_owned());
        reply(call, at("get_children_and_watch", path), move |reply| {
            let (children, stat) = children_reply(reply)?;
            Ok((children, stat, watcher))
        })
    }

    fn children_call(
        &self,
        path: &str,
        watch: Option<oneshot::Sender<crate::WatchedEvent>>,
    ) -> Result<Call> {
        self.path_watch_call(
            OpCode::GetChildren2,
            path,
            watch.map(|tx| move |p| WatchRegistration::Child(p, tx)),
        )
    }

    /// The number of all descendants of the node (not only direct children). Servers 3.6+.
    pub fn get_all_children_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<i32>> + Send + 'static {
        let call = self.server_path(path).and_then(|path| {
            self.call(
                Request::GetAllChildrenNumber(GetAllChildrenNumberRequest { path }),
                None,
            )
        });
        reply(call, at("get_all_children_number", path), |reply| {
            Ok(GetAllChildrenNumberResponse::decode(&mut reply?.body)?.total_number)
        })
    }
}

fn children_reply(reply: Result<RawReply>) -> Result<(Vec<String>, Stat)> {
    let response = GetChildren2Response::decode(&mut reply?.body)?;
    Ok((response.children, response.stat))
}
