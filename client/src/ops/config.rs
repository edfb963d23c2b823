//! getConfig (a read of `/zookeeper/config`) and reconfig.

use std::future::Future;

use tokio::sync::oneshot;
use zookeeper_jute::{Decode, GetDataRequest, GetDataResponse, ReconfigRequest, Request, Stat};

use super::reply::{named, reply};
use crate::client::{Call, Client};
use crate::ensemble_config::{EnsembleConfig, CONFIG_NODE};
use crate::error::{ErrorKind, Result};
use crate::packet::{RawReply, WatchRegistration};
use crate::watcher::OneshotWatcher;

impl Client {
    /// The ensemble's configuration (`/zookeeper/config`, read at that server path whatever
    /// this client's chroot) and the node's stat.
    ///
    /// Errors: [`ErrorKind::NoNode`] on servers older than 3.5, [`ErrorKind::InvalidArgument`]
    /// when the text cannot be parsed.
    pub fn get_config(
        &self,
    ) -> impl Future<Output = Result<(EnsembleConfig, Stat)>> + Send + 'static {
        reply(self.config_call(None), named("get_config"), config_reply)
    }

    /// Like [`Client::get_config`], and watches the configuration: the watcher resolves
    /// (`NodeDataChanged`, path `/zookeeper/config`) at the next reconfig.
    pub fn get_config_and_watch(
        &self,
    ) -> impl Future<Output = Result<(EnsembleConfig, Stat, OneshotWatcher)>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let call = self.config_call(Some(tx));
        let watcher = OneshotWatcher::new(rx, CONFIG_NODE.to_owned());
        reply(call, named("get_config_and_watch"), move |reply| {
            let (config, stat) = config_reply(reply)?;
            Ok((config, stat, watcher))
        })
    }

    fn config_call(&self, watch: Option<oneshot::Sender<crate::WatchedEvent>>) -> Result<Call> {
        // The server path itself: the configuration lives outside every chroot.
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: watch.is_some(),
        });
        let registration = watch.map(|tx| WatchRegistration::Data(CONFIG_NODE.to_owned(), tx));
        self.call(request, registration)
    }

    /// Adds and removes members (an incremental `reconfig`): `joining` are `server.N=...`
    /// lines (see [`EnsembleMember`](crate::EnsembleMember)'s `Display`), `leaving` server
    /// ids. With `from_config`, only if the configuration's version is still that one
    /// (else [`ErrorKind::BadVersion`]). Returns the new configuration.
    ///
    /// Needs a server with `reconfigEnabled=true` and a session allowed to write
    /// `/zookeeper/config` (the super user, or ACLs granting it): else
    /// [`ErrorKind::Server`] with `RECONFIGDISABLED`, or [`ErrorKind::NoAuth`]. While the new
    /// configuration has no synced quorum, or another reconfig runs, the server answers
    /// `NEWCONFIGNOQUORUM` or `RECONFIGINPROGRESS` ([`ErrorKind::is_retryable`]); on a
    /// standalone server, [`ErrorKind::Unimplemented`].
    ///
    /// A reconfig that failed with
    /// [`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown) may have been applied:
    /// read the configuration back ([`Client::get_config`]), or pass `from_config` so that a
    /// repetition fails with [`ErrorKind::BadVersion`].
    pub fn reconfig_incremental(
        &self,
        joining: &[&str],
        leaving: &[u64],
        from_config: Option<i64>,
    ) -> impl Future<Output = Result<(EnsembleConfig, Stat)>> + Send + 'static {
        let call = if joining.is_empty() && leaving.is_empty() {
            Err(ErrorKind::InvalidArgument("nothing joins and nothing leaves".into()).into())
        } else {
            let leaving: Vec<String> = leaving.iter().map(u64::to_string).collect();
            self.reconfig_call(ReconfigRequest {
                joining_servers: (!joining.is_empty()).then(|| joining.join(",")),
                leaving_servers: (!leaving.is_empty()).then(|| leaving.join(",")),
                new_members: None,
                cur_config_id: from_config.unwrap_or(-1),
            })
        };
        reply(call, named("reconfig_incremental"), config_reply)
    }

    /// Replaces the whole membership (a non-incremental `reconfig`) with `members`
    /// (`server.N=...` lines). Otherwise as [`Client::reconfig_incremental`].
    pub fn reconfig_members(
        &self,
        members: &[&str],
        from_config: Option<i64>,
    ) -> impl Future<Output = Result<(EnsembleConfig, Stat)>> + Send + 'static {
        let call = if members.is_empty() {
            Err(ErrorKind::InvalidArgument("a configuration needs members".into()).into())
        } else {
            self.reconfig_call(ReconfigRequest {
                joining_servers: None,
                leaving_servers: None,
                new_members: Some(members.join(",")),
                cur_config_id: from_config.unwrap_or(-1),
            })
        };
        reply(call, named("reconfig_members"), config_reply)
    }

    fn reconfig_call(&self, request: ReconfigRequest) -> Result<Call> {
        for line in [&request.joining_servers, &request.new_members]
            .into_iter()
            .flatten()
        {
            if line.contains('\n') {
                return Err(ErrorKind::InvalidArgument(
                    "server lines are joined by ',', not newlines".into(),
                )
                .into());
            }
        }
        self.call(Request::Reconfig(request), None)
    }
}

fn config_reply(reply: Result<RawReply>) -> Result<(EnsembleConfig, Stat)> {
    let response = GetDataResponse::decode(&mut reply?.body)?;
    let data = response.data.unwrap_or_default();
    let text = std::str::from_utf8(&data)
        .map_err(|_| ErrorKind::Protocol("the configuration is not UTF-8".into()))?;
    Ok((EnsembleConfig::parse(text)?, response.stat))
}
