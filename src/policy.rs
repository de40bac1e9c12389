// SPDX-License-Identifier: GPL-2.0-only
//! The policy loop: per served CPU a real-time planner thread that steps
//! that CPU's bandwidth server (`server.rs`) and journals its boosts
//! (`boost.rs`), and an executor thread pinned to the CPU that makes the
//! SCHED_FIFO boosts and ends them (`executor.rs`); the main thread keeps the
//! kernel's ext_server off while we serve (`knobs.rs`) and prints `--stats`
//! at its normal policy.
//!
//! Why the split: a boost or a restore done from another CPU takes effect
//! only when the target CPU reschedules after an IPI. Measured in the
//! project's VM (7.3.4, TCG, stock kernel, no sched_ext): 0.8 to 4 ms from
//! sched_setattr() on CPU 0 to the boosted task running on CPU 1, and 1.3 to
//! 2.4 ms from the restore to it stopping. Done on the CPU itself, from a
//! local hrtimer wake-up, both are a plain local reschedule, and the budget
//! is cut off with hrtimer precision, the way the kernel enforces its own
//! dl_server, per CPU. But the RT task on that CPU also sees each run of a
//! scx_floor thread there as noise, and the planner's steps are long under
//! TCG (1-6 ms): so only the executor's two system calls run there.
//!
//! The threads must never starve, or the floor they promise is gone:
//! - Each runs at SCHED_FIFO 99 (boosts go to at most 98): no RT task below
//!   99 can keep it from running. The planner runs on any online CPU, placed
//!   by the kernel away from CPUs held by RT tasks where it can be; the
//!   executor only on its CPU. Both sleep until their next event and run for
//!   microseconds on hardware. A SCHED_FIFO 99 or SCHED_DEADLINE hog on a
//!   served CPU is above the executor: the planner (placed off that CPU)
//!   hands the CPU to SCHED_DEADLINE boosts or the kernel's ext_server
//!   (`CpuAgent::hand_off`).
//! - All memory is locked (`mlockall(MCL_CURRENT | MCL_FUTURE)`): the loop is
//!   small, so locking everything is simpler and safer than a locked-memory
//!   allocator, and it also covers libbpf's and the std library's memory.
//! - They never block on I/O: reports go to the main thread through a mutex
//!   they only `try_lock`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use log::{debug, info, warn};
use scx_utils::UserExitInfo;

use crate::boost::{self, Entry, Journal, SchedAttr};
use crate::bpf_intf::floor_waiter as BpfWaiter;
use crate::executor::{End, Executor, StopOnDrop};
use crate::knobs::{self, Knobs};
use crate::reach::{reach, Reach};
use crate::sched::{
    housekeeping_of, monotonic_ns, nohz_full_cpus, online_cpus, BpfView, HiTask, Scheduler,
};
use crate::server::{Action, CpuServer, Sample, ServerConfig, TaskNow, Waiter, MAX_BOOSTED};
use crate::slice::{CpuSlice, SliceMode};
use crate::slicer::SlicerCounts;
use crate::stats::{self, CpuCounters, ServerRow};

/// Where the journals live: root-only, gone at reboot (tmpfs).
pub const STATE_DIR: &str = "/run/scx_floor";

/// The journal of boosted tasks under `state_dir`.
pub fn journal_path(state_dir: &std::path::Path) -> PathBuf {
    state_dir.join("boosted.v2.journal")
}

/// The boost journal of scx_floor versions before the boost's attributes
/// were journaled (32-byte records), replayed once at start by
/// [`boost::replay_legacy`].
pub fn legacy_journal_path(state_dir: &std::path::Path) -> PathBuf {
    state_dir.join("boosted.journal")
}

/// The journal of kernel knobs under `state_dir`.
pub fn knobs_dir(state_dir: &std::path::Path) -> PathBuf {
    state_dir.join("knobs")
}

/// Which policy a boost uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoostMode {
    /// SCHED_FIFO one above the CPU's RT hog; a CPU held above every
    /// SCHED_FIFO boost is handed to SCHED_DEADLINE boosts or to the
    /// kernel's ext_server (`CpuAgent::hand_off`)
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
    /// guardian, FIFO 99, polling every 50 ms): their runs are not a higher
    /// class taking the CPU. Measured in t_starve: counted as one, each of
    /// the guardian's polls moved the task it preempted off its CPU, a run
    /// the starvation guard had just granted among them (the task then
    /// waited another second).
    pub agent_pids: Vec<u32>,
    /// slices end by a thread per online CPU (`slicer.rs`), not bpf_timer
    pub slice_threads: bool,
    /// kernel threads raised while scx_floor runs ([`boost::KthreadRaise`]):
    /// their runs are not a higher class taking the CPU
    pub raised_tids: Vec<u32>,
    /// the guardian's count of its restores while scx_floor lives
    /// ([`crate::guard::Guardian::restores`]): when it moves, the knobs are
    /// set again
    pub guardian_restores: Option<&'static AtomicU64>,
}

#[derive(Clone, Copy, Debug, Default)]
struct BoostCounts {
    deadline: u64,
    fifo: u64,
    failed: u64,
    /// server thread steps, their total and longest duration (ns)
    steps: u64,
    step_ns: u64,
    step_max_ns: u64,
    /// runnable tasks found on the CPU that the waiters map lacked
    lost_found: u64,
}

/// How long a boost posted to the executor may wait to be taken, ns.
const EXEC_TAKE_TIMEOUT_NS: u64 = 100_000_000;

/// Longest sleep of a server thread, ns. It is woken earlier by the BPF side
/// (starvation begins, a boosted task blocks) and by the stop eventfd.
const MAX_SLEEP_NS: u64 = 1_000_000_000;

/// Whether `tid` may run only on CPUs that a higher class holds now.
fn all_allowed_hogged(tid: u32, hi: &BTreeMap<usize, bool>) -> bool {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::sched_getaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if r != 0 {
        return false;
    }
    hi.iter()
        .all(|(cpu, hogged)| *hogged || !unsafe { libc::CPU_ISSET(*cpu, &set) })
}

/// How often a planner whose CPU starves looks through /proc for runnable
/// normal tasks there that the waiters map lacks ([`runnable_on`]), ns: a
/// task lost to the map waits at most this long for its first boost.
const PROC_SCAN_EVERY_NS: u64 = 1_000_000_000;

/// The normal tasks (SCHED_OTHER, BATCH, IDLE, EXT) that /proc shows
/// runnable (state R) on `cpu` (field 39): there they wait, as the CPU is
/// held by a higher class. As waiters (tid, entry), pinned (a task the
/// dispatcher did not move away, in a migrate-disabled section or queued on
/// the CPU, can only be served there): weight from nice (field 19) by the
/// kernel's ratio of about 1.25 per nice level (the sched_prio_to_weight
/// table, kernel/sched/core.c), scaled to 100 at nice 0 as sched_ext's
/// `p->scx.weight` is; kthread from the flags (field 9); start time (field
/// 22). The map cannot be the only source: on 7.3.4-rt the kernel took
/// tasks out of scx_floor's DSQs through `ops.dequeue()` (from its
/// sched_ext_helper kthread) and left them queued on the CPU with no
/// `ops.enqueue()`; they were never boosted again, and a task in an RCU
/// read-side section among them stalled RCU until the kernel ejected the
/// scheduler 21 s later.
fn runnable_on(cpu: usize) -> Vec<(u32, BpfWaiter)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A process of one thread (most are) is read once: its /proc/PID/stat
        // is its thread's, and num_threads (field 20) says so.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if boost::stat_fields(&stat).and_then(|f| f.get(20 - 3).copied()) == Some("1") {
            if let Some(w) = parse_runnable_waiter(&stat, cpu) {
                v.push((pid, w));
            }
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")) else {
                continue;
            };
            if let Some(w) = parse_runnable_waiter(&stat, cpu) {
                v.push((tid, w));
            }
        }
    }
    v
}

/// A /proc/PID/stat line as a waiter on `cpu` (see [`runnable_on`]), or None
/// when the task is not a runnable normal task last on `cpu`.
fn parse_runnable_waiter(stat: &str, cpu: usize) -> Option<BpfWaiter> {
    let f = boost::stat_fields(stat)?;
    let field = |n: usize| f.get(n - 3).copied();
    if field(3)? != "R"
        || field(39)?.parse::<usize>().ok()? != cpu
        || !boost::is_normal_policy(field(41)?.parse().ok()?)
    {
        return None;
    }
    let nice: i32 = field(19)?.parse().ok()?;
    let flags: u64 = field(9)?.parse().ok()?;
    Some(BpfWaiter {
        since_ns: monotonic_ns(),
        cpu: cpu as u32,
        weight: (100.0 / 1.25f64.powi(nice)).round().clamp(1.0, 10000.0) as u32,
        pinned: 1,
        kthread: u32::from(flags & boost::PF_KTHREAD != 0),
        start_ticks: field(22)?.parse().ok()?,
    })
}

/// Adds to the waiters map the runnable normal tasks /proc shows on `cpu`
/// that the map lacks, at most every [`PROC_SCAN_EVERY_NS`]
/// (`last_scan_ns`) and only while a higher class holds the CPU; counts
/// them in `lost_found`. Called after a step's actions, never inside the
/// waiter look-up: a scan costs 1-2 ms under TCG, and in kernel-cut mode
/// that look-up comes at each period's zero-laxity activation.
fn scan_lost(cpu: usize, view: &BpfView, lost_found: &mut u64, last_scan_ns: &mut u64) {
    let now = monotonic_ns();
    if now.saturating_sub(*last_scan_ns) < PROC_SCAN_EVERY_NS || !view.sample(cpu).1 {
        return;
    }
    *last_scan_ns = now;
    let listed = view.waiters();
    let lost: Vec<(u32, BpfWaiter)> = runnable_on(cpu)
        .into_iter()
        .filter(|(tid, _)| !listed.iter().any(|(t, _)| t == tid))
        .collect();
    if !lost.is_empty() {
        debug!("cpu {cpu}: runnable here but not in the waiters: {lost:?}");
        *lost_found += lost.len() as u64;
        for (tid, w) in &lost {
            view.add_waiter(*tid, w);
        }
    }
}

/// The tasks starving on `cpu` (the waiters map, see [`scan_lost`]), oldest
/// first; their start times (clock ticks) go into `starts`. `online`: the
/// CPUs online. `boosting`: the server has tasks boosted on `cpu` and more
/// waiting for their turn, so the CPU counts as held by a higher class even
/// while a boosted task runs (the BPF side counts boosted runs as normal
/// runs, not as the higher class's).
fn waiters_of(
    cpu: usize,
    view: &BpfView,
    online: &[usize],
    starts: &mut HashMap<u32, u64>,
    boosting: bool,
) -> Vec<Waiter> {
    let mut hi = BTreeMap::new();
    for &c in online {
        hi.insert(c, view.sample(c).1 || (c == cpu && boosting));
    }
    if !hi.get(&cpu).copied().unwrap_or(false) {
        return Vec::new();
    }
    let listed = view.waiters();
    // Kernel threads first (a per-CPU kworker or ksoftirqd that waits
    // behind dozens of user tasks delays RCU callbacks and workqueues for
    // the whole machine; not measured to matter yet), then the longest
    // waiting.
    let mut v: Vec<((bool, u64), Waiter)> = Vec::new();
    for (tid, w) in listed {
        if w.cpu as usize != cpu {
            continue;
        }
        if w.pinned == 0 && !all_allowed_hogged(tid, &hi) {
            continue; // it can run elsewhere: the dispatcher moves it
        }
        starts.insert(tid, w.start_ticks);
        v.push((
            (w.kthread == 0, w.since_ns),
            Waiter {
                pid: tid,
                weight: w.weight,
            },
        ));
    }
    v.sort_by_key(|(since, w)| (*since, w.pid));
    v.into_iter().map(|(_, w)| w).collect()
}

/// Restores `tid` (journal entry `e`) from this thread if it still has its
/// boost's attributes (a sleeping SCHED_DEADLINE boost gives its bandwidth
/// back first, see [`boost::unboost`]). Nothing to do when it is back at its
/// own policy already (the executor's restore); [`boost::ERR_CHANGED`] when
/// it is at neither ([`boost::is_boost_of`]).
fn restore_here(tid: u32, e: &Entry) -> std::io::Result<()> {
    let now = boost::get_attr(tid)?;
    if boost::restore_due(&now, &e.boost, &e.saved)? {
        boost::unboost(tid, &e.saved, &now)
    } else {
        Ok(())
    }
}

/// The server of one CPU and what it changed; lives in that CPU's planner
/// thread.
struct CpuAgent<'v> {
    cpu: usize,
    view: &'v BpfView,
    mode: BoostMode,
    server: CpuServer,
    counts: BoostCounts,
    hi_prio: u32,
    journal: Journal,
    /// boosted tid -> (its journal entry, its BPF slot)
    boosted: HashMap<u32, (Entry, usize)>,
    free_slots: Vec<usize>,
    /// CPUs online, re-read after each CPU hotplug event
    online: Vec<usize>,
    /// the last step asked for a second look at once (see `step`)
    looked_again: bool,
    /// the last look through /proc for waiters the map lacks, ns
    last_scan_ns: u64,
    /// makes the SCHED_FIFO boosts on the served CPU itself (None: in
    /// kernel-cut and DEADLINE-only modes, where the kernel ends boosts)
    exec: Option<&'v Executor>,
    /// boosted tid -> the executor's post id, for boosts the executor made
    exec_ids: HashMap<u32, u64>,
    /// posts whose system call has not been seen yet: (tid, id, posted at ns)
    posted: Vec<(u32, u64, u64)>,
    /// posts the executor was asked to end: (tid, id, journal entry, slot)
    ending: Vec<(u32, u64, Entry, usize)>,
    /// the kernel's ext_server, handed this CPU's budget while a task no
    /// boost can preempt holds the CPU (None: not ours to change)
    ext: Option<ExtHandoff<'v>>,
    /// what serves the CPU now
    reach: Reach,
    /// the last time a task that no boost can preempt held the CPU, ns
    unbeatable_at_ns: u64,
    /// the last such task warned about (pid)
    warned_pid: u32,
    /// the slot limit and the full waiters map were logged (once each)
    warned_slots: bool,
    warned_waiters: bool,
    /// when to look again whether to hand the CPU over, ns (0: no need)
    handoff_check_ns: u64,
    /// the server's configuration for SCHED_FIFO boosts (kernel-cut mode
    /// is derived from it)
    fifo_cfg: ServerConfig,
    /// the boost policy asked for (`--boost`)
    base_mode: BoostMode,
    /// SCHED_DEADLINE boosts are admitted for pinned tasks
    /// (kernel.sched_rt_runtime_us -1, 2 CPUs online or more)
    dl_ok: bool,
    /// every boost is SCHED_DEADLINE, ended by the kernel (`--boost
    /// deadline`): no hand-off
    forced_deadline: bool,
}

/// The kernel's ext_server of one CPU, as scx_floor hands it the budget.
struct ExtHandoff<'k> {
    /// None: left as it was (`--kernel-server keep`), it serves with its
    /// own runtime and period and is not written
    knobs: Option<&'k Knobs>,
    runtime: PathBuf,
    period: PathBuf,
}

/// What the planners may do with the kernel's ext_server.
#[derive(Clone, Copy, Debug)]
enum ExtServer<'k> {
    /// scx_floor set its runtime to 0 on the served CPUs: a planner hands
    /// it the budget through these (journaled) knobs
    Ours(&'k Knobs),
    /// left as it was (`--kernel-server keep`): it serves with its own
    /// settings
    Kept,
    /// none in debugfs
    Absent,
}

/// A CPU held this long by a task no boost can preempt, while normal tasks
/// wait there, is handed to the kernel's ext_server, ns. A brief run of a
/// priority-99 kernel thread (migration/N) must not flip it.
const HANDOFF_AFTER_NS: u64 = 100_000_000;

/// When to look again whether a CPU held by a task no boost can preempt is
/// to be handed over (monotonic ns; 0: no look needed): [`HANDOFF_AFTER_NS`]
/// after the starvation began, and only while one is open (`starved_since_ns`
/// != 0). Without one there is nothing to hand over, and the time would lie
/// in the past: the planner, at SCHED_FIFO 99, then stepped back to back for
/// as long as such a task was seen on its CPU (on PREEMPT_RT, 7.3.4-rt, a
/// slice-end thread seen on CPU 0: ktimers/0 starved for 5 s, RCU stalled
/// and the VM died, CI at 914f87b).
fn handoff_check_at(starved_since_ns: u64) -> u64 {
    if starved_since_ns == 0 {
        0
    } else {
        starved_since_ns + HANDOFF_AFTER_NS
    }
}

impl<'v> CpuAgent<'v> {
    fn boost(
        &mut self,
        tid: u32,
        budget_ns: u64,
        deadline_ns: u64,
        start: Option<u64>,
    ) -> Result<()> {
        let Some(slot) = self.free_slots.pop() else {
            anyhow::bail!("no free boost slot")
        };
        // SCHED_DEADLINE only where the CPU was handed to it (or --boost
        // deadline): a SCHED_FIFO boost one above the CPU's RT hog is made
        // and ended by the executor on the CPU itself.
        let kind_dl = self.mode == BoostMode::Deadline;
        let attr = if kind_dl {
            boost::deadline_attr(budget_ns, deadline_ns)
        } else {
            boost::fifo_attr(self.hi_prio)
        };
        let entry = match boost::journal_before_boost(&self.journal, slot, tid, start, &attr) {
            Ok(e) => e,
            Err(e) => {
                self.free_slots.push(slot);
                return Err(e);
            }
        };
        if let Err(e) = self.view.boosted_add(tid, slot) {
            self.journal.forget(slot);
            self.free_slots.push(slot);
            return Err(e);
        }
        let res = if kind_dl {
            boost::set_attr(tid, &attr)
        } else {
            match self.exec {
                // Counted as made; a failure is settled at the next step.
                Some(ex) => {
                    let id = ex.post(
                        tid,
                        slot,
                        &attr,
                        &boost::restore_attr_of(&entry.saved),
                        budget_ns,
                    );
                    self.exec_ids.insert(tid, id);
                    self.posted.push((tid, id, monotonic_ns()));
                    Ok(())
                }
                None => boost::set_attr(tid, &attr),
            }
        };
        if let Err(e) = res {
            self.view.boosted_del(tid);
            self.journal.forget(slot);
            self.free_slots.push(slot);
            return Err(e).context("sched_setattr");
        }
        if kind_dl {
            self.counts.deadline += 1;
        } else {
            self.counts.fifo += 1;
        }
        self.boosted.insert(tid, (entry, slot));
        Ok(())
    }

    fn restore(&mut self, tid: u32) {
        if let Some((e, slot)) = self.boosted.remove(&tid) {
            // A boost of the executor is ended there (at once if it is not
            // over yet); the rest is done when its result is in.
            let post = self.exec.zip(self.exec_ids.remove(&tid));
            let res = match post.map_or(End::Unknown, |(ex, id)| ex.end(id)) {
                End::Done(r) => r,
                End::Pending => {
                    let id = post.map_or(0, |(_, id)| id);
                    self.posted.retain(|p| p.1 != id);
                    self.ending.push((tid, id, e, slot));
                    return;
                }
                End::Unknown => restore_here(tid, &e),
            };
            if let Some((ex, id)) = post {
                self.posted.retain(|p| p.1 != id);
                let _ = ex.take_started(id);
            }
            self.restored(tid, slot, &e.boost, res);
        }
    }

    /// The bookkeeping after the restore of `tid` (boost slot `slot`, boosted
    /// with `boost`).
    fn restored(&mut self, tid: u32, slot: usize, boost: &SchedAttr, res: std::io::Result<()>) {
        let res_kept = match res {
            Ok(()) => false,
            Err(err) if err.raw_os_error() == Some(libc::ESRCH) => false,
            Err(err) if err.raw_os_error() == Some(boost::ERR_CHANGED) => {
                let now = boost::get_attr(tid).map_or_else(
                    |e| e.to_string(),
                    |a| format!("policy {}, priority {}", a.sched_policy, a.sched_priority),
                );
                let was = if boost.sched_policy == boost::SCHED_DEADLINE {
                    format!(
                        "runtime {} ns, period {} ns",
                        boost.sched_runtime, boost.sched_period
                    )
                } else {
                    format!("priority {}", boost.sched_priority)
                };
                info!(
                    "cpu {}: task {tid} was given other scheduling attributes during its boost (policy {}, {was}; {now} now): left as they are",
                    self.cpu, boost.sched_policy
                );
                false
            }
            Err(err) => {
                // Keep the journal record: the exit path (or the guardian)
                // replays it. The slot stays taken.
                warn!("restoring task {tid}: {err} (kept in the journal)");
                true
            }
        };
        // a restore booked late (the executor's) may follow a new boost of
        // the same task: its BPF entry then names the new slot
        if !self.boosted.contains_key(&tid) {
            self.view.boosted_del(tid);
        }
        if res_kept {
            return;
        }
        self.journal.forget(slot);
        self.free_slots.push(slot);
    }

    /// Takes in the executor's results: boosts it failed to make (or did
    /// not take within 100 ms: a SCHED_FIFO 99 or DEADLINE task holds the
    /// CPU) are undone here, restores it made are booked.
    fn settle(&mut self) {
        let Some(ex) = self.exec else { return };
        let now = monotonic_ns();
        for (tid, id, at) in std::mem::take(&mut self.posted) {
            let res = match ex.take_started(id) {
                Some(r) => r,
                None if now.saturating_sub(at) > EXEC_TAKE_TIMEOUT_NS && ex.withdraw(id) => {
                    Err(std::io::Error::from_raw_os_error(libc::ETIMEDOUT))
                }
                None => {
                    self.posted.push((tid, id, at));
                    continue;
                }
            };
            if let Err(e) = res {
                debug!("cpu {}: boost of {tid} failed: {e}", self.cpu);
                self.exec_ids.remove(&tid);
                if let Some((_, slot)) = self.boosted.remove(&tid) {
                    self.view.boosted_del(tid);
                    self.journal.forget(slot);
                    self.free_slots.push(slot);
                }
                self.view.forget_waiter(tid);
                self.counts.fifo = self.counts.fifo.saturating_sub(1);
                self.counts.failed += 1;
                self.server.drop_boost(tid);
            }
        }
        for (tid, id, e, slot) in std::mem::take(&mut self.ending) {
            match ex.take_ended(id) {
                Some(r) => {
                    let _ = ex.take_started(id);
                    self.restored(tid, slot, &e.boost, r)
                }
                None => self.ending.push((tid, id, e, slot)),
            }
        }
    }

    fn restore_all(&mut self) {
        self.end_boosts();
        if let Some(ex) = self.exec {
            ex.stop(true);
            self.settle();
        }
        // An executor that could not run in 2 s: restore from here.
        for (tid, _, e, slot) in std::mem::take(&mut self.ending) {
            let r = restore_here(tid, &e);
            self.restored(tid, slot, &e.boost, r);
        }
        self.server.drop_all();
    }

    /// The served CPU went offline: ends every boost (the kernel moved the
    /// boosted tasks to other CPUs, where their boosts would hold a CPU
    /// nobody serves, and where the executor's wake-ups no longer end
    /// their runs) and forgets the period. The executor keeps running.
    fn park_offline(&mut self) {
        self.end_boosts();
        self.server.drop_all();
    }

    /// Restores every task this CPU's server has boosted.
    fn end_boosts(&mut self) {
        let tids: Vec<u32> = self.boosted.keys().copied().collect();
        for tid in tids {
            self.restore(tid);
        }
    }

    /// Steps the server once; returns when to step again (ns).
    fn step(&mut self) -> u64 {
        self.settle();
        let (s, hi_running, hi) = self.view.sample(self.cpu);
        if hi.policy == boost::SCHED_FIFO || hi.policy == boost::SCHED_RR {
            self.hi_prio = hi.prio;
        }
        if let Some(next) = self.hand_off(&s, hi_running, hi) {
            return next;
        }
        let (cpu, view) = (self.cpu, self.view);
        let (boosted, exec, ids) = (&self.boosted, self.exec, &self.exec_ids);
        let task = |pid: u32| {
            let (_, slot) = boosted.get(&pid)?;
            let (spid, runtime_ns, blocked) = view.slot(*slot);
            (spid == pid).then_some(TaskNow {
                runtime_ns,
                runnable: !blocked,
                cut: exec
                    .zip(ids.get(&pid))
                    .is_some_and(|(ex, id)| ex.ended(*id)),
            })
        };
        let online = &self.online;
        let (was_started, was_end) = (self.server.started(), self.server.period_end_ns());
        let mut starts = HashMap::new();
        let boosting = self.server.taking_turns() && !self.boosted.is_empty();
        self.server.set_unsettled_slots(
            MAX_BOOSTED.saturating_sub(self.free_slots.len() + self.boosted.len()),
        );
        let st = self.server.step(&s, task, || {
            waiters_of(cpu, view, online, &mut starts, boosting)
        });
        if self.server.started() != was_started
            || (was_started && self.server.period_end_ns() != was_end)
        {
            debug!("cpu {cpu}: t={:.3} server {} period ends {:.3}, delivered {:.3} ms (last period {:.3}, boosted {:.3}), debt {:.3} ms, starved since {:.3}",
                   s.now_ns as f64 / 1e6, if self.server.started() { "serving" } else { "idle" },
                   self.server.period_end_ns() as f64 / 1e6, self.server.delivered_ns(&s) as f64 / 1e6, self.server.stats.last_period_delivered_ns as f64 / 1e6,
                   self.server.stats.last_period_boosted_ns as f64 / 1e6, self.server.debt_ns() as f64 / 1e6, s.starved_since_ns as f64 / 1e6);
        }
        // A starvation that began after the sample and before the kick was
        // armed kicked nobody (BPF kicks only when it opens one): look again
        // at once. Seen in t_floor: the hog's exec opened and closed one
        // starvation, the kick woke the idle server while none was open, and
        // the next one, opened within that step, was found only by the idle
        // recheck a second later: the first service then came after 1.3-1.6 s.
        // At most one such look per wake-up, and only for a starvation open
        // now: an RT task that sleeps and wakes every millisecond would
        // otherwise keep a thread placed off the served CPU (kernel-cut
        // mode) stepping back to back.
        let mut again = false;
        if self.server.wants_starve_kick(&s) {
            view.arm_starve_kick(cpu);
            let since = view.sample(cpu).0.starved_since_ns;
            again = !self.looked_again && since != 0 && since != s.starved_since_ns;
        }
        self.looked_again = again;
        // Restores first: the slot of a boost the executor already cut is
        // free once its restore is booked, for a boost of this step.
        let (restores, boosts): (Vec<Action>, Vec<Action>) = st
            .actions
            .into_iter()
            .partition(|a| matches!(a, Action::Restore { .. }));
        for a in restores.into_iter().chain(boosts) {
            match a {
                Action::Boost {
                    pid,
                    budget_ns,
                    deadline_ns,
                } => {
                    debug!("cpu {cpu}: t={:.3} boost {pid}, share {:.3} ms, owed {:.3} ms, period ends in {:.3} ms",
                           s.now_ns as f64 / 1e6, budget_ns as f64 / 1e6, self.server.owed_ns(&s) as f64 / 1e6,
                           (self.server.period_end_ns() as f64 - s.now_ns as f64) / 1e6);
                    if let Err(e) =
                        self.boost(pid, budget_ns, deadline_ns, starts.get(&pid).copied())
                    {
                        debug!("cpu {cpu}: boost of {pid} failed: {e:#}");
                        view.forget_waiter(pid);
                        self.counts.failed += 1;
                        self.server.drop_boost(pid);
                    }
                }
                Action::Restore { pid, why } => {
                    debug!(
                        "cpu {cpu}: t={:.3} restore {pid} ({why:?})",
                        s.now_ns as f64 / 1e6
                    );
                    self.restore(pid);
                }
            }
        }
        if let Some(ex) = self.exec {
            for a in self.server.active() {
                if let Some(id) = self.exec_ids.get(&a.pid) {
                    ex.set_limit(*id, a.base_ns + a.share_ns);
                }
            }
        }
        scan_lost(
            cpu,
            view,
            &mut self.counts.lost_found,
            &mut self.last_scan_ns,
        );
        self.warn_limits_once();
        if again {
            s.now_ns
        } else if self.handoff_check_ns != 0 {
            st.next_ns.min(self.handoff_check_ns)
        } else {
            st.next_ns
        }
    }

    /// Chooses what serves the CPU (`reach.rs`): SCHED_FIFO boosts while
    /// they can preempt the task that holds it; after [`HANDOFF_AFTER_NS`] of
    /// starvation under a task they cannot preempt (SCHED_FIFO/RR 98-99,
    /// SCHED_DEADLINE), SCHED_DEADLINE boosts where the kernel admits them
    /// for pinned tasks (sched_rt_runtime_us -1), else the kernel's
    /// ext_server handed our budget, else nothing (warned); back to
    /// SCHED_FIFO boosts a period after no such task held the CPU. Logs
    /// each change once per such task. Returns when to step again while the
    /// ext_server serves (our server stays idle meanwhile), None when our
    /// server is to step.
    fn hand_off(&mut self, s: &Sample, hi_running: bool, hi: HiTask) -> Option<u64> {
        if self.forced_deadline {
            return None;
        }
        let r = reach(hi.policy, hi.prio, self.dl_ok, self.ext.is_some());
        let starving_ns = if s.starved_since_ns != 0 {
            s.now_ns.saturating_sub(s.starved_since_ns)
        } else {
            0
        };
        let beyond_fifo = hi_running && r != Reach::Fifo;
        if beyond_fifo {
            self.unbeatable_at_ns = s.now_ns;
        }
        let period = self.fifo_cfg.period_ns;
        self.handoff_check_ns = 0;
        if self.reach == Reach::Fifo && beyond_fifo {
            if starving_ns < HANDOFF_AFTER_NS {
                self.handoff_check_ns = handoff_check_at(s.starved_since_ns);
            } else {
                self.announce(hi, r);
                self.hand_to(r, s);
            }
        }
        if self.reach != Reach::Fifo && s.now_ns.saturating_sub(self.unbeatable_at_ns) >= period {
            self.hand_to(Reach::Fifo, s);
            info!("cpu {}: SCHED_FIFO boosts serve the CPU again", self.cpu);
        }
        if self.reach == Reach::ExtServer {
            // The main thread sets the ext_server runtime to 0 again after
            // scx_floor was stopped: keep it handed over.
            if self.ext_server_runtime_now() == Some(0) {
                let _ = self.ext_server(true);
            }
        }
        // Our server stays idle while the ext_server serves, or while
        // nothing can: a boost could not preempt the task that holds the CPU.
        matches!(self.reach, Reach::ExtServer | Reach::None)
            .then(|| s.now_ns + (period / 4).max(10_000_000))
    }

    /// Logs, once each, that more tasks starved than the CPU's boost slots
    /// take, and that the BPF waiters map refused waiters of this CPU
    /// (both counted in the server table of `--stats`).
    fn warn_limits_once(&mut self) {
        if !self.warned_slots && self.server.stats.slots_full > 0 {
            self.warned_slots = true;
            warn!(
                "cpu {}: more normal tasks starve here than scx_floor boosts at once ({MAX_BOOSTED}): \
                 they take turns of at least {} ms, as many per period as the budget holds; one \
                 that waits {} s makes the kernel eject scx_floor (slots_full in --stats counts \
                 the steps that left tasks waiting for a slot)",
                self.cpu,
                crate::server::MIN_TURN_NS / 1_000_000,
                crate::bpf_intf::floor_consts_FLOOR_WATCHDOG_TIMEOUT_MS / 1000
            );
        }
        if self.warned_waiters {
            return;
        }
        let dropped = self.view.waiters_dropped(self.cpu);
        if dropped > 0 {
            self.warned_waiters = true;
            warn!(
                "cpu {}: the BPF waiters map is full ({} entries): {dropped} waiting task(s) \
                 of this CPU not listed; the /proc scan finds those of a starving CPU once a \
                 second (waiters_dropped and lost_found in --stats)",
                self.cpu,
                crate::bpf_intf::floor_consts_FLOOR_MAX_WAITERS
            );
        }
    }

    /// Logs, once per task, that `hi` holds the CPU above SCHED_FIFO
    /// boosts and what serves the CPU instead (`r`).
    fn announce(&mut self, hi: HiTask, r: Reach) {
        if hi.pid == self.warned_pid {
            return;
        }
        self.warned_pid = hi.pid;
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", hi.pid))
            .map(|c| c.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        let what = match hi.policy {
            boost::SCHED_DEADLINE => "SCHED_DEADLINE".to_string(),
            boost::SCHED_RR => format!("SCHED_RR {}", hi.prio),
            _ => format!("SCHED_FIFO {}", hi.prio),
        };
        let head = format!(
            "cpu {}: task {} ({comm}) at {what} holds the CPU above every SCHED_FIFO boost of \
             scx_floor (at most {})",
            self.cpu,
            hi.pid,
            boost::MAX_BOOST_PRIO
        );
        match r {
            Reach::Deadline => info!(
                "{head}: SCHED_DEADLINE boosts serve the CPU while it runs \
                 (kernel.sched_rt_runtime_us is -1)"
            ),
            Reach::ExtServer => warn!(
                "{head}; SCHED_DEADLINE is refused for tasks pinned there while \
                 kernel.sched_rt_runtime_us >= 0: the kernel's ext_server serves the CPU instead \
                 while it runs (its budget ends at the tick); {}",
                crate::reach::remedy()
            ),
            _ => warn!(
                "{head}; SCHED_DEADLINE is refused for tasks pinned there while \
                 kernel.sched_rt_runtime_us >= 0 and there is no ext_server in debugfs to hand \
                 the CPU to: the CPU is NOT served while it runs; {}",
                crate::reach::remedy()
            ),
        }
    }

    /// Switches what serves the CPU to `to`: the boosts made so far are
    /// given back, the server starts idle with the configuration of the
    /// new mechanism (kernel-cut for SCHED_DEADLINE boosts) and keeps its
    /// statistics, the ext_server gets our budget or runtime 0.
    fn hand_to(&mut self, to: Reach, s: &Sample) {
        let tids: Vec<u32> = self.boosted.keys().copied().collect();
        for tid in tids {
            self.restore(tid);
        }
        if self.reach == Reach::ExtServer && to != Reach::ExtServer {
            if let Err(e) = self.ext_server(false) {
                warn!(
                    "cpu {}: taking the budget back from the ext_server: {e:#}",
                    self.cpu
                );
            }
        }
        let mut to = to;
        if to == Reach::ExtServer {
            if let Err(e) = self.ext_server(true) {
                warn!(
                    "cpu {}: handing the budget to the ext_server: {e:#}",
                    self.cpu
                );
                to = Reach::None;
            }
        }
        let (cfg, mode) = if to == Reach::Deadline {
            (self.fifo_cfg.kernel_cut(), BoostMode::Deadline)
        } else {
            (self.fifo_cfg, self.base_mode)
        };
        let stats = std::mem::take(&mut self.server.stats);
        self.server = CpuServer::idle(cfg, s);
        self.server.stats = stats;
        self.mode = mode;
        self.reach = to;
    }

    /// Gives the kernel's ext_server of this CPU our budget and period
    /// (`on`), or runtime 0 (journaled by [`Knobs`]).
    fn ext_server(&self, on: bool) -> Result<()> {
        let ext = self.ext.as_ref().context("no ext_server")?;
        let c = self.fifo_cfg;
        let Some(k) = ext.knobs else { return Ok(()) };
        if on {
            k.set(&ext.period, &c.period_ns.to_string())?;
            k.set(&ext.runtime, &c.runtime_ns.to_string())
        } else {
            k.set(&ext.runtime, "0")
        }
    }

    fn ext_server_runtime_now(&self) -> Option<u64> {
        let ext = self.ext.as_ref().filter(|e| e.knobs.is_some())?;
        std::fs::read_to_string(&ext.runtime)
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether any task boosted here can still run (memory reads only).
    fn any_boost_runnable(&self) -> bool {
        self.boosted.iter().any(|(pid, (_, slot))| {
            let (spid, _, blocked) = self.view.slot(*slot);
            spid == *pid && !blocked
        })
    }

    fn row(&self) -> ServerRow {
        let s = &self.server.stats;
        ServerRow {
            cpu: self.cpu,
            periods: s.periods,
            delivered_ms: s.last_period_delivered_ns as f64 / 1e6,
            boosted_ms: s.last_period_boosted_ns as f64 / 1e6,
            boosts_deadline: self.counts.deadline,
            boosts_fifo: self.counts.fifo,
            boosts_failed: self.counts.failed,
            handed_over: s.handed_over,
            overrun_p99_us: s
                .overrun
                .quantile_upper_ns(0.99)
                .map(|v| v.min(s.max_overrun_ns) as f64 / 1e3),
            overrun_max_us: s.max_overrun_ns as f64 / 1e3,
            overrun_count: s.overrun.total(),
            steps: self.counts.steps,
            step_mean_us: if self.counts.steps > 0 {
                self.counts.step_ns as f64 / self.counts.steps as f64 / 1e3
            } else {
                0.0
            },
            step_max_us: self.counts.step_max_ns as f64 / 1e3,
            debt_us: self.server.debt_ns() as f64 / 1e3,
            by: self.reach.name(),
            lost_found: self.counts.lost_found,
            slots_full: s.slots_full,
            waiters_dropped: self.view.waiters_dropped(self.cpu),
            tasks: s.last_period_tasks,
            min_share_ms: s.last_period_min_share_ns as f64 / 1e6,
        }
    }
}

/// Raises the calling thread to SCHED_FIFO 99, then pins it to `cpus`. In
/// that order: pinned first, at its normal policy, to a CPU an RT task hogs,
/// it would never run again to raise itself.
fn rt_setup(cpus: &[usize]) -> Result<()> {
    let a = SchedAttr {
        sched_policy: boost::SCHED_FIFO,
        sched_priority: 99,
        sched_flags: boost::SCHED_FLAG_RESET_ON_FORK,
        ..Default::default()
    };
    boost::set_attr(0, &a).context("sched_setattr(SCHED_FIFO 99) for the server thread")?;
    pin_thread(0, cpus).with_context(|| format!("pinning the server thread to CPUs {cpus:?}"))
}

/// Pins thread `tid` (0: the caller) to `cpus` (`sched_setaffinity()`).
/// Errors: the kernel's (EINVAL when none of `cpus` is online, ESRCH when
/// `tid` is gone).
pub fn pin_thread(tid: u32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: plain syscall on a valid cpu_set_t.
    if unsafe { libc::sched_setaffinity(tid as i32, std::mem::size_of::<libc::cpu_set_t>(), &set) }
        != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pins a thread of ours that serves one CPU back to that CPU after a CPU
/// hotplug event (the `nr_cpu_hotplug` count changed). Taking a CPU offline
/// breaks the affinity of the tasks pinned to it (the kernel moves them to
/// any allowed CPU, "no longer affine to cpuN"), and bringing it back does not
/// restore it. Returns whether the thread is pinned to `cpu` now.
pub fn repin_after_hotplug(tid: u32, cpu: usize, online: &[usize]) -> bool {
    if !online.contains(&cpu) {
        return false;
    }
    match pin_thread(tid, &[cpu]) {
        Ok(()) => true,
        Err(e) => {
            warn!("pinning thread {tid} back to CPU {cpu} after a CPU hotplug event: {e}");
            false
        }
    }
}

/// Sleeps until `t_ns` (CLOCK_MONOTONIC) or until one of `fds` becomes
/// readable, whichever comes first; returns whether `fds[0]` did. ppoll()
/// takes a nanosecond timeout, and an RT task's poll timeout has no slack.
/// `u64::MAX` waits for the fds alone.
pub fn sleep_until(t_ns: u64, fds: &[i32; 2]) -> bool {
    let now = monotonic_ns();
    if t_ns <= now {
        return false;
    }
    let d = t_ns - now;
    let ts = libc::timespec {
        tv_sec: (d / 1_000_000_000) as i64,
        tv_nsec: (d % 1_000_000_000) as i64,
    };
    let tsp = if t_ns == u64::MAX {
        std::ptr::null()
    } else {
        &ts as *const libc::timespec
    };
    let mut pfd = [
        libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: fds[1],
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds; EINTR just ends the sleep early.
    let n = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, tsp, std::ptr::null()) };
    n > 0 && pfd[0].revents != 0
}

/// An eventfd that tells the server threads to stop.
struct StopFd(i32);

impl StopFd {
    fn new() -> Result<Self> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            anyhow::bail!("eventfd: {}", std::io::Error::last_os_error());
        }
        Ok(StopFd(fd))
    }
    fn fire(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.0, &one as *const u64 as *const libc::c_void, 8) };
    }
}

/// Stops the server and slice-end threads when dropped: sets the flag and
/// fires the eventfd they poll.
struct StopOnExit<'a>(&'a AtomicBool, &'a StopFd);

impl Drop for StopOnExit<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        self.1.fire();
    }
}

impl Drop for StopFd {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.0) };
    }
}

/// Registers the calling thread as one of scx_floor's own (its runs never
/// count as a higher class taking a CPU: done before it becomes RT), then
/// [`rt_setup`].
pub fn agent_setup(view: &BpfView, cpus: &[usize]) -> Result<()> {
    // SAFETY: plain syscall.
    view.register_agent(unsafe { libc::gettid() } as u32)?;
    rt_setup(cpus)
}

/// The server of one served CPU: runs until `stop` or ejection, then
/// restores what it boosted.
///
/// Two threads, both SCHED_FIFO 99. The planner (this one: sample, choose,
/// journal) may run on any online housekeeping CPU (not `nohz_full=`; all
/// online CPUs when every one is) and is placed by the kernel at each
/// wake-up: a waking RT task whose CPU runs a pinned RT task, or one of
/// higher or equal priority, goes to the CPU running the lowest-priority
/// task (`select_task_rq_rt()`/`find_lowest_rq()`, kernel/sched/rt.c). That
/// is a CPU no RT task holds only while there is one: on PREEMPT_RT with
/// `irqaffinity=0`, CPU 0 often runs a FIFO 50 interrupt thread, and a
/// nohz_full CPU under an RR 25 hog is then the lowest. Its steps cost
/// 1-6 ms under TCG and were, when it ran on the served CPU, the RT task's
/// longest gaps (S0). The executor (`executor.rs`), pinned to the served
/// CPU, makes the SCHED_FIFO boosts there and ends them by a local timer. In kernel-cut and
/// DEADLINE-only modes the kernel ends boosts and there is no executor.
#[allow(clippy::too_many_arguments)]
fn serve_cpu(
    cpu: usize,
    view: &BpfView,
    cfg: &PolicyConfig,
    sc: ServerConfig,
    stop: &AtomicBool,
    stop_fd: i32,
    report: &Mutex<ServerRow>,
    ext: ExtServer,
    dl_ok: bool,
) -> Result<()> {
    let online = online_cpus()?;
    agent_setup(view, &housekeeping_of(&online, &nohz_full_cpus()))?;
    let exec = Executor::default();
    let with_exec = cfg.boost_mode != BoostMode::Deadline;
    std::thread::scope(|s| -> Result<()> {
        let _stopper = StopOnDrop(&exec);
        if with_exec {
            let (tx, rx) = std::sync::mpsc::channel();
            let ex = &exec;
            std::thread::Builder::new()
                .name(format!("scx_floor-x/{cpu}"))
                .spawn_scoped(s, move || {
                    // SAFETY: plain syscall.
                    ex.tid
                        .store(unsafe { libc::gettid() } as u32, Ordering::Relaxed);
                    let r = agent_setup(view, &[cpu]);
                    // warm up the system call's path
                    let _ = boost::get_attr(0);
                    let ok = r.is_ok();
                    let _ = tx.send(r);
                    if ok {
                        ex.run(view);
                    }
                })?;
            rx.recv()
                .context("the executor thread ended")?
                .with_context(|| format!("the executor thread of CPU {cpu}"))?;
        }
        plan_cpu(
            cpu,
            view,
            cfg,
            sc,
            stop,
            stop_fd,
            report,
            with_exec.then_some(&exec),
            online,
            ext,
            dl_ok,
        )
    })
}

/// The planner's loop (see [`serve_cpu`]).
#[allow(clippy::too_many_arguments)]
fn plan_cpu(
    cpu: usize,
    view: &BpfView,
    cfg: &PolicyConfig,
    sc: ServerConfig,
    stop: &AtomicBool,
    stop_fd: i32,
    report: &Mutex<ServerRow>,
    exec: Option<&Executor>,
    online: Vec<usize>,
    ext: ExtServer,
    dl_ok: bool,
) -> Result<()> {
    let forced_deadline = cfg.boost_mode == BoostMode::Deadline;
    let ext_dir = std::path::Path::new(knobs::EXT_SERVER_DIR);
    let (s, _, _) = view.sample(cpu);
    let mut a = CpuAgent {
        cpu,
        view,
        mode: cfg.boost_mode,
        server: CpuServer::idle(
            if forced_deadline && dl_ok {
                sc.kernel_cut()
            } else {
                sc
            },
            &s,
        ),
        counts: BoostCounts::default(),
        hi_prio: 0,
        journal: Journal::open(&journal_path(&cfg.state_dir))?,
        boosted: HashMap::new(),
        free_slots: (0..MAX_BOOSTED)
            .rev()
            .map(|i| cpu * MAX_BOOSTED + i)
            .collect(),
        online,
        looked_again: false,
        last_scan_ns: 0,
        exec,
        exec_ids: HashMap::new(),
        posted: Vec::new(),
        ending: Vec::new(),
        ext: match ext {
            ExtServer::Ours(k) => Some(Some(k)),
            ExtServer::Kept => Some(None),
            ExtServer::Absent => None,
        }
        .map(|k| ExtHandoff {
            knobs: k,
            runtime: knobs::ext_server_runtime(ext_dir, cpu),
            period: knobs::ext_server_period(ext_dir, cpu),
        }),
        reach: if forced_deadline {
            Reach::Deadline
        } else {
            Reach::Fifo
        },
        unbeatable_at_ns: 0,
        warned_pid: 0,
        warned_slots: false,
        warned_waiters: false,
        handoff_check_ns: 0,
        fifo_cfg: sc,
        base_mode: cfg.boost_mode,
        dl_ok,
        forced_deadline,
    };
    // Warm up the paths a step takes (the BPF map lookup, /proc, the journal
    // pages, sched_*attr): their first call costs milliseconds in a VM (cold
    // page cache, first faults), and the first activation must not.
    let _ = waiters_of(cpu, view, &a.online, &mut HashMap::new(), false);
    let _ = runnable_on(cpu);
    // SAFETY: plain syscall.
    let _ = boost::stat_of(unsafe { libc::gettid() } as u32);
    let _ = boost::get_attr(0);
    let _ = a.journal.entries();
    let wake = view.wake_ringbuf(cpu)?;
    let mut rb = libbpf_rs::RingBufferBuilder::new();
    rb.add(&wake, |_| 0)?;
    let rb = rb.build()?;
    // The online set is re-read only after a hotplug event: reading sysfs
    // took 1.7 ms under TCG, and doing it once per period (as before) put it
    // right before the activation step, which then came after the period's
    // end with a 20 us budget: the server skipped most periods.
    let mut hotplug_seen = view.cpu_hotplug_events();
    let mut parked = false;
    while !stop.load(Ordering::Relaxed) && !view.exited() {
        let t0 = monotonic_ns();
        let hp = view.cpu_hotplug_events();
        if hp != hotplug_seen {
            hotplug_seen = hp;
            a.online = view.online_cpus().unwrap_or_else(|_| a.online.clone());
            // The planner may run on any online housekeeping CPU, a new one
            // included.
            let hk = housekeeping_of(&a.online, &nohz_full_cpus());
            if let Err(e) = pin_thread(0, &hk) {
                warn!("CPU {cpu}'s planner: pinning to CPUs {hk:?}: {e}");
            }
            if let Some(ex) = a.exec {
                let tid = ex.tid.load(Ordering::Relaxed);
                if tid != 0 {
                    repin_after_hotplug(tid, cpu, &a.online);
                }
            }
        }
        // An offline CPU has nothing to serve, and its counters stand still
        // (a starvation opened before it went down stays open): stepping on
        // them boosted again and again. Parked until a hotplug event (BPF
        // kicks this thread at each) brings it back.
        if !a.online.contains(&cpu) {
            if !parked {
                parked = true;
                a.park_offline();
                info!("CPU {cpu} is offline: its server is parked until it is back");
            }
            a.settle();
            if let Ok(mut r) = report.try_lock() {
                *r = a.row();
            }
            if sleep_until(monotonic_ns() + MAX_SLEEP_NS, &[rb.epoll_fd(), stop_fd]) {
                let _ = rb.consume();
            }
            continue;
        }
        if parked {
            parked = false;
            info!("CPU {cpu} is online again: serving");
        }
        let next = a.step();
        let took = monotonic_ns() - t0;
        a.counts.steps += 1;
        a.counts.step_ns += took;
        a.counts.step_max_ns = a.counts.step_max_ns.max(took);
        if let Ok(mut r) = report.try_lock() {
            *r = a.row();
        }
        let mut deadline = next.min(monotonic_ns() + MAX_SLEEP_NS);
        while sleep_until(deadline, &[rb.epoll_fd(), stop_fd]) {
            let _ = rb.consume();
            // A boosted task blocked. While another boosted task can run,
            // the kernel has already handed it the CPU: the share of the one
            // that blocked is redistributed at the next timed step. Only when
            // none can run is a step needed now (to boost the next waiters).
            if !a.server.started() || !a.any_boost_runnable() {
                break;
            }
            deadline = deadline.max(monotonic_ns());
        }
    }
    a.restore_all();
    *report.lock().unwrap_or_else(|e| e.into_inner()) = a.row();
    Ok(())
}

fn snapshot(view: &BpfView) -> (u64, Vec<(usize, CpuCounters)>) {
    let t = monotonic_ns();
    (
        t,
        online_cpus()
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c, view.counters(c)))
            .collect(),
    )
}

fn server_rows(reports: &[Mutex<ServerRow>]) -> Vec<ServerRow> {
    reports
        .iter()
        .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .collect()
}

/// Writes `--stats-json` from `snap` (a `snapshot()`): every CPU's
/// counters since load (histograms included) and the server rows. Errors
/// are logged, not fatal.
fn write_json(
    path: &std::path::Path,
    snap: (u64, Vec<(usize, CpuCounters)>),
    cfg: &PolicyConfig,
    reports: &[Mutex<ServerRow>],
) {
    let (t, cpus) = snap;
    let doc = stats::StatsDoc::new(t, &cfg.slice, cpus, server_rows(reports));
    let r = serde_json::to_string_pretty(&doc)
        .map_err(anyhow::Error::from)
        .and_then(|b| boost::write_atomic(path, &b));
    if let Err(e) = r {
        warn!("--stats-json {}: {e:#}", path.display());
    }
}

fn report(
    view: &BpfView,
    last: &mut Option<(u64, Vec<(usize, CpuCounters)>)>,
    every: Duration,
    reports: &[Mutex<ServerRow>],
) {
    let now = snapshot(view);
    if let Some((t0, prev)) = last {
        let rows: Vec<_> = now
            .1
            .iter()
            .filter_map(|(cpu, b)| {
                prev.iter()
                    .find(|(c, _)| c == cpu)
                    .map(|(_, a)| stats::interval(*cpu, a, *t0, b, now.0))
            })
            .collect();
        let mut s = format!(
            "per-CPU accounting over the last {:.1} s:\n{}",
            every.as_secs_f64(),
            stats::format_table(&rows)
        );
        let srows = server_rows(reports);
        if !srows.is_empty() {
            s += &stats::format_server_table(&srows);
        }
        info!("{s}");
    }
    *last = Some(now);
}

/// Locks all of scx_floor's memory, present and future
/// (`mlockall(MCL_CURRENT | MCL_FUTURE)`): the server threads must never wait
/// for a page fault while an RT task holds their CPU. Called before the BPF
/// scheduler is attached: in a fresh boot, faulting the binary in over the
/// VM's 9p root took over a second, and a hog started as soon as sched_ext
/// reported "enabled" starved its CPU for 1.2-2.4 s before the server thread
/// ran. A failure is a warning (the servers still run, with that risk).
pub fn lock_memory() {
    // SAFETY: plain syscall.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        warn!(
            "mlockall: {} (the server threads may page-fault)",
            std::io::Error::last_os_error()
        );
    }
}

/// Runs the servers until `shutdown` is set or the kernel ejects the
/// scheduler; restores everything; returns the kernel's exit report.
pub fn run(
    sched: &mut Scheduler,
    cfg: PolicyConfig,
    shutdown: &AtomicBool,
) -> Result<UserExitInfo> {
    let view = sched.view()?;
    for &pid in &cfg.agent_pids {
        view.register_agent(pid)?;
    }
    let knobs = Knobs::open(&knobs_dir(&cfg.state_dir))?;
    let result = cfg
        .raised_tids
        .iter()
        .try_for_each(|&tid| view.register_agent(tid))
        .and_then(|()| run_servers(&view, &cfg, &knobs, shutdown));
    // Every exit path: knobs back, journal replayed (threads restored their
    // own). The raised kernel threads stay raised until the BPF scheduler is
    // detached (main.rs): its disable path waits for RCU grace periods and
    // for irq_work on every CPU, which a hog would otherwise hold up.
    let (t, k) = crate::guard::replay_tasks_and_knobs(&cfg.state_dir);
    if k > 0 {
        info!("restored {k} kernel knob(s)");
    }
    if t > 0 {
        warn!("restored {t} task(s) from the journal");
    }
    result?;
    if shutdown.load(Ordering::Relaxed) {
        info!("signal received: unloading");
    }
    sched.finish()
}

/// Sets kernel.sched_rt_runtime_us to -1 (journaled).
fn rt_runtime_off(knobs: &Knobs) -> Result<()> {
    knobs.set(std::path::Path::new(knobs::SCHED_RT_RUNTIME), "-1")
}

/// Sets the kernel's ext_server runtime to 0 on the served CPUs (journaled).
/// Ok(false) when the kernel has no ext_server in debugfs (left alone).
fn ext_server_off(cfg: &PolicyConfig, knobs: &Knobs) -> Result<bool> {
    let dir = std::path::Path::new(knobs::EXT_SERVER_DIR);
    if !dir.exists() {
        warn!(
            "{} not found (debugfs not mounted, or no ext_server in this kernel): left alone",
            knobs::EXT_SERVER_DIR
        );
        return Ok(false);
    }
    for &cpu in &cfg.cpus {
        knobs.set(&knobs::ext_server_runtime(dir, cpu), "0")?;
    }
    Ok(true)
}

/// A main-loop sleep that took this much longer than asked means scx_floor
/// was stopped (SIGSTOP) or starved: the guardian has restored the knobs.
const STOPPED_GAP_NS: u64 = 500_000_000;

fn run_servers(
    view: &BpfView,
    cfg: &PolicyConfig,
    knobs: &Knobs,
    shutdown: &AtomicBool,
) -> Result<()> {
    let mut dl_ok = false;
    // The ext_server is ours to hand the budget to only where we set it to 0.
    let mut handoff = if std::path::Path::new(knobs::EXT_SERVER_DIR).exists() {
        ExtServer::Kept
    } else {
        ExtServer::Absent
    };
    if let Some(sc) = cfg.server {
        if cfg.kernel_server_off && ext_server_off(cfg, knobs)? {
            info!(
                "kernel ext_server runtime set to 0 on CPUs {:?} (restored on exit)",
                cfg.cpus
            );
            handoff = ExtServer::Ours(knobs);
        }
        let several_cpus = online_cpus()?.len() > 1;
        if cfg.rt_runtime_unlimited && !several_cpus {
            warn!(
                "--rt-runtime-unlimited: one CPU online, SCHED_DEADLINE boosts need another \
                 for the server threads: kernel.sched_rt_runtime_us left alone"
            );
        } else if cfg.rt_runtime_unlimited {
            rt_runtime_off(knobs)?;
            info!("kernel.sched_rt_runtime_us set to -1 (restored on exit)");
        }
        dl_ok =
            cfg.boost_mode != BoostMode::Fifo && knobs::rt_runtime_is_unlimited() && several_cpus;
        if dl_ok {
            info!(
                "kernel.sched_rt_runtime_us is -1: SCHED_DEADLINE boosts (kernel-cut mode: ended \
                 by the kernel, HRTICK_DL) serve {}; the planner threads are placed by the \
                 kernel, off the served CPU while another runs lower-priority work",
                if cfg.boost_mode == BoostMode::Deadline {
                    "every CPU"
                } else {
                    "CPUs held by a task no SCHED_FIFO boost preempts (RT priority 98-99, \
                     SCHED_DEADLINE); SCHED_FIFO boosts serve the others"
                }
            );
            if std::fs::read_to_string(knobs::SCHED_FEATURES)
                .is_ok_and(|f| f.split_whitespace().any(|x| x == "NO_HRTICK_DL"))
            {
                warn!(
                    "the scheduler feature HRTICK_DL is off ({}): the kernel ends \
                     SCHED_DEADLINE boosts at the tick, up to a tick late",
                    knobs::SCHED_FEATURES
                );
            }
        }
        info!(
            "bandwidth server: {} us every {} us on CPUs {:?}, boost {:?}",
            sc.runtime_ns / 1000,
            sc.period_ns / 1000,
            cfg.cpus,
            cfg.boost_mode
        );
    }
    let stop = AtomicBool::new(false);
    let stop_fd = StopFd::new()?;
    let reports: Vec<Mutex<ServerRow>> = if cfg.server.is_some() {
        cfg.cpus
            .iter()
            .map(|c| {
                Mutex::new(ServerRow {
                    cpu: *c,
                    ..Default::default()
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let slicer_cpus = if cfg.slice_threads {
        online_cpus()?
    } else {
        Vec::new()
    };
    let slicer_counts: Vec<SlicerCounts> = slicer_cpus.iter().map(|_| Default::default()).collect();
    std::thread::scope(|s| -> Result<()> {
        // The scope waits for every thread it started: every way out of
        // this closure (an error included) must stop them first.
        let _stop_all = StopOnExit(&stop, &stop_fd);
        let mut handles = Vec::new();
        for (&cpu, counts) in slicer_cpus.iter().zip(&slicer_counts) {
            let (stop, fd) = (&stop, stop_fd.0);
            let h = std::thread::Builder::new()
                .name(format!("scx_floor-s/{cpu}"))
                .spawn_scoped(s, move || crate::slicer::run(cpu, view, stop, fd, counts))?;
            handles.push(h);
        }
        if let Some(sc) = cfg.server {
            for (i, &cpu) in cfg.cpus.iter().enumerate() {
                let (stop, report, fd) = (&stop, &reports[i], stop_fd.0);
                let h = std::thread::Builder::new()
                    .name(format!("scx_floor/{cpu}"))
                    .spawn_scoped(s, move || {
                        serve_cpu(cpu, view, cfg, sc, stop, fd, report, handoff, dl_ok)
                    })?;
                handles.push(h);
            }
        }
        let mut last = cfg.stats_every.map(|_| snapshot(view));
        let mut next_stats = cfg
            .stats_every
            .map(|d| monotonic_ns() + d.as_nanos() as u64);
        let mut failed = None;
        // The slice policy polls each CPU's load every 10 ms (memory reads
        // and writes in the mmapped .bss, no system call besides the sleep).
        let nr_cpus = *scx_utils::NR_CPU_IDS;
        let mut slices = vec![CpuSlice::default(); nr_cpus];
        let tick = if cfg.slice.is_dynamic() { 10 } else { 20 };
        let mut seen_restores = cfg
            .guardian_restores
            .map_or(0, |r| r.load(Ordering::Acquire));
        while !shutdown.load(Ordering::Relaxed) && !view.exited() {
            if let Some(h) = handles.iter().position(|h| h.is_finished()) {
                failed = Some(handles.swap_remove(h).join());
                break;
            }
            let before = monotonic_ns();
            std::thread::sleep(Duration::from_millis(tick));
            let slept = monotonic_ns().saturating_sub(before);
            let long_gap = slept > tick * 1_000_000 + STOPPED_GAP_NS;
            if long_gap {
                warn!(
                    "scx_floor was stopped or starved for {:.1} s",
                    slept as f64 / 1e9
                );
            }
            let restores = cfg
                .guardian_restores
                .map_or(0, |r| r.load(Ordering::Acquire));
            let restored = restores != seen_restores;
            if restored {
                info!(
                    "the guardian restored what scx_floor had changed while it was stopped \
                     (a gap of {} ms here)",
                    slept / 1_000_000
                );
                seen_restores = restores;
            }
            if restored || long_gap {
                // The guardian restored the knobs (and any boosted task)
                // while we were stopped: it counts each restore after its
                // last write, so these writes come after its own. After a
                // long gap without a count it may still be at it; setting
                // them twice is harmless. The servers' boosts are checked
                // against the task's policy before they are restored.
                // A failed write is a warning: the servers go on (a CPU
                // taken offline meanwhile, say, has no ext_server to set).
                if cfg.server.is_some() && cfg.kernel_server_off {
                    match ext_server_off(cfg, knobs) {
                        Ok(true) => info!(
                            "kernel ext_server runtime set to 0 again on CPUs {:?}",
                            cfg.cpus
                        ),
                        Ok(false) => {}
                        Err(e) => warn!("setting the ext_server runtime to 0 again: {e:#}"),
                    }
                }
                // The guardian restored sched_rt_runtime_us too: kernel-cut
                // mode boosts only with SCHED_DEADLINE, which the kernel then
                // refuses for pinned tasks.
                if dl_ok && cfg.rt_runtime_unlimited {
                    match rt_runtime_off(knobs) {
                        Ok(()) => info!("kernel.sched_rt_runtime_us set to -1 again"),
                        Err(e) => warn!("setting kernel.sched_rt_runtime_us to -1 again: {e:#}"),
                    }
                }
            }
            if cfg.slice.is_dynamic() {
                for (cpu, st) in slices.iter_mut().enumerate() {
                    if let Some(ns) = st.poll(&cfg.slice, view.nr_runnable(cpu)) {
                        debug!("cpu {cpu}: {} runnable, slice {} us", st.nr, ns / 1000);
                        view.set_slice(cpu, ns);
                    }
                }
            }
            if let (Some(t), Some(every)) = (next_stats, cfg.stats_every) {
                if monotonic_ns() >= t {
                    next_stats = Some(t + every.as_nanos() as u64);
                    report(view, &mut last, every, &reports);
                    // The same snapshot as the table just printed.
                    if let (Some(p), Some(snap)) = (&cfg.stats_json, &last) {
                        write_json(p, snap.clone(), cfg, &reports);
                    }
                }
            }
        }
        if view.exited() {
            warn!("the kernel ejected scx_floor: restoring boosted tasks and knobs");
        }
        stop.store(true, Ordering::Relaxed);
        stop_fd.fire();
        free_stuck_threads(STUCK_AFTER);
        for h in handles {
            match h.join() {
                Ok(Err(e)) => warn!("server thread: {e:#}"),
                Err(_) => warn!("a server thread panicked"),
                Ok(Ok(())) => {}
            }
        }
        if let Some(p) = &cfg.stats_json {
            write_json(p, snapshot(view), cfg, &reports);
        }
        if !slicer_counts.is_empty() {
            let sum = |f: fn(&SlicerCounts) -> &AtomicU64| -> u64 {
                slicer_counts
                    .iter()
                    .map(|c| f(c).load(Ordering::Relaxed))
                    .sum()
            };
            info!(
                "slice-end threads: {} timed wake-ups ({} before the slice was due), {} parks",
                sum(|c| &c.wakes),
                sum(|c| &c.early),
                sum(|c| &c.parks)
            );
        }
        match failed {
            Some(Ok(Err(e))) => Err(e.context("a server thread stopped")),
            Some(Err(_)) => Err(anyhow::anyhow!("a server thread panicked")),
            _ => Ok(()),
        }
    })
}

/// How long the per-CPU threads get to leave on their own CPU at exit.
const STUCK_AFTER: Duration = Duration::from_millis(300);

/// Name prefixes of the threads pinned to one CPU each: slice-end threads
/// and executors (both SCHED_FIFO 99).
const PINNED_THREADS: [&str; 2] = ["scx_floor-s/", "scx_floor-x/"];

/// At exit, after the stop was signalled: waits up to `grace` for the
/// threads of [`PINNED_THREADS`] to end, then lets each one still there run
/// on any online CPU. A SCHED_FIFO 99 hog on a CPU never lets that CPU's
/// own SCHED_FIFO 99 threads run (equal priorities do not preempt), and
/// the scope that started them would wait for them for as long as the hog
/// runs: the exit, and with it every restore, would never come. Returns
/// how many threads it moved.
fn free_stuck_threads(grace: Duration) -> usize {
    let pinned = || -> Vec<(u32, String)> {
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return Vec::new();
        };
        dir.filter_map(|d| {
            let d = d.ok()?;
            let tid: u32 = d.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(d.path().join("comm")).ok()?;
            let comm = comm.trim_end().to_string();
            PINNED_THREADS
                .iter()
                .any(|p| comm.starts_with(p))
                .then_some((tid, comm))
        })
        .collect()
    };
    let until = monotonic_ns() + grace.as_nanos() as u64;
    let mut left = pinned();
    while !left.is_empty() && monotonic_ns() < until {
        std::thread::sleep(Duration::from_millis(10));
        left = pinned();
    }
    if left.is_empty() {
        return 0;
    }
    let Ok(online) = online_cpus() else { return 0 };
    let mut n = 0;
    for (tid, comm) in left {
        match pin_thread(tid, &online) {
            Ok(()) => {
                n += 1;
                info!(
                    "{comm} (task {tid}) had not ended {} ms after the stop (on a CPU a \
                     real-time task at its priority holds, it cannot run): it may end on any CPU",
                    grace.as_millis()
                );
            }
            // ESRCH: it ended meanwhile
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => warn!("letting {comm} (task {tid}) end on another CPU: {e}"),
        }
    }
    n
}

/// The CPUs to serve: `list` (a cpulist such as "1,3-5") or all online CPUs,
/// in ascending order, each once ("1,1" is CPU 1: one server per CPU).
/// Errors: a malformed list, a range that runs backwards, or a CPU that
/// does not exist or is offline.
pub fn served_cpus(list: Option<&str>) -> Result<Vec<usize>> {
    let online = online_cpus()?;
    let Some(l) = list else { return Ok(online) };
    check_cpulist_ranges(l, &online)?;
    let mut want = scx_utils::read_cpulist(l)
        .with_context(|| format!("--server-cpus '{l}' is not a CPU list"))?;
    want.sort_unstable();
    want.dedup();
    check_cpus(&want, &online)?;
    Ok(want)
}

/// Checks the ranges of a cpulist before it is expanded: each `A-B` runs
/// low to high, and no CPU named is above the highest online one (scx_utils
/// expands a range entry by entry: "0-4000000000" would take 32 GB first).
/// Groups that are not numbers are left to the parser's error.
fn check_cpulist_ranges(list: &str, online: &[usize]) -> Result<()> {
    let max = online.iter().copied().max().unwrap_or(0);
    for g in list.trim_end_matches('\0').split(',') {
        let g = g.trim();
        let (a, b) = g.split_once('-').unwrap_or((g, g));
        let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
            continue;
        };
        if a > b {
            anyhow::bail!("--server-cpus: the range {g} runs backwards (write {b}-{a})");
        }
        if b > max {
            check_cpus(&[b], online)?;
        }
    }
    Ok(())
}

/// Fails unless every CPU of `want` is in `online`.
pub fn check_cpus(want: &[usize], online: &[usize]) -> Result<()> {
    if want.is_empty() {
        anyhow::bail!("--server-cpus names no CPU");
    }
    for c in want {
        if !online.contains(c) {
            anyhow::bail!(
                "--server-cpus: CPU {c} does not exist or is offline (online: {online:?})"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /proc/PID/stat line: `comm`, state, flags (field 9), nice (19),
    /// start (22), processor (39), policy (41).
    fn stat_line(
        comm: &str,
        state: char,
        flags: u64,
        nice: i32,
        cpu: usize,
        policy: u32,
    ) -> String {
        let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
        f[0] = state.to_string();
        f[9 - 3] = flags.to_string();
        f[19 - 3] = nice.to_string();
        f[22 - 3] = "4242".into();
        f[39 - 3] = cpu.to_string();
        f[41 - 3] = policy.to_string();
        format!("1234 ({comm}) {}", f.join(" "))
    }

    #[test]
    fn runnable_waiter_from_proc_stat() {
        let w = parse_runnable_waiter(&stat_line("a b) c", 'R', 0, 0, 1, 0), 1).unwrap();
        assert_eq!(
            (w.cpu, w.weight, w.kthread, w.start_ticks),
            (1, 100, 0, 4242)
        );
        // nice 19 and -20 by the kernel's ratio (sched_prio_to_weight 15 and
        // 88761 of 1024 at nice 0: 1.5 and 8668 in sched_ext's scale)
        let w = parse_runnable_waiter(&stat_line("k", 'R', 0x0020_0040, 19, 1, 0), 1).unwrap();
        assert_eq!((w.weight, w.kthread), (1, 1));
        let w = parse_runnable_waiter(&stat_line("n", 'R', 0, -20, 1, 3), 1).unwrap();
        assert!((8600..=8700).contains(&w.weight), "{}", w.weight);
        // sleeping, another CPU, RT and DEADLINE policies: not waiters here
        assert!(parse_runnable_waiter(&stat_line("s", 'S', 0, 0, 1, 0), 1).is_none());
        assert!(parse_runnable_waiter(&stat_line("o", 'R', 0, 0, 0, 0), 1).is_none());
        assert!(parse_runnable_waiter(&stat_line("f", 'R', 0, 0, 1, 1), 1).is_none());
        assert!(parse_runnable_waiter(&stat_line("d", 'R', 0, 0, 1, 6), 1).is_none());
        assert!(parse_runnable_waiter("garbage", 1).is_none());
    }

    #[test]
    fn handoff_look_only_while_starving() {
        // nothing starving: no look (a time of 0 + 100 ms lies in the past)
        assert_eq!(handoff_check_at(0), 0);
        let since = 5_000_000_000;
        assert_eq!(handoff_check_at(since), since + HANDOFF_AFTER_NS);
    }

    #[test]
    fn cpu_lists() {
        assert!(check_cpus(&[0, 1], &[0, 1, 2]).is_ok());
        let e = check_cpus(&[7], &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("CPU 7 does not exist"), "{e}");
        assert!(check_cpus(&[], &[0]).is_err());
        // ranges are checked before they are expanded
        assert!(check_cpulist_ranges("0-1,1", &[0, 1]).is_ok());
        let e = check_cpulist_ranges("0-4000000000", &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 4000000000 does not exist"), "{e}");
        let e = check_cpulist_ranges("3-1", &[0, 1, 2, 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs backwards (write 1-3)"), "{e}");
        assert!(
            check_cpulist_ranges("1-x", &[0, 1]).is_ok(),
            "left to the parser"
        );
    }
}
