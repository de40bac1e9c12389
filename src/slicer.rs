// SPDX-License-Identifier: GPL-2.0-only
//! How slices end, and the slice-end threads for kernels without bpf_timer.
//!
//! A slice must end on time, not at the next scheduler tick (4 ms at
//! HZ=250). Where the kernel allows it, the BPF side arms a per-CPU
//! `bpf_timer` at each run start and its callback kicks the task
//! (`FLOOR_SLICE_END_BPF_TIMER`). PREEMPT_RT kernels refuse every bpf_timer
//! call at load ("bpf_timer cannot be used for PREEMPT_RT",
//! `process_timer_func()` in kernel/bpf/verifier.c, since 6.18 and in the
//! stable kernels). There a thread per CPU does it instead
//! (`FLOOR_SLICE_END_THREAD`, [`run`]):
//!
//! - It is SCHED_FIFO 99 and pinned to its CPU, so its wake-up preempts the
//!   normal task running there at once; on PREEMPT_RT the hrtimer of an RT
//!   task's sleep expires in hard interrupt context, so the wake-up is as
//!   precise as the BPF timer's.
//! - ops.stopping() sees the task being put with its slice due (or due
//!   within a small slack) and takes the rest of its slice away, so the
//!   kernel hands it to ops.enqueue() and the CPU dispatches by vtime once
//!   the thread sleeps again. A task put before its slice is due keeps it
//!   and resumes at the head of the local DSQ.
//! - The BPF side writes each run's due time into the CPU's
//!   `struct floor_slicer` (mmapped .bss); the thread sleeps until it.
//!   After it ended a run, the next run starts as soon as it sleeps, so it
//!   sleeps for one more slice (a prediction, no system call); a run that
//!   would end before that, or one that starts while the thread is parked,
//!   wakes it through a ring buffer record. When no run started since its
//!   last wake-up (the CPU went idle, or to a higher class) it parks: an
//!   idle CPU sees at most one wake-up of it.
//!
//! Cost per slice: one hrtimer interrupt and two context switches on the
//! CPU (to the thread and back), as a wake-up of any RT task costs; the
//! BPF timer costs the interrupt, an irq_work and one reschedule.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, Result};

use crate::sched::{BpfView, SlicerState};
use crate::sys::monotonic_ns;

/// Whether `e` is the verifier refusing the program with EOPNOTSUPP, as
/// PREEMPT_RT kernels refuse bpf_timer.
pub fn is_unsupported(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<libbpf_rs::Error>()
            .is_some_and(|l| l.kind() == libbpf_rs::ErrorKind::Unsupported)
            || c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.raw_os_error() == Some(libc::EOPNOTSUPP))
    })
}

/// What one CPU's slice-end thread did, since load.
#[derive(Debug, Default)]
pub struct SlicerCounts {
    /// timed wake-ups (each preempts whatever normal task runs there)
    pub wakes: AtomicU64,
    /// timed wake-ups that found the run's slice not yet due: a run that
    /// began later than predicted (the thread sleeps on until it is due)
    pub early: AtomicU64,
    /// times it parked (no run to end) until a ring buffer record
    pub parks: AtomicU64,
}

/// When the thread should wake next, from `now_ns` and its CPU's state
/// `s`: the due time of a run not over yet; when runs went on since its
/// last wake-up (`s.nr_starts` differs from `seen`), the due time of the run
/// that starts once it sleeps (the usual gap, then one slice); or None
/// (park) when none did.
pub fn next_wake(now_ns: u64, s: &SlicerState, seen: u64) -> Option<u64> {
    if s.due_ns > now_ns {
        Some(s.due_ns)
    } else if s.nr_starts != seen && s.len_ns > 0 {
        Some(now_ns + s.gap_ns + s.len_ns)
    } else {
        None
    }
}

/// The slice-end thread of `cpu` (FLOOR_SLICE_END_THREAD): runs until
/// `stop` is set (and `stop_fd` is written) or the scheduler is ejected.
///
/// Errors: it could not become SCHED_FIFO 99 on `cpu`, or create its ring
/// buffer.
pub fn run(
    cpu: usize,
    view: &BpfView,
    stop: &AtomicBool,
    stop_fd: i32,
    counts: &SlicerCounts,
) -> Result<()> {
    crate::sched::agent_setup(view, &[cpu])
        .with_context(|| format!("the slice-end thread of CPU {cpu}"))?;
    let wake = view.slicer_ringbuf(cpu)?;
    let mut rb = libbpf_rs::RingBufferBuilder::new();
    rb.add(&wake, |_| 0)?;
    let rb = rb.build()?;
    let fds = [rb.epoll_fd(), stop_fd];
    let mut seen = view.slicer(cpu).nr_starts;
    let mut hotplug_seen = view.cpu_hotplug_events();
    // re-read in place after a hotplug event: nothing allocated serving
    let mut online = Vec::with_capacity(*scx_utils::NR_CPU_IDS);
    crate::rtalloc::serving(true);
    while !stop.load(Ordering::Relaxed) && !view.exited() {
        let hp = view.cpu_hotplug_events();
        if hp != hotplug_seen {
            hotplug_seen = hp;
            // Displaced while the CPU was offline, it must hold it again
            // (the invariant below); until then it only wakes for nothing.
            if view.online_cpus_into(&mut online).is_ok() {
                crate::sys::repin_after_hotplug(0, cpu, &online);
            }
        }
        let now = monotonic_ns();
        let s = view.slicer(cpu);
        let at = next_wake(now, &s, seen);
        seen = s.nr_starts;
        // No run can start on this CPU between the read above and this
        // write: this thread holds the CPU (see struct floor_slicer).
        view.set_slicer_wake(cpu, monotonic_ns(), at.unwrap_or(0));
        if at.is_none() {
            counts.parks.fetch_add(1, Ordering::Relaxed);
        }
        let kicked = crate::sys::sleep_until(at.unwrap_or(u64::MAX), &fds);
        if kicked {
            let _ = rb.consume();
        } else if at.is_some() {
            counts.wakes.fetch_add(1, Ordering::Relaxed);
            let s = view.slicer(cpu);
            if s.due_ns > monotonic_ns() {
                counts.early.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    crate::rtalloc::serving(false);
    view.set_slicer_wake(cpu, 0, 0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(due_ns: u64, len_ns: u64, nr_starts: u64, gap_ns: u64) -> SlicerState {
        SlicerState {
            due_ns,
            len_ns,
            nr_starts,
            gap_ns,
        }
    }

    #[test]
    fn wakes_for_a_run_not_over_yet() {
        // a run due in 400 us, whatever the counters say
        assert_eq!(
            next_wake(1_000, &st(401_000, 500_000, 5, 30), 5),
            Some(401_000)
        );
        assert_eq!(
            next_wake(1_000, &st(401_000, 500_000, 6, 30), 5),
            Some(401_000)
        );
    }

    #[test]
    fn predicts_one_slice_after_ending_a_run() {
        // the run it ended is over (due 0) and runs went on since its last
        // wake-up: the next one starts after the usual gap
        assert_eq!(
            next_wake(1_000, &st(0, 450_000, 6, 20_000), 5),
            Some(471_000)
        );
        // a due time already past counts as over
        assert_eq!(next_wake(1_000, &st(900, 450_000, 6, 0), 5), Some(451_000));
    }

    #[test]
    fn parks_when_no_run_started_since() {
        assert_eq!(next_wake(1_000, &st(0, 450_000, 5, 20_000), 5), None);
        // no slice length known yet (no run ever started)
        assert_eq!(next_wake(1_000, &st(0, 0, 1, 0), 0), None);
    }

    #[test]
    fn eopnotsupp_is_recognised_through_context() {
        let e = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
            .context("Failed to load BPF program");
        assert!(is_unsupported(&e));
        let e = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EINVAL))
            .context("Failed to load BPF program");
        assert!(!is_unsupported(&e));
    }
}
