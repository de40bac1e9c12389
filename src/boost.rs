// SPDX-License-Identifier: GPL-2.0-only
//! The one module that changes other tasks' scheduling policies.
//!
//! Every boost is written to a journal on disk *before* the policy changes,
//! and removed only after the task has its own policy back. Whoever finds a
//! journal entry (the guardian process after a SIGKILL, or the next start)
//! restores the task if it still exists and is still boosted. A task that
//! exits while boosted needs nothing: its policy dies with it. A thread id
//! reused by a new task is told apart by its start time (field 22 of
//! /proc/PID/stat).
//!
//! On PREEMPT_RT it also raises the kernel's irq_work/N, rcuc/N, ktimers/N and rcub/N threads
//! while scx_floor runs ([`KthreadRaise`]), journaled the same way.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

#[cfg(test)]
use crate::attr::{deadline_attr, is_normal_policy, DL_MIN_RUNTIME_NS, SCHED_OTHER};
use crate::attr::{
    dl_zero_attr, empty, get_attr, SchedAttr, SCHED_DEADLINE, SCHED_FIFO, SCHED_FLAG_RESET_ON_FORK,
    SCHED_RR,
};

/// `sched_setattr(2)`, through which every other task's policy changes
/// (this module owns that side effect; [`crate::attr`] holds the call).
pub use crate::attr::set_attr;

/// Makes a boost: [`set_attr`] of `tid` to `boost`. Under the test fault
/// `no-boost` ([`crate::fault`]) nothing is changed and Ok is returned.
pub fn make_boost(tid: u32, boost: &SchedAttr) -> std::io::Result<()> {
    if crate::fault::is(crate::fault::Fault::NoBoost) {
        return Ok(());
    }
    set_attr(tid, boost)
}

/// The highest RT priority scx_floor boosts to: 99 is kept for its own loop.
pub const MAX_BOOST_PRIO: u32 = 98;

/// The attributes that undo a boost: the task's policy, flags, nice and RT
/// priority as they were.
pub fn restore_attr_of(saved: &SchedAttr) -> SchedAttr {
    SchedAttr {
        sched_policy: saved.sched_policy,
        sched_flags: saved.sched_flags & SCHED_FLAG_RESET_ON_FORK,
        sched_nice: saved.sched_nice,
        sched_priority: saved.sched_priority,
        ..empty()
    }
}

/// Gives `tid` its own policy back ([`restore_policy`]): `saved` are its
/// attributes before the boost, `now` its attributes now ([`get_attr`]).
///
/// A SCHED_DEADLINE task switched to another policy while it sleeps keeps
/// its bandwidth in the root domain's admission total (`dl_bw->total_bw`)
/// for good if its 0-lag time had passed when it blocked: the kernel
/// releases that bandwidth only from the 0-lag ("inactive") timer or for a
/// queued task (kernel/sched/deadline.c, `task_non_contending()`,
/// `switched_from_dl()`), and such leaks add up until the kernel refuses
/// every DL admission and ext_server write (EBUSY). A change of a DL task's
/// own parameters is accounted at once, so a sleeping boosted task is first
/// given a reservation of zero bandwidth ([`dl_zero_attr`]), then its policy.
/// Only a sleeping task with runtime left: one whose runtime is used up
/// (negative after an overrun) is throttled, its 0-lag timer releases the
/// bandwidth, and its replenishment timer, were its reservation shrunk,
/// would push its deadline far out (runtime is added a period at a time
/// until positive), and a later boost keeps a deadline that has not passed.
/// A runnable task is not shrunk either: the kernel releases its bandwidth
/// at its 0-lag time (docs/design.md, Decisions: "Zero-bandwidth
/// reservation before restoring a sleeping DL boost"). A failed shrink is
/// ignored.
/// Errors: those of the restoring `sched_setscheduler()`.
pub fn unboost(tid: u32, saved: &SchedAttr, now: &SchedAttr) -> std::io::Result<()> {
    if now.sched_policy == SCHED_DEADLINE
        && stat_of(tid).is_some_and(|(_, state)| state != 'R')
        && dl_runtime_left(tid).is_some_and(|r| r > 0)
    {
        let _ = set_attr(tid, &dl_zero_attr());
    }
    restore_policy(tid, saved)
}

/// Gives `tid` the policy and reset-on-fork flag of `saved` (its attributes
/// before the boost) with `sched_setscheduler(2)`, which keeps the task's
/// nice value as it is now: the kernel fills the nice value of that call
/// from the task's static priority (`_sched_setscheduler()` in
/// kernel/sched/syscalls.c), which a SCHED_FIFO or SCHED_DEADLINE boost does
/// not change and a `renice` during the boost does. So the task gets back
/// the nice value it had, or the one an administrator gave it meanwhile,
/// with no system call to read it (the kernel does not report nice for RT
/// tasks). Errors: those of `sched_setscheduler()` (ESRCH: gone). Under
/// the test fault `late-end` ([`crate::fault`]) it is made 10 ms late.
pub fn restore_policy(tid: u32, saved: &SchedAttr) -> std::io::Result<()> {
    if crate::fault::is(crate::fault::Fault::LateEnd) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let a = restore_attr_of(saved);
    let mut policy = a.sched_policy as libc::c_int;
    if a.sched_flags & SCHED_FLAG_RESET_ON_FORK != 0 {
        policy |= libc::SCHED_RESET_ON_FORK;
    }
    let param = libc::sched_param {
        sched_priority: a.sched_priority as libc::c_int,
    };
    // SAFETY: `param` is a valid sched_param for the call's duration.
    let r = unsafe { libc::sched_setscheduler(tid as libc::pid_t, policy, &param) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `errno` the restores give when a task no longer has the attributes its
/// boost gave it ([`is_boost_of`] is false): someone else changed them
/// during the boost (`chrt`), or the thread id now names another task.
/// Nothing was changed.
pub const ERR_CHANGED: i32 = libc::ESTALE;

/// Whether `now` (a task's attributes, [`get_attr`]) are still those
/// scx_floor gave it with `boost`: the same policy, the reset-on-fork flag
/// every boost sets, and the same RT priority (SCHED_FIFO) or runtime and
/// period (SCHED_DEADLINE; or those of [`dl_zero_attr`], which [`unboost`]
/// sets first: a restore cut short after it must still be finished). A task
/// an administrator moved with `chrt` during the boost, to any policy or
/// priority, fails it, and is left as they set it; so does a reused thread
/// id at its own policy.
pub fn is_boost_of(now: &SchedAttr, boost: &SchedAttr) -> bool {
    let dl = |a: &SchedAttr| (a.sched_runtime, a.sched_period);
    now.sched_policy == boost.sched_policy
        && now.sched_flags & SCHED_FLAG_RESET_ON_FORK != 0
        && match boost.sched_policy {
            SCHED_DEADLINE => dl(now) == dl(boost) || dl(now) == dl(&dl_zero_attr()),
            _ => now.sched_priority == boost.sched_priority,
        }
}

/// What a restore does with a task now at `now` ([`get_attr`]) that was
/// boosted with `boost` from `saved`: `Ok(true)` restore it (still the
/// boost's, [`is_boost_of`]); `Ok(false)` nothing (back at its own policy
/// already: another path restored it, or the tid names a new task at that
/// policy); `Err` [`ERR_CHANGED`] when it is at any other policy (an
/// administrator's `chrt` during the boost), to be left as it is.
pub fn restore_due(now: &SchedAttr, boost: &SchedAttr, saved: &SchedAttr) -> std::io::Result<bool> {
    if is_boost_of(now, boost) {
        Ok(true)
    } else if now.sched_policy == saved.sched_policy {
        Ok(false)
    } else {
        Err(std::io::Error::from_raw_os_error(ERR_CHANGED))
    }
}

/// Runtime left in `tid`'s current SCHED_DEADLINE period, ns (`dl.runtime`
/// in /proc/PID/sched; negative after an overrun). `None` when unreadable.
/// Read into a stack buffer (nothing allocated).
pub fn dl_runtime_left(tid: u32) -> Option<i64> {
    let mut buf = [0u8; 8192];
    let text = crate::sys::read_path(format_args!("/proc/{tid}/sched"), &mut buf)?;
    // the first line holds the command name, which may hold any byte
    let from = text.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    parse_dl_runtime(std::str::from_utf8(&text[from..]).ok()?)
}

/// The `dl.runtime` value of a /proc/PID/sched text.
pub fn parse_dl_runtime(s: &str) -> Option<i64> {
    s.lines()
        .find_map(|l| l.strip_prefix("dl.runtime"))
        .and_then(|rest| rest.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// SCHED_FIFO boost one above `above` (the RT priority to beat), capped at
/// [`MAX_BOOST_PRIO`].
pub fn fifo_attr(above: u32) -> SchedAttr {
    SchedAttr {
        sched_policy: SCHED_FIFO,
        sched_flags: SCHED_FLAG_RESET_ON_FORK,
        sched_priority: (above + 1).clamp(1, MAX_BOOST_PRIO),
        ..empty()
    }
}

/// Start time of `tid` in clock ticks since boot (field 22 of
/// /proc/PID/stat), and its state letter (field 3). `None` when gone.
/// Reads a stack buffer (nothing allocated: the executor and the watchdog
/// call it while serving).
pub fn stat_of(tid: u32) -> Option<(u64, char)> {
    let mut buf = [0u8; STAT_MAX];
    let s = read_stat(format_args!("/proc/{tid}/stat"), &mut buf)?;
    parse_stat(s)
}

/// Longest /proc/PID/stat line read, bytes: 52 fields of up to 20 digits
/// and a command name of up to 64 bytes fit.
pub const STAT_MAX: usize = 1280;

/// Reads the /proc stat file at the path `args` formats to into `buf`,
/// allocating nothing; None when it cannot be read or is not text.
pub fn read_stat<'b>(args: std::fmt::Arguments, buf: &'b mut [u8]) -> Option<&'b str> {
    let text = crate::sys::read_path(args, buf)?;
    // the command name may hold any byte: only what follows it must be text
    let close = text.iter().rposition(|&b| b == b')')?;
    std::str::from_utf8(&text[close..]).ok()
}

/// Parses (start time, state) out of a /proc/PID/stat line. The command name
/// (field 2) may hold spaces and parentheses: fields are counted after the
/// last ')'.
pub fn parse_stat(s: &str) -> Option<(u64, char)> {
    let state = stat_field(s, 3)?.chars().next()?;
    let start = stat_field(s, 22)?.parse().ok()?;
    Some((start, state))
}

/// Field `n` (1-based, `n >= 3`) of a /proc/PID/stat line, counted after
/// the last ')', since the command name (field 2) may hold spaces and
/// parentheses; allocates nothing.
pub fn stat_field(s: &str, n: usize) -> Option<&str> {
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .nth(n.checked_sub(3)?)
}

/// Fields 3 to `out.len() + 2` of a /proc/PID/stat line into `out` (field N
/// at index N - 3), counted after the last ')'; returns how many there
/// were. Allocates nothing.
pub fn stat_fields_into<'a>(s: &'a str, out: &mut [&'a str]) -> Option<usize> {
    let mut n = 0;
    for (slot, f) in out
        .iter_mut()
        .zip(s[s.rfind(')')? + 1..].split_whitespace())
    {
        *slot = f;
        n += 1;
    }
    Some(n)
}

/// One boosted task as the journal keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// thread id
    pub tid: u32,
    /// its start time, to tell a reused tid apart
    pub start: u64,
    /// its attributes before the boost
    pub saved: SchedAttr,
    /// the attributes scx_floor gave it (the boost, or the raise)
    pub boost: SchedAttr,
}

/// A journal record as stored (56 bytes); `state` is [`REC_BOOSTED`],
/// [`REC_RAISED`] or 0 (free). `policy` .. `prio`: the attributes saved;
/// `b_*`: those scx_floor gave the task.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Rec {
    state: u32,
    tid: u32,
    start: u64,
    policy: u32,
    flags: u32,
    nice: i32,
    prio: u32,
    b_policy: u32,
    b_prio: u32,
    b_runtime: u64,
    b_period: u64,
}

/// Record state of a boosted task.
const REC_BOOSTED: u32 = 1;
/// Record state of a raised kernel thread ([`KthreadRaise`]).
const REC_RAISED: u32 = 2;

const MAX_CPUS: usize = crate::bpf_intf::floor_consts_FLOOR_MAX_CPUS as usize;

/// Records for boosts: one per BPF boost slot.
pub const BOOST_RECS: usize = MAX_CPUS * crate::bpf_intf::floor_consts_FLOOR_SLOTS_PER_CPU as usize;

/// Number of records: the boosts', then [`MAX_CPUS`] for each kind of
/// [`RAISED_KTHREADS`], in that order: record
/// `BOOST_RECS + kind * MAX_CPUS + n`, n the CPU, or the rcu_node of rcub/N.
/// A kind added later goes last, so the records of the earlier kinds keep
/// their offsets.
pub const JOURNAL_RECS: usize = BOOST_RECS + RAISED_KTHREADS.len() * MAX_CPUS;

/// The journal of boosted tasks: a root-only file on tmpfs mapped shared
/// into memory, one 56-byte record per boost slot. Writing a record is a
/// few memory stores, no system call, yet it outlives the process: the page
/// cache of the file is what the guardian (or the next start) reads. The
/// record layout is in the file's name ([`crate::state::journal_path`]).
pub struct Journal {
    map: *mut Rec,
}

// SAFETY: each record is written by one thread (the owner of that slot);
// the state word is written last with release ordering.
unsafe impl Send for Journal {}
unsafe impl Sync for Journal {}

impl Journal {
    /// Maps the journal file `path` (created root-only and zeroed if new).
    pub fn open(path: &Path) -> Result<Self> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(d) = path.parent() {
            crate::state::private_dir(d)?;
        }
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("opening {}", path.display()))?;
        // Grown, never shrunk: a file an earlier version sized for fewer
        // raised-thread kinds keeps its records at the same offsets, and a
        // larger one (a later version's) keeps the records past ours.
        let len = JOURNAL_RECS * std::mem::size_of::<Rec>();
        if f.metadata()?.len() < len as u64 {
            f.set_len(len as u64)?;
        }
        // SAFETY: a shared mapping of a file we sized; unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!(
                "mmap {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Journal { map: p as *mut Rec })
    }

    fn state(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        assert!(i < JOURNAL_RECS);
        // SAFETY: in bounds; the state word is the record's first u32.
        unsafe {
            std::sync::atomic::AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.map.add(i)).state))
        }
    }

    /// Records boost `e` in record `i` (< [`BOOST_RECS`]); call before
    /// changing the task's policy.
    pub fn record(&self, i: usize, e: &Entry) {
        self.record_as(i, e, REC_BOOSTED);
    }

    fn record_as(&self, i: usize, e: &Entry, state: u32) {
        let (a, b) = (&e.saved, &e.boost);
        let r = Rec {
            state: 0,
            tid: e.tid,
            start: e.start,
            policy: a.sched_policy,
            flags: a.sched_flags as u32,
            nice: a.sched_nice,
            prio: a.sched_priority,
            b_policy: b.sched_policy,
            b_prio: b.sched_priority,
            b_runtime: b.sched_runtime,
            b_period: b.sched_period,
        };
        // SAFETY: in bounds (state() checks); record i belongs to the caller.
        unsafe { std::ptr::write_volatile(self.map.add(i), r) };
        self.state(i)
            .store(state, std::sync::atomic::Ordering::Release);
    }

    /// Frees record `i`; call after the task's policy is back.
    pub fn forget(&self, i: usize) {
        self.state(i).store(0, std::sync::atomic::Ordering::Release);
    }

    /// Every boosted task in the journal: (record, entry).
    pub fn entries(&self) -> Vec<(usize, Entry)> {
        self.entries_in(REC_BOOSTED)
    }

    /// Every raised kernel thread in the journal: (record, entry).
    pub fn raises(&self) -> Vec<(usize, Entry)> {
        self.entries_in(REC_RAISED)
    }

    fn entries_in(&self, state: u32) -> Vec<(usize, Entry)> {
        (0..JOURNAL_RECS)
            .filter(|&i| self.state(i).load(std::sync::atomic::Ordering::Acquire) == state)
            .map(|i| {
                // SAFETY: in bounds.
                let r = unsafe { std::ptr::read_volatile(self.map.add(i)) };
                let saved = SchedAttr {
                    sched_policy: r.policy,
                    sched_flags: r.flags as u64,
                    sched_nice: r.nice,
                    sched_priority: r.prio,
                    ..empty()
                };
                // Every boost sets reset-on-fork (not stored); a raise does not.
                let boost = SchedAttr {
                    sched_policy: r.b_policy,
                    sched_flags: if state == REC_BOOSTED {
                        SCHED_FLAG_RESET_ON_FORK
                    } else {
                        0
                    },
                    sched_priority: r.b_prio,
                    sched_runtime: r.b_runtime,
                    sched_deadline: r.b_period,
                    sched_period: r.b_period,
                    ..empty()
                };
                (
                    i,
                    Entry {
                        tid: r.tid,
                        start: r.start,
                        saved,
                        boost,
                    },
                )
            })
            .collect()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // SAFETY: the mapping made in open().
        unsafe {
            libc::munmap(
                self.map as *mut libc::c_void,
                JOURNAL_RECS * std::mem::size_of::<Rec>(),
            )
        };
    }
}

/// Whether `policy` is one scx_floor boosts to (SCHED_FIFO, SCHED_DEADLINE).
pub fn is_boost_policy(policy: u32) -> bool {
    policy == SCHED_FIFO || policy == SCHED_DEADLINE
}

/// Whether a task found in the journal must be restored: it is the same task
/// (same start time) and still has the attributes of its boost
/// ([`is_boost_of`]: one moved with `chrt` during the boost is left alone).
pub fn needs_restore(e: &Entry, now_start: Option<u64>, now: Option<&SchedAttr>) -> bool {
    now_start == Some(e.start)
        && now.is_some_and(|a| is_boost_of(a, &e.boost))
        && !is_boost_policy(e.saved.sched_policy)
}

/// Replays a journal file of the 32-byte record layout of earlier versions
/// (state u32, tid u32, start u64, policy u32, flags u32, nice i32, prio
/// u32; no boost attributes), then removes it; returns how many tasks and
/// how many kernel threads it put back. Those versions sized the file for
/// [`BOOST_RECS`] boost records and 0 to 4 kinds of raised kernel threads
/// ([`MAX_CPUS`] records each, after the boost records); a file of any
/// other length is another layout, and is removed unread (logged). A boosted
/// task is restored if it is the same task and runs at SCHED_FIFO or
/// SCHED_DEADLINE (those versions' rule), a raised thread if it is at
/// SCHED_FIFO [`RAISE_PRIO`]. The file is read, never truncated: an old
/// guardian may still have it mapped. None there: (0, 0).
pub fn replay_legacy(path: &Path) -> (usize, usize) {
    let Ok(bytes) = fs::read(path) else {
        return (0, 0);
    };
    let (mut tasks, mut threads) = (0, 0);
    if (0..=4).any(|kinds| bytes.len() == (BOOST_RECS + kinds * MAX_CPUS) * 32) {
        for (i, rec) in bytes.chunks_exact(32).enumerate() {
            let u32_at = |o: usize| u32::from_ne_bytes(rec[o..o + 4].try_into().unwrap());
            let state = u32_at(0);
            let boosted = state == REC_BOOSTED && i < BOOST_RECS;
            let raised = state == REC_RAISED && i >= BOOST_RECS;
            if !(boosted || raised) {
                continue;
            }
            let tid = u32_at(4);
            let start = u64::from_ne_bytes(rec[8..16].try_into().unwrap());
            let saved = SchedAttr {
                sched_policy: u32_at(16),
                sched_flags: u32_at(20) as u64,
                sched_nice: u32_at(24) as i32,
                sched_priority: u32_at(28),
                ..empty()
            };
            let (Some((now_start, _)), Ok(now)) = (stat_of(tid), get_attr(tid)) else {
                continue;
            };
            let ours = now_start == start
                && if boosted {
                    is_boost_policy(now.sched_policy) && !is_boost_policy(saved.sched_policy)
                } else {
                    now.sched_policy == SCHED_FIFO && now.sched_priority == RAISE_PRIO
                };
            if !ours {
                continue;
            }
            let r = if boosted {
                unboost(tid, &saved, &now)
            } else {
                set_attr(tid, &restore_attr_of(&saved))
            };
            match r {
                Ok(()) if boosted => tasks += 1,
                Ok(()) => threads += 1,
                Err(e) => log::warn!("could not restore task {tid} (older journal): {e}"),
            }
        }
    } else {
        log::warn!(
            "{}: {} bytes, not a journal of an earlier version's 32-byte records: removed unread",
            path.display(),
            bytes.len()
        );
    }
    if let Err(e) = fs::remove_file(path) {
        log::warn!("removing {}: {e}", path.display());
    }
    (tasks, threads)
}

/// Puts back every boosted task in the journal and empties its boost
/// records (raised kernel threads are [`replay_raises`]'s). Returns how
/// many tasks were restored. Used at exit, by the guardian, and at start.
pub fn replay(j: &Journal) -> usize {
    replay_records(j, true)
}

/// Puts back every boosted task in the journal, as [`replay`] does, but
/// keeps the records of tasks alive and not at their boost (not boosted
/// yet, or moved by an administrator: the final [`replay`] drops those):
/// a boost whose
/// `sched_setattr()` is still in flight in a dying scx_floor lands after
/// this, and a later [`replay`] must still find it. For the guardian while
/// scx_floor is exiting but not gone.
pub fn replay_boosted(j: &Journal) -> usize {
    replay_records(j, false)
}

/// Puts back every raised kernel thread still at [`RAISE_PRIO`] and
/// empties those records; returns how many were put back. For when
/// scx_floor is gone: while it is stopped or exiting, its BPF side is still
/// loaded and goes on waking through irq_work (see [`KthreadRaise`]).
pub fn replay_raises(j: &Journal) -> usize {
    let mut n = 0;
    for (i, e) in j.raises() {
        match put_back_raise(&e) {
            Ok(true) => n += 1,
            Ok(false) => {}
            Err(err) => log::warn!("could not restore kernel thread {}: {err}", e.tid),
        }
        j.forget(i);
    }
    n
}

/// Gives raised thread `e` its own priority back if [`raise_needs_restore`]
/// says so; returns whether it did. Errors: those of `sched_setattr()`.
fn put_back_raise(e: &Entry) -> std::io::Result<bool> {
    let start = stat_of(e.tid).map(|s| s.0);
    let now = get_attr(e.tid).ok();
    if !raise_needs_restore(e, start, now.as_ref()) {
        return Ok(false);
    }
    set_attr(e.tid, &restore_attr_of(&e.saved)).map(|()| true)
}

fn replay_records(j: &Journal, forget_all: bool) -> usize {
    let mut n = 0;
    for (i, e) in j.entries() {
        let start = stat_of(e.tid).map(|s| s.0);
        let now = get_attr(e.tid).ok();
        let restore = now.filter(|a| needs_restore(&e, start, Some(a)));
        if let Some(now) = restore {
            match unboost(e.tid, &e.saved, &now) {
                Ok(()) => n += 1,
                Err(err) => log::warn!("could not restore task {}: {err}", e.tid),
            }
        } else if !forget_all && start == Some(e.start) {
            continue;
        }
        j.forget(i);
    }
    n
}

/// Saves `tid`'s attributes, and `boost` (those it is about to get), in
/// journal record `i` before a boost. `start`: its start time (clock ticks
/// since boot) when the caller knows it (the BPF side records it), else
/// read from /proc. Tells the guardian a boost starts
/// ([`crate::guard::boost_starts`]).
/// Errors: the task is gone, or already runs at a real-time policy.
pub fn journal_before_boost(
    j: &Journal,
    i: usize,
    tid: u32,
    start: Option<u64>,
    boost: &SchedAttr,
) -> Result<Entry> {
    let start = match start {
        Some(s) => s,
        None => match stat_of(tid) {
            Some((s, _)) => s,
            None => bail!("task {tid} is gone"),
        },
    };
    let saved = get_attr(tid).with_context(|| format!("sched_getattr({tid})"))?;
    if saved.sched_policy == SCHED_FIFO
        || saved.sched_policy == SCHED_RR
        || saved.sched_policy == SCHED_DEADLINE
    {
        bail!(
            "task {tid} already runs at a real-time policy ({})",
            saved.sched_policy
        );
    }
    let e = Entry {
        tid,
        start,
        saved,
        boost: *boost,
    };
    j.record(i, &e);
    crate::guard::boost_starts();
    Ok(e)
}

/// SCHED_FIFO priority of the raised kernel threads while scx_floor runs.
pub const RAISE_PRIO: u32 = 99;

/// The kernel threads raised to [`RAISE_PRIO`] while scx_floor runs, by
/// command-name prefix: per CPU ("irq_work/3" is CPU 3's), but for rcub/N,
/// one per rcu_node (N its index, below the number of CPUs); see
/// [`KthreadRaise`] for why each.
pub const RAISED_KTHREADS: [&str; 4] = ["irq_work/", "rcuc/", "ktimers/", "rcub/"];

/// `PF_KTHREAD` (include/linux/sched.h): the task is a kernel thread.
pub const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether a raised thread found in the journal must be put back: the same
/// task (same start time), still at exactly the SCHED_FIFO [`RAISE_PRIO`]
/// scx_floor gave it (a priority changed since by someone else is theirs).
pub fn raise_needs_restore(e: &Entry, now_start: Option<u64>, now: Option<&SchedAttr>) -> bool {
    now_start == Some(e.start)
        && now.is_some_and(|a| a.sched_policy == SCHED_FIFO && a.sched_priority == RAISE_PRIO)
        && !(e.saved.sched_policy == SCHED_FIFO && e.saved.sched_priority == RAISE_PRIO)
}

/// Kind (index in [`RAISED_KTHREADS`]) and CPU (rcu_node for rcub/N) of a
/// kernel thread to raise, from its command name: "rcuc/3" is (1, 3); None
/// for any other name.
pub fn raised_kthread(comm: &str) -> Option<(usize, usize)> {
    let comm = comm.trim_end();
    RAISED_KTHREADS
        .iter()
        .enumerate()
        .find_map(|(kind, prefix)| {
            let n = comm.strip_prefix(prefix)?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((kind, n.parse().ok()?))
        })
}

/// The lowest RT priority of the kernel's per-CPU `irq_work/N` threads now
/// (0 for one that is not SCHED_FIFO or SCHED_RR, or whose attributes
/// cannot be read), or None when there are none. PREEMPT_RT runs irq_work
/// queued without `IRQ_WORK_HARD_IRQ` in them (`kernel/irq_work.c`), and a
/// BPF ring buffer's wake-up is such work: written on a CPU where a
/// SCHED_DEADLINE task, or an RT task at this priority or above, runs, it
/// waits until that task leaves ([`crate::reach::at_or_above`]). Read after
/// [`KthreadRaise::apply`]: [`RAISE_PRIO`] unless a raise failed.
pub fn irq_work_prio() -> Option<u32> {
    raised_kthreads()
        .iter()
        .filter(|&&(kind, _, _)| kind == 0)
        .map(|&(_, _, tid)| match get_attr(tid) {
            Ok(a) if a.sched_policy == SCHED_FIFO || a.sched_policy == SCHED_RR => a.sched_priority,
            _ => 0,
        })
        .min()
}

/// The kernel flags (field 9) of a /proc/PID/stat line.
fn parse_stat_flags(s: &str) -> Option<u64> {
    stat_field(s, 9)?.parse().ok()
}

/// The kernel threads of [`RAISED_KTHREADS`], (kind, cpu, tid) sorted.
/// PREEMPT_RT has them; other kernels have none (no irq_work threads, and
/// rcuc threads only with `rcutree.use_softirq=0`). A user task may name
/// itself "irq_work/1": only kernel threads (`PF_KTHREAD`) are listed.
/// Kernel threads are kthreadd's (pid 2) children: their list
/// (CONFIG_PROC_CHILDREN) when there is one, else every process.
pub fn raised_kthreads() -> Vec<(usize, usize, u32)> {
    let pids: Vec<u32> = match fs::read_to_string("/proc/2/task/2/children") {
        Ok(s) => s
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect(),
        Err(_) => match fs::read_dir("/proc") {
            Ok(dir) => dir
                .filter_map(|d| d.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .collect(),
            Err(_) => return Vec::new(),
        },
    };
    let mut v: Vec<(usize, usize, u32)> = pids
        .into_iter()
        .filter_map(|pid| {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            let (kind, cpu) = raised_kthread(&comm)?;
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            (parse_stat_flags(&stat)? & PF_KTHREAD != 0).then_some((kind, cpu, pid))
        })
        .collect();
    v.sort_unstable();
    v
}

/// The kernel threads of [`RAISED_KTHREADS`] at SCHED_FIFO
/// [`RAISE_PRIO`] for as long as this value lives (journaled first, put
/// back on drop, by the guardian, or by the next start). PREEMPT_RT runs
/// all four at SCHED_FIFO 1 (rcuc/N and rcub/N at `rcutree.kthread_prio`,
/// whose default is 1). irq_work/N and rcuc/N do their work inside
/// RCU read-side critical sections (every sleeping spinlock is one on
/// PREEMPT_RT, and so is a bottom-half-disabled section); ktimers/N runs the
/// timers, sched_ext's watchdog among them.
///
/// irq_work/N: a BPF ring buffer's wake-up (`bpf_ringbuf_output()`, which
/// scx_floor's BPF side uses to wake its threads) is lazy irq_work, run by
/// the CPU's irq_work/N thread, and its wake-up path takes sleeping
/// spinlocks. An RT task above FIFO 1 that arrives on that CPU while it is
/// in one (or the FIFO 99 thread it wakes, when its priority inheritance
/// ends at `rt_mutex_slowunlock()`) preempts it there, and an RT hog then
/// keeps it off the CPU: the grace period cannot end, and sched_ext answers
/// the RCU stall by ejecting the scheduler.
///
/// rcuc/N: RCU's per-CPU core work (`rcutree.use_softirq=0`, PREEMPT_RT's
/// default) runs with bottom halves disabled. Preempted there by an RT hog
/// (or by a SCHED_DEADLINE boost, after which the hog runs first), it holds
/// up every grace period, and sched_ext ejects the scheduler ("RCU CPU
/// stall").
///
/// ktimers/N: PREEMPT_RT runs the timer softirq (timer-wheel callbacks,
/// delayed work among them) in this thread at FIFO 1. An RT hog above it
/// stops every timer queued on its CPU, and sched_ext's own watchdog is a
/// delayed work: queued on a CPU a hog then holds, it never runs, and after
/// the watchdog timeout the kernel ejects the BPF scheduler ("watchdog
/// failed to check in"). The timer goes to the CPU that queues it unless
/// `nohz_full=` moves it to a housekeeping CPU.
///
/// rcub/N: RCU priority boosting (CONFIG_RCU_BOOST, on in Debian's
/// PREEMPT_RT kernel) lends a reader preempted inside a read-side section,
/// that holds a grace period up for `CONFIG_RCU_BOOST_DELAY` (500 ms), the
/// priority of its rcu_node's rcub/N thread, which blocks on an rt_mutex
/// the reader is made to own (`rcu_boost()`, kernel/rcu/tree_plugin.h). At
/// FIFO 1 that moves a normal reader out of sched_ext into the RT class,
/// where no ext_server or fair_server serves it and any RT hog above 1 keeps
/// it off its CPU; the unload of a BPF scheduler waits for a grace period,
/// so scx_floor's own exit then hangs. Raised, the reader
/// inherits FIFO 99 and runs before any hog below 99; the server's look
/// through /proc finds such a reader too (its policy is still normal) but
/// only while scx_floor serves, up to a second later, and not during the
/// unload.
///
/// At FIFO 99 no hog preempts them (equal priorities do not preempt), a
/// boost that does hands the CPU back to them before the hog, and the
/// threads they wake queue behind them; their items are short. What was
/// seen without each raise: docs/design.md, Restore protocol, item 6, and
/// Decisions: "Kernel threads raised to FIFO 99 on PREEMPT_RT".
pub struct KthreadRaise {
    journal: Journal,
    /// (record, tid)
    raised: Vec<(usize, u32)>,
}

impl KthreadRaise {
    /// Raises every thread of [`raised_kthreads`] below [`RAISE_PRIO`],
    /// recording each in `journal` first. A thread that cannot be raised is
    /// logged and left. Returns the value that puts them back when dropped.
    pub fn apply(journal: Journal) -> Self {
        let mut raised = Vec::new();
        for (kind, cpu, tid) in raised_kthreads() {
            if cpu >= MAX_CPUS {
                continue;
            }
            let (Some((start, _)), Ok(saved)) = (stat_of(tid), get_attr(tid)) else {
                continue;
            };
            if saved.sched_policy == SCHED_FIFO && saved.sched_priority >= RAISE_PRIO {
                continue;
            }
            let i = BOOST_RECS + kind * MAX_CPUS + cpu;
            let attr = SchedAttr {
                sched_policy: SCHED_FIFO,
                sched_priority: RAISE_PRIO,
                ..empty()
            };
            let e = Entry {
                tid,
                start,
                saved,
                boost: attr,
            };
            journal.record_as(i, &e, REC_RAISED);
            match set_attr(tid, &attr) {
                Ok(()) => raised.push((i, tid)),
                Err(e) => {
                    journal.forget(i);
                    log::warn!(
                        "could not raise {}{cpu} (task {tid}): {e}",
                        RAISED_KTHREADS[kind]
                    );
                }
            }
        }
        KthreadRaise { journal, raised }
    }

    /// The raised threads' ids.
    pub fn tids(&self) -> Vec<u32> {
        self.raised.iter().map(|r| r.1).collect()
    }
}

impl Drop for KthreadRaise {
    fn drop(&mut self) {
        let mine: Vec<usize> = self.raised.iter().map(|r| r.0).collect();
        for (i, e) in self.journal.raises() {
            if !mine.contains(&i) {
                continue;
            }
            if let Err(err) = put_back_raise(&e) {
                log::warn!("could not restore kernel thread {}: {err}", e.tid);
                continue;
            }
            self.journal.forget(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_odd_names() {
        let line = "1234 (a b) c)) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21";
        assert_eq!(parse_stat(line), Some((424242, 'R')));
        assert_eq!(parse_stat("garbage"), None);
        // SAFETY: plain syscall.
        let own = stat_of(unsafe { libc::gettid() } as u32).expect("own stat");
        assert_eq!(own.1, 'R', "the thread reading its own stat is running");
        assert_eq!(stat_field(line, 3), Some("R"));
        assert_eq!(stat_field(line, 9), Some("6"));
        assert_eq!(stat_field(line, 2), None, "field 2 is the name");
        assert_eq!(stat_field(line, 99), None);
        let mut f = [""; 4];
        assert_eq!(stat_fields_into(line, &mut f), Some(4));
        assert_eq!(f, ["R", "1", "2", "3"]);
        let mut f = [""; 40];
        assert_eq!(stat_fields_into(line, &mut f), Some(22));
        assert_eq!(stat_fields_into("no name", &mut f), None);
    }

    #[test]
    fn dl_runtime_from_proc_sched() {
        let text = "python3 (312, #threads: 1)\n\
            -------------------------------------------------------------------\n\
            se.exec_start                                :         17951.842302\n\
            policy                                       :                    6\n\
            prio                                         :                   -1\n\
            dl.runtime                                   :              -277553\n\
            dl.deadline                                  :          17952346120\n";
        assert_eq!(parse_dl_runtime(text), Some(-277553));
        assert_eq!(
            parse_dl_runtime(&text.replace("-277553", "9500000")),
            Some(9_500_000)
        );
        // not a DL task: no such line
        assert_eq!(parse_dl_runtime("policy : 0\nprio : 120\n"), None);
    }

    #[test]
    fn boost_attrs() {
        let dl = deadline_attr(20_000, 1_000_000_000);
        assert_eq!(
            (
                dl.sched_policy,
                dl.sched_runtime,
                dl.sched_deadline,
                dl.sched_period
            ),
            (SCHED_DEADLINE, 20_000, 1_000_000_000, 1_000_000_000)
        );
        assert_eq!(
            deadline_attr(10, 1_000_000).sched_runtime,
            DL_MIN_RUNTIME_NS
        );
        // the zero reservation: least runtime, a period long enough that
        // (runtime << 20) / period is 0, as the kernel's to_ratio() computes
        let z = dl_zero_attr();
        assert_eq!(z.sched_policy, SCHED_DEADLINE);
        assert_eq!(z.sched_runtime, DL_MIN_RUNTIME_NS);
        assert_eq!(z.sched_deadline, z.sched_period);
        assert_eq!((z.sched_runtime << 20) / z.sched_period, 0);
        assert!(
            z.sched_period <= 4_194_304_000,
            "within the default period max"
        );
        assert_eq!(fifo_attr(50).sched_priority, 51);
        assert_eq!(fifo_attr(0).sched_priority, 1);
        assert_eq!(fifo_attr(98).sched_priority, MAX_BOOST_PRIO);
        assert_ne!(fifo_attr(1).sched_flags & SCHED_FLAG_RESET_ON_FORK, 0);
        let saved = SchedAttr {
            sched_policy: 3,
            sched_nice: 5,
            sched_flags: 0x21,
            ..empty()
        };
        let r = restore_attr_of(&saved);
        assert_eq!((r.sched_policy, r.sched_nice, r.sched_flags), (3, 5, 1));
    }

    #[test]
    fn restore_policy_keeps_the_nice_value_the_task_has() {
        // On a thread of its own: the policy and flag set here (SCHED_BATCH,
        // reset-on-fork) need no privilege, nor does a higher nice value.
        std::thread::spawn(|| {
            let me = unsafe { libc::gettid() } as u32;
            let saved = get_attr(me).unwrap();
            assert!(is_normal_policy(saved.sched_policy));
            // `renice -n 3` of the thread while it is "boosted"
            let nice = (saved.sched_nice + 1).min(19);
            assert_ne!(nice, saved.sched_nice, "the test runs at nice 19");
            let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, me, nice) };
            assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
            let to = SchedAttr {
                sched_policy: 3, // SCHED_BATCH
                sched_flags: SCHED_FLAG_RESET_ON_FORK,
                sched_nice: saved.sched_nice,
                ..empty()
            };
            restore_policy(me, &to).unwrap();
            let now = get_attr(me).unwrap();
            assert_eq!(now.sched_policy, 3);
            assert_ne!(now.sched_flags & SCHED_FLAG_RESET_ON_FORK, 0);
            assert_eq!(now.sched_nice, nice, "the renice was undone");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_older_journal_is_replayed_once_and_removed() {
        let d = std::env::temp_dir().join(format!("scx_floor_legacy_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        let path = d.join("boosted.journal");
        // this thread (alive, at its own policy: nothing to restore) and a
        // task that is gone, in the 32-byte layout with 4 raised kinds; a
        // raise record of this thread (not at FIFO 99) and a boost record
        // where raises go (not read)
        let me = unsafe { libc::gettid() } as u32;
        let start = stat_of(me).unwrap().0;
        let mut old = vec![0u8; (BOOST_RECS + 4 * MAX_CPUS) * 32];
        for (i, state, tid, st) in [
            (0, REC_BOOSTED, me, start),
            (1, REC_BOOSTED, 4_194_305, 1),
            (BOOST_RECS, REC_RAISED, me, start),
            (BOOST_RECS + 1, REC_BOOSTED, me, start),
        ] {
            let r = &mut old[i * 32..(i + 1) * 32];
            r[0..4].copy_from_slice(&state.to_ne_bytes());
            r[4..8].copy_from_slice(&tid.to_ne_bytes());
            r[8..16].copy_from_slice(&st.to_ne_bytes());
        }
        fs::write(&path, &old).unwrap();
        assert_eq!(replay_legacy(&path), (0, 0), "nothing at a boost policy");
        assert!(!path.exists(), "removed after its replay");
        assert_eq!(replay_legacy(&path), (0, 0), "none there");
        // 56-byte records under the old name (a build between the layouts):
        // another length, removed unread
        fs::write(&path, vec![1u8; (BOOST_RECS + 3 * MAX_CPUS) * 56]).unwrap();
        assert_eq!(replay_legacy(&path), (0, 0));
        assert!(!path.exists(), "removed unread");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn journal_round_trip_and_restore_rule() {
        let d = std::env::temp_dir().join(format!("scx_floor_journal_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let path = d.join("boosted.journal");
        let j = Journal::open(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let saved = SchedAttr {
            size: 48,
            sched_nice: -3,
            sched_policy: 3,
            sched_flags: 1,
            ..empty()
        };
        let e = Entry {
            tid: 42,
            start: 777,
            saved,
            boost: fifo_attr(25),
        };
        j.record(17, &e);
        assert_eq!(j.entries(), vec![(17, e)]);
        // another mapping of the same file (the guardian, a later start) sees it
        let j2 = Journal::open(&path).unwrap();
        assert_eq!(j2.entries(), vec![(17, e)]);
        let fifo = fifo_attr(25);
        assert!(needs_restore(&e, Some(777), Some(&fifo)));
        assert!(
            !needs_restore(&e, Some(778), Some(&fifo)),
            "tid reused by another task"
        );
        assert!(!needs_restore(&e, None, None), "task gone");
        assert!(
            !needs_restore(
                &e,
                Some(777),
                Some(&SchedAttr {
                    sched_policy: SCHED_OTHER,
                    ..empty()
                })
            ),
            "already restored"
        );
        assert!(
            !needs_restore(&e, Some(777), Some(&fifo_attr(49))),
            "moved to FIFO 50 by an administrator"
        );
        // a DEADLINE boost round-trips through the record, and is told
        // apart by its runtime and period
        let dl = Entry {
            boost: deadline_attr(5_000_000, 1_000_000_000),
            ..e
        };
        j.record(18, &dl);
        assert_eq!(j2.entries()[1], (18, dl));
        assert!(needs_restore(&dl, Some(777), Some(&dl.boost)));
        assert!(
            needs_restore(&dl, Some(777), Some(&dl_zero_attr())),
            "shrunk by unboost, its restore cut short: still ours"
        );
        assert!(!needs_restore(&dl, Some(777), Some(&fifo)));
        assert!(
            !needs_restore(
                &dl,
                Some(777),
                Some(&deadline_attr(10_000_000, 100_000_000))
            ),
            "a reservation of the administrator's"
        );
        let no_reset = SchedAttr {
            sched_flags: 0,
            ..fifo
        };
        assert!(
            !needs_restore(&e, Some(777), Some(&no_reset)),
            "set by someone else, without reset-on-fork"
        );
        j.forget(17);
        j.forget(18);
        assert!(j2.entries().is_empty());
        drop((j, j2));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn replay_forgets_tasks_that_are_gone() {
        let d = std::env::temp_dir().join(format!("scx_floor_replay_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let j = Journal::open(&d.join("j")).unwrap();
        // a tid that cannot exist (above pid_max's hard limit)
        j.record(
            0,
            &Entry {
                tid: 4_194_305,
                start: 1,
                saved: empty(),
                boost: fifo_attr(1),
            },
        );
        assert_eq!(replay(&j), 0);
        assert!(j.entries().is_empty());
        drop(j);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn replay_boosted_keeps_live_unboosted_tasks_for_the_last_replay() {
        let d = std::env::temp_dir().join(format!("scx_floor_replay_b_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let j = Journal::open(&d.join("j")).unwrap();
        // this thread: alive, not boosted (its boost may still be in flight)
        let me = unsafe { libc::gettid() } as u32;
        let start = stat_of(me).unwrap().0;
        let live = Entry {
            tid: me,
            start,
            saved: empty(),
            boost: fifo_attr(1),
        };
        let gone = Entry {
            tid: 4_194_305,
            start: 1,
            saved: empty(),
            boost: fifo_attr(1),
        };
        // the same tid, another task (another start time): not ours to keep
        let reused = Entry {
            start: start + 1,
            ..live
        };
        j.record(0, &live);
        j.record(1, &gone);
        j.record(2, &reused);
        assert_eq!(replay_boosted(&j), 0);
        let left: Vec<usize> = j.entries().iter().map(|(i, _)| *i).collect();
        assert_eq!(left, vec![0]);
        assert_eq!(replay(&j), 0);
        assert!(j.entries().is_empty());
        drop(j);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn raised_kthread_names_and_restore_rule() {
        assert_eq!(raised_kthread("irq_work/0\n"), Some((0, 0)));
        assert_eq!(raised_kthread("irq_work/127"), Some((0, 127)));
        assert_eq!(raised_kthread("rcuc/3\n"), Some((1, 3)));
        assert_eq!(raised_kthread("ktimers/1\n"), Some((2, 1)));
        assert_eq!(raised_kthread("rcub/0\n"), Some((3, 0)));
        for bad in [
            "irq_work/",
            "irq_work/1a",
            "irq_work",
            "ksoftirqd/1",
            "irq_work/-1",
            "rcuc/",
            "rcub/",
            "rcuop/1",
            "ktimers/",
            "ktimersd/1",
        ] {
            assert_eq!(raised_kthread(bad), None, "{bad}");
        }
        let line = "30 (irq_work/1) S 2 0 0 0 -1 69238848 0 0 0 0 0 0 0 0 -2 0 1 0 13 0";
        assert_eq!(parse_stat_flags(line), Some(69238848));
        assert_ne!(69238848 & PF_KTHREAD, 0, "0x4208040, as dmesg printed it");
        let saved = SchedAttr {
            sched_policy: SCHED_FIFO,
            sched_priority: 1,
            ..empty()
        };
        let e = Entry {
            tid: 30,
            start: 13,
            saved,
            boost: fifo_attr(98),
        };
        let at = |policy, prio| SchedAttr {
            sched_policy: policy,
            sched_priority: prio,
            ..empty()
        };
        assert!(raise_needs_restore(&e, Some(13), Some(&at(SCHED_FIFO, 99))));
        assert!(
            !raise_needs_restore(&e, Some(14), Some(&at(SCHED_FIFO, 99))),
            "another task"
        );
        assert!(
            !raise_needs_restore(&e, Some(13), Some(&at(SCHED_FIFO, 50))),
            "changed since"
        );
        assert!(
            !raise_needs_restore(&e, Some(13), Some(&at(SCHED_FIFO, 1))),
            "restored"
        );
        assert!(!raise_needs_restore(&e, None, None), "gone");
    }

    #[test]
    fn a_smaller_journal_is_grown_with_its_records_and_never_shrunk() {
        let d = std::env::temp_dir().join(format!("scx_floor_grow_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let p = d.join("j");
        let rec = std::mem::size_of::<Rec>();
        let rcuc_1 = BOOST_RECS + MAX_CPUS + 1;
        {
            // as the version with two raised-thread kinds left it
            let j = Journal::open(&p).unwrap();
            let e = Entry {
                tid: 4_194_306,
                start: 7,
                saved: empty(),
                boost: SchedAttr {
                    sched_policy: SCHED_FIFO,
                    sched_priority: RAISE_PRIO,
                    ..empty()
                },
            };
            j.record_as(rcuc_1, &e, REC_RAISED);
        }
        let resize = |len: usize| {
            let f = fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.set_len(len as u64).unwrap();
        };
        resize((BOOST_RECS + 2 * MAX_CPUS) * rec);
        let j = Journal::open(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), (JOURNAL_RECS * rec) as u64);
        let r = j.raises();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].0, r[0].1.tid, r[0].1.start), (rcuc_1, 4_194_306, 7));
        // the kind added last (rcub/N) has records past the earlier kinds'
        let rcub_0 = BOOST_RECS + 3 * MAX_CPUS;
        assert_eq!(RAISED_KTHREADS[3], "rcub/");
        let e = Entry {
            tid: 17,
            start: 3,
            saved: empty(),
            boost: SchedAttr {
                sched_policy: SCHED_FIFO,
                sched_priority: RAISE_PRIO,
                ..empty()
            },
        };
        j.record_as(rcub_0, &e, REC_RAISED);
        let r: Vec<(usize, u32)> = j.raises().iter().map(|(i, e)| (*i, e.tid)).collect();
        assert_eq!(r, vec![(rcuc_1, 4_194_306), (rcub_0, 17)]);
        drop(j);
        let big = (JOURNAL_RECS + MAX_CPUS) * rec;
        resize(big);
        drop(Journal::open(&p).unwrap());
        assert_eq!(fs::metadata(&p).unwrap().len(), big as u64, "never shrunk");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn raises_and_boosts_are_kept_apart_and_replayed() {
        let d = std::env::temp_dir().join(format!("scx_floor_raise_{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let j = Journal::open(&d.join("j")).unwrap();
        let gone = Entry {
            tid: 4_194_305,
            start: 1,
            saved: empty(),
            boost: fifo_attr(1),
        };
        j.record(3, &gone);
        j.record_as(BOOST_RECS + 1, &gone, REC_RAISED);
        let tids = |v: Vec<(usize, Entry)>| v.iter().map(|(i, e)| (*i, e.tid)).collect::<Vec<_>>();
        assert_eq!(tids(j.entries()), vec![(3, gone.tid)]);
        assert_eq!(tids(j.raises()), vec![(BOOST_RECS + 1, gone.tid)]);
        assert_eq!(replay(&j), 0);
        assert!(j.entries().is_empty());
        assert_eq!(j.raises().len(), 1, "boost replays keep the raises");
        assert_eq!(replay_boosted(&j), 0);
        assert_eq!(j.raises().len(), 1);
        assert_eq!(replay_raises(&j), 0);
        assert!(j.raises().is_empty());
        drop(j);
        fs::remove_dir_all(&d).unwrap();
    }
}
