// SPDX-License-Identifier: GPL-2.0-only
//! The policy loop: it starts, per served CPU, a real-time planner thread
//! that steps that CPU's bandwidth server and journals its boosts
//! (`planner.rs`), a pool of executor threads, each leased to one CPU at a
//! time and pinned there, that make the SCHED_FIFO boosts and end them
//! (`executor.rs`, `--executors`), plus the slice-end
//! threads where they end slices (`slicer.rs`); it joins them at exit. The
//! main thread keeps the kernel's ext_server off while we serve
//! (`knobs.rs`), polls the slice policy, and prints `--stats` at its normal
//! policy.
//!
//! Why the split: a boost or a restore done from another CPU takes effect
//! only when the target CPU reschedules after an IPI, milliseconds later
//! under TCG (docs/design.md, Decisions: "Planner and executor"). Done on
//! the CPU itself, from a local hrtimer wake-up, both are a plain local
//! reschedule, and the budget is cut off with hrtimer precision, the way
//! the kernel enforces its own dl_server, per CPU. But the RT task on that
//! CPU also sees each run of a scx_floor thread there as noise, and the
//! planner's steps are long under TCG (1-6 ms): so only the executor's two
//! system calls run there.
//!
//! The threads must never starve, or the floor they promise is gone:
//! - Each runs at SCHED_FIFO 99 (boosts go to at most 98): no RT task below
//!   99 can keep it from running. The planner runs on any online CPU, placed
//!   by the kernel away from CPUs held by RT tasks where it can be; an
//!   executor only on the CPU that leases it. Both sleep until their next event and run for
//!   microseconds on hardware. A SCHED_FIFO 99 or SCHED_DEADLINE hog on a
//!   served CPU is above the executor: the planner (placed off that CPU)
//!   hands the CPU to SCHED_DEADLINE boosts or the kernel's ext_server
//!   (`planner::Planner::hand_off`).
//! - A planner preempted by an equal-priority task pinned to its CPU while
//!   migration is disabled can be held there by it. A watchdog thread
//!   (`scx_floor-w`, SCHED_FIFO 99, `rescue.rs`) makes a planner overdue by
//!   100 ms and runnable SCHED_DEADLINE until its next sleep.
//! - All memory is locked (`sys::lock_memory`): what is mapped at start in
//!   full, what is mapped later page by page at its first touch. Locking
//!   everything is simpler and safer than a locked-memory allocator, and it
//!   also covers libbpf's and the std library's memory. Each thread has a
//!   256 KiB stack (`sys::RT_STACK_BYTES`) and faults in its top 64 KiB
//!   before its real-time work.
//! - They never block on I/O: reports go to the main thread through a mutex
//!   they only `try_lock`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use log::{debug, info, warn};
use scx_utils::UserExitInfo;

use crate::config::{BoostMode, PolicyConfig};
use crate::executor::{Executor, Pool, StopPoolOnDrop};
use crate::fault::{self, Fault};
use crate::knobs::{self, Knobs};
use crate::planner::{serve_cpu, ExtServer};
use crate::rescue::{self, Lifeline};
use crate::sched::{agent_setup, BpfView, Scheduler};
use crate::slice::CpuSlice;
use crate::slicer::SlicerCounts;
use crate::state::knobs_dir;
use crate::stats::{self, CpuCounters, ServerRow};
use crate::sys::{
    housekeeping_of, monotonic_ns, nohz_full_cpus, online_cpus, pin_thread, StopFd, StopOnExit,
};

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
    let mut doc = stats::StatsDoc::new(t, &cfg.slice, cpus, server_rows(reports));
    doc.rt_allocations = Some(crate::rtalloc::rt_allocations());
    let r = serde_json::to_string_pretty(&doc)
        .map_err(anyhow::Error::from)
        .and_then(|b| crate::state::write_atomic(path, &b));
    if let Err(e) = r {
        warn!("--stats-json {}: {e:#}", path.display());
    }
}

/// The line under the `--stats` tables and at exit that tests read
/// (`no_rt_allocations` in tests/vm/lib.sh).
fn rt_allocations_line() -> String {
    let mut line = format!(
        "rt_allocations: {} (allocator calls of the real-time threads while serving)",
        crate::rtalloc::rt_allocations()
    );
    // the first ones, with the thread's name, to find where they came from
    for (kind, size, tid) in crate::rtalloc::first_calls() {
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_else(|_| "gone".into());
        line.push_str(&format!("; {kind} {size} B by tid {tid} ({comm})"));
    }
    line
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
        s += &rt_allocations_line();
        info!("{s}");
    }
    *last = Some(now);
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
    knobs.set_retrying_busy(
        std::path::Path::new(knobs::SCHED_RT_RUNTIME),
        "-1",
        knobs::DL_RELEASE_WAIT_MS,
    )
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
        let knob = knobs::ext_server_runtime(dir, cpu);
        // not for an offline CPU (knobs::offline_dl_server): its server is
        // parked, and the knob keeps its value; after a guardian restore
        // made while it was down, the kernel's ext_server serves there
        // beside scx_floor's once it is back
        if knobs::offline_dl_server(&knob).is_some() {
            continue;
        }
        knobs.set_retrying_busy(&knob, "0", knobs::DL_RELEASE_WAIT_MS)?;
    }
    Ok(true)
}

/// A main-loop sleep that took this much longer than asked means scx_floor
/// was stopped (SIGSTOP) or starved: the guardian has restored the knobs.
const STOPPED_GAP_NS: u64 = 500_000_000;

/// Sets the knobs the server needs (journaled): the ext_server runtime to 0
/// on the served CPUs (unless `--kernel-server keep`) and, with
/// `--rt-runtime-unlimited`, `kernel.sched_rt_runtime_us` to -1. Returns
/// what the planners may do with the ext_server, and whether SCHED_DEADLINE
/// boosts may serve (kernel-cut mode: the value is -1, by us or before us,
/// and another CPU runs the planners).
fn setup_knobs<'k>(cfg: &PolicyConfig, knobs: &'k Knobs) -> Result<(ExtServer<'k>, bool)> {
    // The ext_server is ours to hand the budget to only where we set it to 0.
    let mut handoff = if std::path::Path::new(knobs::EXT_SERVER_DIR).exists() {
        ExtServer::Kept
    } else {
        ExtServer::Absent
    };
    let Some(sc) = cfg.server else {
        return Ok((handoff, false));
    };
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
    let dl_ok =
        cfg.boost_mode != BoostMode::Fifo && knobs::rt_runtime_is_unlimited() && several_cpus;
    if dl_ok {
        log_kernel_cut(cfg.boost_mode);
    }
    info!(
        "bandwidth server: {} us every {} us on CPUs {:?}, boost {:?}",
        sc.runtime_ns / 1000,
        sc.period_ns / 1000,
        cfg.cpus,
        cfg.boost_mode
    );
    Ok((handoff, dl_ok))
}

/// Logs where kernel-cut mode serves, and warns when the kernel would end
/// SCHED_DEADLINE boosts only at the tick (`NO_HRTICK_DL`).
fn log_kernel_cut(mode: BoostMode) {
    info!(
        "kernel.sched_rt_runtime_us is -1: SCHED_DEADLINE boosts (kernel-cut mode: ended \
         by the kernel, HRTICK_DL) serve {}; the planner threads are placed by the \
         kernel, off the served CPU while another runs lower-priority work",
        if mode == BoostMode::Deadline {
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

/// Sets the knobs again after the guardian restored them while scx_floor
/// was stopped. The guardian counts each restore after its last write, so
/// these writes come after its own; after a long gap without a count it may
/// still be at it, and setting them twice is harmless. The servers' boosts
/// are checked against the task's policy before they are restored. A failed
/// write is a warning: the servers go on (a CPU taken offline meanwhile,
/// say, has no ext_server to set).
fn retake_knobs(cfg: &PolicyConfig, knobs: &Knobs, dl_ok: bool) {
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
    // The guardian restored sched_rt_runtime_us too: kernel-cut mode boosts
    // only with SCHED_DEADLINE, which the kernel then refuses for pinned
    // tasks.
    if dl_ok && cfg.rt_runtime_unlimited {
        match rt_runtime_off(knobs) {
            Ok(()) => info!("kernel.sched_rt_runtime_us set to -1 again"),
            Err(e) => warn!("setting kernel.sched_rt_runtime_us to -1 again: {e:#}"),
        }
    }
}

/// The main thread's tick in latency mode, ms: the slice policy follows
/// each CPU's load at this rate.
const MAIN_TICK_DYNAMIC_MS: u64 = 10;

/// The main thread's tick with fixed slices while a CPU starves or a
/// boost ran since the last tick, ms. It bounds how long an ejection waits
/// for the restores, and how late the real-time threads' log lines are
/// written; the planners, executors and the guardian keep their own
/// clocks. A SIGINT or SIGTERM and a stats request wake the main thread at
/// once ([`crate::sys::wake_main`]), and `--stats` prints on its own time.
const MAIN_TICK_MS: u64 = 250;

/// The main thread's tick with fixed slices while nothing starves and
/// nothing is boosted, ms: the same duties, with nothing to restore after
/// an ejection. Each wake-up costs 0.3-0.9 ms of CPU under the emulator
/// (TCG): at [`MAIN_TICK_MS`] the main thread was 3.0-3.5 of the 5.4-6.0
/// ms/s that all of scx_floor's threads used at idle (2 and 16 vCPUs,
/// 2026-12-06), against issue 18's idle budget of 5 ms/s.
const MAIN_TICK_IDLE_MS: u64 = 1000;

/// Whether any CPU starves now, runs a boost now, or starved or ran
/// boosted since the last call (`last`: the sum of the counters then).
/// Memory reads of the mmapped per-CPU counters only.
fn served_lately(view: &BpfView, last: &mut u64) -> bool {
    let mut sum = 0u64;
    let mut open = false;
    for cpu in 0..*scx_utils::NR_CPU_IDS {
        let (s, _, _) = view.sample(cpu);
        sum = sum
            .wrapping_add(s.starved_ns)
            .wrapping_add(s.boosted_runtime_ns);
        open |= s.starved_since_ns != 0 || s.boost_since_ns != 0;
    }
    let moved = sum != *last;
    *last = sum;
    open || moved
}

/// What the main thread's loop watches besides the threads it started.
struct Watch<'a> {
    view: &'a BpfView,
    cfg: &'a PolicyConfig,
    knobs: &'a Knobs,
    dl_ok: bool,
    reports: &'a [Mutex<ServerRow>],
    /// the stats server's requests (None: it did not start)
    stats: Option<&'a crate::monitor::Channel>,
    /// set when the loop saw the kernel's disable begin (and logged it)
    leaving: std::cell::Cell<bool>,
}

/// A thread of the policy loop, as the scope that started it joins it.
type Handle<'scope> = std::thread::ScopedJoinHandle<'scope, Result<()>>;

impl Watch<'_> {
    /// The main thread's loop, at its normal policy: every
    /// [`MAIN_TICK_DYNAMIC_MS`] in latency mode, [`MAIN_TICK_MS`] with fixed
    /// slices, it checks that no thread ended, sees a stop of scx_floor or
    /// a restore by the guardian and sets the knobs again, polls each CPU's
    /// load for the slice policy (latency mode: memory reads and writes in
    /// the mmapped .bss, no system call besides the sleep), answers the
    /// stats socket and prints `--stats`. Runs until `shutdown` or
    /// ejection; returns the join result of a thread that ended first.
    fn run(
        &self,
        shutdown: &AtomicBool,
        handles: &mut Vec<Handle<'_>>,
    ) -> Option<std::thread::Result<Result<()>>> {
        let (view, cfg) = (self.view, self.cfg);
        let mut last = cfg.stats_every.map(|_| snapshot(view));
        let mut next_stats = cfg
            .stats_every
            .map(|d| monotonic_ns() + d.as_nanos() as u64);
        let mut slices = vec![CpuSlice::default(); *scx_utils::NR_CPU_IDS];
        let mut counters_then = 0;
        let wake_fd = crate::sys::main_wake_fd();
        let restores = || {
            cfg.guardian_restores
                .map_or(0, |r| r.load(Ordering::Acquire))
        };
        let mut seen_restores = restores();
        let scx_state =
            crate::checks::StateFile::open(std::path::Path::new(crate::checks::SCX_SYSFS));
        while !shutdown.load(Ordering::Relaxed) && !view.exited() {
            if let Some(h) = handles.iter().position(|h| h.is_finished()) {
                return Some(handles.swap_remove(h).join());
            }
            let tick = if cfg.slice.is_dynamic() {
                MAIN_TICK_DYNAMIC_MS
            } else if served_lately(view, &mut counters_then) {
                MAIN_TICK_MS
            } else {
                MAIN_TICK_IDLE_MS
            };
            let before = monotonic_ns();
            let until = next_stats.map_or(u64::MAX, |t| t.max(before));
            let until = until.min(before + tick * 1_000_000);
            if crate::sys::sleep_until(until, &[wake_fd, wake_fd]) {
                crate::sys::eventfd_take(wake_fd);
            }
            let asked = until - before;
            let slept = monotonic_ns().saturating_sub(before);
            // what the real-time threads logged since the last tick
            crate::rtlog::drain();
            // The kernel's disable work runs no callback of ours and
            // fills the exit report (view.exited()) only at its end. Until
            // then no boost serves our CPUs and the kernel's ext_server
            // is at 0 there: tasks of sched_ext behind an RT task get
            // nothing, and a grace period that the disable waits for can
            // wait on one of them (a preempted RCU reader) as long as the
            // RT task runs. So the restores come now, not after the exit.
            if scx_state.as_ref().is_some_and(|s| s.leaving()) {
                warn!(
                    "the kernel ejected scx_floor: restoring boosted tasks and knobs \
                     while its disable is under way (the reason follows at its end)"
                );
                self.leaving.set(true);
                break;
            }
            let long_gap = slept > asked + STOPPED_GAP_NS;
            if long_gap {
                warn!(
                    "scx_floor was stopped or starved for {:.1} s",
                    slept as f64 / 1e9
                );
            }
            let now_restores = restores();
            let restored = now_restores != seen_restores;
            if restored {
                info!(
                    "the guardian restored what scx_floor had changed while it was stopped \
                     (a gap of {} ms here)",
                    slept / 1_000_000
                );
                seen_restores = now_restores;
            }
            if restored || long_gap {
                retake_knobs(cfg, self.knobs, self.dl_ok);
            }
            if cfg.slice.is_dynamic() && !fault::is(Fault::NoSlicePolicy) {
                for (cpu, st) in slices.iter_mut().enumerate() {
                    if let Some(ns) = st.poll(&cfg.slice, view.nr_runnable(cpu)) {
                        debug!("cpu {cpu}: {} runnable, slice {} us", st.nr, ns / 1000);
                        view.set_slice(cpu, ns);
                    }
                }
            }
            if let Some(ch) = self.stats {
                crate::monitor::serve_pending(ch, || {
                    let (t, cpus) = snapshot(view);
                    crate::monitor::Metrics::of(t, &cpus, &server_rows(self.reports))
                });
            }
            if let (Some(t), Some(every)) = (next_stats, cfg.stats_every) {
                if monotonic_ns() >= t {
                    next_stats = Some(t + every.as_nanos() as u64);
                    report(view, &mut last, every, self.reports);
                    // The same snapshot as the table just printed.
                    if let (Some(p), Some(snap)) = (&cfg.stats_json, &last) {
                        write_json(p, snap.clone(), cfg, self.reports);
                    }
                }
            }
        }
        None
    }
}

/// Logs what the slice-end threads did, summed over the CPUs.
fn log_slicers(counts: &[SlicerCounts]) {
    if counts.is_empty() {
        return;
    }
    let sum = |f: fn(&SlicerCounts) -> &AtomicU64| -> u64 {
        counts.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
    };
    info!(
        "slice-end threads: {} timed wake-ups ({} before the slice was due), {} parks",
        sum(|c| &c.wakes),
        sum(|c| &c.early),
        sum(|c| &c.parks)
    );
}

/// Starts the planners' watchdog (`scx_floor-w`, SCHED_FIFO 99 on the
/// housekeeping CPUs, `rescue.rs`) in scope `s`.
fn spawn_watchdog<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    view: &'scope BpfView,
    planners: Vec<(usize, &'scope Lifeline)>,
    stuck_ns: u64,
    stop: &'scope AtomicBool,
    stop_fd: i32,
) -> std::io::Result<Handle<'scope>> {
    crate::sys::rt_thread("scx_floor-w".into()).spawn_scoped(s, move || -> Result<()> {
        let online = online_cpus()?;
        agent_setup(view, &housekeeping_of(&online, &nohz_full_cpus()))?;
        rescue::watch(&planners, stuck_ns, stop, stop_fd);
        Ok(())
    })
}

/// Starts executor `i` of the pool (`scx_floor-x/I`, SCHED_FIFO 99,
/// `executor.rs`) in scope `s`, on the housekeeping CPUs until a planner
/// leases it; returns once it runs. Errors: the thread could not be started
/// or made SCHED_FIFO 99.
fn spawn_executor<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    view: &'scope BpfView,
    i: usize,
    ex: &'scope Executor,
) -> Result<Handle<'scope>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = crate::sys::rt_thread(format!("scx_floor-x/{i}")).spawn_scoped(s, move || {
        // SAFETY: plain syscall.
        let tid = unsafe { libc::gettid() } as u32;
        let r = online_cpus()
            .and_then(|online| agent_setup(view, &housekeeping_of(&online, &nohz_full_cpus())));
        // warm up the system call's path
        let _ = crate::attr::get_attr(0);
        let ok = r.is_ok();
        if ok {
            // leasable from now on
            ex.tid.store(tid, Ordering::Relaxed);
        }
        let _ = tx.send(r);
        if ok {
            crate::rtalloc::serving(true);
            ex.run(view);
            crate::rtalloc::serving(false);
        }
        Ok(())
    })?;
    rx.recv()
        .context("the executor thread ended")?
        .with_context(|| format!("executor {i}"))?;
    Ok(h)
}

/// Starts the slice-end threads and the servers' threads, watches them from
/// the main thread until `shutdown` or ejection, stops and joins them.
fn run_servers(
    view: &BpfView,
    cfg: &PolicyConfig,
    knobs: &Knobs,
    shutdown: &AtomicBool,
) -> Result<()> {
    let (handoff, dl_ok) = setup_knobs(cfg, knobs)?;
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
    let lifelines: Vec<Lifeline> = reports.iter().map(|_| Lifeline::default()).collect();
    let slicer_cpus = if cfg.slice_threads {
        online_cpus()?
    } else {
        Vec::new()
    };
    let slicer_counts: Vec<SlicerCounts> = slicer_cpus.iter().map(|_| Default::default()).collect();
    let pool = Pool::new(match cfg.server {
        Some(_) if cfg.boost_mode != BoostMode::Deadline => cfg.executors.min(cfg.cpus.len()),
        _ => 0,
    });
    std::thread::scope(|s| -> Result<()> {
        // The scope waits for every thread it started: every way out of
        // this closure (an error included) must stop them first.
        let _stop_all = StopOnExit(&stop, &stop_fd);
        let mut handles = Vec::new();
        for (&cpu, counts) in slicer_cpus.iter().zip(&slicer_counts) {
            let (stop, fd) = (&stop, stop_fd.0);
            let h = crate::sys::rt_thread(format!("scx_floor-s/{cpu}"))
                .spawn_scoped(s, move || crate::slicer::run(cpu, view, stop, fd, counts))?;
            handles.push(h);
        }
        let _stop_pool = StopPoolOnDrop(&pool);
        for (i, ex) in pool.executors().iter().enumerate() {
            handles.push(spawn_executor(s, view, i, ex)?);
        }
        if !pool.executors().is_empty() {
            info!(
                "{} executor thread(s) for {} served CPU(s) (--executors {})",
                pool.executors().len(),
                cfg.cpus.len(),
                cfg.executors
            );
        }
        if let Some(sc) = cfg.server {
            for (i, &cpu) in cfg.cpus.iter().enumerate() {
                let (stop, report, fd, life) = (&stop, &reports[i], stop_fd.0, &lifelines[i]);
                let pool = &pool;
                let h = crate::sys::rt_thread(format!("scx_floor/{cpu}")).spawn_scoped(
                    s,
                    move || {
                        serve_cpu(
                            cpu, view, cfg, sc, stop, fd, report, handoff, dl_ok, life, pool,
                        )
                    },
                )?;
                handles.push(h);
            }
            let planners: Vec<(usize, &Lifeline)> =
                cfg.cpus.iter().copied().zip(&lifelines).collect();
            let stuck_ns = rescue::stuck_after(sc.runtime_ns);
            handles.push(spawn_watchdog(
                s, view, planners, stuck_ns, &stop, stop_fd.0,
            )?);
        }
        let stats = crate::monitor::launch()
            .inspect_err(|e| warn!("no stats server (--monitor will not connect): {e:#}"))
            .ok();
        let watch = Watch {
            view,
            cfg,
            knobs,
            dl_ok,
            reports: &reports,
            stats: stats.as_ref().map(|s| &s.channel),
            leaving: std::cell::Cell::new(false),
        };
        let failed = watch.run(shutdown, &mut handles);
        if view.exited() && !watch.leaving.get() {
            warn!("the kernel ejected scx_floor: restoring boosted tasks and knobs");
        }
        stop.store(true, Ordering::Relaxed);
        stop_fd.fire();
        pool.stop_all();
        free_stuck_threads(STUCK_AFTER);
        for h in handles {
            match h.join() {
                Ok(Err(e)) => warn!("server thread: {e:#}"),
                Err(_) => warn!("a server thread panicked"),
                Ok(Ok(())) => {}
            }
        }
        crate::rtlog::drain();
        if let Some(p) = &cfg.stats_json {
            write_json(p, snapshot(view), cfg, &reports);
        }
        log_slicers(&slicer_counts);
        let (relayed, written) = view.relayed_wakeups();
        if relayed > 0 {
            info!(
                "{relayed} server wake-up(s) written where irq_work/N could not run were handed \
                 to another CPU; {written} written there"
            );
        }
        info!("{}", rt_allocations_line());
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
