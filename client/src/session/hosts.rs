//! Which server to try next, and how long to wait before trying.
//!
//! The host list is shuffled once so that clients spread over the ensemble. Hosts are tried in
//! turn; every host of a round is tried at once after the previous one failed, and a round that
//! reached no server is followed by a growing, jittered pause, so that a dead ensemble is never
//! hammered in a busy loop.

use std::time::Duration;

use crate::connect_string::HostPort;

/// First pause after a round without success.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest pause between rounds.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(1);

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
    /// Failed attempts since the last successful handshake.
    failures: u32,
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
        self.failures += 1;
        let n = self.hosts.len() as u32;
        if self.failures % n != 0 {
            return Duration::ZERO;
        }
        let rounds = self.failures / n;
        let base = BACKOFF_MIN
            .saturating_mul(1u32 << (rounds - 1).min(10))
            .min(BACKOFF_MAX);
        // Jitter in [base/2, base]: clients that lost the same server do not return in step.
        let half = base / 2;
        half + Duration::from_micros(rng.below(half.as_micros() as u64 + 1))
    }

    /// Records a successful handshake: the next loss starts a fresh round from the next host.
    pub fn connected(&mut self) {
        self.failures = 0;
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
        ring.connected();
        assert_eq!(ring.failed(&mut rng), Duration::ZERO);
    }

    #[test]
    fn single_host_always_backs_off() {
        let mut rng = Rng::new(3);
        let mut ring = HostRing::new(hosts(1), &mut rng);
        assert!(ring.failed(&mut rng) > Duration::ZERO);
        assert!(ring.failed(&mut rng) > Duration::ZERO);
    }
}
