//! Command-line options.

use std::net::SocketAddr;

/// Every workload, in the order a full run executes them.
pub const WORKLOADS: [&str; 11] = [
    "codec",
    "client-bound",
    "latency",
    "pipeline",
    "latency-tls",
    "pipeline-tls",
    "locks",
    "scale",
    "cache",
    "spans",
    "blocking",
];

const USAGE: &str = "\
usage: zookeeper-bench [--quick] [--only W[,W..]] [--server HOST:PORT] [--rounds N] [--threads N]
                       [--no-fsync]

  --quick          small counts and 2 rounds: checks that every workload runs
  --only W,..      run only these workloads: codec, client-bound, latency, pipeline,
                   latency-tls, pipeline-tls, locks, scale, cache, blocking, spans (meant
                   to be compared between builds with and without --features tracing-spans)
  --server ADDR    use a running ZooKeeper instead of starting one (it needs 4lw mntr);
                   the -tls workloads always start their own, with a secure client port
  --rounds N       rounds per workload (default 5, at most 3 for the pipeline workloads;
                   medians are over rounds)
  --threads N      workers of the multi-thread runtime our client also runs on (default 2);
                   every client workload runs on a current-thread runtime and on that one
  --no-fsync       the servers it starts skip fsync of their transaction log (forceSync=no);
                   by default they sync every write to disk, as production servers do
";

#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub only: Vec<String>,
    pub server: Option<SocketAddr>,
    pub rounds: usize,
    pub threads: usize,
    /// Whether the servers the bench starts fsync their transaction log.
    pub fsync: bool,
}

impl Options {
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut opts = Options {
            quick: false,
            only: Vec::new(),
            server: None,
            rounds: 0,
            threads: 2,
            fsync: true,
        };
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
            };
            match arg.as_str() {
                "--quick" => opts.quick = true,
                "--only" => {
                    for w in value("--only")?.split(',') {
                        if !WORKLOADS.contains(&w) {
                            return Err(format!("unknown workload {w:?}\n{USAGE}"));
                        }
                        opts.only.push(w.to_string());
                    }
                }
                "--server" => {
                    let v = value("--server")?;
                    opts.server = Some(v.parse().map_err(|e| format!("--server {v}: {e}"))?);
                }
                "--rounds" => {
                    let v = value("--rounds")?;
                    opts.rounds = v.parse().map_err(|e| format!("--rounds {v}: {e}"))?;
                }
                "--threads" => {
                    let v = value("--threads")?;
                    opts.threads = v.parse().map_err(|e| format!("--threads {v}: {e}"))?;
                    if opts.threads == 0 {
                        return Err(format!("--threads must be at least 1\n{USAGE}"));
                    }
                }
                "--no-fsync" => opts.fsync = false,
                "--help" | "-h" => return Err(USAGE.to_string()),
                // `cargo bench` style harness flags are ignored.
                "--bench" => {}
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        if opts.rounds == 0 {
            opts.rounds = if opts.quick { 2 } else { 5 };
        }
        Ok(opts)
    }

    /// Rounds for the workloads that take seconds per round against the real server.
    pub fn heavy_rounds(&self) -> usize {
        self.rounds.min(3)
    }

    /// A builder for the servers the bench starts, with its fsync setting.
    pub fn server(&self) -> zookeeper_testkit::ServerBuilder {
        let sync = if self.fsync { "yes" } else { "no" };
        zookeeper_testkit::ZkServer::builder().config("forceSync", sync)
    }

    pub fn runs(&self, workload: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|w| w == workload)
    }

    /// `full` in a normal run, a small fraction of it with `--quick`.
    pub fn count(&self, full: u64) -> u64 {
        if self.quick {
            (full / 20).max(1)
        } else {
            full
        }
    }
}
