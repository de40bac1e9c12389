// SPDX-License-Identifier: GPL-2.0-only
//! Side effects of the harness, all in one place: its own priority and CPU,
//! starting workloads with an explicit policy and CPU set, the watchdog, the
//! kernel knobs it changes (saved first, restored on every exit path), an
//! osnoise tracer rtla may leave on, and the cleanup that runs on
//! SIGINT/SIGTERM or an error.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use scx_floor::checks::{self, ScxState};
use scx_floor::knobs::Knobs;
pub use scx_floor::sys::read_knob;

/// Where sched_ext shows its state.
pub const SCX: &str = checks::SCX_SYSFS;
/// debugfs' scheduler directory (fair_server, ext_server, base_slice_ns).
pub const DEBUG_SCHED: &str = "/sys/kernel/debug/sched";
/// The sysctl directory (kernel/sched_rt_runtime_us).
pub const PROC_SYS: &str = "/proc/sys";
/// The CPUs the kernel runs tickless (the nohz_full= boot argument).
pub const NOHZ_FULL: &str = "/sys/devices/system/cpu/nohz_full";

/// A scheduling policy for a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER, nice 0
    Other,
    /// SCHED_FIFO at this priority
    Fifo(i32),
    /// SCHED_RR at this priority
    Rr(i32),
}

fn set_policy_raw(pid: i32, p: Policy) -> std::io::Result<()> {
    let (pol, prio) = match p {
        Policy::Other => (libc::SCHED_OTHER, 0),
        Policy::Fifo(x) => (libc::SCHED_FIFO, x),
        Policy::Rr(x) => (libc::SCHED_RR, x),
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain system call on a valid sched_param.
    if unsafe { libc::sched_setscheduler(pid, pol, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn set_affinity_raw(pid: i32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays in bounds (checked).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

pub use scx_floor::sys::{lock_memory, online_cpus};

/// Make the calling process the controller: pinned to `cpu`, SCHED_FIFO 99,
/// memory locked, so that it keeps running above every hog it starts.
pub fn become_controller(cpu: usize) -> Result<()> {
    set_affinity_raw(0, &[cpu]).with_context(|| format!("pinning the controller to CPU {cpu}"))?;
    set_policy_raw(0, Policy::Fifo(99)).context("making the controller SCHED_FIFO 99")?;
    if let Err(e) = lock_memory() {
        log::warn!("mlockall: {e}: the controller may page-fault");
    }
    Ok(())
}

/// Start `cmd` with `policy` on `cpus`. The child sets both itself before it
/// execs: it would otherwise inherit the controller's SCHED_FIFO 99 and CPU.
/// The policy is set first, so the child never runs at FIFO 99 on a measured
/// CPU. Registered for cleanup; SIGKILLed by the kernel if the harness dies.
pub fn spawn(cmd: &mut Command, policy: Policy, cpus: &[usize]) -> Result<Child> {
    spawn_with_death(cmd, policy, cpus, libc::SIGKILL)
}

/// [`spawn`], with the signal the kernel sends the child if the harness dies
/// (even by SIGKILL, when no cleanup can run): PR_SET_PDEATHSIG.
pub fn spawn_with_death(
    cmd: &mut Command,
    policy: Policy,
    cpus: &[usize],
    death_signal: i32,
) -> Result<Child> {
    let cpus_v = cpus.to_vec();
    // SAFETY: only async-signal-safe system calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            set_policy_raw(0, policy)?;
            set_affinity_raw(0, &cpus_v)
        });
    }
    if stopping() {
        bail!("stopping");
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    register(child.id() as i32);
    if stopping() {
        // the signal's cleanup may have run between the check and the spawn
        kill9(child.id() as i32);
    }
    Ok(child)
}

/// A task's policy (field 41 of /proc/PID/stat) and last CPU (field 39).
pub fn policy_and_cpu(pid: i32) -> Option<(u32, usize)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // fields after the ")" of comm: field 3 is the first
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.get(41 - 3)?.parse().ok()?, f.get(39 - 3)?.parse().ok()?))
}

/// /proc/PID/schedstat of a task.
pub fn schedstat(pid: i32) -> Result<crate::parse::Schedstat> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .with_context(|| format!("reading /proc/{pid}/schedstat"))?;
    crate::parse::schedstat(&s)
}

/// A task's CPU time as a perf task-clock counter (`perf_event_open()`,
/// PERF_TYPE_SOFTWARE / PERF_COUNT_SW_TASK_CLOCK; include/uapi/linux/
/// perf_event.h). Reading it while the task runs on another CPU updates the
/// count there first, through an IPI (`perf_event_read()`,
/// kernel/events/core.c). /proc/PID/schedstat does not: on a nohz_full CPU
/// whose tick is stopped (a SCHED_FIFO task, or a lone SCHED_RR one:
/// `sched_can_stop_tick()`), the running task's sum_exec_runtime lags until
/// its next switch, a whole server period (1 s) under an RT hog.
pub struct TaskClock(std::fs::File);

/// The first 128 bytes of `struct perf_event_attr` (PERF_ATTR_SIZE_VER8):
/// type, size, config, then fields left 0 (counting starts enabled, user
/// and kernel time both counted).
#[repr(C)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    rest: [u64; 14],
}

impl TaskClock {
    /// Opens the counter on task `pid` (a thread id; counts that thread).
    /// Errors: the kernel's (ESRCH when the task is gone, EACCES without
    /// CAP_PERFMON or root under perf_event_paranoid).
    pub fn open(pid: i32) -> Result<Self> {
        use std::os::fd::FromRawFd;
        let attr = PerfEventAttr {
            type_: 1, // PERF_TYPE_SOFTWARE
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: 1, // PERF_COUNT_SW_TASK_CLOCK
            rest: [0; 14],
        };
        // SAFETY: a valid attr of the size it declares; cpu -1 (any),
        // no group, PERF_FLAG_FD_CLOEXEC.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                pid,
                -1,
                -1,
                libc::c_ulong::from(8u8),
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("perf_event_open(task-clock) on task {pid}"));
        }
        // SAFETY: a new fd that nothing else owns.
        Ok(TaskClock(unsafe { std::fs::File::from_raw_fd(fd as i32) }))
    }

    /// The task's CPU time since the counter was opened, ns.
    pub fn read_ns(&self) -> Result<u64> {
        use std::io::Read;
        let mut b = [0u8; 8];
        (&self.0)
            .read_exact(&mut b)
            .context("reading a perf task-clock counter")?;
        Ok(u64::from_ne_bytes(b))
    }
}

/// SIGKILL a pid (ignores a task already gone).
pub fn kill9(pid: i32) {
    // SAFETY: plain system call.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Kill and reap children; forget them for cleanup. A child already reaped
/// is not signalled again (its pid may have been reused).
pub fn kill_all(children: &mut [Child]) {
    for c in children.iter_mut() {
        if !matches!(c.try_wait(), Ok(Some(_))) {
            kill9(c.id() as i32);
        }
    }
    for c in children.iter_mut() {
        let _ = c.wait();
        forget(c.id() as i32);
    }
}

/// Kills `pids` after `after` unless dropped first: the harness's watchdog
/// (an RT hog on a CPU whose server is off can hang that CPU for good).
///
/// Its thread sleeps until the deadline or the drop, with no wake-up in
/// between: it inherits the controller's SCHED_FIFO 99 on the controller's
/// CPU, and a poll there (it woke every 20 ms) is an RT task taking that CPU
/// 50 times a second in every measurement, which costs scx_floor (a higher
/// class taking a CPU moves its queued tasks away) and not the stock kernel.
pub struct Watchdog {
    /// Dropped with the watchdog: the thread's wait then ends disconnected.
    _cancel: mpsc::Sender<()>,
}

impl Watchdog {
    /// Arm: SIGKILL `pids` once `after` has passed.
    pub fn arm(pids: Vec<i32>, after: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(after) {
                log::warn!("watchdog: killing {pids:?} at their deadline");
                for p in pids {
                    kill9(p);
                }
            }
        });
        Watchdog { _cancel: tx }
    }
}

/// What must be undone on any exit besides the knobs (journaled, [`open_state`]):
/// workloads to kill, an scx_floor to stop.
#[derive(Default)]
struct Cleanup {
    pids: Vec<i32>,
    floor: Option<i32>,
    /// the tracing directory while rtla runs: an osnoise tracer it leaves on
    /// (rtla killed before its own cleanup) is turned off
    osnoise: Option<PathBuf>,
}

static CLEANUP: Mutex<Option<Cleanup>> = Mutex::new(None);

/// Set once a signal asked the harness to stop: nothing new may start.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Has a signal asked the harness to stop?
pub fn stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// SIGINT/SIGTERM: no new workload starts from now on; undo everything.
pub fn stop_on_signal() -> Vec<String> {
    STOPPING.store(true, Ordering::SeqCst);
    cleanup()
}

fn with_cleanup<R>(f: impl FnOnce(&mut Cleanup) -> R) -> R {
    let mut g = CLEANUP.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Default::default))
}

fn register(pid: i32) {
    with_cleanup(|c| c.pids.push(pid));
}

/// A workload has been reaped: cleanup must not signal its pid any more.
pub fn forget(pid: i32) {
    with_cleanup(|c| c.pids.retain(|&p| p != pid));
}

/// Record the running scx_floor (stopped by cleanup if still set).
pub fn set_floor(pid: Option<i32>) {
    with_cleanup(|c| c.floor = pid);
}

/// The harness's state directory: its lock (one harness at a time) and the
/// journal of the knobs it changed (`knobs/`), root-only, on tmpfs.
pub const STATE_DIR: &str = "/run/scx_floor-ab";

/// The knob journal, once [`open_state`] opened it.
static JOURNAL: Mutex<Option<Knobs>> = Mutex::new(None);

/// Takes `dir`'s lock, held while the returned file is open (one harness at
/// a time), and opens its knob journal. Knobs a harness killed with SIGKILL
/// left journaled are put back first. Returns the lock and the knobs put
/// back. Errors: another harness holds the lock; the directory cannot be
/// made root-only.
pub fn open_state(dir: &Path) -> Result<(std::fs::File, Vec<(PathBuf, String)>)> {
    let lock = scx_floor::state::lock_state_dir(dir, 0, "another scx_floor-ab")?;
    let k = Knobs::open(&scx_floor::state::knobs_dir(dir))?;
    let left = k.pending();
    k.restore_all(&|| true);
    let still = k.pending();
    for (knob, v) in &still {
        log::warn!(
            "{} could not be put back to {v} yet (kept journaled for the next run)",
            knob.display()
        );
    }
    let back = left.into_iter().filter(|e| !still.contains(e)).collect();
    *JOURNAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(k);
    Ok((lock, back))
}

fn with_journal<R>(f: impl FnOnce(&Knobs) -> Result<R>) -> Result<R> {
    let g = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    match g.as_ref() {
        Some(k) => f(k),
        None => bail!("the knob journal is not open ({STATE_DIR} not taken)"),
    }
}

/// Journals a knob's value for [`restore_knobs`] (the first time only),
/// without writing it: for knobs another program (rtla) changes on our
/// behalf. Errors: the knob cannot be read, or no journal is open.
pub fn save_knob(path: &Path) -> Result<()> {
    with_journal(|k| k.save(path))
}

/// Writes a kernel knob; its original value is journaled the first time
/// (for [`restore_knobs`]). Errors: as [`Knobs::set`], or no journal is open.
pub fn set_knob(path: &Path, value: &str) -> Result<()> {
    with_journal(|k| k.set(path, value))
}

/// Puts every journaled knob back ([`Knobs::restore_all`]: one that already
/// has its value is not written, sched_rt_runtime_us goes last, a write
/// refused with EBUSY is retried for up to 10 s). Returns the knobs left
/// unrestored.
pub fn restore_knobs() -> Vec<String> {
    with_journal(|k| {
        k.restore_all(&|| true);
        Ok(k.pending()
            .into_iter()
            .map(|(p, v)| format!("could not restore {} to {v}", p.display()))
            .collect())
    })
    .unwrap_or_default()
}

/// Wait (up to `secs`) for a process of ours to exit; its exit code, or None
/// if it was reaped elsewhere or is still running (then it is SIGKILLed).
pub fn wait_pid(pid: i32, secs: f64) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    loop {
        let mut status = 0;
        // SAFETY: plain system call.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            });
        }
        if r < 0 {
            return None;
        }
        if Instant::now() >= deadline {
            kill9(pid);
            // SAFETY: plain system call.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sched_ext state ("enabled", "disabled", ...) or "missing".
pub fn scx_state() -> String {
    read_knob(&Path::new(SCX).join("state")).unwrap_or_else(|_| "missing".into())
}

/// Poll until the sched_ext state is `want`, for at most `secs`.
pub fn wait_scx_state(want: &str, secs: f64) -> bool {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        if scx_state() == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    scx_state() == want
}

/// The tracing directory (tracefs) with its `available_tracers`, if any:
/// /sys/kernel/tracing, or debugfs' tracing directory.
pub fn tracing_dir() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("available_tracers").is_file())
}

/// Does the kernel have the osnoise tracer (in `tracing`'s available_tracers)?
pub fn has_osnoise(tracing: &Path) -> bool {
    read_knob(&tracing.join("available_tracers"))
        .map(|t| t.split_whitespace().any(|x| x == "osnoise"))
        .unwrap_or(false)
}

/// The osnoise settings `rtla osnoise` writes (relative to the tracing
/// directory). rtla puts them back when it ends by itself or on SIGINT.
const OSNOISE_KNOBS: &[&str] = &[
    "tracing_thresh",
    "osnoise/cpus",
    "osnoise/period_us",
    "osnoise/runtime_us",
    "osnoise/stop_tracing_us",
    "osnoise/stop_tracing_total_us",
];

/// rtla is about to run: save the osnoise settings it writes (restored with
/// the other knobs), and have [`osnoise_end`] or [`cleanup`] turn off an
/// osnoise tracer it leaves on (rtla killed by the watchdog or by cleanup,
/// before its own cleanup ran: the tracer's threads would keep spinning).
pub fn osnoise_begin(tracing: &Path) {
    for k in OSNOISE_KNOBS {
        let p = tracing.join(k);
        if p.is_file() {
            if let Err(e) = save_knob(&p) {
                log::warn!("{e:#}");
            }
        }
    }
    with_cleanup(|c| c.osnoise = Some(tracing.to_path_buf()));
}

/// rtla has ended: turn off any osnoise tracer still on, at the top level
/// or in a trace instance (rtla traces in its own instance). Returns what it
/// had to turn off, and the failures.
pub fn osnoise_end() -> Vec<String> {
    let Some(dir) = with_cleanup(|c| c.osnoise.take()) else {
        return Vec::new();
    };
    let mut dirs = vec![dir.clone()];
    if let Ok(rd) = std::fs::read_dir(dir.join("instances")) {
        dirs.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    let mut out = Vec::new();
    for d in dirs {
        let f = d.join("current_tracer");
        if read_knob(&f).ok().as_deref() == Some("osnoise") {
            match std::fs::write(&f, "nop") {
                Ok(()) => out.push(format!(
                    "turned off the osnoise tracer left on in {}",
                    d.display()
                )),
                Err(e) => out.push(format!(
                    "turning off the osnoise tracer in {}: {e}",
                    d.display()
                )),
            }
        }
    }
    out
}

/// The CPUs in /sys/devices/system/cpu/nohz_full (none when the file is
/// missing or says "(null)"), and the file's text.
pub fn nohz_full_cpus() -> (Vec<usize>, String) {
    let raw = read_knob(Path::new(NOHZ_FULL)).unwrap_or_else(|_| "missing".into());
    (scx_floor::sys::parse_nohz_full(&raw), raw)
}

/// Undo everything: kill the workloads, stop scx_floor (SIGINT, then
/// SIGKILL after 20 s: its guardian restores what it changed), turn off an
/// osnoise tracer rtla left on, restore the knobs. Safe to call more than
/// once and from the signal-handling thread.
pub fn cleanup() -> Vec<String> {
    let (pids, floor) = with_cleanup(|c| (std::mem::take(&mut c.pids), c.floor.take()));
    for p in &pids {
        kill9(*p);
    }
    let mut errs = Vec::new();
    if let Some(f) = floor {
        // SAFETY: plain system call.
        unsafe { libc::kill(f, libc::SIGINT) };
        wait_pid(f, 20.0);
        if !wait_scx_state("disabled", 20.0) {
            errs.push(format!(
                "sched_ext is still {} after stopping scx_floor",
                scx_state()
            ));
        }
    }
    errs.extend(osnoise_end());
    errs.extend(restore_knobs());
    errs
}

/// Checks before the harness touches anything: root, sched_ext, no
/// scheduler loaded, debugfs (mounted here if it is not), 2 online CPUs.
pub fn preflight() -> Result<Vec<usize>> {
    // SAFETY: plain system call.
    checks::require_root(
        unsafe { libc::geteuid() },
        "it loads a BPF scheduler, starts RT tasks and writes debugfs knobs (try sudo)",
    )?;
    match checks::read_state(Path::new(SCX)) {
        ScxState::Unsupported => bail!(
            "this kernel has no sched_ext ({SCX} missing): it needs CONFIG_SCHED_CLASS_EXT=y (kernel {})",
            kernel_release()
        ),
        ScxState::Disabled => {}
        ScxState::Loaded { state, ops } => bail!(
            "a sched_ext scheduler is already loaded (state {state}, ops '{ops}'): stop it first"
        ),
    }
    if !Path::new(DEBUG_SCHED).exists() {
        let ok = Command::new("mount")
            .args(["-t", "debugfs", "none", "/sys/kernel/debug"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok || !Path::new(DEBUG_SCHED).exists() {
            bail!("debugfs is not mounted at /sys/kernel/debug and mounting it failed");
        }
    }
    let cpus = online_cpus()?;
    if cpus.len() < 2 {
        bail!("needs at least 2 online CPUs (one measured, one for the controller); this machine has {}", cpus.len());
    }
    Ok(cpus)
}

/// uname -r.
pub fn kernel_release() -> String {
    read_knob(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_else(|_| "unknown".into())
}

/// Lines of the kernel log that report sched_ext trouble.
pub fn dmesg_scx_errors() -> Vec<String> {
    let out = Command::new("dmesg")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| {
            (l.contains("sched_ext") && (l.contains("error") || l.contains("stall")))
                || l.contains("runnable task stall")
                || l.contains("BUG:")
                || l.contains("WARNING:")
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_are_journaled_once_restored_and_replayed_after_a_kill() {
        let dir = std::env::temp_dir().join(format!("scx_floor-ab-knobs.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let state = dir.join("state");
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, "950000\n").unwrap();
        std::fs::write(&b, "0-1\n").unwrap();
        assert!(
            set_knob(&a, "1").is_err(),
            "no journal open: nothing written"
        );
        assert_eq!(read_knob(&a).unwrap(), "950000");
        let (lock, back) = open_state(&state).unwrap();
        assert!(back.is_empty());
        assert!(open_state(&state).is_err(), "a second harness is refused");
        set_knob(&a, "-1").unwrap();
        set_knob(&a, "5").unwrap();
        save_knob(&b).unwrap();
        std::fs::write(&b, "1").unwrap();
        assert_eq!(read_knob(&a).unwrap(), "5");
        assert!(restore_knobs().is_empty());
        assert_eq!(read_knob(&a).unwrap(), "950000");
        assert_eq!(read_knob(&b).unwrap(), "0-1");
        assert!(save_knob(&dir.join("missing")).is_err());
        // a harness killed after a write: the next one puts the knob back
        set_knob(&a, "7").unwrap();
        drop(lock);
        let (_lock, back) = open_state(&state).unwrap();
        assert_eq!(back, vec![(a.clone(), "950000".to_string())]);
        assert_eq!(read_knob(&a).unwrap(), "950000");
        assert!(restore_knobs().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
