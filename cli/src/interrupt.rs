//! The signals that ask `zk` to stop: SIGINT, SIGTERM and SIGHUP.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::Failure;

/// The terminal's signals, which `zk` catches and a command under it gets as it would.
pub const TERMINAL_SIGNALS: [i32; 4] = [libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGTERM];

/// The terminal's signals this process was started with ignored (a bit per signal number).
static IGNORED_AT_START: AtomicU64 = AtomicU64::new(0);

/// Notes which of the terminal's signals the process was started with ignored (by `nohup`, or a
/// shell starting a background job): `zk` leaves those ignored, and so does the command it
/// runs. Called first thing, before any handler is set.
pub fn remember_ignored() {
    let mut mask = 0;
    for signal in TERMINAL_SIGNALS {
        // SAFETY: sigaction with a null new action only reads the disposition into `old`.
        let ignored = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
        };
        if ignored {
            mask |= 1 << signal;
        }
    }
    IGNORED_AT_START.store(mask, Ordering::Relaxed);
}

/// Whether the process was started with `signal` ignored (see [`remember_ignored`]).
pub fn ignored_at_start(signal: i32) -> bool {
    IGNORED_AT_START.load(Ordering::Relaxed) & (1 << signal) != 0
}

/// Listens for SIGINT, SIGTERM and SIGHUP from the moment it is made: until then they kill the
/// process, after that they are caught and handed to the command. One the process was started
/// with ignored stays ignored.
pub struct Interrupts {
    int: Option<Signal>,
    term: Option<Signal>,
    hup: Option<Signal>,
}

impl Interrupts {
    pub fn catch() -> Result<Interrupts, Failure> {
        let listen = |kind: SignalKind| {
            if ignored_at_start(kind.as_raw_value()) {
                return Ok(None);
            }
            signal(kind)
                .map(Some)
                .map_err(|e| Failure::new(crate::exit::IO, format!("signals: {e}")))
        };
        Ok(Interrupts {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
        })
    }

    /// The number of the next signal received.
    pub async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = received(&mut self.int) => libc::SIGINT,
            _ = received(&mut self.term) => libc::SIGTERM,
            _ = received(&mut self.hup) => libc::SIGHUP,
        }
    }
}

async fn received(signal: &mut Option<Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// A signal by name (`TERM`, `SIGTERM`, case-insensitive) or number.
pub fn parse_signal(text: &str) -> Result<i32, String> {
    if let Ok(n) = text.parse::<i32>() {
        if (1..=64).contains(&n) {
            return Ok(n);
        }
        return Err(format!("no signal number {n}"));
    }
    let upper = text.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| {
            format!("unknown signal {text:?} (e.g. TERM, INT, HUP, USR1, KILL, or a number)")
        })
}

/// The name of a signal, for messages.
pub fn signal_name(signal: i32) -> String {
    SIGNALS
        .iter()
        .find(|(_, s)| *s == signal)
        .map_or_else(|| format!("signal {signal}"), |(n, _)| format!("SIG{n}"))
}

const SIGNALS: [(&str, i32); 12] = [
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("TERM", libc::SIGTERM),
    ("ALRM", libc::SIGALRM),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("WINCH", libc::SIGWINCH),
    ("PWR", libc::SIGPWR),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name_or_number() {
        assert_eq!(parse_signal("TERM"), Ok(libc::SIGTERM));
        assert_eq!(parse_signal("sigusr1"), Ok(libc::SIGUSR1));
        assert_eq!(parse_signal("9"), Ok(9));
        assert!(parse_signal("0").is_err());
        assert!(parse_signal("NOPE").is_err());
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }
}
