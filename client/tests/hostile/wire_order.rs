//! Wire order under a connection that keeps breaking, with requests written both by their
//! callers (on an idle connection) and by the session task, from many threads at once. The
//! server is scripted because only it can check every xid on the wire and cut the connection
//! at a chosen request: on each connection the xids must follow one another exactly, and every
//! call must end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use zookeeper_tokio::{Client, ErrorKind};

use crate::common::{current_thread, multi_thread, within};
use crate::server::FakeServer;

/// Connections cut after this many requests; the ones after serve for good.
const CUT_AFTER: usize = 150;
const CUT_CONNECTIONS: usize = 3;
const CALLS: usize = 200;

#[test]
fn xids_stay_in_order_on_every_connection_while_callers_race_the_session() {
    let connections = Arc::new(AtomicUsize::new(0));
    let disorder = Arc::new(Mutex::new(Vec::<String>::new()));
    let server = {
        let (connections, disorder) = (connections.clone(), disorder.clone());
        FakeServer::start(move |mut peer| {
            let n = connections.fetch_add(1, Ordering::SeqCst);
            let disorder = disorder.clone();
            async move {
                if peer.handshake().await.is_none() {
                    return;
                }
                let mut last = None;
                let mut served = 0;
                while let Some(request) = peer.next_request().await {
                    if request.xid > 0 {
                        if let Some(last) = last.filter(|&l: &i32| request.xid != l + 1) {
                            let mut disorder = disorder.lock().unwrap();
                            disorder.push(format!("connection {n}: {} after {last}", request.xid));
                        }
                        last = Some(request.xid);
                    }
                    served += 1;
                    if n < CUT_CONNECTIONS && served == CUT_AFTER {
                        return; // Dropping the peer cuts the connection.
                    }
                    peer.reply(request.xid, 1, zookeeper_jute::ErrorCode::NoNode, &[])
                        .await;
                }
            }
        })
    };

    let runtime = multi_thread();
    let client = runtime
        .block_on(within("connect", Client::connect(&server.connect_string())))
        .unwrap();

    // Each call ends with its answer or with the connection's loss.
    async fn call_repeatedly(client: Client) {
        for _ in 0..CALLS {
            match within("a call", client.exists("/a")).await {
                Ok(stat) => assert!(stat.is_none()),
                Err(e) => assert_eq!(e.kind().clone(), ErrorKind::ConnectionLoss, "{e}"),
            }
        }
    }
    let mut threads = Vec::new();
    for _ in 0..3 {
        let client = client.clone();
        threads.push(std::thread::spawn(move || {
            current_thread().block_on(call_repeatedly(client))
        }));
    }
    let on_workers: Vec<_> = (0..3)
        .map(|_| runtime.spawn(call_repeatedly(client.clone())))
        .collect();
    runtime.block_on(call_repeatedly(client.clone()));
    for task in on_workers {
        runtime.block_on(task).expect("the calls on the workers");
    }
    for thread in threads {
        thread.join().expect("the calls off the workers");
    }

    assert!(
        connections.load(Ordering::SeqCst) > CUT_CONNECTIONS,
        "every cut connection was replaced"
    );
    let disorder = disorder.lock().unwrap();
    assert!(disorder.is_empty(), "{disorder:?}");
}
