// SPDX-License-Identifier: GPL-2.0-only
//! The guardian: a small process forked before scx_floor changes anything.
//! It blocks reading a pipe whose only writer is scx_floor; when scx_floor
//! dies for any reason (SIGKILL included) the pipe closes, and the guardian
//! replays the journals: every task still boosted gets its policy back and
//! every kernel knob its saved value. After a normal exit the journals are
//! empty and it just exits.
//!
//! The pipe closes only when the last thread of scx_floor has exited, and a
//! thread pinned to a served CPU waits there behind any boost it did not
//! end (docs/design.md, Restore protocol, item 4). So the guardian also
//! checks at each poll whether scx_floor is exiting ([`is_exiting_stat`])
//! and replays the journals then.
//!
//! While scx_floor is stopped (SIGSTOP, SIGTSTP, a debugger) its server
//! threads cannot end a boost on time, and the kernel's ext_server is off on
//! the CPUs it serves. The guardian checks the state of scx_floor at each
//! poll; when it finds it stopped it replays the journals the same way
//! (boosted tasks back to their policy, ext_server runtime back to its
//! saved value), and logs it.
//!
//! How often it polls: every [`STOP_POLL_MS`] from a boost's start until
//! [`BUSY_LINGER_MS`] after the last one started (no boost lasts longer
//! than a server period, 1 s at most), so that no boost outlives a stop by
//! more than [`STOP_POLL_MS`]; every [`IDLE_POLL_MS`] otherwise. A boost
//! that starts while the guardian waits the long way wakes it through an
//! eventfd ([`boost_starts`]), so the first boost after a quiet time is
//! covered as the others are. The BPF dispatcher runs on without user
//! space, and the kernel's ext_server, its runtime back, serves the tasks
//! that starve under RT hogs meanwhile. Each such restore is counted in
//! memory shared with scx_floor ([`Guardian::restores`]): when scx_floor
//! continues, its main loop sees the count move and sets the knobs again
//! (`policy.rs`), after a stop of 60 ms as after one of minutes.
//!
//! It must outlive scx_floor, not die or stop with it. So it runs in a
//! session of its own (setsid: the terminal's Ctrl-C, Ctrl-\ and Ctrl-Z, and
//! a kill of scx_floor's process group, do not reach it), ignores SIGINT,
//! SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU and SIGPIPE, has
//! `oom_score_adj` -1000 (the OOM killer takes it last), runs at SCHED_FIFO
//! 99 so that RT hogs cannot delay it, and is named `scx-floor-guard`, which
//! neither `pkill scx_floor` nor `pkill -x scx_floor` matches. A kill of the
//! whole cgroup (a service manager's stop) still takes it with scx_floor:
//! the next start of scx_floor replays the journals.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use anyhow::{bail, Result};

use crate::attr;
use crate::boost::{self, Journal};
use crate::sys::{housekeeping_of, nohz_full_cpus, online_cpus};

/// Writes a line to stderr, ignoring errors: a closed stderr (its reader
/// gone: EPIPE, SIGPIPE ignored) must not end the guardian, as
/// `eprintln!` would with a panic.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}
use crate::knobs::Knobs;

/// How often the guardian checks whether scx_floor is stopped or exiting
/// while boosts are made, ms: also the longest a boost can outlive a
/// SIGSTOP of scx_floor.
pub const STOP_POLL_MS: i32 = 50;

/// How often the guardian checks when no boost has started for
/// [`BUSY_LINGER_MS`], ms. Under TCG a check costs about 0.5 ms of CPU, so
/// polling every [`STOP_POLL_MS`] at all times cost 10 ms/s of one vCPU.
/// A stop seen this late leaves only the kernel knobs changed meanwhile:
/// the ext_server runtime at 0 on the served CPUs, which matters only to a
/// task that starts starving under an RT hog in that time.
pub const IDLE_POLL_MS: i32 = 500;

/// How long after a boost started the guardian polls every
/// [`STOP_POLL_MS`], ms: twice the longest server period (1 s), so that it
/// covers the boost's whole life and the restore at its end.
pub const BUSY_LINGER_MS: u64 = 2000;

/// The poll timeout, ms: [`STOP_POLL_MS`] while scx_floor is stopped or
/// exiting, or while a boost started in the last [`BUSY_LINGER_MS`]
/// (`last_boost_ms`: CLOCK_MONOTONIC ms of the last start, 0 for none);
/// [`IDLE_POLL_MS`] otherwise. `now_ms`: CLOCK_MONOTONIC ms.
pub fn poll_timeout_ms(now_ms: u64, last_boost_ms: u64, stopped: bool, exiting: bool) -> i32 {
    let busy = last_boost_ms != 0 && now_ms.saturating_sub(last_boost_ms) < BUSY_LINGER_MS;
    if stopped || exiting || busy {
        STOP_POLL_MS
    } else {
        IDLE_POLL_MS
    }
}

/// What scx_floor and its guardian share: an anonymous shared mapping made
/// before the fork, never unmapped.
#[repr(C)]
struct Shared {
    /// see [`Guardian::restores`]
    restores: AtomicU64,
    /// CLOCK_MONOTONIC ms when a boost last started (0: none yet); written
    /// by scx_floor's threads, read by the guardian
    last_boost_ms: AtomicU64,
    /// 1 while the guardian waits [`IDLE_POLL_MS`]: the next boost to start
    /// clears it and wakes the guardian through [`WAKE_FD`]
    idle: AtomicU32,
}

/// The mapping scx_floor shares with its guardian (null before
/// [`spawn`]).
static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

/// The eventfd that wakes a guardian waiting [`IDLE_POLL_MS`] (-1 before
/// [`spawn`]). Never closed: a thread making a boost may still write it
/// while the process exits, and a closed number may be reused by then.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

/// Called just before a boost's `sched_setattr()`, after its journal
/// record is written (any thread; no allocation, at most one `write(2)`):
/// tells the guardian to poll every [`STOP_POLL_MS`] from now on, and wakes
/// it if it was waiting [`IDLE_POLL_MS`]. Does nothing before [`spawn`].
pub fn boost_starts() {
    // SAFETY: null or the mapping made in spawn(), never unmapped.
    let Some(sh) = (unsafe { SHARED.load(Ordering::Acquire).as_ref() }) else {
        return;
    };
    note_boost(sh, WAKE_FD.load(Ordering::Relaxed));
}

/// [`boost_starts`] on mapping `sh` and eventfd `fd`.
fn note_boost(sh: &Shared, fd: i32) {
    // SeqCst, with the guardian's store of `idle` and load of the time: one
    // of the two sees the other's write (a guardian that misses this time
    // is woken)
    sh.last_boost_ms
        .store(monotonic_ms().max(1), Ordering::SeqCst);
    // every boost writes while the guardian waits idle (it clears the flag
    // when it wakes): one stopped between a claim and its write would
    // otherwise leave the next boost unannounced
    if sh.idle.load(Ordering::SeqCst) == 1 {
        wake(fd);
    }
}

/// Wakes the guardian through eventfd `fd` (-1: none yet; errors ignored:
/// a guardian gone needs no wake-up).
fn wake(fd: i32) {
    if fd >= 0 {
        crate::sys::eventfd_add(fd);
    }
}

/// The state letter (field 3) of a /proc/PID/stat text.
fn stat_state(stat: &str) -> Option<&str> {
    boost::stat_field(stat, 3)
}

/// Whether the state letter (field 3 of /proc/PID/stat) is a stopped task
/// ('T': stopped by a signal, 't': stopped by a tracer).
pub fn is_stopped_state(stat: &str) -> bool {
    matches!(stat_state(stat), Some("T" | "t"))
}

/// `PF_EXITING` (include/linux/sched.h): set in `do_exit()` by
/// `exit_signals()`, after the wait for a core dump of the process.
const PF_EXITING: u64 = 0x4;
/// `PF_POSTCOREDUMP`: set in `do_exit()` by `coredump_task_exit()`
/// (kernel/exit.c), before a thread waits there for another thread's core
/// dump to end.
const PF_POSTCOREDUMP: u64 = 0x8;
/// `PF_DUMPCORE`: set on the thread that dumps core by `zap_threads()`
/// (fs/coredump.c), before it waits for the process's other threads, to
/// which it sends SIGKILL, to stop.
const PF_DUMPCORE: u64 = 0x200;
/// `PF_SIGNALED`: set by `get_signal()` (kernel/signal.c) on a thread that
/// takes a fatal signal, SIGKILL of a group exit included, before it dumps
/// core or exits.
const PF_SIGNALED: u64 = 0x400;

/// Whether the /proc/PID/stat text of a process's main thread shows the
/// process exiting but not gone. Each way a process leaves (a fatal signal
/// to any thread, a core dump by any thread, `exit_group()` from another
/// thread) reaches the main thread with SIGKILL: `complete_signal()`,
/// `zap_process()` and `zap_other_threads()` add it to the pending mask of
/// every thread but the one that acts. So the main thread shows one of:
/// SIGKILL pending (field 31: its own pending mask, decimal, the low 31
/// signals; the shared queue is not shown) until it runs; then in field 9
/// (flags) [`PF_SIGNALED`], [`PF_POSTCOREDUMP`] while it waits for another
/// thread's dump, [`PF_DUMPCORE`] if it dumps, [`PF_EXITING`]; then the
/// zombie state ('Z', 'X') while other threads live on. None of these shows
/// on a live thread. An unreadable or short text is not exiting.
/// Such a process runs no more user code, but the pipe closes only when its
/// last thread has exited, and a thread pinned to a CPU that a boosted task
/// holds (a SCHED_FIFO 99 slice-end thread under a SCHED_DEADLINE boost)
/// exits only when that boost lets it run (and a core dump waits for every
/// thread to reach `do_exit()`). One read of one file: the guardian reads
/// it every `STOP_POLL_MS`.
pub fn is_exiting_stat(stat: &str) -> bool {
    let num = |n: usize| {
        boost::stat_field(stat, n)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    matches!(stat_state(stat), Some("Z" | "X"))
        || num(9) & (PF_EXITING | PF_POSTCOREDUMP | PF_DUMPCORE | PF_SIGNALED) != 0
        || num(31) & SIGKILL_BIT != 0
}

/// Replays both journals under `state_dir`, raised kernel threads
/// included; returns (tasks, knobs, kernel threads) restored.
/// `keep_trying`: see [`Knobs::restore_all`].
pub fn replay_all(state_dir: &Path, keep_trying: &dyn Fn() -> bool) -> (usize, usize, usize) {
    let (t, k) = replay(state_dir, keep_trying, boost::replay);
    let r = Journal::open(&crate::state::journal_path(state_dir))
        .map(|j| boost::replay_raises(&j))
        .unwrap_or(0);
    (t, k, r)
}

/// [`replay_all`] without the raised kernel threads: for scx_floor's own
/// exit path while its BPF scheduler is still attached.
pub fn replay_tasks_and_knobs(state_dir: &Path) -> (usize, usize) {
    replay(state_dir, &|| true, boost::replay)
}

/// [`replay_all`] for a scx_floor that is exiting but not gone: records of
/// tasks not boosted are kept for the replay at its end
/// ([`boost::replay_boosted`]), and so are its kernel-thread raises.
fn replay_exiting(state_dir: &Path, keep_trying: &dyn Fn() -> bool) -> (usize, usize) {
    replay(state_dir, keep_trying, boost::replay_boosted)
}

/// [`replay_all`] for a stopped scx_floor: its kernel-thread raises stay,
/// and so do the records of tasks alive and not boosted
/// ([`boost::replay_boosted`]): a thread stopped between writing a record
/// and its `sched_setattr()` boosts the task when it continues, and that
/// boost must still have its record.
fn replay_stopped(state_dir: &Path, keep_trying: &dyn Fn() -> bool) -> (usize, usize) {
    replay(state_dir, keep_trying, boost::replay_boosted)
}

fn replay(
    state_dir: &Path,
    keep_trying: &dyn Fn() -> bool,
    tasks: fn(&Journal) -> usize,
) -> (usize, usize) {
    if crate::fault::is(crate::fault::Fault::NoRestore) {
        return (0, 0);
    }
    let tasks = Journal::open(&crate::state::journal_path(state_dir))
        .map(|j| tasks(&j))
        .unwrap_or(0);
    let knobs = Knobs::open(&crate::state::knobs_dir(state_dir))
        .map(|k| k.restore_all(keep_trying))
        .unwrap_or(0);
    (tasks, knobs)
}

/// ", and N kernel thread(s) to their own priority" when N > 0.
pub fn raised_note(r: usize) -> String {
    if r == 0 {
        String::new()
    } else {
        format!(", and {r} kernel thread(s) to their own priority")
    }
}

/// How long scx_floor may be exiting with its BPF scheduler still attached
/// before the guardian ejects the scheduler, ms. A SIGKILL during a boost
/// has kept the process alive for up to 1.7 s (a thread pinned behind the
/// boost; see the module doc).
pub const EJECT_AFTER_MS: u64 = 3000;

/// CLOCK_MONOTONIC in ms.
fn monotonic_ms() -> u64 {
    crate::sys::monotonic_ns() / 1_000_000
}

/// Whether sysfs text `state` and `ops` (of /sys/kernel/sched_ext) say
/// that scx_floor's BPF scheduler is the one loaded.
pub fn ours_attached(state: &str, ops: &str) -> bool {
    state.trim() == "enabled" && ops.trim().starts_with("scx_floor")
}

/// Ejects the loaded BPF scheduler (SysRq-S: the kernel puts every task
/// back in the fair class) if it is scx_floor's; returns whether it did.
/// For a scx_floor that cannot finish exiting: until its last thread is
/// gone its scheduler stays attached, and such an exit can hang for good
/// (docs/design.md, Restore protocol, item 7).
fn eject_if_ours() -> bool {
    let dir = Path::new(crate::checks::SCX_SYSFS);
    let state = std::fs::read_to_string(dir.join("state")).unwrap_or_default();
    let ops = std::fs::read_to_string(dir.join("root/ops")).unwrap_or_default();
    ours_attached(&state, &ops) && std::fs::write("/proc/sysrq-trigger", "S").is_ok()
}

/// Ejects scx_floor's BPF scheduler ([`eject_if_ours`]) once it has been
/// exiting since `since` (ms, CLOCK_MONOTONIC) for [`EJECT_AFTER_MS`], once.
fn eject_when_due(since: u64, ejected: &std::cell::Cell<bool>) {
    if !ejected.get() && monotonic_ms() >= since + EJECT_AFTER_MS && eject_if_ours() {
        ejected.set(true);
        say!(
            "scx-floor-guard: scx_floor has been exiting for {EJECT_AFTER_MS} ms with its BPF scheduler still attached: ejected it (SysRq-S)"
        );
    }
}

/// The running guardian, as its parent holds it.
pub struct Guardian {
    /// its pid (one thread: also its tid)
    pub pid: u32,
    /// the pipe's write end: the guardian replays the journals when it closes
    _pipe: OwnedFd,
    /// how many times the guardian has restored the journals while
    /// scx_floor lives (stopped or exiting); in memory shared with it
    pub restores: &'static AtomicU64,
}

/// A [`Shared`] in an anonymous shared mapping: a forked child's writes
/// are seen by the parent. Never unmapped (one page for the process's life).
fn shared_page() -> Result<&'static Shared> {
    // SAFETY: a fresh anonymous mapping, zero-filled, page-aligned.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            std::mem::size_of::<Shared>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        bail!("mmap: {}", std::io::Error::last_os_error());
    }
    // SAFETY: aligned, zeroed (valid atomics of 0), and never unmapped.
    Ok(unsafe { &*(p as *const Shared) })
}

/// Forks the guardian. Keep the returned [`Guardian`] for as long as anything
/// may need restoring: dropping it closes the pipe, which tells the guardian
/// to replay the journals and exit. The guardian inherits the state
/// directory's lock (a `flock(2)` belongs to the open file, which the fork
/// shares), so the lock is free only once scx_floor and its guardian are
/// both gone: a new scx_floor never replays or writes the journals while an
/// earlier one's guardian still restores (it may retry a knob refused with
/// EBUSY for [`crate::knobs::BUSY_RETRY_MS`]). Call while single-threaded.
/// Errors: `pipe2` or `fork` failing.
pub fn spawn(state_dir: &Path) -> Result<Guardian> {
    let shared = shared_page()?;
    let wake_fd = crate::sys::eventfd_new().map_err(|e| anyhow::anyhow!("eventfd: {e}"))?;
    SHARED.store(shared as *const Shared as *mut Shared, Ordering::Release);
    WAKE_FD.store(wake_fd, Ordering::Release);
    let restores = &shared.restores;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe2: {}", std::io::Error::last_os_error());
    }
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the caller is single-threaded (no locks can be held across fork).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: the write end is ours in the child.
        unsafe { libc::close(wr) };
        become_guardian();
        watch_parent(rd, wake_fd, state_dir, shared);
        let (t, k, r) = replay_all(state_dir, &|| true);
        if t + k + r > 0 {
            say!(
                "scx-floor-guard: scx_floor is gone; restored {t} boosted task(s) and {k} kernel knob(s){}",
                raised_note(r)
            );
        }
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: rd is ours; wr is returned as owned.
    unsafe { libc::close(rd) };
    Ok(Guardian {
        pid: pid as u32,
        _pipe: unsafe { OwnedFd::from_raw_fd(wr) },
        restores,
    })
}

/// Makes the forked child the guardian: a session and process group of its
/// own (no terminal's signals reach it), job-control, quit and termination
/// signals ignored, named `scx-floor-guard`, `oom_score_adj` -1000, kept to
/// the housekeeping CPUs, SCHED_FIFO 99. Off nohz_full CPUs, as the
/// planner: each poll is a SCHED_FIFO 99 wake-up, and the kernel puts it on
/// the CPU that runs the lowest-priority task (find_lowest_rq(),
/// kernel/sched/rt.c), which on PREEMPT_RT is often the isolated CPU under
/// an RR 25 hog while CPU 0 runs a FIFO 50 interrupt thread. Failures are
/// logged and it goes on (with the mask it was forked with: every CPU).
fn become_guardian() {
    // SAFETY: plain syscalls on the calling process.
    unsafe {
        libc::setsid();
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGTSTP,
            libc::SIGTTIN,
            libc::SIGTTOU,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::prctl(
            libc::PR_SET_NAME,
            c"scx-floor-guard".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let _ = std::fs::write("/proc/self/oom_score_adj", "-1000");
    match online_cpus() {
        Ok(online) => {
            if let Err(e) = crate::sys::pin_thread(0, &housekeeping_of(&online, &nohz_full_cpus()))
            {
                say!("scx-floor-guard: could not keep to the housekeeping CPUs: {e}");
            }
        }
        Err(e) => say!("scx-floor-guard: could not keep to the housekeeping CPUs: {e:#}"),
    }
    let _ = attr::set_attr(
        0,
        &attr::SchedAttr {
            sched_policy: attr::SCHED_FIFO,
            sched_priority: 99,
            ..attr::empty()
        },
    );
}

/// What one wait on the pipe from scx_floor saw.
enum Pipe {
    /// every write end is closed: scx_floor is gone
    Closed,
    /// something was written (nothing is; read and dropped)
    Data,
    /// nothing within the timeout, a boost started (the eventfd), or the
    /// wait was interrupted
    Quiet,
}

/// Waits up to `timeout_ms` for the pipe's read end `rd` or the eventfd
/// `wake_fd` (read empty when it fired).
fn poll_pipe(rd: i32, wake_fd: i32, timeout_ms: i32) -> Pipe {
    let mut pfd = [
        libc::pollfd {
            fd: rd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake_fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two pollfds of our own.
    if unsafe { libc::poll(pfd.as_mut_ptr(), 2, timeout_ms) } <= 0 {
        return Pipe::Quiet;
    }
    if pfd[1].revents != 0 {
        crate::sys::eventfd_take(wake_fd);
    }
    if pfd[0].revents == 0 {
        return Pipe::Quiet;
    }
    let mut buf = [0u8; 64];
    // SAFETY: reading into our own buffer.
    let n = unsafe { libc::read(rd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if n == 0 || (n < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
        Pipe::Closed
    } else {
        Pipe::Data
    }
}

/// The whole text of the open file `f`, read from offset 0 into `buf`
/// (reused): what a fresh open and read of a /proc file would give. Empty
/// on an error (a process gone: ESRCH) or for text that is not UTF-8.
fn read_from_start<'b>(f: &std::fs::File, buf: &'b mut Vec<u8>) -> &'b str {
    use std::os::unix::fs::FileExt;
    buf.clear();
    let mut chunk = [0u8; 512];
    loop {
        match f.read_at(&mut chunk, buf.len() as u64) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => {
                buf.clear();
                break;
            }
        }
    }
    std::str::from_utf8(buf).unwrap_or_default()
}

/// The guardian's watch over its parent until the pipe closes: when
/// scx_floor is exiting, it replays the journals once and ejects the BPF
/// scheduler if the exit has not ended [`EJECT_AFTER_MS`] later; while
/// scx_floor is stopped, it replays them at every poll. Each replay is
/// counted in `shared.restores`, which scx_floor reads. It polls as
/// [`poll_timeout_ms`] says, woken early through `wake_fd` by
/// [`boost_starts`].
fn watch_parent(rd: i32, wake_fd: i32, state_dir: &Path, shared: &Shared) {
    let restores = &shared.restores;
    // SAFETY: plain syscall.
    let ppid = unsafe { libc::getppid() } as u32;
    let parent = format!("/proc/{ppid}/stat");
    let parent_stopped = || std::fs::read_to_string(&parent).is_ok_and(|s| is_stopped_state(&s));
    // Opened once, read from offset 0 at each poll: an open of a /proc path
    // walks it every time, which under the emulator was most of a poll.
    let stat_file = std::fs::File::open(&parent).ok();
    let mut buf = Vec::with_capacity(1024);
    let mut stopped = false;
    let mut exiting: Option<u64> = None;
    let ejected = std::cell::Cell::new(false);
    loop {
        let mut timeout = poll_timeout_ms(
            monotonic_ms(),
            shared.last_boost_ms.load(Ordering::SeqCst),
            stopped,
            exiting.is_some(),
        );
        if timeout == IDLE_POLL_MS {
            // idle first, then the time again: a boost that starts after
            // this load sees idle set and wakes us (boost_starts)
            shared.idle.store(1, Ordering::SeqCst);
            timeout = poll_timeout_ms(
                monotonic_ms(),
                shared.last_boost_ms.load(Ordering::SeqCst),
                false,
                false,
            );
        }
        let seen = poll_pipe(rd, wake_fd, timeout);
        shared.idle.store(0, Ordering::SeqCst);
        match seen {
            Pipe::Closed => return,
            Pipe::Data => continue,
            Pipe::Quiet => {}
        }
        if let Some(since) = exiting {
            // tried at every poll from then on: a state read between two
            // writes of the kernel's must not make it give up
            eject_when_due(since, &ejected);
            continue;
        }
        let stat: std::borrow::Cow<str> = match &stat_file {
            Some(f) => read_from_start(f, &mut buf).into(),
            None => std::fs::read_to_string(&parent).unwrap_or_default().into(),
        };
        if is_exiting_stat(&stat) {
            let since = monotonic_ms();
            exiting = Some(since);
            // the knob restore may wait for DL bandwidth to be released (up
            // to BUSY_RETRY_MS): the ejection stays due meanwhile
            let (t, k) = replay_exiting(state_dir, &|| {
                eject_when_due(since, &ejected);
                true
            });
            restores.fetch_add(1, Ordering::Release);
            say!(
                "scx-floor-guard: scx_floor is exiting; restored {t} boosted task(s) and {k} kernel knob(s)"
            );
            continue;
        }
        let now_stopped = is_stopped_state(&stat);
        if now_stopped {
            // At every poll while stopped, not only at the first: a
            // scx_floor that continued and was stopped again between two
            // polls (a debugger stepping) may have set the knobs again.
            let (t, k) = replay_stopped(state_dir, &parent_stopped);
            if !stopped || t + k > 0 {
                restores.fetch_add(1, Ordering::Release);
                say!(
                    "scx-floor-guard: scx_floor is stopped: restored {t} boosted task(s) and {k} kernel knob(s); its server is paused until it continues"
                );
            }
        } else if stopped {
            say!("scx-floor-guard: scx_floor continues");
        }
        stopped = now_stopped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_fast_while_boosts_are_recent_or_scx_floor_is_stopped_or_exiting() {
        let t = 1_000_000;
        assert_eq!(poll_timeout_ms(t, 0, false, false), IDLE_POLL_MS);
        assert_eq!(poll_timeout_ms(t, t, false, false), STOP_POLL_MS);
        assert_eq!(
            poll_timeout_ms(t + BUSY_LINGER_MS - 1, t, false, false),
            STOP_POLL_MS
        );
        assert_eq!(
            poll_timeout_ms(t + BUSY_LINGER_MS, t, false, false),
            IDLE_POLL_MS
        );
        assert_eq!(poll_timeout_ms(t, 0, true, false), STOP_POLL_MS);
        assert_eq!(poll_timeout_ms(t, 0, false, true), STOP_POLL_MS);
        // a clock read before the boost's own: still busy
        assert_eq!(poll_timeout_ms(t - 5, t, false, false), STOP_POLL_MS);
    }

    #[test]
    fn a_boost_wakes_an_idle_guardian_and_a_busy_one_never() {
        let sh = Shared {
            restores: AtomicU64::new(0),
            last_boost_ms: AtomicU64::new(0),
            idle: AtomicU32::new(0),
        };
        let fd = crate::sys::eventfd_new().unwrap();
        let take = crate::sys::eventfd_take;
        note_boost(&sh, fd);
        assert_eq!(take(fd), 0, "a busy guardian was woken");
        let t = sh.last_boost_ms.load(Ordering::SeqCst);
        assert!(t > 0 && t <= monotonic_ms());
        sh.idle.store(1, Ordering::SeqCst);
        note_boost(&sh, fd);
        note_boost(&sh, fd);
        assert_eq!(take(fd), 2, "each boost wakes an idle guardian");
        // the guardian, woken, clears the flag: no more writes
        sh.idle.store(0, Ordering::SeqCst);
        note_boost(&sh, fd);
        assert_eq!(take(fd), 0);
        // SAFETY: our own fd.
        unsafe { libc::close(fd) };
    }

    #[test]
    fn ejects_only_scx_floor_while_enabled() {
        assert!(ours_attached(
            "enabled\n",
            "scx_floor_0.1.0_x86_64_unknown_linux_gnu\n"
        ));
        assert!(!ours_attached("disabled\n", "scx_floor_0.1.0\n"));
        assert!(!ours_attached("enabled\n", "scx_lavd_1.0\n"));
        assert!(!ours_attached("enabled\n", ""));
        assert!(!ours_attached("disabling\n", "scx_floor_0.1.0\n"));
    }

    #[test]
    fn a_file_kept_open_reads_afresh_from_its_start() {
        let mut buf = Vec::new();
        let f = std::fs::File::open("/proc/thread-self/stat").unwrap();
        let a = read_from_start(&f, &mut buf).to_string();
        assert_eq!(stat_state(&a), Some("R"));
        // field 14 (utime) and the rest change; the pid and name do not
        let b = read_from_start(&f, &mut buf).to_string();
        assert_eq!(a.split(' ').next(), b.split(' ').next());
        assert!(b.contains(')') && b.ends_with('\n'));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, "x".repeat(1300)).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        assert_eq!(read_from_start(&f, &mut buf).len(), 1300);
        std::fs::write(&p, "short").unwrap();
        assert_eq!(read_from_start(&f, &mut buf), "short");
    }

    #[test]
    fn stopped_states() {
        assert!(is_stopped_state("123 (scx_floor) T 1 123 123 0 -1"));
        assert!(is_stopped_state("123 (a) b) (c) t 1 2"));
        assert!(!is_stopped_state("123 (scx_floor) S 1 123 123 0 -1"));
        assert!(!is_stopped_state("123 (T) R 1"));
        assert!(!is_stopped_state("garbage"));
    }

    /// A /proc/PID/stat line with `state`, flags (field 9) and the pending
    /// mask (field 31) given, the rest as a live process shows them.
    fn stat_line(state: &str, flags: u64, pending: u64) -> String {
        format!(
            "4242 (scx_floor (x)) {state} 1 4242 4242 0 -1 {flags} 101 0 0 0 5 3 0 0 -51 0 9 0 \
             1204813 3133440 383 18446744073709551615 1 2 3 0 0 {pending} 0 0 0 0 0 0 17 1 50 1 0 0 0"
        )
    }

    #[test]
    fn exiting_shows_in_the_main_threads_stat() {
        // a live process, sleeping, running or stopped, with SIGTERM (bit 14)
        // or SIGINT (bit 1) pending: not exiting
        assert!(!is_exiting_stat(&stat_line("S", 0x400040, 0)));
        assert!(!is_exiting_stat(&stat_line(
            "R",
            0x400040,
            1 << 14 | 1 << 1
        )));
        assert!(!is_exiting_stat(&stat_line("T", 0x400040, 0)));
        // SIGKILL pending, in do_exit(), dumping core, a zombie or dead
        assert!(is_exiting_stat(&stat_line("S", 0x400040, 1 << 8)));
        assert!(is_exiting_stat(&stat_line("R", 0x400044, 0)));
        assert!(is_exiting_stat(&stat_line("D", 0x400240, 0)));
        assert!(is_exiting_stat(&stat_line("Z", 0x400044, 0)));
        assert!(is_exiting_stat(&stat_line("X", 0, 0)));
        // waiting in do_exit() for another thread's core dump: its SIGKILL
        // taken, PF_SIGNALED | PF_POSTCOREDUMP, asleep (D) or idle (I)
        assert!(is_exiting_stat(&stat_line("D", 0x400448, 0)));
        assert!(is_exiting_stat(&stat_line("I", 0x400448, 0)));
        assert!(is_exiting_stat(&stat_line("R", 0x400440, 0)));
        // a comm that looks like a state, and garbage
        assert!(!is_exiting_stat("4242 (Z) S 1"));
        assert!(!is_exiting_stat("garbage"));
        assert!(!is_exiting_stat(""));
    }

    #[test]
    fn the_kernels_stat_has_flags_and_pending_where_read() {
        // our own stat: running, not exiting; field 9 has PF_* bits of a
        // user thread (no PF_KTHREAD 0x200000), and field 31 is there as in
        // the synthetic lines above
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(!is_exiting_stat(&me));
        assert!(boost::stat_field(&me, 31).is_some(), "no field 31 in {me}");
        let flags: u64 = boost::stat_field(&me, 9).unwrap().parse().unwrap();
        assert_eq!(flags & 0x200000, 0);
    }
}
