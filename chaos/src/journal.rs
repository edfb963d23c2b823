//! What the contenders report, one line per event, and everything gathered from them.
//!
//! Every contender (ours, Curator's, kazoo's) prints the same lines:
//!
//! | Line | When |
//! |---|---|
//! | `grant WHO TOKEN MARKER_CZXID T_NS` | inside the critical section: the marker is created |
//! | `exit WHO TOKEN T_NS` | the marker is deleted, just before the release |
//! | `violation WHO TEXT` | the marker was there already: someone else is inside |
//! | `error WHO TEXT` | anything else that went wrong (a lost connection, say) |
//! | `holding WHO TOKEN` | a paused holder of ours, inside, waiting to be stopped |
//! | `resumed WHO GAP_MS CHECKS STATE SESSION` | its first look after the pause, and the session state then |
//! | `guarded-write WHO refused|applied TEXT` | its write guarded by the lock, after resuming |
//!
//! Times are wall-clock nanoseconds (one clock for all processes of the machine).

use std::collections::{BTreeMap, VecDeque};

/// One line of a contender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Grant {
        who: String,
        token: i64,
        marker_czxid: i64,
        at_ns: i128,
    },
    Exit {
        who: String,
        token: i64,
        at_ns: i128,
    },
    Violation {
        who: String,
        detail: String,
    },
    Error {
        who: String,
        detail: String,
    },
    Holding {
        who: String,
        token: i64,
    },
    Resumed {
        who: String,
        gap_ms: u64,
        checks: u64,
        state: String,
        session: String,
    },
    GuardedWrite {
        who: String,
        refused: bool,
        detail: String,
    },
    /// Anything else a contender prints (start-up chatter).
    Other(String),
}

impl Event {
    pub fn parse(line: &str) -> Event {
        let mut words = line.split(' ');
        let kind = words.next().unwrap_or("");
        let who = words.next().unwrap_or("").to_owned();
        let rest: Vec<&str> = words.collect();
        let num = |i: usize| rest.get(i).and_then(|w| w.parse::<i64>().ok());
        let parsed = match kind {
            "grant" => (|| {
                Some(Event::Grant {
                    who: who.clone(),
                    token: num(0)?,
                    marker_czxid: num(1)?,
                    at_ns: rest.get(2)?.parse().ok()?,
                })
            })(),
            "exit" => (|| {
                Some(Event::Exit {
                    who: who.clone(),
                    token: num(0)?,
                    at_ns: rest.get(1)?.parse().ok()?,
                })
            })(),
            "violation" => Some(Event::Violation {
                who: who.clone(),
                detail: rest.join(" "),
            }),
            "error" => Some(Event::Error {
                who: who.clone(),
                detail: rest.join(" "),
            }),
            "holding" => num(0).map(|token| Event::Holding {
                who: who.clone(),
                token,
            }),
            "resumed" => (|| {
                Some(Event::Resumed {
                    who: who.clone(),
                    gap_ms: rest.first()?.parse().ok()?,
                    checks: rest.get(1)?.parse().ok()?,
                    state: rest.get(2)?.to_string(),
                    session: rest.get(3)?.to_string(),
                })
            })(),
            "guarded-write" => rest.first().map(|verdict| Event::GuardedWrite {
                who: who.clone(),
                refused: *verdict == "refused",
                detail: rest[1..].join(" "),
            }),
            _ => None,
        };
        parsed.unwrap_or_else(|| Event::Other(line.to_owned()))
    }
}

/// One critical section.
#[derive(Clone, Debug)]
pub struct Grant {
    pub who: String,
    pub token: i64,
    pub marker_czxid: i64,
    pub entered_ns: i128,
    pub exited_ns: Option<i128>,
}

/// What one lock went through.
#[derive(Debug, Default)]
pub struct LockLog {
    pub grants: Vec<Grant>,
    pub violations: Vec<String>,
    pub errors: BTreeMap<String, usize>,
    /// The last errors reported, for a failed run's report: what a contender went through
    /// before a violation tells which side was wrong.
    pub recent_errors: VecDeque<String>,
}

/// How many of the last errors a lock's log keeps.
const RECENT_ERRORS: usize = 30;

impl LockLog {
    pub fn record(&mut self, event: &Event) {
        match event {
            Event::Grant {
                who,
                token,
                marker_czxid,
                at_ns,
            } => self.grants.push(Grant {
                who: who.clone(),
                token: *token,
                marker_czxid: *marker_czxid,
                entered_ns: *at_ns,
                exited_ns: None,
            }),
            Event::Exit { who, token, at_ns } => {
                if let Some(g) = self
                    .grants
                    .iter_mut()
                    .rev()
                    .find(|g| g.who == *who && g.token == *token)
                {
                    g.exited_ns = Some(*at_ns);
                }
            }
            Event::Violation { who, detail } => {
                self.violations.push(format!("{who}: {detail}"));
            }
            Event::Error { who, detail } => {
                *self.errors.entry(who.clone()).or_default() += 1;
                if self.recent_errors.len() == RECENT_ERRORS {
                    self.recent_errors.pop_front();
                }
                self.recent_errors.push_back(format!("{who}: {detail}"));
            }
            _ => {}
        }
    }
}

/// All locks' logs, by lock path.
pub type Journal = BTreeMap<String, LockLog>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_events() {
        assert_eq!(
            Event::parse("grant rust-1 4294967300 4294967302 1700000000123456789"),
            Event::Grant {
                who: "rust-1".into(),
                token: 4294967300,
                marker_czxid: 4294967302,
                at_ns: 1700000000123456789,
            }
        );
        assert_eq!(
            Event::parse("resumed rust-2 4012 81234 Lost(LeaseExpired) Connected"),
            Event::Resumed {
                who: "rust-2".into(),
                gap_ms: 4012,
                checks: 81234,
                state: "Lost(LeaseExpired)".into(),
                session: "Connected".into(),
            }
        );
        assert_eq!(
            Event::parse("guarded-write rust-2 refused session expired"),
            Event::GuardedWrite {
                who: "rust-2".into(),
                refused: true,
                detail: "session expired".into(),
            }
        );
        assert!(matches!(
            Event::parse("grant x notanumber"),
            Event::Other(_)
        ));
    }

    #[test]
    fn an_exit_closes_its_grant() {
        let mut log = LockLog::default();
        log.record(&Event::parse("grant a 10 11 100"));
        log.record(&Event::parse("exit a 10 150"));
        log.record(&Event::parse("error a lost"));
        assert_eq!(log.grants[0].exited_ns, Some(150));
        assert_eq!(log.errors["a"], 1);
    }

    #[test]
    fn the_last_errors_are_kept_for_the_report() {
        let mut log = LockLog::default();
        for i in 0..RECENT_ERRORS + 5 {
            log.record(&Event::parse(&format!("error curator-1 attempt {i}")));
        }
        assert_eq!(log.errors["curator-1"], RECENT_ERRORS + 5);
        assert_eq!(log.recent_errors.len(), RECENT_ERRORS);
        assert_eq!(
            log.recent_errors.back().map(String::as_str),
            Some(format!("curator-1: attempt {}", RECENT_ERRORS + 4).as_str())
        );
    }
}
