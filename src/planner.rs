// SPDX-License-Identifier: GPL-2.0-only
//! The planner of one served CPU: it samples the CPU's BPF counters, steps
//! the CPU's bandwidth server (`server.rs`), picks the waiting tasks a boost
//! serves, journals each boost before it is made (`boost.rs`) and posts it
//! to the CPU's executor (`executor.rs`), or hands the CPU to SCHED_DEADLINE
//! boosts or the kernel's ext_server when no SCHED_FIFO boost can preempt
//! its hog. One planner thread per served CPU, started by the policy loop
//! (`policy.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};
use log::{debug, info, warn};

use crate::attr::{self, SchedAttr};
use crate::boost::{self, Entry, Journal};
use crate::bpf_intf::floor_waiter as BpfWaiter;
use crate::config::{BoostMode, PolicyConfig};
use crate::executor::{End, Executor, Pool, NO_CPU};
use crate::fault::{self, Fault};
use crate::knobs::{self, Knobs};
use crate::reach::{reach, Reach};
use crate::rescue::Lifeline;
use crate::sched::{agent_setup, BpfView, HiTask};
use crate::server::{
    Action, CpuServer, RestoreWhy, Sample, ServerConfig, Step, TaskNow, Waiter, MAX_BOOSTED,
};
use crate::state::journal_path;
use crate::stats::ServerRow;
use crate::sys::{
    housekeeping_into, housekeeping_of, monotonic_ns, nohz_full_cpus, online_cpus, pin_thread,
    repin_after_hotplug, sleep_until,
};

/// A boost the executor was asked to end, its restore not made yet.
struct Ending {
    tid: u32,
    /// the executor's post id
    id: u64,
    entry: Entry,
    /// its BPF boost slot
    slot: usize,
    /// the overrun booked for its end (ns) and its slot's run time then
    /// (ns): the run until the restore is added to that overrun
    booked: Option<(u64, u64)>,
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
    /// SCHED_FIFO boosts made from the planner's CPU: no executor was free
    remote: u64,
}

/// How soon a planner looks again whether it can give its executor back
/// while the executor's restores are under way, ns, and for how long it
/// keeps looking ([`Planner::return_executor`]).
const RETURN_RECHECK_NS: u64 = 5_000_000;
const RETURN_WAIT_MAX_NS: u64 = 200_000_000;

/// How long a boost posted to the executor may wait to be taken, ns.
const EXEC_TAKE_TIMEOUT_NS: u64 = 100_000_000;

/// Longest sleep of a server thread, ns: an idle server's
/// ([`crate::server::IDLE_RECHECK_NS`]). It is woken earlier by the BPF side
/// (starvation begins, a boosted task blocks, a CPU hotplug event) and by
/// the stop eventfd.
const MAX_SLEEP_NS: u64 = crate::server::IDLE_RECHECK_NS;

/// How often a planner looks whether a boosted task blocked when the BPF
/// side's wake-up for it may not come ([`Planner::block_poll_ns`]), ns: the
/// most of a blocked task's share that goes unused before the next waiter
/// is boosted. Each look reads the boost slots only (no step); they come
/// only while boosts are in place, from the planner's own CPU.
const BLOCK_POLL_NS: u64 = 1_000_000;

/// Shortest sleep of a planner after a step on the CPU it serves, ns.
const OWN_CPU_MIN_SLEEP_NS: u64 = 1_000_000;

/// When the planner of a CPU sleeps to after a step: at `next` (the
/// server's time, ns on the monotonic clock) at the latest `now` +
/// [`MAX_SLEEP_NS`]; on the CPU it serves, never before `now` +
/// [`OWN_CPU_MIN_SLEEP_NS`]. There, at SCHED_FIFO 99, it holds the CPU
/// from its executor (equal priority: no preemption) and from the tasks it
/// boosted (below it). A boost's next check is due within its share, and a
/// step under TCG (1-6 ms, with 200 waiters) outlasts a share of 1 ms: the
/// planner would step again at once, never sleep, and the boosts it posted
/// would never be made or run until the period's end emptied its list
/// (traced: 950-990 ms runs of the planner on its own CPU, the executor's
/// posts timing out, and sched_ext's watchdog ejecting scx_floor).
fn sleep_deadline(next: u64, now: u64, on_served_cpu: bool) -> u64 {
    let d = next.min(now.saturating_add(MAX_SLEEP_NS));
    if on_served_cpu {
        d.max(now.saturating_add(OWN_CPU_MIN_SLEEP_NS))
    } else {
        d
    }
}

/// Whether a BPF ring-buffer wake-up from a CPU that `hi` holds may wait
/// until `hi` leaves: irq_work runs in `irq_work/N` threads (PREEMPT_RT)
/// whose lowest RT priority is `irq_work_prio` (None: no such threads),
/// and `hi` is a SCHED_DEADLINE task or an RT task at that priority or
/// above, which the thread does not preempt. The BPF side hands such a
/// wake-up to another CPU (`server_kick()`), which needs one that runs
/// sched_ext work or is idle.
fn wake_held_up(irq_work_prio: Option<u32>, hi: HiTask) -> bool {
    irq_work_prio.is_some_and(|p| crate::reach::at_or_above(hi.policy, hi.prio, p))
}

/// Whether the calling thread runs on `cpu` now (`sched_getcpu()`).
fn on_cpu(cpu: usize) -> bool {
    // SAFETY: no arguments; returns the CPU or -1.
    let c = unsafe { libc::sched_getcpu() };
    c >= 0 && c as usize == cpu
}

/// Whether `tid` may run only on CPUs that a higher class holds now (`hi`:
/// each online CPU, and whether one holds it).
fn all_allowed_hogged(tid: u32, hi: &[(usize, bool)]) -> bool {
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
    hi.iter().all(|&(cpu, hogged)| {
        hogged || cpu >= libc::CPU_SETSIZE as usize || !unsafe { libc::CPU_ISSET(cpu, &set) }
    })
}

/// How often a planner whose CPU starves looks through /proc for runnable
/// normal tasks there that the waiters map lacks ([`runnable_on`]), ns: a
/// task lost to the map waits at most this long for its first boost.
const PROC_SCAN_EVERY_NS: u64 = 1_000_000_000;

/// How long a starvation must have lasted before a step looks through
/// /proc for lost waiters ([`scan_due`]), ns. A task the waiters map lost
/// waits behind a higher class that holds the CPU; an RT task that runs
/// for microseconds at a time (a cyclictest thread, an audio period) does
/// not, and a scan at the kick its run gives held a CPU at SCHED_FIFO 99
/// for 1-2 ms under TCG once a second per CPU.
const PROC_SCAN_MIN_STARVED_NS: u64 = 10_000_000;

/// Whether a step at `now_ns` looks through /proc for lost waiters: at most
/// every [`PROC_SCAN_EVERY_NS`] since `last_scan_ns`, while a higher class
/// holds the CPU (`hi_running`), and not inside the first
/// [`PROC_SCAN_MIN_STARVED_NS`] of a starvation (`starved_since_ns`, 0 when
/// none is open: a CPU held with nobody waiting is scanned, since a lost
/// task opens no starvation).
fn scan_due(now_ns: u64, last_scan_ns: u64, hi_running: bool, starved_since_ns: u64) -> bool {
    hi_running
        && now_ns.saturating_sub(last_scan_ns) >= PROC_SCAN_EVERY_NS
        && (starved_since_ns == 0
            || now_ns.saturating_sub(starved_since_ns) >= PROC_SCAN_MIN_STARVED_NS)
}

/// The normal tasks (SCHED_OTHER, BATCH, IDLE, EXT) that /proc shows
/// runnable (state R) on `cpu` (field 39): there they wait, as the CPU is
/// held by a higher class. As waiters (tid, entry), pinned (a task the
/// dispatcher did not move away, in a migrate-disabled section or queued on
/// the CPU, can only be served there): weight from nice (field 19) by the
/// kernel's ratio of about 1.25 per nice level (the sched_prio_to_weight
/// table, kernel/sched/core.c), scaled to 100 at nice 0 as sched_ext's
/// `p->scx.weight` is; kthread from the flags (field 9); start time (field
/// 22). The map cannot be the only source: the kernel may take a task out
/// of scx_floor's DSQs through `ops.dequeue()` (from its sched_ext_helper
/// kthread) and leave it queued on the CPU with no `ops.enqueue()`, where
/// no boost would serve it again (docs/design.md, "The bandwidth server").
///
/// Appends them to `out`. Reads /proc through stack buffers
/// ([`crate::sys::for_each_id`], [`boost::read_stat`]): nothing is
/// allocated while `out` has room.
fn runnable_on(cpu: usize, out: &mut Vec<(u32, BpfWaiter)>) {
    let mut buf = [0u8; boost::STAT_MAX];
    let _ = crate::sys::for_each_id(std::path::Path::new("/proc"), |pid| {
        // A process of one thread (most are) is read once: its /proc/PID/stat
        // is its thread's, and num_threads (field 20) says so.
        let Some(stat) = boost::read_stat(format_args!("/proc/{pid}/stat"), &mut buf) else {
            return;
        };
        if boost::stat_field(stat, 20) == Some("1") {
            if let Some(w) = parse_runnable_waiter(stat, cpu) {
                out.push((pid, w));
            }
            return;
        }
        let Some(dir) = crate::sys::StackPath::new(format_args!("/proc/{pid}/task")) else {
            return;
        };
        let _ = crate::sys::for_each_id(dir.path(), |tid| {
            let stat = boost::read_stat(format_args!("/proc/{pid}/task/{tid}/stat"), &mut buf);
            if let Some(w) = stat.and_then(|s| parse_runnable_waiter(s, cpu)) {
                out.push((tid, w));
            }
        });
    });
}

/// A /proc/PID/stat line as a waiter on `cpu` (see [`runnable_on`]), or None
/// when the task is not a runnable normal task last on `cpu`.
fn parse_runnable_waiter(stat: &str, cpu: usize) -> Option<BpfWaiter> {
    let mut f = [""; 41 - 2];
    let n = boost::stat_fields_into(stat, &mut f)?;
    let field = |k: usize| f[..n].get(k - 3).copied();
    if field(3)? != "R"
        || field(39)?.parse::<usize>().ok()? != cpu
        || !attr::is_normal_policy(field(41)?.parse().ok()?)
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
/// that the map lacks, when [`scan_due`] (`last_scan_ns`: the last scan);
/// counts them in `lost_found`. Called after a step's actions, never inside
/// the waiter look-up: a scan costs 1-2 ms under TCG, and in kernel-cut
/// mode that look-up comes at each period's zero-laxity activation.
fn scan_lost(
    cpu: usize,
    view: &BpfView,
    lost_found: &mut u64,
    last_scan_ns: &mut u64,
    sc: &mut Scratch,
) {
    let (s, hi_running, _) = view.sample(cpu);
    if !scan_due(s.now_ns, *last_scan_ns, hi_running, s.starved_since_ns) {
        return;
    }
    *last_scan_ns = s.now_ns;
    view.waiters_into(&mut sc.listed);
    sc.found.clear();
    runnable_on(cpu, &mut sc.found);
    let listed = &sc.listed;
    sc.found
        .retain(|(tid, _)| !listed.iter().any(|(t, _)| t == tid));
    if !sc.found.is_empty() {
        debug!(
            "cpu {cpu}: runnable here but not in the waiters: {:?}",
            sc.found
        );
        *lost_found += sc.found.len() as u64;
        for (tid, w) in &sc.found {
            view.add_waiter(*tid, w);
        }
    }
}

/// Buffers a planner's steps reuse, made with their room at start: a step
/// allocates nothing while they have room (docs/design.md, "One malloc
/// arena").
struct Scratch {
    /// every entry of the BPF waiters map
    listed: Vec<(u32, BpfWaiter)>,
    /// runnable tasks /proc shows on the CPU
    found: Vec<(u32, BpfWaiter)>,
    /// each online CPU, and whether a higher class holds it
    hi: Vec<(usize, bool)>,
    /// this CPU's waiters with their order: (kernel thread last, waiting
    /// since), oldest first
    mine: Vec<((bool, u64), Waiter)>,
    /// the start time (clock ticks) of each waiter a step listed, for the
    /// journal
    starts: HashMap<u32, u64>,
}

impl Scratch {
    fn new() -> Self {
        let n = crate::server::WAITERS_INLINE;
        Scratch {
            listed: Vec::with_capacity(n),
            found: Vec::with_capacity(n),
            hi: Vec::with_capacity(crate::bpf_intf::floor_consts_FLOOR_MAX_CPUS as usize),
            mine: Vec::with_capacity(n),
            starts: HashMap::with_capacity(n),
        }
    }
}

/// Appends to `out` the tasks starving on `cpu` (the waiters map, see
/// [`scan_lost`]), oldest first; their start times (clock ticks) go into
/// `sc.starts`. `online`: the CPUs online. `boosting`: the server has tasks
/// boosted on `cpu` and more waiting for their turn, so the CPU counts as
/// held by a higher class even while a boosted task runs (the BPF side
/// counts boosted runs as normal runs, not as the higher class's).
fn waiters_of(
    cpu: usize,
    view: &BpfView,
    online: &[usize],
    boosting: bool,
    sc: &mut Scratch,
    out: &mut Vec<Waiter>,
) {
    // Another CPU held by a higher class, or running a boost of its own
    // server (between its boosts the RT task holds it again): a sched_ext
    // task can run on neither. Counted as free, a CPU whose boost ran at
    // this step left an unbound task (a workqueue's kworker) to "the
    // dispatcher" of a CPU it could not run on, at every step of both
    // servers whose boosts overlap: under RT hogs on every CPU, sched_ext's
    // own watchdog work starved for 10 s and the kernel ejected scx_floor
    // (docs/design.md, Decisions: "A CPU running a boost is not free").
    // This CPU's own boost is not a reason to list its waiters (they are
    // listed again when the RT task takes the CPU back): listed at every
    // step while it ran, 40 tasks pinned under an RR hog cost the hog
    // 20-45 ms/s of server steps and left tasks unserved for 8 s (t_many).
    sc.hi.clear();
    sc.hi.extend(online.iter().map(|&c| {
        let (s, hi_running, _) = view.sample(c);
        let boost_runs = if c == cpu {
            boosting
        } else {
            s.boost_since_ns != 0
        };
        (c, hi_running || boost_runs)
    }));
    if !sc.hi.iter().any(|&(c, hogged)| c == cpu && hogged) {
        return;
    }
    view.waiters_into(&mut sc.listed);
    // Kernel threads first (a per-CPU kworker or ksoftirqd that waits
    // behind dozens of user tasks delays RCU callbacks and workqueues for
    // the whole machine; not measured to matter yet), then the longest
    // waiting.
    sc.mine.clear();
    for &(tid, w) in &sc.listed {
        if w.cpu as usize != cpu {
            continue;
        }
        if w.pinned == 0 && !all_allowed_hogged(tid, &sc.hi) {
            continue; // it can run elsewhere: the dispatcher moves it
        }
        sc.starts.insert(tid, w.start_ticks);
        sc.mine.push((
            (w.kthread == 0, w.since_ns),
            Waiter {
                pid: tid,
                weight: w.weight,
            },
        ));
    }
    // keys are unique (the pid): an unstable sort, which allocates nothing
    sc.mine.sort_unstable_by_key(|(since, w)| (*since, w.pid));
    out.extend(sc.mine.iter().map(|(_, w)| *w));
}

/// Restores `tid` (journal entry `e`) from this thread if it still has its
/// boost's attributes (a sleeping SCHED_DEADLINE boost gives its bandwidth
/// back first, see [`boost::unboost`]). Nothing to do when it is back at its
/// own policy already (the executor's restore); [`boost::ERR_CHANGED`] when
/// it is at neither ([`boost::is_boost_of`]).
fn restore_here(tid: u32, e: &Entry) -> std::io::Result<()> {
    let now = attr::get_attr(tid)?;
    if boost::restore_due(&now, &e.boost, &e.saved)? {
        boost::unboost(tid, &e.saved, &now)
    } else {
        Ok(())
    }
}

/// A boost's parameters in a log line (formatted without allocating).
struct BoostDesc<'a>(&'a SchedAttr);

impl std::fmt::Display for BoostDesc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let b = self.0;
        if b.sched_policy == attr::SCHED_DEADLINE {
            write!(
                f,
                "runtime {} ns, period {} ns",
                b.sched_runtime, b.sched_period
            )
        } else {
            write!(f, "priority {}", b.sched_priority)
        }
    }
}

/// A task's policy and priority as read now, or the read's error, in a log
/// line.
struct AttrsNow(std::io::Result<SchedAttr>);

impl std::fmt::Display for AttrsNow {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match &self.0 {
            Ok(a) => write!(
                f,
                "policy {}, priority {}",
                a.sched_policy, a.sched_priority
            ),
            Err(e) => write!(f, "{}", crate::sys::OsError(e)),
        }
    }
}

/// An RT or DL task's policy in a log line: "SCHED_FIFO 50".
struct HiPolicy(HiTask);

impl std::fmt::Display for HiPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.0.policy {
            attr::SCHED_DEADLINE => write!(f, "SCHED_DEADLINE"),
            attr::SCHED_RR => write!(f, "SCHED_RR {}", self.0.prio),
            _ => write!(f, "SCHED_FIFO {}", self.0.prio),
        }
    }
}

/// The server of one CPU and what it changed; lives in that CPU's planner
/// thread.
struct Planner<'v> {
    cpu: usize,
    view: &'v BpfView,
    mode: BoostMode,
    server: CpuServer,
    counts: BoostCounts,
    hi_prio: u32,
    /// the CPU's last higher-class task, as the last step sampled it
    hi_last: HiTask,
    /// the lowest RT priority of the `irq_work/N` threads (PREEMPT_RT;
    /// None: irq_work runs in hard IRQ context): see [`Planner::block_poll_ns`]
    irq_work_prio: Option<u32>,
    journal: Journal,
    /// boosted tid -> (its journal entry, its BPF slot)
    boosted: HashMap<u32, (Entry, usize)>,
    free_slots: Vec<usize>,
    /// CPUs online, re-read after each CPU hotplug event (room for
    /// `nr_cpu_ids`: re-read without allocating)
    online: Vec<usize>,
    /// the CPUs booted `nohz_full=`, read at start (fixed at boot)
    nohz_full: Vec<usize>,
    /// the housekeeping CPUs among `online`, where the planner may run
    /// (room for `nr_cpu_ids`)
    housekeeping: Vec<usize>,
    /// the last step asked for a second look at once (see `step`)
    looked_again: bool,
    /// the last look through /proc for waiters the map lacks, ns
    last_scan_ns: u64,
    /// the executors that make SCHED_FIFO boosts on the served CPUs
    /// themselves (None: in DEADLINE-only mode, where the kernel ends
    /// boosts: `--boost deadline`)
    pool: Option<&'v Pool>,
    /// the executor leased from `pool`, pinned to this CPU
    lease: Option<usize>,
    /// every executor was leased at a boost, logged (once)
    warned_no_exec: bool,
    /// since when only the executor's restores keep it leased (ns; 0: not
    /// so)
    return_wait_since_ns: u64,
    /// boosted tid -> the executor's post id, for boosts the executor made
    exec_ids: HashMap<u32, u64>,
    /// posts whose system call has not been seen yet: (tid, id, posted at ns)
    posted: Vec<(u32, u64, u64)>,
    /// posts the executor was asked to end
    ending: Vec<Ending>,
    /// `posted` and `ending` as a step goes through them: swapped with
    /// those, so that neither is made anew (nothing allocated)
    posted_spare: Vec<(u32, u64, u64)>,
    ending_spare: Vec<Ending>,
    /// buffers a step reuses
    scratch: Scratch,
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
pub struct ExtHandoff<'k> {
    /// None: left as it was (`--kernel-server keep`), it serves with its
    /// own runtime and period and is not written
    knobs: Option<&'k Knobs>,
    runtime: PathBuf,
    period: PathBuf,
}

/// What the planners may do with the kernel's ext_server.
#[derive(Clone, Copy, Debug)]
pub enum ExtServer<'k> {
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

/// `v` with room for `n` elements in all (for lists refilled in place).
fn with_room(mut v: Vec<usize>, n: usize) -> Vec<usize> {
    v.reserve(n.saturating_sub(v.len()));
    v
}

/// When to look again whether a CPU held by a task no boost can preempt is
/// to be handed over (monotonic ns; 0: no look needed): [`HANDOFF_AFTER_NS`]
/// after the starvation began, and only while one is open (`starved_since_ns`
/// != 0). Without one there is nothing to hand over, and the time would lie
/// in the past: the planner, at SCHED_FIFO 99, would step back to back for
/// as long as such a task is seen on its CPU, and starve what else waits
/// there (docs/design.md, Decisions: "The hand-off look only while a
/// starvation is open").
fn handoff_check_at(starved_since_ns: u64) -> u64 {
    if starved_since_ns == 0 {
        0
    } else {
        starved_since_ns + HANDOFF_AFTER_NS
    }
}

impl<'v> Planner<'v> {
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
            attr::deadline_attr(budget_ns, deadline_ns)
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
        let exec = if kind_dl { None } else { self.lease_executor() };
        let res = if kind_dl {
            boost::make_boost(tid, &attr)
        } else {
            match exec {
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
                None => {
                    self.warn_no_executor_once();
                    let r = boost::make_boost(tid, &attr);
                    if r.is_ok() {
                        self.counts.remote += 1;
                    }
                    r
                }
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

    /// Gives `tid` its own policy back; `booked` is the overrun the server
    /// booked for its end and the slot's run time it was taken from, ns
    /// (None: it blocked, or it is not the server's end).
    fn restore(&mut self, tid: u32, booked: Option<(u64, u64)>) {
        if let Some((e, slot)) = self.boosted.remove(&tid) {
            // A boost of the executor is ended there (at once if it is not
            // over yet); the rest is done when its result is in.
            let post = self.exec().zip(self.exec_ids.remove(&tid));
            let res = match post.map_or(End::Unknown, |(ex, id)| ex.end(id)) {
                End::Done(r) => r,
                End::Pending => {
                    let id = post.map_or(0, |(_, id)| id);
                    self.posted.retain(|p| p.1 != id);
                    self.ending.push(Ending {
                        tid,
                        id,
                        entry: e,
                        slot,
                        booked,
                    });
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
                info!(
                    "cpu {}: task {tid} was given other scheduling attributes during its boost (policy {}, {}; {} now): left as they are",
                    self.cpu,
                    boost.sched_policy,
                    BoostDesc(boost),
                    AttrsNow(attr::get_attr(tid))
                );
                false
            }
            Err(err) => {
                // Keep the journal record: the exit path (or the guardian)
                // replays it. The slot stays taken.
                let err = crate::sys::OsError(&err);
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
        let Some(ex) = self.exec() else { return };
        let now = monotonic_ns();
        // go through the posts, keeping the pending ones in the spare list
        std::mem::swap(&mut self.posted, &mut self.posted_spare);
        let mut posted = std::mem::take(&mut self.posted_spare);
        for (tid, id, at) in posted.drain(..) {
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
                debug!(
                    "cpu {}: boost of {tid} failed: {}",
                    self.cpu,
                    crate::sys::OsError(&e)
                );
                self.exec_ids.remove(&tid);
                if let Some((_, slot)) = self.boosted.remove(&tid) {
                    self.view.boosted_del(tid);
                    self.journal.forget(slot);
                    self.free_slots.push(slot);
                }
                self.counts.fifo = self.counts.fifo.saturating_sub(1);
                self.counts.failed += 1;
                if e.raw_os_error() == Some(libc::ETIMEDOUT) {
                    // withdrawn, never made: the task still waits, in the
                    // waiters map, and keeps its turn
                    self.server.boost_missed(tid);
                } else {
                    self.view.forget_waiter(tid);
                    self.server.drop_boost(tid);
                }
            }
        }
        self.posted_spare = posted;
        std::mem::swap(&mut self.ending, &mut self.ending_spare);
        let mut ending = std::mem::take(&mut self.ending_spare);
        for end in ending.drain(..) {
            match ex.take_ended(end.id) {
                Some(r) => {
                    let _ = ex.take_started(end.id);
                    // the run until the executor's restore, as BPF counted it
                    let (spid, ran_ns, _) = self.view.slot(end.slot);
                    if let (Some((over, then)), true) = (end.booked, spid == end.tid) {
                        self.server.overran_more(over, ran_ns.saturating_sub(then));
                    }
                    self.restored(end.tid, end.slot, &end.entry.boost, r)
                }
                None => self.ending.push(end),
            }
        }
        self.ending_spare = ending;
    }

    /// The executor leased to this CPU, if any.
    fn exec(&self) -> Option<&'v Executor> {
        self.pool.zip(self.lease).map(|(p, i)| p.get(i))
    }

    /// The executor to post a SCHED_FIFO boost to: the one leased, or a free
    /// one of the pool, pinned to this CPU now unless it was pinned here
    /// last (None: every one is leased, or there is no pool). Nothing
    /// allocated: a compare-and-swap, and at most one `sched_setaffinity()`
    /// of a sleeping thread.
    fn lease_executor(&mut self) -> Option<&'v Executor> {
        let pool = self.pool?;
        if self.lease.is_none() {
            let i = pool.lease(self.cpu)?;
            if pool.pinned_to(i) != self.cpu {
                let tid = pool.get(i).tid.load(Ordering::Relaxed);
                if let Err(e) = pin_thread(tid, &[self.cpu]) {
                    if !self.warned_no_exec {
                        self.warned_no_exec = true;
                        // an errno, not the error's text: that allocates
                        warn!(
                            "cpu {}: pinning executor thread {tid} here failed (errno {}): \
                             boosts here are made from this CPU's planner",
                            self.cpu,
                            e.raw_os_error().unwrap_or(0)
                        );
                    }
                    pool.set_pinned(i, NO_CPU);
                    pool.give_back(i, self.cpu);
                    return None;
                }
                pool.set_pinned(i, self.cpu);
            }
            self.lease = Some(i);
        }
        self.exec()
    }

    /// Gives the leased executor back to the pool once nothing of this CPU
    /// is left there: no boost it made or was posted, no result to take.
    /// It stays pinned here, asleep, until a planner leases it; this CPU's
    /// next boost takes it back without a system call while it is free.
    /// Returns when to look again (monotonic ns) while only the executor's
    /// restores keep it (a boost just ended, as at a CPU going offline):
    /// every [`RETURN_RECHECK_NS`], for at most [`RETURN_WAIT_MAX_NS`]. The
    /// next step may be a period away, and the executor never wakes the
    /// planner.
    fn return_executor(&mut self) -> Option<u64> {
        let (Some(pool), Some(i)) = (self.pool, self.lease) else {
            return None;
        };
        // restores the executor made since the step: booked now
        self.settle();
        let nothing_here = self.exec_ids.is_empty() && self.posted.is_empty();
        if nothing_here && self.ending.is_empty() && pool.give_back(i, self.cpu) {
            self.lease = None;
            self.return_wait_since_ns = 0;
            return None;
        }
        if !nothing_here || self.ending.is_empty() {
            self.return_wait_since_ns = 0;
            return None;
        }
        let now = monotonic_ns();
        if self.return_wait_since_ns == 0 {
            self.return_wait_since_ns = now;
        }
        (now - self.return_wait_since_ns < RETURN_WAIT_MAX_NS).then_some(now + RETURN_RECHECK_NS)
    }

    /// Logs, once, that this CPU's boosts are made from its planner: every
    /// executor was leased (or one could not be pinned here, logged
    /// instead).
    fn warn_no_executor_once(&mut self) {
        if self.warned_no_exec || self.pool.is_none() {
            return;
        }
        self.warned_no_exec = true;
        warn!(
            "cpu {}: every executor is serving another CPU: SCHED_FIFO boosts here are made \
             from this CPU's planner and end at its wake-up, later than an executor's local \
             timer ends them (boosts_remote in --stats; more executors: --executors)",
            self.cpu
        );
    }

    fn restore_all(&mut self) {
        self.end_boosts();
        if let Some(ex) = self.exec() {
            ex.stop(true);
            self.settle();
        }
        // An executor that could not run in 2 s: restore from here.
        for end in std::mem::take(&mut self.ending) {
            let r = restore_here(end.tid, &end.entry);
            self.restored(end.tid, end.slot, &end.entry.boost, r);
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
        let tids: smallvec::SmallVec<[u32; MAX_BOOSTED]> = self.boosted.keys().copied().collect();
        for tid in tids {
            self.restore(tid, None);
        }
    }

    /// Steps the server once; returns when to step again (ns).
    fn step(&mut self) -> u64 {
        self.settle();
        let (s, hi_running, hi) = self.view.sample(self.cpu);
        if hi.policy == attr::SCHED_FIFO || hi.policy == attr::SCHED_RR {
            self.hi_prio = hi.prio;
        }
        self.hi_last = hi;
        if let Some(next) = self.hand_off(&s, hi_running, hi) {
            return next;
        }
        self.scratch.starts.clear();
        let st = self.step_server(&s);
        let again = self.look_again(&s);
        self.carry_out(&st.actions, &s);
        if let Some(ex) = self.exec() {
            for a in self.server.active() {
                if let Some(id) = self.exec_ids.get(&a.pid) {
                    ex.set_limit(*id, a.base_ns + a.share_ns);
                }
            }
        }
        scan_lost(
            self.cpu,
            self.view,
            &mut self.counts.lost_found,
            &mut self.last_scan_ns,
            &mut self.scratch,
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

    /// Steps the server on sample `s`, telling it each boosted task's run
    /// time from its BPF slot and, when it asks, the waiters (their start
    /// times go to `scratch.starts`, for the journal).
    fn step_server(&mut self, s: &Sample) -> Step {
        let (cpu, view) = (self.cpu, self.view);
        let (boosted, exec, ids) = (&self.boosted, self.exec(), &self.exec_ids);
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
        let boosting = self.server.taking_turns() && !self.boosted.is_empty();
        self.server.set_unsettled_slots(
            MAX_BOOSTED.saturating_sub(self.free_slots.len() + self.boosted.len()),
        );
        let sc = &mut self.scratch;
        let st = self.server.step_into(s, task, |out| {
            waiters_of(cpu, view, online, boosting, sc, out)
        });
        if self.server.started() != was_started
            || (was_started && self.server.period_end_ns() != was_end)
        {
            debug!("cpu {cpu}: t={:.3} server {} period ends {:.3}, delivered {:.3} ms (last period {:.3}, boosted {:.3}), debt {:.3} ms, starved since {:.3}",
                   s.now_ns as f64 / 1e6, if self.server.started() { "serving" } else { "idle" },
                   self.server.period_end_ns() as f64 / 1e6, self.server.delivered_ns(s) as f64 / 1e6, self.server.stats.last_period_delivered_ns as f64 / 1e6,
                   self.server.stats.last_period_boosted_ns as f64 / 1e6, self.server.debt_ns() as f64 / 1e6, s.starved_since_ns as f64 / 1e6);
        }
        st
    }

    /// Arms the BPF side's kick for the next starvation, and says whether
    /// to look again at once: a starvation that began after the sample and
    /// before the kick was armed kicked nobody (BPF kicks only when it opens
    /// one). At most one such look per wake-up, and only for a starvation
    /// open now: an RT task that sleeps and wakes every millisecond would
    /// otherwise keep a thread placed off the served CPU (kernel-cut mode)
    /// stepping back to back.
    fn look_again(&mut self, s: &Sample) -> bool {
        let mut again = false;
        if self.server.wants_starve_kick(s) {
            self.view.arm_starve_kick(self.cpu);
            let since = self.view.sample(self.cpu).0.starved_since_ns;
            again = !self.looked_again && since != 0 && since != s.starved_since_ns;
        }
        self.looked_again = again;
        again
    }

    /// Carries out a step's actions, restores first: the slot of a boost the
    /// executor already cut is free once its restore is booked, for a boost
    /// of this step. A boost that fails is counted and forgotten.
    fn carry_out(&mut self, actions: &[Action], s: &Sample) {
        let cpu = self.cpu;
        let is_restore = |a: &&Action| matches!(a, Action::Restore { .. });
        let restores = actions.iter().filter(is_restore);
        let boosts = actions.iter().filter(|a| !is_restore(a));
        for &a in restores.chain(boosts) {
            match a {
                Action::Boost {
                    pid,
                    budget_ns,
                    deadline_ns,
                } => {
                    debug!("cpu {cpu}: t={:.3} boost {pid}, share {:.3} ms, owed {:.3} ms, period ends in {:.3} ms",
                           s.now_ns as f64 / 1e6, budget_ns as f64 / 1e6, self.server.owed_ns(s) as f64 / 1e6,
                           (self.server.period_end_ns() as f64 - s.now_ns as f64) / 1e6);
                    let start = self.scratch.starts.get(&pid).copied();
                    if let Err(e) = self.boost(pid, budget_ns, deadline_ns, start) {
                        debug!("cpu {cpu}: boost of {pid} failed: {e:#}");
                        self.view.forget_waiter(pid);
                        self.counts.failed += 1;
                        self.server.drop_boost(pid);
                    }
                }
                Action::Restore {
                    pid,
                    why,
                    over_ns,
                    ran_ns,
                } => {
                    debug!(
                        "cpu {cpu}: t={:.3} restore {pid} ({why:?})",
                        s.now_ns as f64 / 1e6
                    );
                    self.restore(
                        pid,
                        (why != RestoreWhy::Blocked).then_some((over_ns, ran_ns)),
                    );
                }
            }
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
        // read into a stack buffer: the line is formatted without allocating
        let mut buf = [0u8; 64];
        let comm = crate::sys::read_path(format_args!("/proc/{}/comm", hi.pid), &mut buf)
            .and_then(|t| std::str::from_utf8(t).ok())
            .map_or("?", str::trim);
        let (cpu, pid, what, most) = (self.cpu, hi.pid, HiPolicy(hi), boost::MAX_BOOST_PRIO);
        match r {
            Reach::Deadline => info!(
                "cpu {cpu}: task {pid} ({comm}) at {what} holds the CPU above every SCHED_FIFO \
                 boost of scx_floor (at most {most}): SCHED_DEADLINE boosts serve the CPU while it runs \
                 (kernel.sched_rt_runtime_us is -1)"
            ),
            Reach::ExtServer => warn!(
                "cpu {cpu}: task {pid} ({comm}) at {what} holds the CPU above every SCHED_FIFO \
                 boost of scx_floor (at most {most}); SCHED_DEADLINE is refused for tasks pinned there while \
                 kernel.sched_rt_runtime_us >= 0: the kernel's ext_server serves the CPU instead \
                 while it runs (its budget ends at the tick); {}",
                crate::reach::remedy()
            ),
            _ => warn!(
                "cpu {cpu}: task {pid} ({comm}) at {what} holds the CPU above every SCHED_FIFO \
                 boost of scx_floor (at most {most}); SCHED_DEADLINE is refused for tasks pinned there while \
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
        self.end_boosts();
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
        self.server.reset_idle(cfg, s);
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
            let mut buf = [0u8; 20];
            k.set(&ext.period, crate::sys::decimal(c.period_ns, &mut buf))?;
            k.set(&ext.runtime, crate::sys::decimal(c.runtime_ns, &mut buf))
        } else {
            k.set(&ext.runtime, "0")
        }
    }

    /// The ext_server's runtime now, ns, read into a stack buffer (each
    /// step while it serves).
    fn ext_server_runtime_now(&self) -> Option<u64> {
        let ext = self.ext.as_ref().filter(|e| e.knobs.is_some())?;
        let mut buf = [0u8; 32];
        let n = crate::sys::read_into(&ext.runtime, &mut buf).ok()?;
        std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
    }

    /// How often to look whether a boosted task blocked, while boosts are
    /// in place and the BPF side's wake-up for it may not come (ns; None:
    /// it comes). The switch hook marks the slot blocked at once, on the
    /// served CPU, but its wake-up is a BPF ring buffer's irq_work, queued
    /// on that CPU. On PREEMPT_RT `irq_work/N` runs it, at SCHED_FIFO
    /// [`boost::RAISE_PRIO`]; an RT task at that priority (or a
    /// SCHED_DEADLINE task) that the CPU goes back to when the boosted task
    /// blocks keeps it from running: a SCHED_FIFO hog of equal priority is
    /// not preempted. The wake-up then came only at the boost's timed end,
    /// and the share the blocked task left went unused: a `mm_percpu_wq`
    /// worker boosted first with the whole budget blocked after 0.3-0.5 ms,
    /// and the CPU's normal task got 18-19 of its 50 ms in that period
    /// (`t_fifo99`, kernel-cut mode, 7.3.4-rt).
    fn block_poll_ns(&self) -> Option<u64> {
        (wake_held_up(self.irq_work_prio, self.hi_last)
            && self.server.started()
            && !self.boosted.is_empty())
        .then_some(BLOCK_POLL_NS)
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
            boosts_remote: self.counts.remote,
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
            by: std::borrow::Cow::Borrowed(self.reach.name()),
            lost_found: self.counts.lost_found,
            slots_full: s.slots_full,
            waiters_dropped: self.view.waiters_dropped(self.cpu),
            tasks: s.last_period_tasks,
            min_share_ms: s.last_period_min_share_ns as f64 / 1e6,
            period_boosted_max_ms: s.max_period_boosted_ns as f64 / 1e6,
        }
    }
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
/// 1-6 ms under TCG, which on the served CPU would be the RT task's longest
/// gaps (S0). An executor of `pool` (`executor.rs`), leased at the CPU's
/// first SCHED_FIFO boost and pinned to it, makes the boosts there and ends
/// them by a local timer. With `--boost deadline` the kernel ends boosts
/// and no executor is leased.
#[allow(clippy::too_many_arguments)]
pub fn serve_cpu(
    cpu: usize,
    view: &BpfView,
    cfg: &PolicyConfig,
    sc: ServerConfig,
    stop: &AtomicBool,
    stop_fd: i32,
    report: &Mutex<ServerRow>,
    ext: ExtServer,
    dl_ok: bool,
    life: &Lifeline,
    pool: &Pool,
) -> Result<()> {
    let online = online_cpus()?;
    agent_setup(view, &housekeeping_of(&online, &nohz_full_cpus()))?;
    if (fault::is(Fault::StuckPlanner) || fault::is(Fault::StuckNoRescue))
        && cfg.cpus.first() == Some(&cpu)
    {
        if let Some(&to) = online.iter().rev().find(|&&c| c != cpu) {
            pin_thread(0, &[to])?;
            warn!("test fault: CPU {cpu}'s planner runs only on CPU {to}");
        }
    }
    let p = PlannerArgs {
        view,
        cfg,
        sc,
        pool: (cfg.boost_mode != BoostMode::Deadline).then_some(pool),
        online,
        ext,
        dl_ok,
    };
    plan_cpu(cpu, p, stop, stop_fd, report, life)
}

/// What a planner is started with, besides its CPU.
struct PlannerArgs<'v> {
    view: &'v BpfView,
    cfg: &'v PolicyConfig,
    sc: ServerConfig,
    /// None with `--boost deadline`
    pool: Option<&'v Pool>,
    online: Vec<usize>,
    ext: ExtServer<'v>,
    /// SCHED_DEADLINE boosts are admitted for pinned tasks
    dl_ok: bool,
}

impl<'v> Planner<'v> {
    /// The planner of `cpu`, its server idle. Errors: the journal cannot be
    /// opened.
    fn new(cpu: usize, p: PlannerArgs<'v>) -> Result<Self> {
        let forced_deadline = p.cfg.boost_mode == BoostMode::Deadline;
        let nr_cpu_ids = *scx_utils::NR_CPU_IDS;
        let ext_dir = std::path::Path::new(knobs::EXT_SERVER_DIR);
        let (s, _, _) = p.view.sample(cpu);
        let server_cfg = if forced_deadline && p.dl_ok {
            p.sc.kernel_cut()
        } else {
            p.sc
        };
        Ok(Planner {
            cpu,
            view: p.view,
            mode: p.cfg.boost_mode,
            server: CpuServer::idle(server_cfg, &s),
            counts: BoostCounts::default(),
            hi_prio: 0,
            hi_last: HiTask::default(),
            irq_work_prio: p.cfg.irq_work_prio,
            journal: Journal::open(&journal_path(&p.cfg.state_dir))?,
            boosted: HashMap::with_capacity(2 * MAX_BOOSTED),
            free_slots: (0..MAX_BOOSTED)
                .rev()
                .map(|i| cpu * MAX_BOOSTED + i)
                .collect(),
            online: with_room(p.online, nr_cpu_ids),
            nohz_full: nohz_full_cpus(),
            housekeeping: Vec::with_capacity(nr_cpu_ids),
            looked_again: false,
            last_scan_ns: 0,
            pool: p.pool,
            lease: None,
            warned_no_exec: false,
            return_wait_since_ns: 0,
            // room for every slot of the CPU, and as many tombstones
            exec_ids: HashMap::with_capacity(2 * MAX_BOOSTED),
            posted: Vec::with_capacity(MAX_BOOSTED),
            ending: Vec::with_capacity(MAX_BOOSTED),
            posted_spare: Vec::with_capacity(MAX_BOOSTED),
            ending_spare: Vec::with_capacity(MAX_BOOSTED),
            scratch: Scratch::new(),
            ext: match p.ext {
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
            fifo_cfg: p.sc,
            base_mode: p.cfg.boost_mode,
            dl_ok: p.dl_ok,
            forced_deadline,
        })
    }

    /// Warms up the paths a step takes (the BPF map lookup, /proc, the
    /// journal pages, sched_*attr): their first call costs milliseconds in
    /// a VM (cold page cache, first faults), and the first activation must
    /// not.
    fn warm_up(&mut self) {
        let mut ws = Vec::new();
        waiters_of(
            self.cpu,
            self.view,
            &self.online,
            false,
            &mut self.scratch,
            &mut ws,
        );
        self.scratch.found.clear();
        runnable_on(self.cpu, &mut self.scratch.found);
        self.scratch.found.clear();
        self.scratch.starts.clear();
        // SAFETY: plain syscall.
        let _ = boost::stat_of(unsafe { libc::gettid() } as u32);
        let _ = attr::get_attr(0);
        let _ = self.journal.entries();
    }

    /// After a CPU hotplug event: reads the online CPUs again, lets the
    /// planner run on any online housekeeping CPU (a new one included), and
    /// pins the executor back to its CPU. The online set is re-read only
    /// then: a sysfs read costs milliseconds under TCG, and once per period
    /// it would delay the activation step past the period's end
    /// (docs/design.md, Decisions: "The online CPUs are re-read only after
    /// a hotplug event").
    /// Allocates nothing (the online set is read into `online`'s room;
    /// on a read error it stays as it was).
    fn follow_hotplug(&mut self) {
        let _ = self.view.online_cpus_into(&mut self.online);
        housekeeping_into(&self.online, &self.nohz_full, &mut self.housekeeping);
        if let Err(e) = pin_thread(0, &self.housekeeping) {
            let e = crate::sys::OsError(&e);
            warn!(
                "CPU {}'s planner: pinning to CPUs {:?}: {e}",
                self.cpu, self.housekeeping
            );
        }
        if let Some(pool) = self.pool {
            pool.forget_pins();
        }
        if let (Some(pool), Some(i)) = (self.pool, self.lease) {
            let tid = pool.get(i).tid.load(Ordering::Relaxed);
            if tid != 0 && repin_after_hotplug(tid, self.cpu, &self.online) {
                pool.set_pinned(i, self.cpu);
            }
        }
    }

    /// Publishes this planner's row for `--stats`, if the main thread is
    /// not reading it now (never blocks).
    fn publish(&self, report: &Mutex<ServerRow>) {
        if let Ok(mut r) = report.try_lock() {
            *r = self.row();
        }
    }
}

/// The planner's loop (see [`serve_cpu`]): steps the server at the times
/// it asks for and when the BPF side wakes it (a starvation begins, a
/// boosted task blocks, a CPU hotplug event), until `stop` or ejection;
/// then restores what it boosted.
fn plan_cpu(
    cpu: usize,
    p: PlannerArgs,
    stop: &AtomicBool,
    stop_fd: i32,
    report: &Mutex<ServerRow>,
    life: &Lifeline,
) -> Result<()> {
    let view = p.view;
    let mut a = Planner::new(cpu, p)?;
    a.warm_up();
    let wake = view.wake_ringbuf(cpu)?;
    let mut rb = libbpf_rs::RingBufferBuilder::new();
    rb.add(&wake, |_| 0)?;
    let rb = rb.build()?;
    let mut hotplug_seen = view.cpu_hotplug_events();
    let mut parked = false;
    // Where the test fault's planner goes once freed: read now, as the
    // loop allocates nothing while it serves (parsing a CPU list takes
    // about 900 allocator calls, and one of them waiting on the arena lock
    // held by a preempted normal thread blocks the planner).
    let unstuck = if fault::is(Fault::StuckPlanner) {
        housekeeping_of(&a.online, &a.nohz_full)
    } else {
        Vec::new()
    };
    life.start();
    let _end = crate::rescue::EndOnDrop(life);
    crate::rtalloc::serving(true);
    // Every sleep tells the watchdog when the planner is due (rescue.rs).
    let sleep = |until: u64, fds: &[i32; 2]| {
        if life.asleep(until) && !unstuck.is_empty() {
            let _ = pin_thread(0, &unstuck);
        }
        let woken = sleep_until(until, fds);
        life.awake();
        woken
    };
    while !stop.load(Ordering::Relaxed) && !view.exited() {
        let t0 = monotonic_ns();
        let hp = view.cpu_hotplug_events();
        if hp != hotplug_seen {
            hotplug_seen = hp;
            a.follow_hotplug();
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
            // books the executor's results (settle()) and gives it back
            let recheck = a.return_executor();
            a.publish(report);
            let until = recheck.unwrap_or_else(|| monotonic_ns() + MAX_SLEEP_NS);
            if sleep(until, &[rb.epoll_fd(), stop_fd]) {
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
        let mut recheck = a.return_executor();
        a.publish(report);
        let mut deadline = sleep_deadline(next, monotonic_ns(), on_cpu(cpu));
        let poll = a.block_poll_ns();
        loop {
            let poll_at = poll.map(|p| monotonic_ns().saturating_add(p));
            let until = [Some(deadline), recheck, poll_at]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(deadline);
            if sleep(until, &[rb.epoll_fd(), stop_fd]) {
                let _ = rb.consume();
                // A boosted task blocked. While another boosted task can
                // run, the kernel has already handed it the CPU: the share
                // of the one that blocked is redistributed at the next timed
                // step. Only when none can run is a step needed now (to
                // boost the next waiters).
                if !a.server.started() || !a.any_boost_runnable() {
                    break;
                }
                deadline = deadline.max(monotonic_ns());
                continue;
            }
            let now = monotonic_ns();
            if now >= deadline {
                break;
            } else if recheck.is_some_and(|r| now >= r) {
                // the executor's restores are in: give it back, no step
                recheck = a.return_executor();
            } else if poll_at.is_some_and(|p| now >= p) {
                if !a.any_boost_runnable() {
                    // a boosted task blocked, its wake-up held up (see
                    // Planner::block_poll_ns): step now, to boost the next
                    break;
                }
            } else {
                // the stop, or a signal: the outer loop looks
                break;
            }
        }
    }
    crate::rtalloc::serving(false);
    // the exit's restores at SCHED_FIFO 99, not a rescue's 10% of a CPU
    life.back_from_rescue();
    life.awake();
    a.restore_all();
    *report.lock().unwrap_or_else(|e| e.into_inner()) = a.row();
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
    fn the_proc_scan_waits_out_a_young_starvation() {
        const MS: u64 = 1_000_000;
        let t = 10_000 * MS;
        // held for 2 s with a task waiting: due once a second
        assert!(scan_due(t, t - 1_000 * MS, true, t - 2_000 * MS));
        assert!(!scan_due(t, t - 999 * MS, true, t - 2_000 * MS));
        // not held: never
        assert!(!scan_due(t, 0, false, t - 2_000 * MS));
        // the kick of a starvation 50 us old (a short RT run): not yet
        assert!(!scan_due(t, 0, true, t - MS / 20));
        assert!(!scan_due(t, 0, true, t - 9 * MS));
        assert!(scan_due(t, 0, true, t - 10 * MS));
        // held with nobody seen waiting: a lost task opens no starvation
        assert!(scan_due(t, 0, true, 0));
        // a starvation stamped after the sample's clock: not yet
        assert!(!scan_due(t, 0, true, t + MS));
    }

    #[test]
    fn a_planner_on_its_own_cpu_always_sleeps() {
        const MS: u64 = 1_000_000;
        // a check already due: elsewhere at once, on its own CPU 1 ms on
        assert_eq!(sleep_deadline(5 * MS, 7 * MS, false), 5 * MS);
        assert_eq!(sleep_deadline(5 * MS, 7 * MS, true), 8 * MS);
        // a later one is kept either way; MAX_SLEEP_NS caps both
        assert_eq!(sleep_deadline(20 * MS, 7 * MS, true), 20 * MS);
        let far = u64::MAX;
        assert_eq!(sleep_deadline(far, 7 * MS, true), 7 * MS + MAX_SLEEP_NS);
        assert_eq!(sleep_deadline(far, 7 * MS, false), 7 * MS + MAX_SLEEP_NS);
    }

    #[test]
    fn wake_held_up_only_behind_irq_work_priority() {
        let hi = |policy, prio| HiTask {
            pid: 7,
            prio,
            policy,
        };
        let top = Some(boost::RAISE_PRIO);
        assert!(wake_held_up(top, hi(attr::SCHED_FIFO, boost::RAISE_PRIO)));
        assert!(wake_held_up(top, hi(attr::SCHED_RR, boost::RAISE_PRIO)));
        assert!(wake_held_up(top, hi(attr::SCHED_DEADLINE, 0)));
        // irq_work/N preempts anything below it
        assert!(!wake_held_up(
            top,
            hi(attr::SCHED_FIFO, boost::RAISE_PRIO - 1)
        ));
        assert!(!wake_held_up(top, hi(attr::SCHED_RR, 25)));
        // a normal task (the CPU's last higher class was never seen)
        assert!(!wake_held_up(top, hi(0, 0)));
        // a raise that failed leaves irq_work/N lower: any RT task above holds it
        assert!(wake_held_up(Some(1), hi(attr::SCHED_RR, 25)));
        assert!(wake_held_up(Some(0), hi(attr::SCHED_FIFO, 1)));
        assert!(!wake_held_up(Some(0), hi(0, 0)));
        // irq_work from the interrupt itself: nothing holds it up
        assert!(!wake_held_up(None, hi(attr::SCHED_FIFO, boost::RAISE_PRIO)));
        assert!(!wake_held_up(None, hi(attr::SCHED_DEADLINE, 0)));
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
}
