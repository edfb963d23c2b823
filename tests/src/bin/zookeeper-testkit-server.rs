//! Runs a throwaway ZooKeeper server until stdin closes or the process is stopped.
//!
//! Prints one line, `addr=127.0.0.1:PORT pid=JAVA_PID dir=WORKING_DIR`, once the server
//! serves. Useful to poke at a server by hand (`zkCli.sh`, kazoo) and, with `--then`, to
//! check that no JVM outlives its parent however the parent ends:
//!
//! * `--then wait` (default): run until stdin reaches EOF, then stop cleanly;
//! * `--then panic`: panic (unwinding drops the server);
//! * `--then abort`: abort (no destructors run);
//! * `--then exit`: `process::exit` (no destructors run).
//!
//! With `--shared`, the server is the process's [`zookeeper_testkit::shared_server`].

use std::io::{Read, Write};

fn main() {
    let mut then = String::from("wait");
    let mut shared = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--then" => then = args.next().unwrap_or_default(),
            "--shared" => shared = true,
            other => {
                eprintln!("unknown argument {other:?}; usage: zookeeper-testkit-server [--shared] [--then wait|panic|abort|exit]");
                std::process::exit(2);
            }
        }
    }
    let own;
    let server = if shared {
        zookeeper_testkit::shared_server()
    } else {
        own = match zookeeper_testkit::ZkServer::start_blocking() {
            Ok(server) => server,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        &own
    };
    println!(
        "addr={} pid={} dir={}",
        server.addr(),
        server.pid().unwrap_or(0),
        server.dir().display()
    );
    let _ = std::io::stdout().flush();
    match then.as_str() {
        "panic" => panic!("asked to panic while holding a server"),
        "abort" => std::process::abort(),
        "exit" => std::process::exit(0),
        _ => {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        }
    }
}
