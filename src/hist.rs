// SPDX-License-Identifier: GPL-2.0-only
//! Log2 histograms of durations, as the BPF side fills them.
//!
//! A value `v` (ns) falls in bucket `4 * floor(log2 v) + s`, where `s` is the
//! two bits of `v` just below its top bit: every power of two is split into 4
//! sub-buckets, each at most 25% wide. Bucket 0 holds `v < 4`; the last bucket
//! (`FLOOR_HIST_BUCKETS - 1`, from 7 * 2^29 ns = 3.76 s) is open-ended. This mirrors
//! `hist_bucket()` in bpf/main.bpf.c; the tests pin both to the same rule.

/// Number of buckets (`FLOOR_HIST_BUCKETS` in bpf/intf.h).
pub const BUCKETS: usize = crate::bpf_intf::floor_consts_FLOOR_HIST_BUCKETS as usize;
const SUB_BITS: u32 = crate::bpf_intf::floor_consts_FLOOR_HIST_SUB_BITS;

/// The bucket index of `v` ns; the same rule as the BPF side.
pub fn bucket_of(v: u64) -> usize {
    if v < (1 << SUB_BITS) {
        return 0;
    }
    let e = 63 - v.leading_zeros();
    let sub = (v >> (e - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (((e << SUB_BITS) as u64 | sub) as usize).min(BUCKETS - 1)
}

/// Bounds `[lo, hi)` in ns of the values bucket `b` holds. The last bucket is
/// open-ended: its `hi` is `u64::MAX`.
pub fn bucket_bounds(b: usize) -> (u64, u64) {
    if b < (1 << SUB_BITS) {
        return if b == 0 { (0, 1 << SUB_BITS) } else { (0, 0) };
    }
    let e = (b >> SUB_BITS) as u32;
    let sub = (b & ((1 << SUB_BITS) - 1)) as u64;
    let unit = 1u64 << (e - SUB_BITS);
    let lo = ((1 << SUB_BITS) + sub) * unit;
    let hi = if b == BUCKETS - 1 {
        u64::MAX
    } else {
        lo + unit
    };
    (lo, hi)
}

/// A histogram snapshot: counts per bucket.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hist {
    /// counts, `BUCKETS` long
    pub counts: Vec<u64>,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            counts: vec![0; BUCKETS],
        }
    }
}

impl Hist {
    /// From raw counts as read from BPF (must be `BUCKETS` long).
    pub fn from_counts(c: &[u64]) -> Self {
        assert_eq!(c.len(), BUCKETS, "histogram of the wrong size");
        Hist { counts: c.to_vec() }
    }

    /// Adds one value, ns.
    pub fn record(&mut self, v: u64) {
        self.counts[bucket_of(v)] += 1;
    }

    /// Replaces one recorded value `old` (ns) by `new`: `new` is recorded,
    /// and `old` taken out if its bucket holds a count.
    pub fn replace(&mut self, old: u64, new: u64) {
        let b = bucket_of(old);
        self.counts[b] = self.counts[b].saturating_sub(1);
        self.record(new);
    }

    /// Counts gained since `earlier` (saturating: a counter never goes back).
    pub fn delta(&self, earlier: &Hist) -> Hist {
        Hist {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }

    /// Number of values recorded.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The `q`-quantile (0 < q <= 1) as the upper bound (ns) of the bucket
    /// that holds it: a value at most 25% above the true quantile. For the
    /// open last bucket its lower bound is returned. `None` when empty.
    pub fn quantile_upper_ns(&self, q: f64) -> Option<u64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = bucket_bounds(b);
                return Some(if hi == u64::MAX { lo } else { hi });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_moves_one_count() {
        let mut h = Hist::default();
        h.record(1000);
        h.record(1000);
        h.replace(1000, 5_000_000);
        assert_eq!(h.counts[bucket_of(1000)], 1);
        assert_eq!(h.counts[bucket_of(5_000_000)], 1);
        assert_eq!(h.total(), 2);
        // a value never recorded: only the new one is added
        h.replace(7_000_000_000, 8);
        assert_eq!(h.total(), 3);
    }

    #[test]
    fn buckets_contain_their_values() {
        for v in [
            4u64,
            5,
            7,
            8,
            9,
            1000,
            1023,
            1024,
            500_000,
            4_000_000,
            (1 << 31) - 1,
        ] {
            let b = bucket_of(v);
            let (lo, hi) = bucket_bounds(b);
            assert!(lo <= v && v < hi, "{v} not in bucket {b} [{lo},{hi})");
        }
    }

    #[test]
    fn buckets_are_contiguous_and_at_most_25_percent_wide() {
        let mut prev_hi = 4;
        for b in 8..BUCKETS - 1 {
            let (lo, hi) = bucket_bounds(b);
            assert_eq!(lo, prev_hi, "gap before bucket {b}");
            assert!((hi - lo) * 4 <= lo, "bucket {b} wider than 25%");
            prev_hi = hi;
        }
    }

    #[test]
    fn small_and_huge_values() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(3), 0);
        assert_eq!(bucket_of(4), 8);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(1 << 31), 124);
        assert_eq!(bucket_of(1 << 40), BUCKETS - 1);
        assert_eq!(bucket_bounds(BUCKETS - 1).0, 7 << 29);
    }

    #[test]
    fn quantiles() {
        let mut h = Hist::default();
        assert_eq!(h.quantile_upper_ns(0.99), None);
        for _ in 0..99 {
            h.record(500_000);
        }
        h.record(4_000_000);
        let p50 = h.quantile_upper_ns(0.5).unwrap();
        assert!((500_000..=625_000).contains(&p50), "p50 {p50}");
        let p99 = h.quantile_upper_ns(0.99).unwrap();
        assert!(p99 <= 625_000, "p99 {p99}");
        let max = h.quantile_upper_ns(1.0).unwrap();
        assert!((4_000_000..=5_000_000).contains(&max), "max {max}");
    }

    #[test]
    fn delta() {
        let mut a = Hist::default();
        a.record(1000);
        let mut b = a.clone();
        b.record(1000);
        b.record(2000);
        let d = b.delta(&a);
        assert_eq!(d.total(), 2);
        assert_eq!(d.counts[bucket_of(2000)], 1);
        assert_eq!(a.delta(&b).total(), 0, "a delta never goes negative");
    }
}
