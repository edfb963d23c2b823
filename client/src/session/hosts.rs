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

use std::time::{Duration, Instant};

use crate::connect_string::HostPort;

/// First pause after a round without success.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest pause between rounds.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How long a connection must last to count as healthy: as long as the longest pause, so that
/// a server closing every connection sooner gets at most one connection per pause.
pub(crate) const HEALTHY_AFTER: Duration = BACKOFF_MAX;

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
        // Fisher–Yates.
        for i in (1..hosts.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            hosts.swap(i, j);
        }
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
    /// round, a jittered exponential pause once every host has failed.
    pub fn failed(&mut self, rng: &mut Rng) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let n = self.hosts.len() as u32;
        if self.failures % n != 0 {
            return Duration::ZERO;
        }
        self.pause(rng)
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
        self.pause(rng)
    }

    /// The next pause: jittered, twice the previous one, up to [`BACKOFF_MAX`].
    fn pause(&mut self, rng: &mut Rng) -> Duration {
        self.pauses = self.pauses.saturating_add(1);
        let base = BACKOFF_MIN
            .saturating_mul(1u32 << (self.pauses - 1).min(10))
            .min(BACKOFF_MAX);
        // Jitter in [base/2, base]: clients that lost the same server do not return in step.
        let half = base / 2;
        half + Duration::from_micros(rng.below(half.as_micros() as u64 + 1))
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
        assert_eq!(ring.failed(&mut rng), Duration::ZERO);
        assert_eq!(ring.failed(&mut rng), Duration::ZERO);
        let first = ring.failed(&mut rng);
        assert!(
            first >= BACKOFF_MIN / 2 && first <= BACKOFF_MIN,
            "{first:?}"
        );
        let mut last = first;
        for _ in 0..30 {
            ring.failed(&mut rng);
            ring.failed(&mut rng);
            last = ring.failed(&mut rng);
            assert!(last > Duration::ZERO && last <= BACKOFF_MAX);
        }
        assert!(last >= BACKOFF_MAX / 2);
        // Only a connection that lasted starts afresh.
        let now = Instant::now();
        ring.connected(now);
        assert!(ring.lost(now + HEALTHY_AFTER, &mut rng).is_zero());
        assert_eq!(ring.failed(&mut rng), Duration::ZERO);
        assert_eq!(ring.failed(&mut rng), Duration::ZERO);
        let fresh = ring.failed(&mut rng);
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
        ring.failed(&mut rng);
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
        assert!(ring.failed(&mut rng) > Duration::ZERO);
        assert!(ring.failed(&mut rng) > Duration::ZERO);
    }
}
