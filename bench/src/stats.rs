//! Order statistics over the rounds and samples the workloads collect.

/// Median of the values (mean of the two middle ones for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The `q`-quantile (0.0..=1.0) of already sorted samples, nearest-rank.
pub fn quantile_sorted(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// p50 and p99 of latency samples in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Percentiles {
    pub p50_ns: u64,
    pub p99_ns: u64,
}

impl Percentiles {
    pub fn of(samples: &mut [u64]) -> Self {
        samples.sort_unstable();
        Percentiles {
            p50_ns: quantile_sorted(samples, 0.50),
            p99_ns: quantile_sorted(samples, 0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn nearest_rank_quantiles() {
        let mut samples: Vec<u64> = (1..=100).rev().collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!(p.p50_ns, 50);
        assert_eq!(p.p99_ns, 99);
    }
}
