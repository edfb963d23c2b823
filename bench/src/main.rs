//! `zookeeper-bench`: measures the client and the recipes side by side with their limits (a raw
//! pipelined socket, an instant in-process server) and with Curator, in one process run.
//!
//! `cargo run --release -p zookeeper-bench` starts its own ZooKeeper, runs every workload with the
//! contestants alternating round by round, prints `figure NAME VALUE UNIT` lines as it goes and
//! a markdown table at the end. Medians of rounds and same-run ratios are quoted because the
//! machines this runs on are shared and noisy.

mod contestant;
mod curator;
mod heap;
mod instant_server;
mod machine;
mod measure;
mod options;
mod ours;
mod raw_lock;
mod raw_socket;
#[cfg(feature = "metrics")]
mod recorder;
mod report;
mod rusage;
mod server_metrics;
mod stats;
#[cfg(feature = "tracing-spans")]
mod subscriber;
mod wire;
mod workloads;

use std::error::Error;
use std::net::SocketAddr;

use options::Options;
use report::Report;

/// Error type of a workload: any failure ends that workload, not the run.
pub type BenchError = Box<dyn Error + Send + Sync>;

/// What every workload gets.
pub struct Ctx {
    pub opts: Options,
    /// The real ZooKeeper server.
    pub zk: SocketAddr,
    /// The multi-thread runtime our client's second shape runs on.
    pub mt: tokio::runtime::Handle,
}

fn main() {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(opts) => opts,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(2);
        }
    };
    // The bench itself, the raw socket and the current-thread shape of our client run on a
    // current-thread runtime; the multi-thread shape on a runtime of its own.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .enable_all()
        .build()
        .expect("tokio multi-thread runtime");
    #[cfg(feature = "metrics")]
    let recorder = recorder::install();
    #[cfg(feature = "tracing-spans")]
    let subscribed = subscriber::install();
    #[cfg(not(feature = "tracing-spans"))]
    let subscribed = false;
    let mut report = Report::default();
    runtime.block_on(run(opts, mt.handle().clone(), subscribed, &mut report));
    drop(runtime);
    mt.shutdown_background();
    #[cfg(feature = "metrics")]
    println!("# metrics: {}", recorder::summary(recorder.as_ref()));
    println!();
    println!("{}", report.markdown());
}

async fn run(opts: Options, mt: tokio::runtime::Handle, subscribed: bool, report: &mut Report) {
    // Kept alive for the whole run; dropping it stops the server.
    let mut _started = None;
    let zk = match opts.server {
        Some(addr) => addr,
        None => match opts.server().start().await {
            Ok(server) => {
                let addr = server.addr();
                _started = Some(server);
                addr
            }
            Err(e) => {
                eprintln!("could not start ZooKeeper: {e}");
                std::process::exit(1);
            }
        },
    };
    println!(
        "# zookeeper-bench: server {zk}, {} rounds, our client on a current-thread runtime \
         (`ours`) and on a {}-worker multi-thread runtime (`ours_mt`)",
        opts.rounds, opts.threads
    );
    println!("# machine: {}", machine::describe());
    println!(
        "# servers started here: {}",
        if opts.fsync {
            "fsync every write of the transaction log (forceSync=yes)"
        } else {
            "no fsync of the transaction log (--no-fsync)"
        }
    );
    println!(
        "# metrics: {}",
        if cfg!(feature = "metrics") {
            "recorded (feature `metrics`); the recorder is said at the end"
        } else {
            "off (the client and recipes built without their `metrics` feature)"
        }
    );
    println!(
        "# spans: {}",
        match (cfg!(feature = "tracing-spans"), subscribed) {
            (true, true) => "a span per request and recipe operation (feature `tracing-spans`), into a tracing-subscriber Registry",
            (true, false) => "compiled in (feature `tracing-spans`), no subscriber (ZOOKEEPER_BENCH_SUBSCRIBER=none)",
            _ => "off (the client and recipes built without their `tracing-spans` feature)",
        }
    );
    let ctx = Ctx { opts, zk, mt };
    for workload in options::WORKLOADS {
        if !ctx.opts.runs(workload) {
            continue;
        }
        println!("# workload {workload}");
        if let Err(e) = workloads::run(workload, &ctx, report).await {
            report.not_measured(workload, "", &format!("workload failed: {e}"));
        }
    }
}
