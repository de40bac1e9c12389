// SPDX-License-Identifier: GPL-2.0-only
//! The watchdog that frees a planner stuck runnable behind an RT task at
//! its own priority, SCHED_FIFO 99.
//!
//! How a planner gets stuck: an RT task that may run on other CPUs, running
//! where an equal-priority task pinned to that CPU wakes up, is preempted so
//! that the kernel can push it elsewhere (`check_preempt_equal_prio()`,
//! kernel/sched/rt.c). A task preempted inside a migrate-disabled section
//! (a BPF map system call; on PREEMPT_RT, any sleeping spinlock) is bound
//! to that CPU until the section ends (`migrate_disable_switch()`,
//! kernel/sched/core.c): the push fails, and no later pull can take it. It
//! waits behind the pinned task; a SCHED_FIFO 99 hog with RT throttling off
//! never yields, and RCU stalls on the read-side section the planner was
//! preempted in.
//!
//! The remedy: only SCHED_DEADLINE runs above SCHED_FIFO 99. The watchdog
//! ([`watch`], a SCHED_FIFO 99 thread of its own on the housekeeping CPUs)
//! sees a planner overdue by [`STUCK_NS`] and runnable, and makes it
//! SCHED_DEADLINE ([`RESCUE_RUNTIME_NS`] every [`RESCUE_PERIOD_NS`]); the
//! planner goes back to SCHED_FIFO 99 itself before it next sleeps
//! ([`Lifeline::asleep`]). With `kernel.sched_rt_runtime_us` at -1 the
//! kernel admits any SCHED_DEADLINE task. Otherwise it refuses one whose
//! allowed CPUs do not span its root domain, a migrate-disabled task
//! included (EPERM); the watchdog then warns once per planner.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use log::{info, warn};

use crate::attr::{self, SchedAttr};
use crate::fault::{self, Fault};
use crate::sys::{monotonic_ns, sleep_until};

/// How long past its due time a planner may go without running before the
/// watchdog frees it, ns. A step takes microseconds on hardware and at
/// most a few ms under TCG; another of scx_floor's SCHED_FIFO 99 threads
/// ahead of it on a CPU runs for microseconds.
pub const STUCK_NS: u64 = 100_000_000;

/// How often the watchdog looks at most, ns: while a planner is awake,
/// due, or suspected. Otherwise it sleeps until the first planner could be
/// overdue ([`next_look`]), and a planner woken early by its ring buffer
/// wakes it sooner ([`Lifeline::awake`]).
pub const WATCH_EVERY_NS: u64 = 50_000_000;

/// The longest the watchdog sleeps, ns, when no planner is due sooner: an
/// idle planner's longest sleep ([`crate::server::IDLE_RECHECK_NS`]).
pub const WATCH_IDLE_NS: u64 = crate::server::IDLE_RECHECK_NS;

/// When the watchdog looks next while it sleeps past
/// [`WATCH_EVERY_NS`], and the eventfd that wakes it sooner: shared by the
/// planners' [`Lifeline`]s and [`watch`].
#[derive(Debug)]
pub struct WatchClock {
    /// CLOCK_MONOTONIC ns of the next look; 0 while the watchdog looks
    /// every [`WATCH_EVERY_NS`] (nothing to wake)
    at: AtomicU64,
    /// an eventfd (non-blocking), or -1 before [`WatchClock::open`]
    fd: AtomicI32,
    /// how late counts as stuck, ns (the watchdog's `stuck_ns`)
    stuck_ns: AtomicU64,
}

impl WatchClock {
    /// A clock with no eventfd yet: nothing wakes through it.
    pub const fn new() -> Self {
        WatchClock {
            at: AtomicU64::new(0),
            fd: AtomicI32::new(-1),
            stuck_ns: AtomicU64::new(STUCK_NS),
        }
    }

    /// Makes its eventfd (once; kept for the process's life, so that a
    /// planner's late poke never writes to a reused number). Errors:
    /// `eventfd(2)`'s.
    pub fn open(&self) -> std::io::Result<()> {
        if self.fd.load(Ordering::Acquire) >= 0 {
            return Ok(());
        }
        let fd = crate::sys::eventfd_new()?;
        if self
            .fd
            .compare_exchange(-1, fd, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: our own fd, never published.
            unsafe { libc::close(fd) };
        }
        Ok(())
    }

    /// Wakes the watchdog if it sleeps past the time a planner that woke
    /// at `beat_ns` could be overdue. At most one `write(2)`, no
    /// allocation. Every such wake-up writes, until the watchdog clears
    /// `at`: a planner preempted between a claim and its write would
    /// otherwise leave the others believing the watchdog woken.
    fn poke(&self, beat_ns: u64) {
        let at = self.at.load(Ordering::SeqCst);
        if at == 0 || beat_ns.saturating_add(self.stuck_ns.load(Ordering::Relaxed)) >= at {
            return;
        }
        let fd = self.fd.load(Ordering::Acquire);
        if fd >= 0 {
            crate::sys::eventfd_add(fd);
        }
    }

    /// Empties the eventfd after a wake-up.
    fn drain(&self) {
        let fd = self.fd.load(Ordering::Acquire);
        if fd >= 0 {
            crate::sys::eventfd_take(fd);
        }
    }
}

impl Default for WatchClock {
    fn default() -> Self {
        Self::new()
    }
}

/// The process's watchdog clock, which the planners' lifelines poke.
pub static CLOCK: WatchClock = WatchClock::new();

/// The SCHED_DEADLINE runtime a stuck planner is given, ns: room for the
/// longest step under TCG (6 ms measured) and its way to the next sleep.
pub const RESCUE_RUNTIME_NS: u64 = 10_000_000;

/// The period (and relative deadline) of that reservation, ns: 10% of a
/// CPU at most, for the one step it is held.
pub const RESCUE_PERIOD_NS: u64 = 100_000_000;

// A rescue holds at most a tenth of a CPU; a planner suspected at one look
// is rescued at the next, [`WATCH_EVERY_NS`] later, only if it has not run
// since.
const _: () = assert!(RESCUE_RUNTIME_NS * 10 <= RESCUE_PERIOD_NS);
const _: () = assert!(STUCK_NS >= 2 * WATCH_EVERY_NS);

/// What a planner tells the watchdog about itself: lock-free, written by
/// the planner, read by the watchdog.
#[derive(Debug, Default)]
pub struct Lifeline {
    /// the planner's thread id (0 until it starts)
    tid: AtomicU32,
    /// when it last woke or went to sleep, CLOCK_MONOTONIC ns
    beat_ns: AtomicU64,
    /// when it is due to wake, ns (0 while awake)
    due_ns: AtomicU64,
    /// the watchdog made it SCHED_DEADLINE; it goes back to SCHED_FIFO 99
    rescued: AtomicBool,
}

impl Lifeline {
    /// Called by the planner thread when it starts: it is awake.
    pub fn start(&self) {
        // SAFETY: plain syscall.
        self.tid
            .store(unsafe { libc::gettid() } as u32, Ordering::Release);
        self.awake();
    }

    /// Called by the planner: if the watchdog rescued it, it goes back to
    /// SCHED_FIFO 99. Returns whether it did.
    pub fn back_from_rescue(&self) -> bool {
        let rescued = self.rescued.swap(false, Ordering::AcqRel);
        if rescued {
            if let Err(e) = attr::set_attr(0, &attr::agent_attr()) {
                let e = crate::sys::OsError(&e);
                warn!("a rescued planner going back to SCHED_FIFO 99: {e}");
            }
        }
        rescued
    }

    /// Called by the planner just before it sleeps until `due_ns`
    /// (`u64::MAX`: until woken), after [`Lifeline::back_from_rescue`].
    /// Returns whether it was rescued.
    pub fn asleep(&self, due_ns: u64) -> bool {
        let rescued = self.back_from_rescue();
        // beat first: a watchdog that sees the due time sees this beat
        self.beat_ns.store(monotonic_ns(), Ordering::Release);
        self.due_ns.store(due_ns.max(1), Ordering::Release);
        rescued
    }

    /// Called by the planner when it wakes: wakes the watchdog if it
    /// sleeps past the time this planner could be overdue ([`CLOCK`]).
    pub fn awake(&self) {
        self.awake_on(&CLOCK);
    }

    /// [`Lifeline::awake`] with watchdog clock `clock`.
    fn awake_on(&self, clock: &WatchClock) {
        let now = monotonic_ns();
        // beat first: a watchdog that sees `due_ns` 0 sees this beat.
        // SeqCst, with the watchdog's store of its clock and load of these:
        // one of the two sees the other's write.
        self.beat_ns.store(now, Ordering::SeqCst);
        self.due_ns.store(0, Ordering::SeqCst);
        clock.poke(now);
    }

    /// Called when the planner thread ends: the watchdog looks no more.
    pub fn end(&self) {
        self.tid.store(0, Ordering::Release);
    }

    /// Whether the planner has ended (or never started).
    fn ended(&self) -> bool {
        self.tid.load(Ordering::Acquire) == 0
    }
}

/// Ends a lifeline when dropped: the planner thread's last act, however
/// it returns.
pub struct EndOnDrop<'a>(pub &'a Lifeline);

impl Drop for EndOnDrop<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The earliest time (ns) at which one of `planners` could be overdue by
/// `stuck_ns`, seen at `now`: an awake planner from its last beat, an
/// asleep one from its due time; one asleep until woken or ended gives
/// none. Then no sooner than `now + WATCH_EVERY_NS`, no later than
/// `now + WATCH_IDLE_NS`, and `now + WATCH_EVERY_NS` while `suspects`
/// holds one (its second look) or a planner runs rescued (it may be stuck
/// again at its next due time, and its rescue is rare).
pub fn next_look(planners: &[(usize, &Lifeline)], suspects: bool, stuck_ns: u64, now: u64) -> u64 {
    let soonest = if suspects {
        0
    } else {
        planners
            .iter()
            .filter(|(_, l)| !l.ended())
            .filter_map(|(_, l)| {
                if l.rescued.load(Ordering::Acquire) {
                    return Some(0);
                }
                let due = l.due_ns.load(Ordering::SeqCst);
                let since = match due {
                    0 => l.beat_ns.load(Ordering::SeqCst),
                    u64::MAX => return None,
                    d => d,
                };
                Some(since.saturating_add(stuck_ns))
            })
            .min()
            .unwrap_or(u64::MAX)
    };
    soonest.clamp(now + WATCH_EVERY_NS, now + WATCH_IDLE_NS)
}

/// What the watchdog remembers of a planner it suspects.
#[derive(Clone, Copy, Debug, Default)]
struct Suspect {
    /// its CPU time (ns, /proc/self/task/TID/schedstat) at the first look
    /// that found it overdue and runnable
    cpu_ns: Option<u64>,
    /// the kernel refused to rescue it (warned once)
    warned: bool,
}

/// How long a planner has been overdue at `now` (ns), if by `stuck_ns` or
/// more: awake (`due_ns` 0) with no beat for `stuck_ns`, or asleep past
/// `due_ns` by `stuck_ns` (a planner woken on time runs at once; one that
/// slept until woken, `u64::MAX`, is never overdue this way). Times in ns.
pub fn overdue(beat_ns: u64, due_ns: u64, now: u64, stuck_ns: u64) -> Option<u64> {
    let since = if due_ns == 0 { beat_ns } else { due_ns };
    let late = now.checked_sub(since)?;
    (late >= stuck_ns).then_some(late)
}

/// How late a planner may be before it counts as stuck, ns, for a server
/// of `runtime_ns` per period: a SCHED_DEADLINE boost of the server runs
/// above SCHED_FIFO 99 for up to its runtime, and a planner queued behind
/// it then is not stuck. [`STUCK_NS`] more than that.
pub fn stuck_after(runtime_ns: u64) -> u64 {
    runtime_ns.saturating_add(STUCK_NS)
}

/// The CPU time of our own thread `tid`, ns: the first field of
/// /proc/self/task/TID/schedstat (`se.sum_exec_runtime`); None if it is
/// gone.
fn cpu_ns_of(tid: u32) -> Option<u64> {
    let mut buf = [0u8; 96];
    let text = crate::sys::read_path(format_args!("/proc/self/task/{tid}/schedstat"), &mut buf)?;
    std::str::from_utf8(text)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Whether a planner seen runnable at two looks, with CPU time `before`
/// (ns) at the first and `now` at the second, did not run in between (a
/// running planner is also in state R: only one whose CPU time stood still
/// is stuck).
pub fn stood_still(before: u64, now: u64) -> bool {
    now <= before
}

/// The reservation a stuck planner gets.
fn rescue_attr() -> SchedAttr {
    attr::deadline_attr(RESCUE_RUNTIME_NS, RESCUE_PERIOD_NS)
}

/// The watchdog's loop: when [`next_look`] says (every [`WATCH_EVERY_NS`]
/// at most) it looks at each planner
/// (`(cpu, lifeline)`), and makes one that is overdue by [`STUCK_NS`],
/// runnable, and has not run since the look before SCHED_DEADLINE until
/// its next sleep. After `stop` (or `stop_fd`) it goes on until every
/// planner has ended: a planner's exit restores what it boosted, and one
/// stuck then would hold the exit. Returns how many rescues it made.
///
/// `stuck_ns`: how late counts as stuck, at least [`STUCK_NS`]; a planner
/// may wait behind one of the server's own SCHED_DEADLINE boosts for as long
/// as that boost's runtime, which is not stuck ([`stuck_after`]).
pub fn watch(
    planners: &[(usize, &Lifeline)],
    stuck_ns: u64,
    stop: &AtomicBool,
    stop_fd: i32,
) -> u64 {
    watch_on(&CLOCK, planners, stuck_ns, stop, stop_fd)
}

/// [`watch`] with watchdog clock `clock` (its eventfd made here).
fn watch_on(
    clock: &WatchClock,
    planners: &[(usize, &Lifeline)],
    stuck_ns: u64,
    stop: &AtomicBool,
    stop_fd: i32,
) -> u64 {
    if let Err(e) = clock.open() {
        warn!(
            "planner watchdog: no eventfd ({e}): it looks every {} ms",
            WATCH_EVERY_NS / 1_000_000
        );
    }
    let stuck = stuck_ns.max(STUCK_NS);
    clock.stuck_ns.store(stuck, Ordering::Relaxed);
    let mut suspects = vec![Suspect::default(); planners.len()];
    let mut rescues = 0;
    let mut next = monotonic_ns() + WATCH_EVERY_NS;
    crate::rtalloc::serving(true);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if stopping && planners.iter().all(|(_, l)| l.ended()) {
            break;
        }
        if stopping || clock.fd.load(Ordering::Acquire) < 0 {
            // while stopping, every look soon: the exit joins this thread,
            // and a planner's end pokes no one
            next = next.min(monotonic_ns() + WATCH_EVERY_NS);
        } else if next > monotonic_ns() + WATCH_EVERY_NS {
            // the clock first, then the planners again: a planner that
            // wakes after this look sees the clock and pokes
            clock.at.store(next, Ordering::SeqCst);
            let again = next_look(planners, false, stuck, monotonic_ns());
            next = next.min(again);
        }
        // the stop eventfd stays readable once fired: not polled after
        let fds = if stopping {
            [-1, clock.fd.load(Ordering::Acquire)]
        } else {
            [stop_fd, clock.fd.load(Ordering::Acquire)]
        };
        sleep_until(next, &fds);
        clock.at.store(0, Ordering::SeqCst);
        clock.drain();
        let now = monotonic_ns();
        if stop.load(Ordering::Relaxed) != stopping {
            continue; // the stop fired
        }
        for (i, (cpu, life)) in planners.iter().enumerate() {
            if look_at(*cpu, life, stuck_ns, &mut suspects[i]) {
                rescues += 1;
            }
        }
        let suspected = suspects.iter().any(|s| s.cpu_ns.is_some());
        next = next_look(planners, suspected, stuck, now);
    }
    crate::rtalloc::serving(false);
    if rescues > 0 {
        info!("planner watchdog: {rescues} rescues of a stuck planner");
    }
    rescues
}

/// One look at CPU `cpu`'s planner; returns whether it was rescued.
fn look_at(cpu: usize, life: &Lifeline, stuck_ns: u64, suspect: &mut Suspect) -> bool {
    let tid = life.tid.load(Ordering::Acquire);
    if tid == 0 || life.rescued.load(Ordering::Acquire) {
        suspect.cpu_ns = None;
        return false;
    }
    let now = monotonic_ns();
    // due first: a planner stores its beat before its due time
    let due = life.due_ns.load(Ordering::Acquire);
    let beat = life.beat_ns.load(Ordering::Acquire);
    let late = match overdue(beat, due, now, stuck_ns.max(STUCK_NS)) {
        // sleeping in the kernel (the executor's condition variable at
        // exit, say) is not stuck
        Some(late) if crate::boost::stat_of(tid).map(|(_, st)| st) == Some('R') => late,
        _ => {
            suspect.cpu_ns = None;
            return false;
        }
    };
    let Some(cpu_now) = cpu_ns_of(tid) else {
        return false;
    };
    match suspect.cpu_ns.replace(cpu_now) {
        Some(before) if stood_still(before, cpu_now) => {}
        // first look, or it ran since: look again
        _ => return false,
    }
    if fault::is(Fault::StuckNoRescue) {
        return false;
    }
    suspect.cpu_ns = None;
    match attr::set_attr(tid, &rescue_attr()) {
        Ok(()) => {
            life.rescued.store(true, Ordering::Release);
            warn!(
                "CPU {cpu}'s planner (task {tid}) was runnable and {} ms overdue without \
                 running, behind a real-time task at its own priority: it runs as \
                 SCHED_DEADLINE ({} ms every {} ms) until its next sleep",
                late / 1_000_000,
                RESCUE_RUNTIME_NS / 1_000_000,
                RESCUE_PERIOD_NS / 1_000_000
            );
            true
        }
        Err(e) => {
            if !suspect.warned {
                suspect.warned = true;
                let e = crate::sys::OsError(&e);
                warn!(
                    "CPU {cpu}'s planner (task {tid}) is runnable and {} ms overdue without \
                     running, behind a real-time task at its own priority, and the kernel \
                     refused to make it SCHED_DEADLINE: {e} (with kernel.sched_rt_runtime_us \
                     >= 0 it refuses a task that may not run on every CPU of its root \
                     domain); it waits for that task",
                    late / 1_000_000
                );
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn overdue_awake_counts_from_the_last_beat() {
        assert_eq!(overdue(1000 * MS, 0, 1099 * MS, STUCK_NS), None);
        assert_eq!(overdue(1000 * MS, 0, 1100 * MS, STUCK_NS), Some(100 * MS));
        // a beat after now (read out of order) is not overdue
        assert_eq!(overdue(1000 * MS, 0, 999 * MS, STUCK_NS), None);
    }

    #[test]
    fn overdue_asleep_counts_from_the_due_time() {
        // asleep long ago, due later: not overdue however old the beat
        assert_eq!(overdue(0, 2000 * MS, 1500 * MS, STUCK_NS), None);
        assert_eq!(overdue(0, 2000 * MS, 2099 * MS, STUCK_NS), None);
        assert_eq!(overdue(0, 2000 * MS, 2150 * MS, STUCK_NS), Some(150 * MS));
        // sleeping until woken is never overdue
        assert_eq!(overdue(0, u64::MAX, u64::MAX - 1, STUCK_NS), None);
    }

    #[test]
    fn a_planner_that_beats_is_not_touched() {
        let life = Lifeline::default();
        let mut suspect = Suspect::default();
        // not started
        assert!(life.ended());
        assert!(!look_at(0, &life, STUCK_NS, &mut suspect));
        life.start();
        assert!(!life.ended());
        // awake and just beat: not overdue
        assert!(!look_at(0, &life, STUCK_NS, &mut suspect));
        life.asleep(monotonic_ns() + 1_000 * MS);
        assert!(!look_at(0, &life, STUCK_NS, &mut suspect));
        assert!(suspect.cpu_ns.is_none() && !suspect.warned);
        {
            let _end = EndOnDrop(&life);
        }
        assert!(life.ended(), "ended when its guard is dropped");
    }

    #[test]
    fn a_thread_asleep_in_the_kernel_is_not_rescued() {
        // this test's own thread, seen from another: sleeping, not R
        let life = std::sync::Arc::new(Lifeline::default());
        let l2 = life.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            l2.start();
            l2.beat_ns.store(1, Ordering::Release);
            let _ = rx.recv();
        });
        while life.tid.load(Ordering::Acquire) == 0 || life.beat_ns.load(Ordering::Acquire) != 1 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut suspect = Suspect::default();
        assert!(!look_at(0, &life, STUCK_NS, &mut suspect));
        assert!(!look_at(0, &life, STUCK_NS, &mut suspect));
        assert!(!life.rescued.load(Ordering::Acquire));
        assert!(suspect.cpu_ns.is_none(), "not a suspect while asleep");
        tx.send(()).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn a_running_planner_is_not_a_stuck_one() {
        assert!(stood_still(5_000, 5_000));
        assert!(!stood_still(5_000, 5_001));
        // this thread runs: its CPU time moves
        // SAFETY: plain syscall.
        let me = unsafe { libc::gettid() } as u32;
        let a = cpu_ns_of(me).unwrap();
        let t = monotonic_ns();
        while monotonic_ns() - t < 5 * MS {}
        let b = cpu_ns_of(me).unwrap();
        assert!(!stood_still(a, b), "{a} -> {b}");
    }

    #[test]
    fn a_planner_behind_a_deadline_boost_is_not_stuck_before_its_runtime() {
        assert_eq!(stuck_after(600 * MS), 700 * MS);
        assert_eq!(
            overdue(0, 1000 * MS, 1650 * MS, stuck_after(600 * MS)),
            None
        );
        assert!(overdue(0, 1000 * MS, 1700 * MS, stuck_after(600 * MS)).is_some());
    }

    #[test]
    fn the_watchdog_sleeps_until_a_planner_could_be_overdue() {
        let (a, b) = (Lifeline::default(), Lifeline::default());
        a.start();
        b.start();
        let now = monotonic_ns();
        let ps = [(0, &a), (1, &b)];
        // both awake since just before now: a look when they could be
        // overdue
        let t = next_look(&ps, false, STUCK_NS, now);
        assert!(t <= now + STUCK_NS && t > now + WATCH_EVERY_NS, "{t} {now}");
        a.asleep(now + 500 * MS);
        b.asleep(now + 300 * MS);
        assert_eq!(next_look(&ps, false, STUCK_NS, now), now + 400 * MS);
        // a suspect is looked at again soon
        assert_eq!(next_look(&ps, true, STUCK_NS, now), now + WATCH_EVERY_NS);
        // asleep until woken: only the cap
        a.asleep(u64::MAX);
        b.asleep(u64::MAX);
        assert_eq!(next_look(&ps, false, STUCK_NS, now), now + WATCH_IDLE_NS);
        b.end();
        a.asleep(now + 5_000 * MS);
        assert_eq!(next_look(&ps, false, STUCK_NS, now), now + WATCH_IDLE_NS);
    }

    /// The eventfd's count, read without blocking (0: nothing written).
    fn take(c: &WatchClock) -> u64 {
        crate::sys::eventfd_take(c.fd.load(Ordering::Acquire))
    }

    #[test]
    fn a_planner_woken_early_wakes_a_sleeping_watchdog() {
        let clock = WatchClock::new();
        clock.open().unwrap();
        let life = Lifeline::default();
        life.start();
        // the watchdog looks every WATCH_EVERY_NS: nothing to wake
        life.awake_on(&clock);
        assert_eq!(take(&clock), 0);
        // it sleeps past this planner's stuck time: each such wake-up
        // writes until the watchdog clears its clock
        clock.at.store(monotonic_ns() + 900 * MS, Ordering::SeqCst);
        life.awake_on(&clock);
        life.awake_on(&clock);
        assert_eq!(take(&clock), 2);
        clock.at.store(0, Ordering::SeqCst);
        life.awake_on(&clock);
        assert_eq!(take(&clock), 0);
        // it looks before this planner could be overdue: not woken
        clock
            .at
            .store(monotonic_ns() + STUCK_NS / 2, Ordering::SeqCst);
        life.awake_on(&clock);
        assert_eq!(take(&clock), 0);
    }

    #[test]
    fn the_rescue_is_a_deadline_reservation() {
        let a = rescue_attr();
        assert_eq!(a.sched_policy, attr::SCHED_DEADLINE);
        assert_eq!(a.sched_runtime, RESCUE_RUNTIME_NS);
        assert_eq!(a.sched_period, RESCUE_PERIOD_NS);
    }
}
