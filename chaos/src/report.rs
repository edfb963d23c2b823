//! The verdict of a run: per lock, the grants, violations, fencing-token order and the longest
//! stall; the faults injected; the paused holders.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::journal::{Grant, LockLog};

/// Allowed beyond the session timeout, the tick and the election for a lock to pass on: the
/// paused holder reporting its hold and being stopped (its stall counts from its entry), the
/// server committing the expiry (or a release) across the quorum, and the next contender (a
/// JVM, a Python process or ours) woken, listing and entering. Each of these takes
/// milliseconds on an idle machine; the margin is for a loaded one, where a run must not fail
/// on the machine's pace. A lock left free past it is left free for no reason the run knows.
pub const HANDOFF: Duration = Duration::from_secs(2);

/// What became of one paused holder.
#[derive(Clone, Debug)]
pub struct PauseOutcome {
    pub who: String,
    pub token: i64,
    /// How long the process stood still, as it measured.
    pub paused_ms: u64,
    /// The guard's state on its first look after resuming.
    pub first_look: String,
    /// The session state at that first look: `Connected` means the client had processed
    /// nothing since the pause (no reply, no timer of its own).
    pub session_at_first_look: String,
    /// Whether its guarded write after resuming was refused; `None` if it never said.
    pub guarded_write_refused: Option<bool>,
    /// Another contender was granted the lock while it stood still.
    pub taken_over: bool,
    /// Whether the node its refused write would have made does not exist; `None` if the
    /// ensemble could not be asked.
    pub stale_write_absent: Option<bool>,
}

impl PauseOutcome {
    pub fn ok(&self) -> bool {
        self.first_look.starts_with("Lost")
            && self.guarded_write_refused == Some(true)
            && self.taken_over
            && self.stale_write_absent == Some(true)
    }

    /// What became of its guarded write, in words.
    fn write_outcome(&self) -> &'static str {
        match (self.guarded_write_refused, self.stale_write_absent) {
            (Some(true), Some(true)) => "refused",
            (Some(false), _) => "NOT REFUSED",
            (_, Some(false)) => "REFUSED BUT ITS NODE EXISTS",
            (None, _) => "NOT REPORTED",
            (Some(true), None) => "refused (whether its node exists: UNKNOWN)",
        }
    }
}

/// The member kills of a run.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    pub kills: usize,
    pub leader_kills: usize,
    /// From each leader kill until a write through a fresh connection succeeded.
    pub elections: Vec<Duration>,
    /// Pauses that could not be carried out (the contender never got the lock in time).
    pub pauses_skipped: usize,
}

/// One lock's figures.
#[derive(Clone, Debug)]
pub struct LockSummary {
    pub path: String,
    pub layout: &'static str,
    pub grants: usize,
    pub by_implementation: BTreeMap<String, usize>,
    pub violations: Vec<String>,
    /// Consecutive grants (in the server's order of entry) whose tokens did not increase.
    pub order_breaks: Vec<String>,
    pub longest_stall: Duration,
    pub errors: usize,
    /// The last errors reported, shown when the lock failed a check.
    pub recent_errors: Vec<String>,
}

/// Orders `grants` by the creation of their markers: the order the server let them in.
fn in_entry_order(grants: &[Grant]) -> Vec<&Grant> {
    let mut sorted: Vec<&Grant> = grants.iter().collect();
    sorted.sort_by_key(|g| g.marker_czxid);
    sorted
}

pub fn summarize(path: &str, layout: &'static str, log: &LockLog) -> LockSummary {
    let sorted = in_entry_order(&log.grants);
    let mut by_implementation = BTreeMap::new();
    for g in &sorted {
        let implementation = g.who.split('-').next().unwrap_or("?").to_owned();
        *by_implementation.entry(implementation).or_insert(0) += 1;
    }
    let mut order_breaks = Vec::new();
    let mut longest_stall = Duration::ZERO;
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.token <= a.token {
            order_breaks.push(format!(
                "{} (token {:#x}) entered after {} (token {:#x})",
                b.who, b.token, a.who, a.token
            ));
        }
        // A holder that never came out (paused, its session expired) held it from its entry.
        let free_from = a.exited_ns.unwrap_or(a.entered_ns);
        let gap = (b.entered_ns - free_from).max(0);
        longest_stall = longest_stall.max(Duration::from_nanos(gap as u64));
    }
    LockSummary {
        path: path.to_owned(),
        layout,
        grants: sorted.len(),
        by_implementation,
        violations: log.violations.clone(),
        order_breaks,
        longest_stall,
        errors: log.errors.values().sum(),
        recent_errors: log.recent_errors.iter().cloned().collect(),
    }
}

/// Everything a run found.
#[derive(Clone, Debug)]
pub struct Report {
    pub duration: Duration,
    pub session_timeout: Duration,
    pub tick: Duration,
    pub locks: Vec<LockSummary>,
    pub faults: Faults,
    pub pauses: Vec<PauseOutcome>,
}

impl Report {
    /// The longest a lock may sit free: a holder that stopped answering is expired one
    /// session timeout after the server last heard from it, on the server's next tick, then
    /// the expiry is committed and the next contender woken ([`HANDOFF`]); an election adds
    /// its time.
    pub fn stall_bound(&self) -> Duration {
        let election = self
            .faults
            .elections
            .iter()
            .max()
            .copied()
            .unwrap_or_default();
        self.session_timeout + self.tick + election + HANDOFF
    }

    pub fn passed(&self) -> bool {
        let bound = self.stall_bound();
        self.locks.iter().all(|l| {
            l.grants > 0
                && l.violations.is_empty()
                && l.order_breaks.is_empty()
                && l.longest_stall <= bound
        }) && self.pauses.iter().all(PauseOutcome::ok)
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "zookeeper-chaos: 3-member ensemble (tickTime {} ms), session timeout {}, ran {}",
            self.tick.as_millis(),
            secs(self.session_timeout),
            secs(self.duration)
        )?;
        let bound = self.stall_bound();
        for l in &self.locks {
            let mix: Vec<String> = l
                .by_implementation
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            writeln!(f, "lock {} ({} layout)", l.path, l.layout)?;
            writeln!(f, "  grants: {} ({})", l.grants, mix.join(", "))?;
            writeln!(f, "  violations: {}", l.violations.len())?;
            for v in l.violations.iter().take(10) {
                writeln!(f, "    {v}")?;
            }
            if l.order_breaks.is_empty() {
                writeln!(
                    f,
                    "  token order: strictly increasing over all {} grants",
                    l.grants
                )?;
            } else {
                writeln!(f, "  token order: {} breaks", l.order_breaks.len())?;
                for b in l.order_breaks.iter().take(10) {
                    writeln!(f, "    {b}")?;
                }
            }
            writeln!(
                f,
                "  longest stall: {} (bound {}){}",
                secs(l.longest_stall),
                secs(bound),
                if l.longest_stall <= bound {
                    ""
                } else {
                    " EXCEEDED"
                }
            )?;
            writeln!(f, "  errors reported by contenders: {}", l.errors)?;
            let failed =
                !l.violations.is_empty() || !l.order_breaks.is_empty() || l.longest_stall > bound;
            if failed {
                for e in &l.recent_errors {
                    writeln!(f, "    {e}")?;
                }
            }
        }
        let elections = &self.faults.elections;
        let longest = elections.iter().max().copied().unwrap_or_default();
        writeln!(
            f,
            "faults: {} member kills ({} of the leader; longest election {}), {} paused holders{}",
            self.faults.kills,
            self.faults.leader_kills,
            secs(longest),
            self.pauses.len(),
            if self.faults.pauses_skipped > 0 {
                format!(" ({} pauses skipped)", self.faults.pauses_skipped)
            } else {
                String::new()
            }
        )?;
        let count = |p: fn(&PauseOutcome) -> bool| self.pauses.iter().filter(|o| p(o)).count();
        let n = self.pauses.len();
        writeln!(
            f,
            "paused holders: first look after resume reads Lost {}/{n} (the client still \
             believing itself connected: {}/{n}), guarded write refused {}/{n}, taken over \
             meanwhile {}/{n}",
            count(|o| o.first_look.starts_with("Lost")),
            count(|o| o.session_at_first_look == "Connected"),
            count(|o| o.write_outcome() == "refused"),
            count(|o| o.taken_over),
        )?;
        for o in &self.pauses {
            writeln!(
                f,
                "  {} stood still {} ms holding token {:#x}: first look {} (session {}); \
                 guarded write {}; {}{}",
                o.who,
                o.paused_ms,
                o.token,
                o.first_look,
                o.session_at_first_look,
                o.write_outcome(),
                if o.taken_over {
                    "taken over meanwhile"
                } else {
                    "NOT TAKEN OVER"
                },
                if o.ok() { "" } else { "  FAILED" }
            )?;
        }
        writeln!(
            f,
            "stall bound: session timeout {} + tick {} + longest election {} + handoff {}",
            secs(self.session_timeout),
            secs(self.tick),
            secs(longest),
            secs(HANDOFF)
        )?;
        write!(f, "result: {}", if self.passed() { "PASS" } else { "FAIL" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Event;

    #[test]
    fn order_and_stalls_follow_the_markers_creation() {
        let mut log = LockLog::default();
        for line in [
            "grant rust-a 10 100 1000000000",
            "exit rust-a 10 1100000000",
            // Reported late, entered first: sorted by the marker's czxid.
            "grant curator-b 30 300 4000000000",
            "grant kazoo-c 20 200 2000000000",
        ] {
            log.record(&Event::parse(line));
        }
        let s = summarize("/l", "Curator", &log);
        assert_eq!(s.grants, 3);
        assert!(s.order_breaks.is_empty());
        // kazoo-c never came out: the lock was its from its entry until curator-b's.
        assert_eq!(s.longest_stall, Duration::from_millis(2000));
        log.record(&Event::parse("grant rust-d 5 400 5000000000"));
        assert_eq!(summarize("/l", "Curator", &log).order_breaks.len(), 1);
    }
}
