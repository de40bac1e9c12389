// SPDX-License-Identifier: GPL-2.0-only
//! The policy loop's settings, as `main.rs` builds them from the options:
//! read by the loop (`policy.rs`) and by each planner (`planner.rs`).

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::server::ServerConfig;
use crate::slice::SliceMode;

/// Which policy a boost uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoostMode {
    /// SCHED_FIFO one above the CPU's RT hog; a CPU held above every
    /// SCHED_FIFO boost is handed to SCHED_DEADLINE boosts or to the
    /// kernel's ext_server (`planner::Planner::hand_off`)
    Auto,
    /// SCHED_FIFO only (no hand-off to SCHED_DEADLINE boosts)
    Fifo,
    /// SCHED_DEADLINE only (a refused boost is counted and skipped)
    Deadline,
}

/// The policy loop's settings.
#[derive(Clone, Debug)]
pub struct PolicyConfig {
    /// the server, or None for no server of our own
    pub server: Option<ServerConfig>,
    /// CPUs served
    pub cpus: Vec<usize>,
    /// set the kernel's ext_server runtime to 0 on the served CPUs while we run
    pub kernel_server_off: bool,
    /// set kernel.sched_rt_runtime_us to -1 while we run (journaled)
    pub rt_runtime_unlimited: bool,
    /// boost policy
    pub boost_mode: BoostMode,
    /// executor threads of the SCHED_FIFO boosts (`--executors`): at most
    /// one per served CPU is started, each leased to one CPU at a time
    /// (`executor::Pool`)
    pub executors: usize,
    /// print stats this often
    pub stats_every: Option<Duration>,
    /// write the stats as JSON to this file (at every stats interval, and
    /// at exit)
    pub stats_json: Option<PathBuf>,
    /// how slices are chosen
    pub slice: SliceMode,
    /// journals
    pub state_dir: PathBuf,
    /// scx_floor's own RT processes besides the server threads (the
    /// guardian, FIFO 99, polling every 50 or 500 ms): their runs are not a higher
    /// class taking the CPU. Counted as one, each of the guardian's polls
    /// would move the task it preempted off its CPU, a run the starvation
    /// guard had just granted among them (docs/design.md, Decisions:
    /// "scx_floor's own threads are not a higher class").
    pub agent_pids: Vec<u32>,
    /// slices end by a thread per online CPU (`slicer.rs`), not bpf_timer
    pub slice_threads: bool,
    /// kernel threads raised while scx_floor runs ([`crate::boost::KthreadRaise`]):
    /// their runs are not a higher class taking the CPU
    pub raised_tids: Vec<u32>,
    /// the lowest RT priority of the kernel's `irq_work/N` threads, which
    /// run the BPF side's ring-buffer wake-ups (PREEMPT_RT;
    /// [`crate::boost::irq_work_prio`]); None: irq_work runs in hard IRQ
    /// context and no task holds those wake-ups back
    pub irq_work_prio: Option<u32>,
    /// the guardian's count of its restores while scx_floor lives
    /// ([`crate::guard::Guardian::restores`]): when it moves, the knobs are
    /// set again
    pub guardian_restores: Option<&'static AtomicU64>,
}
