//! The signals that ask `zk` to stop: SIGINT, SIGTERM and SIGHUP.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::Failure;

/// Listens for SIGINT, SIGTERM and SIGHUP from the moment it is made: until then they kill the
/// process, after that they are caught and handed to the command.
pub struct Interrupts {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Interrupts {
    pub fn catch() -> Result<Interrupts, Failure> {
        let listen =
            |kind| signal(kind).map_err(|e| Failure::new(crate::exit::IO, format!("signals: {e}")));
        Ok(Interrupts {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
        })
    }

    /// The number of the next signal received.
    pub async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.int.recv() => libc::SIGINT,
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
        }
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
