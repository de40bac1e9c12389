// SPDX-License-Identifier: GPL-2.0-only
//! The harness's own workloads and their arithmetic.
//!
//! - A *hog*: a CPU-bound loop that exits by itself after a deadline.
//! - A *clock probe*: a CPU-bound loop that reads CLOCK_MONOTONIC as fast as it
//!   can and records every gap between two reads longer than a threshold (in the
//!   manner of osnoise). Run at SCHED_FIFO 1 it measures the noise an RT task
//!   suffers (S0); run as two SCHED_OTHER probes sharing a CPU it measures the
//!   length of every run between two switches (S2).
//!
//! The analysis (noise figures, which gaps are switches, run lengths) is pure
//! and unit-tested on synthetic timestamps.

use serde::{Deserialize, Serialize};

/// CLOCK_MONOTONIC, ns.
pub use scx_floor::sys::monotonic_ns as now_ns;

/// Spin until `secs` have passed (a hog that cannot outlive its deadline).
pub fn hog(secs: f64) {
    let end = now_ns() + (secs * 1e9) as u64;
    let mut x: u64 = 0;
    loop {
        for i in 0..200_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        if now_ns() >= end {
            break;
        }
    }
}

/// One gap between two clock reads of a probe: the probe did not run (or ran
/// something else) from `start_ns` for `len_ns` (CLOCK_MONOTONIC, ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gap {
    /// time of the last read before the gap, ns
    pub start_ns: u64,
    /// length of the gap, ns
    pub len_ns: u64,
}

impl Gap {
    /// time of the first read after the gap, ns
    pub fn end_ns(&self) -> u64 {
        self.start_ns + self.len_ns
    }
}

/// What one probe saw: its life and every gap above its threshold.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Trace {
    /// first read, CLOCK_MONOTONIC ns
    pub t0_ns: u64,
    /// last read, CLOCK_MONOTONIC ns
    pub t1_ns: u64,
    /// gaps longer than this were recorded, ns
    pub threshold_ns: u64,
    /// clock reads done
    pub reads: u64,
    /// gaps not recorded because the buffer was full
    pub dropped: u64,
    /// the gaps, in time order
    pub gaps: Vec<Gap>,
}

/// Run the clock probe for `secs` s, recording gaps longer than `threshold_ns`
/// (at most `cap` of them; the buffer is touched before the loop starts so
/// that no page fault lands inside it).
pub fn probe(secs: f64, threshold_ns: u64, cap: usize) -> Trace {
    let mut gaps = vec![
        Gap {
            start_ns: 0,
            len_ns: 0
        };
        cap
    ];
    for g in gaps.iter_mut() {
        g.len_ns = 1;
    }
    let mut n = 0usize;
    let mut dropped = 0u64;
    let mut reads = 0u64;
    let t0 = now_ns();
    let end = t0 + (secs * 1e9) as u64;
    let mut prev = t0;
    loop {
        let t = now_ns();
        reads += 1;
        let d = t.wrapping_sub(prev);
        if d > threshold_ns {
            if n < cap {
                gaps[n] = Gap {
                    start_ns: prev,
                    len_ns: d,
                };
                n += 1;
            } else {
                dropped += 1;
            }
        }
        prev = t;
        if t >= end {
            break;
        }
    }
    gaps.truncate(n);
    Trace {
        t0_ns: t0,
        t1_ns: prev,
        threshold_ns,
        reads,
        dropped,
        gaps,
    }
}

/// Noise an RT probe suffered (S0): the osnoise-like figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// length of the probe's life, ns
    pub window_ns: u64,
    /// longest single gap, ns
    pub max_ns: u64,
    /// sum of all gaps above the threshold, ns
    pub sum_ns: u64,
    /// gaps above the threshold
    pub count: u64,
    /// gaps longer than 1 ms
    pub over_1ms: u64,
    /// log2 histogram: bucket i counts gaps of [2^i, 2^(i+1)) us (bucket 0: < 2 us)
    pub hist_log2_us: Vec<u64>,
}

impl Noise {
    /// The share of the window the probe had, percent: 100 × (window −
    /// gaps) / window, as rtla osnoise's "% CPU Aval" (runtime − noise over
    /// runtime). None for an empty window.
    pub fn cpu_available_pct(&self) -> Option<f64> {
        (self.window_ns > 0).then(|| {
            100.0 * self.window_ns.saturating_sub(self.sum_ns) as f64 / self.window_ns as f64
        })
    }
}

/// The noise figures of a trace.
pub fn noise(t: &Trace) -> Noise {
    let mut n = Noise {
        window_ns: t.t1_ns.saturating_sub(t.t0_ns),
        ..Default::default()
    };
    for g in &t.gaps {
        n.max_ns = n.max_ns.max(g.len_ns);
        n.sum_ns += g.len_ns;
        n.count += 1;
        if g.len_ns > 1_000_000 {
            n.over_1ms += 1;
        }
        let us = g.len_ns / 1000;
        let b = if us < 2 {
            0
        } else {
            63 - us.leading_zeros() as usize
        };
        if n.hist_log2_us.len() <= b {
            n.hist_log2_us.resize(b + 1, 0);
        }
        n.hist_log2_us[b] += 1;
    }
    n
}

/// Did `other` not run at all from `s` to `e` (ns)? True when `other` was not
/// alive then, or one of its gaps covers the part of [s, e] it was alive in.
fn idle_during(other: &Trace, s: u64, e: u64) -> bool {
    let (lo, hi) = (s.max(other.t0_ns), e.min(other.t1_ns));
    if lo > hi {
        return true;
    }
    // the last gap of `other` that starts at or before lo
    let i = other.gaps.partition_point(|g| g.start_ns <= lo);
    i > 0 && other.gaps[i - 1].end_ns() >= hi
}

/// The gaps of `me` during which one of `others` ran: `me` was switched out for
/// another probe. Gaps during which no other probe ran (an interrupt, a kernel
/// thread, the emulator) are not switches.
pub fn switches(me: &Trace, others: &[&Trace]) -> Vec<Gap> {
    me.gaps
        .iter()
        .filter(|g| {
            others
                .iter()
                .any(|o| !idle_during(o, g.start_ns, g.end_ns()))
        })
        .copied()
        .collect()
}

/// Lengths (ns) of the runs of `me` between two switches, counting only runs
/// that lie entirely in [from_ns, to_ns]. A run is the time from the end of one
/// switch gap to the start of the next (interrupts inside it included, as the
/// kernel's own run-time accounting includes them).
pub fn run_lengths(me: &Trace, others: &[&Trace], from_ns: u64, to_ns: u64) -> Vec<u64> {
    let sw = switches(me, others);
    sw.windows(2)
        .filter(|w| w[0].end_ns() >= from_ns && w[1].start_ns <= to_ns)
        .map(|w| w[1].start_ns.saturating_sub(w[0].end_ns()))
        .collect()
}

/// The p-th percentile (0..=100) of sorted values, nearest rank; None if empty.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Run lengths in fixed bins for the plot and the JSON: `counts[i]` runs of
/// [i*bin_ns, (i+1)*bin_ns), the last bin holding everything longer.
pub fn bin(values: &[u64], bin_ns: u64, bins: usize) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for &v in values {
        let i = ((v / bin_ns) as usize).min(bins - 1);
        counts[i] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gap(s: u64, l: u64) -> Gap {
        Gap {
            start_ns: s,
            len_ns: l,
        }
    }

    fn trace(t0: u64, t1: u64, gaps: &[(u64, u64)]) -> Trace {
        Trace {
            t0_ns: t0,
            t1_ns: t1,
            threshold_ns: 10_000,
            gaps: gaps.iter().map(|&(s, l)| gap(s, l)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn noise_figures() {
        // gaps of 15 us, 1.5 ms and 300 us
        let t = trace(
            0,
            10_000_000,
            &[(100, 15_000), (1_000_000, 1_500_000), (5_000_000, 300_000)],
        );
        let n = noise(&t);
        assert_eq!(n.window_ns, 10_000_000);
        assert_eq!(n.max_ns, 1_500_000);
        assert_eq!(n.sum_ns, 1_815_000);
        assert_eq!(n.count, 3);
        assert_eq!(n.over_1ms, 1);
        // 15 us -> bucket 3 ([8,16)), 300 us -> 8 ([256,512)), 1500 us -> 10 ([1024,2048))
        assert_eq!(n.hist_log2_us[3], 1);
        assert_eq!(n.hist_log2_us[8], 1);
        assert_eq!(n.hist_log2_us[10], 1);
        assert_eq!(n.hist_log2_us.iter().sum::<u64>(), 3);
        // 1.815 ms of gaps in 10 ms: 81.85% available
        assert!((n.cpu_available_pct().unwrap() - 81.85).abs() < 1e-9);
        assert_eq!(Noise::default().cpu_available_pct(), None);
    }

    /// Two probes alternating every 500 us, with an interrupt of 30 us in the
    /// middle of one of A's runs (B was out then too: not a switch).
    #[test]
    fn switches_and_runs_from_alternation() {
        let us = 1000u64;
        // A runs [0,500) [1000,1500) [2000,2500) [3000,3500); B runs in between.
        // A's gaps: the last read before B takes over is at 499 us etc.
        let a = trace(
            0,
            3500 * us,
            &[
                (499 * us, 501 * us),
                (1200 * us, 30 * us),
                (1499 * us, 501 * us),
                (2499 * us, 501 * us),
            ],
        );
        let b = trace(
            500 * us,
            4000 * us,
            &[
                (999 * us, 501 * us),
                (1999 * us, 501 * us),
                (2999 * us, 501 * us),
            ],
        );
        let sw = switches(&a, &[&b]);
        assert_eq!(
            sw.len(),
            3,
            "the 30 us interrupt gap is not a switch: {sw:?}"
        );
        let runs = run_lengths(&a, &[&b], 0, u64::MAX);
        assert_eq!(runs, vec![499 * us, 499 * us]);
        // a window that cuts the second run off
        assert_eq!(run_lengths(&a, &[&b], 0, 1600 * us), vec![499 * us]);
        let runs_b = run_lengths(&b, &[&a], 0, u64::MAX);
        assert_eq!(runs_b, vec![499 * us, 499 * us]);
    }

    #[test]
    fn gap_before_other_started_is_not_a_switch() {
        let a = trace(0, 2_000_000, &[(100_000, 200_000)]);
        let b = trace(500_000, 2_000_000, &[]);
        assert!(switches(&a, &[&b]).is_empty());
    }

    #[test]
    fn percentiles_and_bins() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7], 0.0), Some(7));
        let b = bin(&[0, 99, 100, 250, 10_000], 100, 4);
        assert_eq!(b, vec![2, 1, 1, 1]);
    }

    #[test]
    fn probe_records_a_sleep_as_a_gap() {
        // a real probe on this machine: a 30 ms sleep would be a gap, but the
        // probe only spins; run it briefly and check its bookkeeping instead.
        let t = probe(0.02, 5_000_000, 16);
        assert!(t.t1_ns >= t.t0_ns + 20_000_000);
        assert!(t.reads > 0);
        assert!(t.gaps.iter().all(|g| g.len_ns > 5_000_000));
        assert!(t.gaps.windows(2).all(|w| w[0].start_ns < w[1].start_ns));
    }
}
