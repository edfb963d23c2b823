//! The client's source of randomness, seeded per client so that a simulated run is a
//! function of its seed (see [`ClientBuilder::rng_seed`](crate::ClientBuilder::rng_seed)).

use std::sync::atomic::{AtomicU64, Ordering};

/// A splitmix64 stream: one atomic add per draw, so handles on any thread draw without a
/// lock, and every seed (zero included) gives a full-period stream.
#[derive(Debug)]
pub(crate) struct Random(AtomicU64);

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl Random {
    pub(crate) fn new(seed: u64) -> Random {
        Random(AtomicU64::new(seed))
    }

    pub(crate) fn next_u64(&self) -> u64 {
        mix(self
            .0
            .fetch_add(GOLDEN, Ordering::Relaxed)
            .wrapping_add(GOLDEN))
    }
}

/// splitmix64's output function: also how one seed is spread into several independent ones.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_draws_one_stream_and_seeds_differ() {
        let a = Random::new(7);
        let b = Random::new(7);
        let c = Random::new(8);
        let draws = |r: &Random| (0..4).map(|_| r.next_u64()).collect::<Vec<_>>();
        let (da, db, dc) = (draws(&a), draws(&b), draws(&c));
        assert_eq!(da, db);
        assert_ne!(da, dc);
        assert_ne!(da[0], da[1]);
    }
}
