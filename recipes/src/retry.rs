//! How often, and how long apart, a recipe tries again after losing a race.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// When to try again, as Curator's `RetryPolicy` (`RetryNTimes`,
/// `ExponentialBackoffRetry`): after the `n`th failed try (counting from 0), wait the delay
/// [`RetryPolicy::delay`] gives, or give up when it gives none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    retries: u32,
    base: Duration,
    max_sleep: Duration,
    exponential: bool,
}

impl RetryPolicy {
    /// Never try again.
    pub fn never() -> RetryPolicy {
        RetryPolicy::n_times(0, Duration::ZERO)
    }

    /// Up to `retries` more tries, `sleep` apart (Curator's `RetryNTimes`).
    pub fn n_times(retries: u32, sleep: Duration) -> RetryPolicy {
        RetryPolicy {
            retries,
            base: sleep,
            max_sleep: sleep,
            exponential: false,
        }
    }

    /// Up to `retries` more tries, waiting `base` times a random factor from 1 to 2^(n+1)
    /// before the try after the `n`th failure, at most `max_sleep` (Curator's
    /// `ExponentialBackoffRetry`).
    pub fn exponential(base: Duration, retries: u32, max_sleep: Duration) -> RetryPolicy {
        RetryPolicy {
            retries,
            base,
            max_sleep,
            exponential: true,
        }
    }

    /// The wait before another try after `failed` failed tries (1 after the first), or
    /// `None` to give up.
    pub fn delay(&self, failed: u32) -> Option<Duration> {
        self.delay_drawn(failed, random())
    }

    /// [`RetryPolicy::delay`] with the random factor taken from `draw`: the recipes pass the
    /// client's seeded draw ([`Client::random_u64`](zookeeper_tokio::Client::random_u64)).
    pub(crate) fn delay_drawn(&self, failed: u32, draw: u64) -> Option<Duration> {
        if failed == 0 || failed > self.retries {
            return None;
        }
        if !self.exponential {
            return Some(self.base);
        }
        let span = 1u64 << (failed.min(30));
        let factor = 1 + draw % span;
        let delay = self
            .base
            .checked_mul(factor.min(u32::MAX as u64) as u32)
            .unwrap_or(self.max_sleep);
        Some(delay.min(self.max_sleep))
    }
}

fn random() -> u64 {
    RandomState::new().build_hasher().finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_times_allows_n_retries_at_a_fixed_pace() {
        let p = RetryPolicy::n_times(2, Duration::from_millis(10));
        assert_eq!(p.delay(1), Some(Duration::from_millis(10)));
        assert_eq!(p.delay(2), Some(Duration::from_millis(10)));
        assert_eq!(p.delay(3), None);
        assert_eq!(RetryPolicy::never().delay(1), None);
    }

    #[test]
    fn exponential_grows_within_its_bounds() {
        let p = RetryPolicy::exponential(Duration::from_millis(10), 40, Duration::from_secs(1));
        for failed in 1..=40 {
            let d = p.delay(failed).unwrap();
            assert!(d >= Duration::from_millis(10) && d <= Duration::from_secs(1));
        }
        assert_eq!(p.delay(41), None);
    }
}
