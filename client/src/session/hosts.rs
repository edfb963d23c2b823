//! Which server to try next, and how long to wait before trying.
//!
//! The host list is shuffled once so that clients spread over the ensemble. Hosts are tried in
//! turn; every host of a round is tried at once after the previous one failed, and a round that
//! reached no server is followed by a growing, jittered pause, so that a dead ensemble is never
//! hammered in a busy loop.
//!
//! A handshake proves little: a server may accept it and close at once, every time. So a
//! connection counts as healthy only once it has lasted [`HEALTHY_AFTER`]; one that ends sooner
//! counts as a failure and is followed by a pause, growing with every such failure whatever the
//! handshakes said. The first reconnect after a healthy connection still goes out at once, so
//! that failing over stays fast.
//!
//! While a session may still be alive, failed attempts (a connection refused, reset, or closed
//! before the handshake's reply: a restart, a short outage, a member without a quorum) are
//! retried a small fraction of the session timeout apart ([`live_session_cap`]), so that the
//! session is taken back well before a lock holder's suspend limit, a quarter of the timeout.
//! That is at most twenty attempts per client in a session timeout, after which the session is
//! over; a server that completes handshakes and then closes the connections still gets the
//! growing pause up to [`BACKOFF_MAX`].

use std::time::{Duration, Instant};

use crate::connect_string::HostPort;

/// First pause after a round without success.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest pause between rounds.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How long a connection must last to count as healthy: as long as the longest pause, so that
/// a server closing every connection sooner gets at most one connection per pause.
pub(crate) const HEALTHY_AFTER: Duration = BACKOFF_MAX;

/// The longest pause after failed attempts while a session of timeout `timeout` may still be
/// alive: a twentieth of it (200 ms for a 4 s session), so that an outage is over for the
/// client at most that long after it is over for the server; never more than [`BACKOFF_MAX`]
/// nor less than [`BACKOFF_MIN`].
pub(crate) fn live_session_cap(timeout: Duration) -> Duration {
    (timeout / 20).clamp(BACKOFF_MIN, BACKOFF_MAX)
}

/// A small xorshift generator: enough for shuffling and jitter, and seedable so that tests are
/// deterministic.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The rotation over the ensemble.
#[derive(Debug)]
pub(crate) struct HostRing {
    hosts: Vec<HostPort>,
    next: usize,
    /// Failed attempts and short-lived connections since the last healthy connection.
    failures: u32,
    /// Pauses since the last healthy connection: each one is twice as long as the one before.
    pauses: u32,
    /// When the handshake of the current connection succeeded.
    connected_at: Option<Instant>,
}

impl HostRing {
    pub fn new(mut hosts: Vec<HostPort>, rng: &mut Rng) -> HostRing {
        shuffle(&mut hosts, rng);
        HostRing {
            hosts,
            next: 0,
            failures: 0,
            pauses: 0,
            connected_at: None,
        }
    }

    pub fn len(&self) -> usize {
        self.hosts.len()
    }

    /// The host for the next attempt; advances the rotation.
    pub fn next_host(&mut self) -> (usize, HostPort) {
        let i = self.next;
        self.next = (self.next + 1) % self.hosts.len();
        (i, self.hosts[i].clone())
    }

    /// Records a failed attempt and says how long to wait before the next one: nothing within a
    /// round, a jittered exponential pause up to `cap` once every host has failed.
    pub fn failed(&mut self, rng: &mut Rng, cap: Duration) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let n = self.hosts.len() as u32;
        if self.failures % n != 0 {
            return Duration::ZERO;
        }
        self.pause(rng, cap)
    }

    /// Records a successful handshake at `now`.
    pub fn connected(&mut self, now: Instant) {
        self.connected_at = Some(now);
    }

    /// Records the end, at `now`, of the connection whose handshake [`HostRing::connected`]
    /// recorded, and says how long to wait before the next attempt: nothing after a healthy
    /// connection (which starts a fresh round), a growing pause after one that did not last.
    pub fn lost(&mut self, now: Instant, rng: &mut Rng) -> Duration {
        let lasted = self
            .connected_at
            .take()
            .map(|at| now.saturating_duration_since(at));
        if lasted.is_some_and(|d| d >= HEALTHY_AFTER) {
            self.failures = 0;
            self.pauses = 0;
            return Duration::ZERO;
        }
        self.failures = self.failures.saturating_add(1);
        self.pause(rng, BACKOFF_MAX)
    }

    /// The next pause: jittered, twice the previous one, up to `cap` (at most
    /// [`BACKOFF_MAX`]).
    fn pause(&mut self, rng: &mut Rng, cap: Duration) -> Duration {
        self.pauses = self.pauses.saturating_add(1);
        let base = BACKOFF_MIN
            .saturating_mul(1u32 << (self.pauses - 1).min(10))
            .min(cap.min(BACKOFF_MAX));
        // Jitter in [base/2, base]: clients that lost the same server do not return in step.
        let half = base / 2;
        half + Duration::from_micros(rng.below(half.as_micros() as u64 + 1))
    }
}

/// Fisher–Yates.
fn shuffle(hosts: &mut [HostPort], rng: &mut Rng) {
    for i in (1..hosts.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        hosts.swap(i, j);
    }
}

/// How a client connected to `current` reacts to the server list going from `old` to `new`,
/// so that clients spread evenly over the new list while as few as possible move.
///
/// Say the old list had `n` servers, all equally loaded, and the new one has `m`, of which
/// `k` were in the old list ("kept") and `m − k` were not ("added"). Each server should end up
/// with `1/m` of the clients.
/// * The list grows (`m > n`) and `current` stays: each kept server holds `1/n` but should
///   hold `1/m`, so a fraction `1 − n/m` of its clients moves, to the added servers.
/// * `current` was removed: its clients must move. When the list grows, the kept servers
///   already shed load, so they go to the added servers. When it does not grow, the kept
///   servers each take `x` more so that `1/n + x = 1/m`, from the `(n − k)/n` of clients that
///   must move: a mover goes to a kept server with probability
///   `k·(n − m) / (m·(n − k))`, else to an added one.
/// * The list shrinks or keeps its size and `current` stays: its load can only grow; nobody
///   moves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MovePlan {
    /// Probability that this client moves at all.
    pub p_move: f64,
    /// Given a move, probability that it goes to an added server (else a kept one).
    pub p_added: f64,
}

pub(crate) fn move_plan(old: &[HostPort], new: &[HostPort], current: &HostPort) -> MovePlan {
    let n = old.len() as f64;
    let m = new.len() as f64;
    let kept = new.iter().filter(|h| old.contains(h)).count();
    let added = new.len() - kept;
    let k = kept as f64;
    let stays = new.contains(current);
    let mut plan = match (stays, m > n) {
        (true, true) => MovePlan {
            p_move: 1.0 - n / m,
            p_added: 1.0,
        },
        (true, false) => MovePlan {
            p_move: 0.0,
            p_added: 0.0,
        },
        (false, true) => MovePlan {
            p_move: 1.0,
            p_added: 1.0,
        },
        (false, false) => MovePlan {
            p_move: 1.0,
            // Every old server kept but ours: ours was not in the old list; spread evenly.
            p_added: if n > k {
                1.0 - k * (n - m) / (m * (n - k))
            } else {
                1.0 - k / m
            },
        },
    };
    // Nowhere to go in a group means the other one.
    if added == 0 {
        plan.p_added = 0.0;
    } else if kept == 0 || kept == 1 && stays {
        plan.p_added = 1.0;
    }
    plan.p_added = plan.p_added.clamp(0.0, 1.0);
    plan
}

impl HostRing {
    /// The servers in rotation order.
    pub fn hosts(&self) -> &[HostPort] {
        &self.hosts
    }

    /// Replaces the server list (shuffled). `current` is the server the client is connected
    /// to, if any: when the new list calls for this client to move (see [`move_plan`]), the
    /// server to move to is returned and the rotation continues after it; otherwise the
    /// rotation continues after `current`.
    pub fn replace(
        &mut self,
        mut hosts: Vec<HostPort>,
        current: Option<&HostPort>,
        rng: &mut Rng,
    ) -> Option<HostPort> {
        let mut unique: Vec<HostPort> = Vec::with_capacity(hosts.len());
        for host in hosts.drain(..) {
            if !unique.contains(&host) {
                unique.push(host);
            }
        }
        let mut hosts = unique;
        shuffle(&mut hosts, rng);
        let old = std::mem::replace(&mut self.hosts, hosts);
        let position = |ring: &HostRing, host: &HostPort| ring.hosts.iter().position(|h| h == host);
        let Some(current) = current else {
            self.next = 0;
            return None;
        };
        let plan = move_plan(&old, &self.hosts, current);
        if plan.p_move > 0.0 && rng.unit() < plan.p_move {
            let to_added = rng.unit() < plan.p_added;
            let group: Vec<&HostPort> = self
                .hosts
                .iter()
                .filter(|h| *h != current && old.contains(h) != to_added)
                .collect();
            if !group.is_empty() {
                let target = group[rng.below(group.len() as u64) as usize].clone();
                let at = position(self, &target).unwrap_or(0);
                self.next = (at + 1) % self.hosts.len();
                return Some(target);
            }
        }
        self.next = position(self, current).map_or(0, |at| (at + 1) % self.hosts.len());
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: u16) -> Vec<HostPort> {
        (0..n)
            .map(|i| HostPort {
                host: "h".into(),
                port: 1000 + i,
            })
            .collect()
    }

    #[test]
    fn shuffle_keeps_every_host_once_and_rotation_visits_all() {
        let mut rng = Rng::new(42);
        let mut ring = HostRing::new(hosts(5), &mut rng);
        let mut ports: Vec<u16> = (0..5).map(|_| ring.next_host().1.port).collect();
        ports.sort();
        assert_eq!(ports, vec![1000, 1001, 1002, 1003, 1004]);
        let first = ring.next_host().1;
        for _ in 0..4 {
            ring.next_host();
        }
        assert_eq!(ring.next_host().1, first, "the rotation repeats");
    }

    #[test]
    fn different_seeds_shuffle_differently() {
        let orders: std::collections::HashSet<Vec<u16>> = (0..20)
            .map(|seed| {
                let mut rng = Rng::new(seed * 7919 + 1);
                let mut ring = HostRing::new(hosts(5), &mut rng);
                (0..5).map(|_| ring.next_host().1.port).collect()
            })
            .collect();
        assert!(orders.len() > 1);
    }

    #[test]
    fn backoff_only_between_rounds_and_grows_to_a_cap() {
        let mut rng = Rng::new(7);
        let mut ring = HostRing::new(hosts(3), &mut rng);
        assert_eq!(ring.failed(&mut rng, BACKOFF_MAX), Duration::ZERO);
        assert_eq!(ring.failed(&mut rng, BACKOFF_MAX), Duration::ZERO);
        let first = ring.failed(&mut rng, BACKOFF_MAX);
        assert!(
            first >= BACKOFF_MIN / 2 && first <= BACKOFF_MIN,
            "{first:?}"
        );
        let mut last = first;
        for _ in 0..30 {
            ring.failed(&mut rng, BACKOFF_MAX);
            ring.failed(&mut rng, BACKOFF_MAX);
            last = ring.failed(&mut rng, BACKOFF_MAX);
            assert!(last > Duration::ZERO && last <= BACKOFF_MAX);
        }
        assert!(last >= BACKOFF_MAX / 2);
        // Only a connection that lasted starts afresh.
        let now = Instant::now();
        ring.connected(now);
        assert!(ring.lost(now + HEALTHY_AFTER, &mut rng).is_zero());
        assert_eq!(ring.failed(&mut rng, BACKOFF_MAX), Duration::ZERO);
        assert_eq!(ring.failed(&mut rng, BACKOFF_MAX), Duration::ZERO);
        let fresh = ring.failed(&mut rng, BACKOFF_MAX);
        assert!(
            fresh >= BACKOFF_MIN / 2 && fresh <= BACKOFF_MIN,
            "{fresh:?}"
        );
    }

    /// A server that accepts every handshake and closes at once: every loss is a failure, and
    /// the pauses grow as if the handshakes had failed, on every host of the round.
    #[test]
    fn short_lived_connections_back_off_whatever_the_handshakes_said() {
        let mut rng = Rng::new(11);
        let mut ring = HostRing::new(hosts(3), &mut rng);
        let mut now = Instant::now();
        let mut pauses = vec![];
        for _ in 0..20 {
            ring.connected(now);
            now += Duration::from_millis(5);
            let pause = ring.lost(now, &mut rng);
            assert!(
                pause >= BACKOFF_MIN / 2,
                "no pause after a short-lived connection"
            );
            pauses.push(pause);
            now += pause;
        }
        assert!(pauses[1] > pauses[0] / 2 * 2 - Duration::from_millis(1));
        assert!(pauses[19] >= BACKOFF_MAX / 2 && pauses[19] <= BACKOFF_MAX);
        // Twenty connections took at least the sum of the pauses: about one per half second
        // once the pauses reach their cap.
        let total: Duration = pauses.iter().sum();
        assert!(total >= BACKOFF_MAX / 2 * 14, "{total:?}");
        // A failed attempt in the middle does not reset anything either.
        ring.failed(&mut rng, BACKOFF_MAX);
        ring.connected(now);
        let next = ring.lost(now + Duration::from_millis(1), &mut rng);
        assert!(next >= BACKOFF_MAX / 2, "{next:?}");
    }

    #[test]
    fn a_healthy_connection_is_followed_by_a_reconnect_at_once() {
        let mut rng = Rng::new(5);
        let mut ring = HostRing::new(hosts(2), &mut rng);
        let now = Instant::now();
        ring.connected(now);
        assert_eq!(ring.lost(now + HEALTHY_AFTER, &mut rng), Duration::ZERO);
        // Several healthy connections in a row: each loss reconnects at once.
        ring.connected(now + Duration::from_secs(10));
        assert_eq!(
            ring.lost(now + Duration::from_secs(60), &mut rng),
            Duration::ZERO
        );
    }

    #[test]
    fn single_host_always_backs_off() {
        let mut rng = Rng::new(3);
        let mut ring = HostRing::new(hosts(1), &mut rng);
        assert!(ring.failed(&mut rng, BACKOFF_MAX) > Duration::ZERO);
        assert!(ring.failed(&mut rng, BACKOFF_MAX) > Duration::ZERO);
    }

    fn named(names: &[&str]) -> Vec<HostPort> {
        names
            .iter()
            .map(|n| HostPort {
                host: (*n).into(),
                port: 2181,
            })
            .collect()
    }

    /// Puts `clients` evenly on `old` (as if balanced), replaces the list with `new` for each
    /// with its own seeded generator, and counts where everyone ends up and how many moved.
    fn simulate(old: &[&str], new: &[&str], clients: usize) -> (Vec<(String, usize)>, usize) {
        let (old, new) = (named(old), named(new));
        let mut counts: Vec<(String, usize)> = new.iter().map(|h| (h.host.clone(), 0)).collect();
        let mut moved = 0;
        for c in 0..clients {
            let mut rng = Rng::new(c as u64 * 2654435761 + 17);
            let mut ring = HostRing::new(old.clone(), &mut rng);
            let current = old[c % old.len()].clone();
            let end = match ring.replace(new.clone(), Some(&current), &mut rng) {
                Some(target) => {
                    moved += 1;
                    assert_ne!(target, current);
                    assert_ne!(ring.next_host().1, target, "rotation continues after it");
                    target
                }
                None => {
                    assert!(
                        new.contains(&current),
                        "a removed server's client must move"
                    );
                    current
                }
            };
            counts.iter_mut().find(|(h, _)| *h == end.host).unwrap().1 += 1;
        }
        (counts, moved)
    }

    fn assert_even(counts: &[(String, usize)], clients: usize, tolerance: f64) {
        let share = clients as f64 / counts.len() as f64;
        for (host, count) in counts {
            let off = (*count as f64 - share).abs() / share;
            assert!(
                off <= tolerance,
                "{host}: {count} of {clients} ({counts:?})"
            );
        }
    }

    #[test]
    fn nobody_moves_when_the_list_is_unchanged_or_reordered() {
        let (_, moved) = simulate(&["a", "b", "c"], &["a", "b", "c"], 3000);
        assert_eq!(moved, 0);
        let (_, moved) = simulate(&["a", "b", "c"], &["c", "a", "b", "a"], 3000);
        assert_eq!(moved, 0);
    }

    #[test]
    fn growing_moves_the_fraction_that_evens_the_load() {
        let clients = 30_000;
        let (counts, moved) = simulate(&["a", "b", "c"], &["a", "b", "c", "d", "e"], clients);
        // 1 − 3/5 of the clients move, all to the two new servers.
        let expected = clients as f64 * 0.4;
        assert!((moved as f64 - expected).abs() < expected * 0.03, "{moved}");
        assert_even(&counts, clients, 0.05);
    }

    #[test]
    fn everyone_on_a_removed_server_moves_and_the_rest_stay() {
        let clients = 30_000;
        let (counts, moved) = simulate(&["a", "b", "c", "d", "e"], &["a", "b", "c"], clients);
        assert_eq!(moved, clients * 2 / 5, "exactly the clients of d and e");
        assert_even(&counts, clients, 0.05);
    }

    #[test]
    fn replacing_and_shrinking_at_once_still_evens_the_load() {
        let clients = 30_000;
        for (old, new) in [
            (&["a", "b", "c"][..], &["a", "b", "d", "e"][..]),
            (&["a", "b", "c", "d", "e"][..], &["a", "b", "f"][..]),
            (&["a", "b", "c"][..], &["d", "e", "f"][..]),
            (&["a", "b", "c", "d"][..], &["a", "e"][..]),
        ] {
            let (counts, _) = simulate(old, new, clients);
            assert_even(&counts, clients, 0.05);
        }
    }

    #[test]
    fn the_plan_matches_the_arithmetic() {
        let plan = move_plan(
            &named(&["a", "b", "c"]),
            &named(&["a", "b", "c", "d", "e"]),
            &named(&["a"])[0],
        );
        assert!((plan.p_move - 0.4).abs() < 1e-9);
        assert_eq!(plan.p_added, 1.0);
        let plan = move_plan(
            &named(&["a", "b", "c", "d", "e"]),
            &named(&["a", "b", "f"]),
            &named(&["c"])[0],
        );
        assert_eq!(plan.p_move, 1.0);
        assert!((plan.p_added - 5.0 / 9.0).abs() < 1e-9, "{plan:?}");
    }

    #[test]
    fn a_disconnected_client_just_takes_the_new_list() {
        let mut rng = Rng::new(5);
        let mut ring = HostRing::new(named(&["a", "b"]), &mut rng);
        assert_eq!(ring.replace(named(&["c", "d", "d"]), None, &mut rng), None);
        let mut seen: Vec<String> = (0..2).map(|_| ring.next_host().1.host).collect();
        seen.sort();
        assert_eq!(seen, vec!["c", "d"], "duplicates dropped");
    }
}
