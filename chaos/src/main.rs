//! Mutual exclusion under chaos, as a command: see `options::USAGE`, or run with `--help`.
//!
//! The same program is the coordinator (by default) and each Rust contender (`contend ...`),
//! so that contenders are processes of their own that can be paused with `SIGSTOP`.

mod contender;
mod faults;
mod journal;
mod options;
mod processes;
mod report;
mod run;

use options::{parse, Role, USAGE};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let role = match parse(&args) {
        Ok(role) => role,
        Err(e) => {
            eprintln!("{e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    match role {
        Role::Help => print!("{USAGE}"),
        Role::Contend(o) => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(contender::run(o));
        }
        Role::Run(o) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            match rt.block_on(run::run(o)) {
                Ok(report) => {
                    println!("{report}");
                    if !report.passed() {
                        std::process::exit(1);
                    }
                }
                Err(e) => {
                    eprintln!("zookeeper-chaos: {e}");
                    std::process::exit(2);
                }
            }
        }
    }
}
