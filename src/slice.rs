// SPDX-License-Identifier: GPL-2.0-only
//! The slice policy: how long a normal task may run before the per-CPU
//! hrtimer preempts it, per CPU, as the load on that CPU changes.
//!
//! Two modes:
//! - fixed (`--slice-us S`): every run gets S.
//! - latency target (`--latency-us L --min-slice-us M`): every runnable
//!   normal task on a CPU should run once within L, so the slice is
//!   `max(M, L / n)` for `n` runnable normal tasks on that CPU, the rule of
//!   the classic CFS tunables sched_latency_ns and sched_min_granularity_ns
//!   (`__sched_period()`/`sched_slice()` in kernel/sched/fair.c before EEVDF
//!   replaced them in 6.6: the period stretches to `n * M` once `L / n < M`,
//!   which for equal weights is the same slice).
//!
//! In latency-target mode the BPF side samples `n` at every run start (`nr_runnable` in
//! bpf/intf.h); the policy loop polls it from the mmapped .bss and writes the
//! slice back (`cpu_slice_ns`), no system call either way. A new `n` is
//! taken only once two polls in a row agree, so the policy thread's own
//! brief presence in a queue does not flap the slice.

/// How slices are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceMode {
    /// one slice for every run, ns
    Fixed(u64),
    /// `max(min_ns, latency_ns / n)` for `n` runnable tasks on the CPU
    Latency {
        /// target latency: each runnable task runs once within it, ns
        latency_ns: u64,
        /// lower bound of the slice, ns
        min_ns: u64,
    },
}

impl SliceMode {
    /// The slice (ns) for a CPU with `nr_runnable` runnable normal tasks
    /// (0 is taken as 1: a CPU about to run its first task).
    pub fn slice_for(&self, nr_runnable: u64) -> u64 {
        match *self {
            SliceMode::Fixed(s) => s,
            SliceMode::Latency { latency_ns, min_ns } => {
                (latency_ns / nr_runnable.max(1)).max(min_ns)
            }
        }
    }

    /// Whether the slice depends on the load (the policy loop must poll).
    pub fn is_dynamic(&self) -> bool {
        matches!(self, SliceMode::Latency { .. })
    }
}

/// One CPU's slice state in the policy loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSlice {
    /// the load figure in force (0: none yet)
    pub nr: u64,
    /// the last figure seen, waiting for a second poll to agree
    pending: u64,
}

impl CpuSlice {
    /// Takes one poll of the CPU's `nr_runnable`; returns the new slice (ns)
    /// when it changed, None otherwise.
    pub fn poll(&mut self, mode: &SliceMode, nr_runnable: u64) -> Option<u64> {
        let nr = nr_runnable.max(1);
        if nr == self.nr {
            self.pending = 0;
            return None;
        }
        if self.nr != 0 && self.pending != nr {
            self.pending = nr;
            return None;
        }
        let changed = self.nr == 0 || mode.slice_for(nr) != mode.slice_for(self.nr);
        self.nr = nr;
        self.pending = 0;
        changed.then(|| mode.slice_for(nr))
    }
}

/// How slices end (`--slice-end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SliceEnd {
    /// a per-CPU bpf_timer; a per-CPU thread where the kernel refuses
    /// bpf_timer (PREEMPT_RT)
    Auto,
    /// a per-CPU bpf_timer (an hrtimer pinned to the CPU)
    BpfTimer,
    /// a per-CPU SCHED_FIFO 99 thread that sleeps until the slice is due
    Thread,
    /// the scheduler tick alone (for A/B comparison)
    Tick,
}

impl SliceEnd {
    /// The BPF program's `slice_end` setting; `Auto` loads as `BpfTimer`
    /// first (the loader falls back to `Thread`).
    pub fn bpf_value(self) -> u32 {
        use crate::bpf_intf::*;
        match self {
            SliceEnd::Auto | SliceEnd::BpfTimer => floor_slice_end_FLOOR_SLICE_END_BPF_TIMER,
            SliceEnd::Thread => floor_slice_end_FLOOR_SLICE_END_THREAD,
            SliceEnd::Tick => floor_slice_end_FLOOR_SLICE_END_TICK,
        }
    }

    /// What ends slices, for the log.
    pub fn describe(self) -> &'static str {
        match self {
            SliceEnd::Auto | SliceEnd::BpfTimer => "ended by a per-CPU bpf_timer (hrtimer)",
            SliceEnd::Thread => "ended by a per-CPU SCHED_FIFO 99 thread's hrtimer wake-up",
            SliceEnd::Tick => "ended at the scheduler tick",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAT: SliceMode = SliceMode::Latency {
        latency_ns: 1_000_000,
        min_ns: 400_000,
    };

    #[test]
    fn latency_rule() {
        // --latency-us 1000 --min-slice-us 400 (the example)
        assert_eq!(LAT.slice_for(1), 1_000_000);
        assert_eq!(LAT.slice_for(2), 500_000);
        assert_eq!(LAT.slice_for(3), 400_000); // 333 us is below the minimum
        assert_eq!(LAT.slice_for(4), 400_000);
        assert_eq!(LAT.slice_for(0), 1_000_000);
        assert_eq!(SliceMode::Fixed(250_000).slice_for(7), 250_000);
        assert!(LAT.is_dynamic() && !SliceMode::Fixed(1).is_dynamic());
    }

    #[test]
    fn first_poll_sets_then_two_agreeing_polls_change() {
        let mut c = CpuSlice::default();
        assert_eq!(c.poll(&LAT, 2), Some(500_000));
        assert_eq!(c.poll(&LAT, 2), None);
        // one odd sample (the policy thread queued for a moment) is ignored
        assert_eq!(c.poll(&LAT, 3), None);
        assert_eq!(c.poll(&LAT, 2), None);
        assert_eq!(c.nr, 2);
        // a real change: seen twice
        assert_eq!(c.poll(&LAT, 4), None);
        assert_eq!(c.poll(&LAT, 4), Some(400_000));
        // 4 -> 5 keeps the same slice (both at the minimum): nothing to write
        assert_eq!(c.poll(&LAT, 5), None);
        assert_eq!(c.poll(&LAT, 5), None);
        assert_eq!(c.nr, 5);
        // two different new figures in a row: the second must repeat
        assert_eq!(c.poll(&LAT, 1), None);
        assert_eq!(c.poll(&LAT, 2), None);
        assert_eq!(c.poll(&LAT, 2), Some(500_000));
    }

    #[test]
    fn slice_end_values_match_the_bpf_side() {
        use crate::bpf_intf::*;
        assert_eq!(
            SliceEnd::Auto.bpf_value(),
            floor_slice_end_FLOOR_SLICE_END_BPF_TIMER
        );
        assert_eq!(
            SliceEnd::Thread.bpf_value(),
            floor_slice_end_FLOOR_SLICE_END_THREAD
        );
        assert_eq!(
            SliceEnd::Tick.bpf_value(),
            floor_slice_end_FLOOR_SLICE_END_TICK
        );
    }
}
