// SPDX-License-Identifier: GPL-2.0-only
//! The boost executor: a SCHED_FIFO 99 thread pinned to a served CPU that
//! makes the policy changes of that CPU's SCHED_FIFO boosts there, and ends
//! each one when the boosted task has run its share.
//!
//! Why: the RT task that holds a served CPU sees every run of a scx_floor
//! thread on that CPU as noise (S0), and the server thread's step (sample
//! the BPF maps, choose, journal) takes milliseconds under TCG. So the
//! server thread (the planner) runs on another CPU, and only the two
//! `sched_setattr()` calls of a boost run here. A boost made from another
//! CPU instead ends late: its end needs the planner's wake-up there and an
//! IPI here; here it is a local hrtimer wake-up and a local reschedule
//! (docs/design.md, Decisions: "Planner and executor").
//!
//! SCHED_DEADLINE boosts do not come here: the kernel ends them itself.
//!
//! The executors form a [`Pool`] of a few threads started with scx_floor,
//! not one per served CPU: a planner leases one for as long as it holds a
//! boost of that CPU (pinning it there is one `sched_setaffinity()`, none
//! when it was pinned there last) and gives it back once nothing of the CPU
//! is left there. A planner that finds none free makes its boosts itself,
//! from its own CPU, and ends them at its own wake-up (docs/design.md,
//! Threads: "The executor pool").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use smallvec::SmallVec;

use crate::attr::{self, SchedAttr};
use crate::boost;
use crate::sched::BpfView;
use crate::server::MAX_BOOSTED;
use crate::sys::monotonic_ns;

/// Results of one pass of the loop, kept on the stack.
type Results = SmallVec<[(u64, i32); MAX_BOOSTED]>;

/// A boost the executor holds: post `id`, task `tid` boosted with `boost`,
/// counted in BPF boost slot `slot`; it ends when the slot's run time
/// reaches `limit_ns` (ns), or when the planner asks, with the policy of
/// `restore` (the task's attributes before the boost).
#[derive(Clone, Copy, Debug)]
struct Held {
    id: u64,
    tid: u32,
    slot: usize,
    limit_ns: u64,
    boost: SchedAttr,
    restore: SchedAttr,
    end_now: bool,
}

struct State {
    /// the id of the next post
    next_id: u64,
    /// boosts to start, in order
    todo: Vec<(Held, SchedAttr)>,
    /// `todo` as the loop goes through it (swapped with it: neither is made
    /// anew)
    todo_spare: Vec<(Held, SchedAttr)>,
    /// boosts made (or being made: visible to [`Executor::end`] while the
    /// system call runs) and not yet ended
    held: Vec<Held>,
    /// (post id, result of the boost's sched_setattr: errno or 0)
    started: Vec<(u64, i32)>,
    /// (post id, result of the restoring sched_setattr: errno or 0)
    ended: Vec<(u64, i32)>,
    /// a limit was lowered since the executor last looked
    dirty: bool,
    stop: bool,
    /// the loop has returned (after a stop)
    done: bool,
}

impl Default for State {
    /// Every list made with room for all the CPU's boost slots (results
    /// twice over, as the planner takes them at its next step): neither
    /// thread allocates while it serves (docs/design.md, "One malloc
    /// arena").
    fn default() -> Self {
        State {
            next_id: 0,
            todo: Vec::with_capacity(MAX_BOOSTED),
            todo_spare: Vec::with_capacity(MAX_BOOSTED),
            held: Vec::with_capacity(MAX_BOOSTED),
            started: Vec::with_capacity(2 * MAX_BOOSTED),
            ended: Vec::with_capacity(2 * MAX_BOOSTED),
            dirty: false,
            stop: false,
            done: false,
        }
    }
}

/// The shared state of one CPU's executor and its planner. The planner
/// never waits for the executor while it serves, and the executor never
/// wakes the planner: a wake-up across CPUs from the served CPU can pull
/// the planner onto it (RT pull at the executor's sleep). Results
/// are kept per post (an id), so a task boosted again is never confused
/// with its previous boost.
#[derive(Default)]
pub struct Executor {
    /// the executor thread's tid once it runs (0 before)
    pub tid: std::sync::atomic::AtomicU32,
    st: Mutex<State>,
    /// the planner posted work, lowered a limit, asked an end or a stop
    to_exec: Condvar,
    /// the loop returned
    to_planner: Condvar,
}

/// Where a boost of the executor stands when the planner asks it to end.
#[derive(Debug)]
pub enum End {
    /// restored by the executor (or never started): the result of its
    /// restoring `sched_setattr()`
    Done(std::io::Result<()>),
    /// asked to end; the result comes from [`Executor::take_ended`]
    Pending,
    /// not a post the executor knows (its result was taken)
    Unknown,
}

fn errno_of(r: std::io::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
    }
}

fn result_of(errno: i32) -> std::io::Result<()> {
    if errno == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(errno))
    }
}

fn take(v: &mut Vec<(u64, i32)>, id: u64) -> Option<std::io::Result<()>> {
    let i = v.iter().position(|(x, _)| *x == id)?;
    Some(result_of(v.swap_remove(i).1))
}

impl Executor {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The executor thread's loop, until [`Executor::stop`]: it starts the
    /// boosts posted, sleeps until the earliest end of a share (run time of
    /// the boost slot, read from the mmapped BPF data: no system call), and
    /// restores. On stop it starts nothing and restores what it still holds.
    /// A task is restored only if it still has its boost's attributes
    /// ([`boost::is_boost_of`]). One back at its own policy already (the
    /// planner restored it from its own CPU after 2 s, or the tid names a
    /// new task at that policy) needs nothing; one at any other policy (an
    /// administrator's `chrt` during the boost) is left as it is, reported
    /// as [`boost::ERR_CHANGED`]. A
    /// restore is two system calls on the served CPU: `sched_getattr()`, and
    /// `sched_setscheduler()`, which keeps a `renice` made during the boost
    /// ([`boost::restore_policy`]).
    pub fn run(&self, view: &BpfView) {
        self.run_with(
            |slot| {
                let (pid, ran, _) = view.slot(slot);
                (pid, ran)
            },
            boost::make_boost,
            boost::restore_policy,
            attr::get_attr,
        )
    }

    /// [`Executor::run`] with its reads and system calls given: `slot`
    /// returns a boost slot's (tid, run time in ns); `set_attr` boosts a
    /// task; `restore` gives it the policy of its saved attributes
    /// ([`boost::restore_policy`]); `current` reads a task's attributes
    /// ([`attr::get_attr`]).
    fn run_with(
        &self,
        slot: impl Fn(usize) -> (u32, u64),
        mut set_attr: impl FnMut(u32, &SchedAttr) -> std::io::Result<()>,
        mut restore: impl FnMut(u32, &SchedAttr) -> std::io::Result<()>,
        current: impl Fn(u32) -> std::io::Result<SchedAttr>,
    ) {
        let mut g = self.lock();
        loop {
            let mut todo = std::mem::take(&mut g.todo_spare);
            std::mem::swap(&mut todo, &mut g.todo);
            let stop = g.stop;
            for (h, _) in &todo {
                g.held.push(*h);
            }
            drop(g);
            let results: Results = todo
                .iter()
                .map(|(h, attr)| {
                    let e = if stop {
                        libc::ECANCELED
                    } else {
                        errno_of(set_attr(h.tid, attr))
                    };
                    (h.id, e)
                })
                .collect();
            g = self.lock();
            todo.clear();
            g.todo_spare = todo;
            for (id, e) in results {
                g.started.push((id, e));
                if e != 0 {
                    if let Some(i) = g.held.iter().position(|h| h.id == id) {
                        // Asked to end while it was being made: ended, as
                        // nothing changed.
                        if g.held.swap_remove(i).end_now {
                            g.ended.push((id, 0));
                        }
                    }
                }
            }
            g.dirty = false;
            // Shares used up, ends asked for: restore those. The others are
            // looked at again after the least run time left: run time grows
            // no faster than the clock, so that is the earliest end.
            let mut left = u64::MAX;
            // Invariant: a post is in `held` until its result is in `ended`.
            // A planner's `end()` while the restore runs (unlocked) then
            // finds it (Pending) and takes the result later; a post in
            // neither list would look unknown to it, and its result would
            // never be taken.
            let mut ending: SmallVec<[Held; MAX_BOOSTED]> = SmallVec::new();
            for h in &g.held {
                let (spid, ran) = slot(h.slot);
                if stop || h.end_now || spid != h.tid || ran >= h.limit_ns {
                    ending.push(*h);
                } else {
                    left = left.min(h.limit_ns - ran);
                }
            }
            if !ending.is_empty() {
                drop(g);
                let res: Results = ending
                    .iter()
                    .map(|h| {
                        let due = current(h.tid)
                            .and_then(|now| boost::restore_due(&now, &h.boost, &h.restore));
                        let e = match due {
                            Ok(true) => errno_of(restore(h.tid, &h.restore)),
                            Ok(false) => 0,
                            Err(err) => errno_of(Err(err)),
                        };
                        (h.id, e)
                    })
                    .collect();
                g = self.lock();
                g.held.retain(|h| !ending.iter().any(|e| e.id == h.id));
                g.ended.extend(res);
            }
            if !g.todo.is_empty() || g.dirty || g.held.iter().any(|h| h.end_now) {
                continue;
            }
            if g.stop {
                if g.held.is_empty() {
                    g.done = true;
                    self.to_planner.notify_all();
                    return;
                }
                continue;
            }
            g = if left == u64::MAX {
                self.to_exec.wait(g).unwrap_or_else(|e| e.into_inner())
            } else {
                let d = Duration::from_nanos(left);
                self.to_exec
                    .wait_timeout(g, d)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            };
        }
    }

    /// Planner: boost `tid` with `attr` on the executor's CPU until BPF
    /// boost slot `slot` counts `limit_ns` of run time (ns; see
    /// [`Executor::set_limit`]), then give it `restore`. Returns at once,
    /// with the post's id; the boost's result comes from
    /// [`Executor::take_started`].
    pub fn post(
        &self,
        tid: u32,
        slot: usize,
        attr: &SchedAttr,
        restore: &SchedAttr,
        limit_ns: u64,
    ) -> u64 {
        let mut g = self.lock();
        let id = g.next_id;
        g.next_id += 1;
        let h = Held {
            id,
            tid,
            slot,
            limit_ns,
            boost: *attr,
            restore: *restore,
            end_now: false,
        };
        g.todo.push((h, *attr));
        self.to_exec.notify_one();
        id
    }

    /// Planner: the result of post `id`'s boost system call, once made.
    pub fn take_started(&self, id: u64) -> Option<std::io::Result<()>> {
        take(&mut self.lock().started, id)
    }

    /// Planner: takes back post `id` if the executor has not begun it;
    /// returns whether it did.
    pub fn withdraw(&self, id: u64) -> bool {
        let mut g = self.lock();
        let n = g.todo.len();
        g.todo.retain(|(h, _)| h.id != id);
        g.todo.len() != n
    }

    /// Planner: post `id` now ends at `limit_ns` of slot run time (a share
    /// is cut when less is owed, and grows by the rest of a share whose task
    /// blocked). The executor is woken only for an earlier end.
    pub fn set_limit(&self, id: u64, limit_ns: u64) {
        let mut g = self.lock();
        let g = &mut *g;
        let h = g
            .held
            .iter_mut()
            .chain(g.todo.iter_mut().map(|(h, _)| h))
            .find(|h| h.id == id);
        if let Some(h) = h {
            if limit_ns < h.limit_ns {
                g.dirty = true;
                self.to_exec.notify_one();
            }
            h.limit_ns = limit_ns;
        }
    }

    /// Planner: end post `id` (at once if the executor still holds it).
    pub fn end(&self, id: u64) -> End {
        let mut g = self.lock();
        if let Some(h) = g.held.iter_mut().find(|h| h.id == id) {
            h.end_now = true;
            self.to_exec.notify_one();
            return End::Pending;
        }
        let n = g.todo.len();
        g.todo.retain(|(h, _)| h.id != id);
        if g.todo.len() != n {
            return End::Done(Ok(()));
        }
        match take(&mut g.ended, id) {
            Some(r) => End::Done(r),
            None => End::Unknown,
        }
    }

    /// Planner: whether the executor has ended post `id` (its limit
    /// reached, or asked) and its result is still there to take.
    pub fn ended(&self, id: u64) -> bool {
        self.lock().ended.iter().any(|(x, _)| *x == id)
    }

    /// Planner: the result of the executor's restore for post `id`, once
    /// made.
    pub fn take_ended(&self, id: u64) -> Option<std::io::Result<()>> {
        take(&mut self.lock().ended, id)
    }

    /// Pool: forgets the results of past posts if the executor holds and
    /// has been posted nothing; returns whether it did (then it may serve
    /// another CPU: post ids go on from where they were, so an id of the
    /// previous lessee is never confused with a new one).
    fn forget_if_idle(&self) -> bool {
        let mut g = self.lock();
        if !g.todo.is_empty() || !g.held.is_empty() || g.stop {
            return false;
        }
        g.started.clear();
        g.ended.clear();
        g.dirty = false;
        true
    }

    /// Ends the executor's loop once it has restored what it holds; with
    /// `wait`, returns only then (or after 2 s: a thread that cannot run).
    pub fn stop(&self, wait: bool) {
        let mut g = self.lock();
        g.stop = true;
        self.to_exec.notify_one();
        let limit = monotonic_ns() + 2_000_000_000;
        while wait && !g.done && monotonic_ns() < limit {
            g = self
                .to_planner
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Stops an executor (without waiting) when dropped: a test leaves by any
/// path, a failed assertion too.
#[cfg(test)]
struct StopOnDrop<'a>(pub &'a Executor);

#[cfg(test)]
impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop(false);
    }
}

/// No CPU: the lessee of a free executor, or where an executor is pinned
/// when that is not known.
pub const NO_CPU: usize = usize::MAX;

/// The executors of all served CPUs: `n` threads (`--executors`), each
/// leased to one CPU's planner at a time. A lease is taken with one
/// compare-and-swap (no lock, nothing allocated), so a planner may lease
/// on its real-time path.
pub struct Pool {
    execs: Vec<Executor>,
    /// the CPU each executor is leased to, [`NO_CPU`] when none
    lessee: Vec<AtomicUsize>,
    /// the CPU each executor's thread was last pinned to by a lessee
    /// ([`NO_CPU`]: not known)
    pinned: Vec<AtomicUsize>,
}

impl Pool {
    /// A pool of `n` executors, none of them running yet (see
    /// [`Pool::executors`]).
    pub fn new(n: usize) -> Self {
        Pool {
            execs: (0..n).map(|_| Executor::default()).collect(),
            lessee: (0..n).map(|_| AtomicUsize::new(NO_CPU)).collect(),
            pinned: (0..n).map(|_| AtomicUsize::new(NO_CPU)).collect(),
        }
    }

    /// The executors, to start a thread running [`Executor::run`] for each.
    pub fn executors(&self) -> &[Executor] {
        &self.execs
    }

    /// Executor `i` (an index from [`Pool::lease`]).
    pub fn get(&self, i: usize) -> &Executor {
        &self.execs[i]
    }

    /// Leases a free executor whose thread runs to `cpu`'s planner: one
    /// pinned to `cpu` already if there is one, else one no CPU has pinned
    /// (so that while there are as many executors as CPUs, each CPU keeps
    /// its own and never pins again), else the lowest-numbered.
    /// Returns its index, or None when every one is leased (or none runs).
    /// The caller pins its thread to `cpu` unless [`Pool::pinned_to`] says
    /// it is.
    pub fn lease(&self, cpu: usize) -> Option<usize> {
        let take = |i: usize| {
            self.execs[i].tid.load(Ordering::Relaxed) != 0
                && self.lessee[i]
                    .compare_exchange(NO_CPU, cpu, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
        };
        let n = self.execs.len();
        let pinned_to = |c: usize| move |&i: &usize| self.pinned[i].load(Ordering::Relaxed) == c;
        (0..n)
            .filter(pinned_to(cpu))
            .find(|&i| take(i))
            .or_else(|| (0..n).filter(pinned_to(NO_CPU)).find(|&i| take(i)))
            .or_else(|| (0..n).find(|&i| take(i)))
    }

    /// Where executor `i`'s thread was last pinned ([`NO_CPU`]: not known).
    pub fn pinned_to(&self, i: usize) -> usize {
        self.pinned[i].load(Ordering::Relaxed)
    }

    /// Executor `i`'s lessee pinned its thread to `cpu` ([`NO_CPU`]: it
    /// failed).
    pub fn set_pinned(&self, i: usize, cpu: usize) {
        self.pinned[i].store(cpu, Ordering::Relaxed);
    }

    /// After a CPU hotplug event: where the executors are pinned is not
    /// known any more (the kernel moves a thread off a CPU going offline and
    /// breaks its affinity), so each is pinned again at its next lease.
    pub fn forget_pins(&self) {
        for p in &self.pinned {
            p.store(NO_CPU, Ordering::Relaxed);
        }
    }

    /// `cpu`'s planner gives executor `i` back: only while it holds and was
    /// posted nothing (its past results are dropped, see
    /// [`Executor::forget_if_idle`]). Returns whether it is free now.
    pub fn give_back(&self, i: usize, cpu: usize) -> bool {
        if self.lessee[i].load(Ordering::Acquire) != cpu || !self.execs[i].forget_if_idle() {
            return false;
        }
        self.lessee[i]
            .compare_exchange(cpu, NO_CPU, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Stops every executor ([`Executor::stop`], without waiting): each
    /// restores what it holds and returns.
    pub fn stop_all(&self) {
        for ex in &self.execs {
            ex.stop(false);
        }
    }
}

/// Stops a pool's executors when dropped: the scope that started their
/// threads is left by any path.
pub struct StopPoolOnDrop<'a>(pub &'a Pool);

impl Drop for StopPoolOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    /// An executor thread over a fake boost slot whose run time the test
    /// sets, and fake system calls that log (tid, policy) and fail for tid 13.
    /// `now` is what reading a task's attributes returns (a boost's by
    /// default).
    struct Rig {
        ex: Executor,
        ran: AtomicU64,
        calls: Mutex<Vec<(u32, u32)>>,
        now: Mutex<SchedAttr>,
    }

    impl Rig {
        /// The fake boost and restore: logged, and EPERM for tid 13.
        fn call(&self, tid: u32, a: &SchedAttr) -> std::io::Result<()> {
            self.calls.lock().unwrap().push((tid, a.sched_policy));
            if tid == 13 {
                Err(std::io::Error::from_raw_os_error(libc::EPERM))
            } else {
                Ok(())
            }
        }
    }

    fn attrs() -> (SchedAttr, SchedAttr) {
        (boost::fifo_attr(1), attr::empty())
    }

    #[track_caller]
    fn wait_for(what: impl Fn() -> bool) {
        let t = monotonic_ns();
        while !what() {
            assert!(monotonic_ns() - t < 5_000_000_000, "timed out");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn with_rig(f: impl FnOnce(&Rig)) {
        let rig = Rig {
            ex: Executor::default(),
            ran: AtomicU64::new(0),
            calls: Mutex::new(Vec::new()),
            now: Mutex::new(attrs().0),
        };
        std::thread::scope(|s| {
            let r = &rig;
            s.spawn(move || {
                r.ex.run_with(
                    |_| (7, r.ran.load(Ordering::SeqCst)),
                    |tid, a| r.call(tid, a),
                    |tid, a| r.call(tid, a),
                    |_| Ok(*r.now.lock().unwrap()),
                )
            });
            // Stopped on every path out, a failed assertion too (the
            // scope would wait for the executor thread forever).
            let _stop = StopOnDrop(&r.ex);
            f(r);
        });
    }

    #[test]
    fn ends_at_the_limit_and_follows_its_changes() {
        with_rig(|r| {
            let (b, rs) = attrs();
            let id = r.ex.post(7, 0, &b, &rs, 1_000_000_000);
            wait_for(|| r.ex.take_started(id).is_some());
            assert!(!r.ex.ended(id));
            // Not yet at the limit: still held.
            r.ran.store(500_000_000, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            assert!(!r.ex.ended(id));
            // A lower limit wakes it (it sleeps up to 1 s otherwise): ended now.
            let t = monotonic_ns();
            r.ex.set_limit(id, 400_000_000);
            wait_for(|| r.ex.ended(id));
            assert!(
                monotonic_ns() - t < 300_000_000,
                "not woken by the lower limit"
            );
            assert!(matches!(r.ex.take_ended(id), Some(Ok(()))));
            assert_eq!(*r.calls.lock().unwrap(), vec![(7, 1), (7, 0)]);
        });
    }

    #[test]
    fn end_asked_restores_at_once() {
        with_rig(|r| {
            let (b, rs) = attrs();
            let id = r.ex.post(7, 0, &b, &rs, 1_000_000_000);
            wait_for(|| r.ex.take_started(id).is_some());
            assert!(matches!(r.ex.end(id), End::Pending));
            wait_for(|| r.ex.ended(id));
            assert!(matches!(r.ex.end(id), End::Done(Ok(()))));
            // Its result was taken: the executor knows it no more.
            assert!(matches!(r.ex.end(id), End::Unknown));
            // The same task boosted again is a new post: the first one's
            // end does not touch it.
            let id2 = r.ex.post(7, 0, &b, &rs, 1_000_000_000);
            wait_for(|| r.ex.take_started(id2).is_some());
            assert!(matches!(r.ex.end(id), End::Unknown));
            assert!(!r.ex.ended(id2));
            assert!(matches!(r.ex.end(id2), End::Pending));
        });
    }

    #[test]
    fn an_end_asked_while_its_restore_runs_gets_its_result() {
        let ex = Executor::default();
        let ran = AtomicU64::new(0);
        let (in_restore, restoring) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(|| {
                ex.run_with(
                    |_| (7, ran.load(Ordering::SeqCst)),
                    |_, _| Ok(()),
                    move |_, _| {
                        // the planner asks its end while this runs, unlocked
                        in_restore.send(()).unwrap();
                        let _ = wait.recv();
                        Ok(())
                    },
                    |_| Ok(attrs().0),
                )
            });
            // dropped first on a failed assertion: the restore returns
            let go = go;
            let _stop = StopOnDrop(&ex);
            let (b, rs) = attrs();
            let id = ex.post(7, 0, &b, &rs, 1_000_000);
            wait_for(|| ex.take_started(id).is_some());
            // past its limit: the executor restores it
            ran.store(2_000_000, Ordering::SeqCst);
            ex.set_limit(id, 1_000);
            restoring.recv().unwrap();
            assert!(
                matches!(ex.end(id), End::Pending),
                "still held while its restore runs"
            );
            go.send(()).unwrap();
            wait_for(|| ex.ended(id));
            assert!(matches!(ex.take_ended(id), Some(Ok(()))));
            let g = ex.lock();
            assert!(g.held.is_empty() && g.ended.is_empty() && g.started.is_empty());
        });
    }

    #[test]
    fn a_failed_boost_is_reported_and_not_held() {
        with_rig(|r| {
            let (b, rs) = attrs();
            let id = r.ex.post(13, 0, &b, &rs, 1_000_000_000);
            wait_for(|| r.ex.lock().started.iter().any(|(x, _)| *x == id));
            let e = r.ex.take_started(id).unwrap().unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EPERM));
            assert!(matches!(r.ex.end(id), End::Unknown));
            assert_eq!(*r.calls.lock().unwrap(), vec![(13, 1)]);
        });
    }

    #[test]
    fn a_task_moved_during_its_boost_is_left_as_it_was_moved() {
        with_rig(|r| {
            let (b, rs) = attrs();
            // a boost whose task is at `now` when it ends: its result
            let end_at = |now: SchedAttr| {
                let id = r.ex.post(7, 0, &b, &rs, 1_000_000_000);
                wait_for(|| r.ex.take_started(id).is_some());
                *r.now.lock().unwrap() = now;
                assert!(matches!(r.ex.end(id), End::Pending));
                wait_for(|| r.ex.ended(id));
                r.ex.take_ended(id).unwrap()
            };
            // an administrator's `chrt -f -p 50` while it is boosted
            let e = end_at(boost::fifo_attr(49)).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(boost::ERR_CHANGED));
            assert_eq!(*r.calls.lock().unwrap(), vec![(7, 1)], "no restore");
            // moved to SCHED_BATCH: changed, nothing set
            let batch = SchedAttr {
                sched_policy: 3,
                ..attr::empty()
            };
            let e = end_at(batch).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(boost::ERR_CHANGED));
            assert_eq!(r.calls.lock().unwrap().len(), 2, "no restore");
            // back at its own policy already: nothing to do, not a change
            assert!(end_at(rs).is_ok());
            assert_eq!(r.calls.lock().unwrap().len(), 3, "no restore");
        });
    }

    #[test]
    fn stop_restores_what_is_held() {
        let rig_calls;
        {
            let mut out = Vec::new();
            with_rig(|r| {
                let (b, rs) = attrs();
                let id = r.ex.post(7, 0, &b, &rs, 1_000_000_000);
                wait_for(|| r.ex.take_started(id).is_some());
                r.ex.stop(true);
                out = r.calls.lock().unwrap().clone();
            });
            rig_calls = out;
        }
        assert_eq!(rig_calls, vec![(7, 1), (7, 0)]);
    }

    #[test]
    fn a_boost_not_taken_can_be_withdrawn() {
        let ex = Executor::default();
        let (b, rs) = attrs();
        // No executor thread: nothing takes it.
        let id = ex.post(7, 0, &b, &rs, 1_000);
        assert!(ex.take_started(id).is_none());
        assert!(ex.withdraw(id));
        assert!(!ex.withdraw(id));
        // Ending one never started changes nothing and reports success.
        let id = ex.post(8, 0, &b, &rs, 1_000);
        assert!(matches!(ex.end(id), End::Done(Ok(()))));
        assert!(ex.lock().todo.is_empty());
    }

    #[test]
    fn an_end_asked_while_the_boost_is_made_is_seen() {
        // The executor's system call runs unlocked: the planner's end in
        // that window must find the boost, or the task stays boosted.
        let ex = Executor::default();
        let (b, rs) = attrs();
        let id = ex.post(7, 0, &b, &rs, 1_000_000_000);
        let calls = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            s.spawn(|| {
                ex.run_with(
                    |_| (7, 0),
                    |tid, a| {
                        if a.sched_policy == attr::SCHED_FIFO {
                            // the planner asks the end during the call
                            assert!(matches!(ex.end(id), End::Pending));
                        }
                        calls.lock().unwrap().push((tid, a.sched_policy));
                        Ok(())
                    },
                    |tid, a| {
                        calls.lock().unwrap().push((tid, a.sched_policy));
                        Ok(())
                    },
                    |_| Ok(b),
                )
            });
            wait_for(|| ex.ended(id));
            ex.stop(true);
        });
        assert_eq!(*calls.lock().unwrap(), vec![(7, 1), (7, 0)]);
        assert!(matches!(ex.take_ended(id), Some(Ok(()))));
    }

    #[test]
    fn a_pool_leases_each_executor_to_one_cpu_at_a_time() {
        let pool = Pool::new(2);
        assert_eq!(pool.lease(3), None, "no executor thread runs yet");
        pool.get(0).tid.store(100, Ordering::Relaxed);
        pool.get(1).tid.store(101, Ordering::Relaxed);
        assert_eq!(pool.lease(3), Some(0));
        assert_eq!(pool.lease(5), Some(1));
        assert_eq!(pool.lease(7), None, "both leased");
        // only the lessee gives it back
        assert!(!pool.give_back(0, 5));
        // not while it holds a post (nothing runs it here: it stays in todo)
        let (b, rs) = attrs();
        let id = pool.get(0).post(7, 0, &b, &rs, 1_000);
        assert!(!pool.give_back(0, 3));
        assert!(pool.get(0).withdraw(id));
        // a result the lessee left is dropped with the lease
        pool.get(0).lock().ended.push((id, 0));
        assert!(pool.give_back(0, 3));
        assert!(pool.get(0).lock().ended.is_empty());
        assert!(!pool.give_back(0, 3), "given back once");
        assert_eq!(pool.lease(7), Some(0));
        // one pinned to the CPU already is leased first
        pool.set_pinned(1, 5);
        assert!(pool.give_back(1, 5));
        assert!(pool.give_back(0, 7));
        assert_eq!(pool.lease(5), Some(1));
        assert_eq!(pool.lease(9), Some(0));
        // one never pinned before one pinned to another CPU
        let pool3 = Pool::new(3);
        for i in 0..3 {
            pool3.get(i).tid.store(200 + i as u32, Ordering::Relaxed);
        }
        pool3.set_pinned(0, 1);
        assert_eq!(pool3.lease(2), Some(1));
        assert_eq!(pool3.lease(3), Some(2));
        assert_eq!(
            pool3.lease(4),
            Some(0),
            "taken from CPU 1 when nothing else is free"
        );
        pool.forget_pins();
        assert_eq!(pool.pinned_to(1), NO_CPU);
        // post ids go on across leases
        assert!(pool.get(0).post(8, 0, &b, &rs, 1_000) > id);
    }

    #[test]
    fn a_stopped_pool_ends_its_executors() {
        let pool = Pool::new(2);
        std::thread::scope(|s| {
            for ex in pool.executors() {
                s.spawn(move || {
                    ex.tid.store(1, Ordering::Relaxed);
                    ex.run_with(|_| (7, 0), |_, _| Ok(()), |_, _| Ok(()), |_| Ok(attrs().0))
                });
            }
            let _stop = StopPoolOnDrop(&pool);
            wait_for(|| {
                pool.executors()
                    .iter()
                    .all(|e| e.tid.load(Ordering::Relaxed) != 0)
            });
            let i = pool.lease(1).unwrap();
            let (b, rs) = attrs();
            let id = pool.get(i).post(7, 0, &b, &rs, 1_000_000_000);
            wait_for(|| pool.get(i).take_started(id).is_some());
            assert!(!pool.give_back(i, 1), "it holds a boost");
        });
        // the scope returned: both threads ended, the boost was restored
        assert!(pool.executors().iter().all(|e| e.lock().done));
        assert!(matches!(pool.get(0).take_ended(0), Some(Ok(()))));
    }
}
