//! `zk`: browse and edit ZooKeeper from a shell, and run commands under its locks and
//! elections. `zk --help` lists the commands; exit codes are in `exit.rs`.

mod cli;
mod commands;
mod connection;
mod exit;
mod exported;
mod interrupt;
mod output;
mod sasl;
mod supervise;
mod tls;
mod trust;
mod walk;
mod watchdog;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

fn main() -> ExitCode {
    // Started by `zk` itself to stand between it and a command (see `watchdog`).
    if let Some(code) = watchdog::run_if_asked() {
        return code;
    }
    interrupt::remember_ignored();
    // One line on stderr, never a backtrace.
    std::panic::set_hook(Box::new(|info| {
        crate::output::note(format_args!("Error: internal error: {info}"));
    }));
    let args = cli::normalize(std::env::args_os());
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            crate::output::note(format_args!("Error: {}", one_line(&e.render().to_string())));
            return ExitCode::from(exit::USAGE);
        }
        // --help, --version.
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(0);
        }
    };
    // One thread: the command's child is started from it, and on Linux it is killed when the
    // thread that started it ends (see `supervise`), which must then be the process's end.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::output::note(format_args!("Error: cannot start: {e}"));
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(commands::run(cli));
    // Reading standard input may still block a thread of the runtime; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            if let Some(message) = failure.message {
                crate::output::note(format_args!("Error: {message}"));
            }
            ExitCode::from(failure.code)
        }
    }
}

/// A usage error of the parser in one line: its message and tips, without the usage block.
fn one_line(rendered: &str) -> String {
    let parts: Vec<String> = rendered
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty() && !p.starts_with("Usage:") && !p.starts_with("For more"))
        .collect();
    let text = parts.join("; ");
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    format!("{text} (see 'zk --help')")
}

#[cfg(test)]
mod tests {
    #[test]
    fn usage_errors_fit_one_line() {
        let rendered =
            "error: unrecognized subcommand 'lss'\n\n  tip: a similar subcommand exists: 'ls'\n\n\
                        Usage: zk [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            super::one_line(rendered),
            "unrecognized subcommand 'lss'; tip: a similar subcommand exists: 'ls' (see 'zk --help')"
        );
    }
}
