//! The two getData contestants behind one interface: the raw socket (the limit) and our client.

use std::net::SocketAddr;

use futures_util::future::try_join_all;

use crate::measure::{self, Sample};
use crate::raw_socket::RawSession;
use crate::rusage::ThreadClock;
use crate::{ours, BenchError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contestant {
    /// Raw pipelined socket.
    Limit,
    /// Our client.
    Ours,
}

/// `sessions` sessions each doing `total / sessions` getData of `path` with `window` in flight;
/// connecting and closing are not measured.
pub async fn pipelined(
    who: Contestant,
    addr: SocketAddr,
    path: &str,
    total: u64,
    window: usize,
    sessions: usize,
    excluded: &[ThreadClock],
) -> Result<Sample, BenchError> {
    let per_session = total / sessions as u64;
    let ops = per_session * sessions as u64;
    match who {
        Contestant::Limit => {
            let mut raws = try_join_all((0..sessions).map(|_| RawSession::connect(addr))).await?;
            let sample = measure::throughput(ops, excluded, async {
                try_join_all(
                    raws.iter_mut()
                        .map(|r| r.pipelined_get_data(path, per_session, window)),
                )
                .await
                .map(|_| ())
            })
            .await?;
            for raw in raws {
                raw.close().await?;
            }
            Ok(sample)
        }
        Contestant::Ours => {
            let clients = try_join_all((0..sessions).map(|_| ours::connect(addr))).await?;
            let sample = measure::throughput(ops, excluded, async {
                try_join_all(
                    clients
                        .iter()
                        .map(|c| ours::pipelined_get_data(c, path, per_session, window)),
                )
                .await
                .map(|_| ())
            })
            .await?;
            for client in clients {
                ours::close(client).await;
            }
            Ok(sample)
        }
    }
}
