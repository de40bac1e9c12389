// SPDX-License-Identifier: GPL-2.0-only
//! The bandwidth server of one CPU: a pure state machine, time and counters
//! in, actions out. No syscalls here; `planner.rs` carries the actions out.
//!
//! Semantics follow the kernel's deferred dl_server (kernel/sched/deadline.c,
//! "deferrable server", used for the fair_server since 6.12): the server has
//! `runtime_ns` of budget every `period_ns`; it stays off while normal tasks
//! get their share on their own, and activates at *zero laxity* — when the
//! budget still owed equals the time left in the period — so that it never
//! takes time from RT tasks that normal work did not need. The activation
//! opens a new period with the whole runtime, as the kernel's
//! replenish_dl_entity() does for a deferred server whose defer timer fired
//! (deadline = now + dl_deadline, runtime = dl_runtime): no window of one
//! period then holds two runtimes of service. As in the
//! kernel, the deferral holds until the first activation only: while the
//! starvation lasts (the server had to boost in the last period), each next
//! period is served from its start, the kernel's `dl_defer_running` state, in
//! which a replenished server runs at once until the fair class gets its
//! runtime on its own or the server stops.
//!
//! Differences from the kernel's server, by design:
//! - The server starts when normal tasks start to starve on the CPU (a higher
//!   class took it while they waited), like the kernel's dl_server starting at
//!   the first enqueue; periods follow from that moment. It stops after a
//!   period in which normal tasks got their budget on their own and nothing
//!   starves, and starts afresh at the next starvation.
//! - "Delivered" is all normal-task run time on the CPU in the period (own runs
//!   plus boosted runs), as the BPF side measures it.
//! - The activation comes `margin_ns` before zero laxity, to absorb the
//!   server thread's own wake-up and boost latency.
//! - The server does not run tasks itself: it boosts the starving tasks above
//!   the CPU's RT hog, all at once, each with a share of what is owed by
//!   weight, and gives each its policy back when its share is used. Boosted
//!   tasks run one after another (same priority); one that blocks lets the
//!   next run at once, and its unused share goes to the others.

use crate::hist::Hist;
use smallvec::SmallVec;

/// Lists a step keeps on the stack, sized for the boosts of one CPU
/// ([`MAX_BOOSTED`]) and those ending in the step: a step allocates nothing
/// unless a list outgrows its inline room (docs/design.md, "One malloc
/// arena").
const INLINE: usize = 2 * MAX_BOOSTED;

/// Entries of a levelling ([`water_fill_into`]) kept on the stack: the
/// boosts of the CPU, those done in the step and the tasks whose turn comes
/// later in the period (one per [`MIN_TURN_NS`] of the runtime).
const FILL_INLINE: usize = 128;

/// Waiters a server lists without allocating: the room its buffer is made
/// with. More starving tasks on one CPU grow it once.
pub const WAITERS_INLINE: usize = 512;

/// Budget and timing of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// budget per period, ns (the kernel's dl_server runtime)
    pub runtime_ns: u64,
    /// period, ns
    pub period_ns: u64,
    /// activate this long before zero laxity, ns
    pub margin_ns: u64,
    /// the kernel ends each boost (SCHED_DEADLINE runtime, HRTICK_DL) and the
    /// server runs on another CPU: one task is boosted at a time, with all
    /// that is owed (the kernel holds each task to its own runtime, so what a
    /// task that blocks leaves can only be handed on by a new boost), and a
    /// boosted task is looked at again no sooner than
    /// [`KERNEL_CUT_MIN_STEP_NS`]. false: the server ends boosts itself,
    /// several at once, looking again after [`END_SLACK_NS`] at the soonest.
    pub kernel_cut: bool,
}

/// How long before zero laxity the server activates, ns: 5 ms plus a quarter
/// of the runtime, never more than the period leaves. The activation step
/// itself takes time before the boost lands (a late wake-up, then the
/// waiter lookup, the journal, the map update: milliseconds under TCG), and
/// a boost that lands after the period's end is restored before the task
/// runs (docs/design.md, Decisions: "The server's activation margin is
/// 5 ms + runtime/4"). And while boosted tasks run, interrupts, other RT
/// threads above the boost and the server's own steps still take
/// the CPU now and then (about 10% of the time in the emulated VM, ~1% on
/// hardware): the quarter of the runtime lets the whole budget land inside
/// the period. The RT task loses no more time for it, only earlier.
pub fn activation_margin_ns(runtime_ns: u64, period_ns: u64) -> u64 {
    (5_000_000 + runtime_ns / 4).min(period_ns.saturating_sub(runtime_ns))
}

impl ServerConfig {
    /// The same server in kernel-cut mode: [`KERNEL_CUT_EXTRA_MARGIN_NS`]
    /// more margin (never more than the period leaves) and `kernel_cut` set.
    pub fn kernel_cut(self) -> Self {
        ServerConfig {
            margin_ns: (self.margin_ns + KERNEL_CUT_EXTRA_MARGIN_NS)
                .min(self.period_ns.saturating_sub(self.runtime_ns)),
            kernel_cut: true,
            ..self
        }
    }
}

/// How often an idle server looks for starvation by itself, ns: a safety
/// net only. The BPF side wakes it when starvation begins (it arms that
/// kick at every step, and the planner looks again at once for one that
/// began before the kick was armed). Each look is a wake-up of a real-time
/// thread, which an idle machine should not pay for every second.
pub const IDLE_RECHECK_NS: u64 = 5_000_000_000;

/// A share is used up when less than this is left of it, ns. Run time is
/// measured as the kernel charges it (IRQ time excluded), the server's
/// sleeps in wall-clock time: without this slack the last microseconds of a
/// share would take many wake-ups, each stealing the CPU from the task.
pub const END_SLACK_NS: u64 = 50_000;

/// When the kernel ends each boost itself (SCHED_DEADLINE boosts, throttled
/// at their runtime by the kernel's HRTICK_DL hrtimer), the server thread
/// runs on another CPU and only has to give the task its policy back at
/// some point after the throttle: it looks again no sooner than this, ns.
pub const KERNEL_CUT_MIN_STEP_NS: u64 = 1_000_000;

/// Extra activation margin when the server thread boosts from another CPU,
/// ns: a policy change made from another CPU took 0.8-4 ms to take effect in
/// the project's emulated VM (the IPI and the target's reschedule).
pub const KERNEL_CUT_EXTRA_MARGIN_NS: u64 = 3_000_000;

/// How soon the server looks again when starving tasks found no free boost
/// slot (the restores that hold them not booked yet), ns.
pub const SLOT_RETRY_NS: u64 = 1_000_000;

/// Smallest budget worth a boost, ns: below it the switch costs more.
pub const MIN_BOOST_NS: u64 = 1_000;

/// Smallest share worth a boost of its own, ns. Each boosted task costs two
/// policy changes and two context switches on the served CPU, all of it
/// time the CPU's RT task waits (~10 us on hardware, 0.3-1 ms under TCG,
/// measured per boost in the S0 runs). So no more tasks are boosted at once
/// than the owed budget gives this much each (at least one): with a 20 us
/// budget one task per period, the least recently served first, so that
/// over several periods every starving task gets its turn.
pub const MIN_SHARE_NS: u64 = 250_000;

/// The least a starving task is boosted for in its turn when more tasks
/// starve on the CPU than [`MAX_BOOSTED`] at once, ns. The budget of a
/// period is then shared out in turns: as each boost ends, the slot goes to
/// the next waiter, least recently served first, so that a period serves
/// up to `owed / MIN_TURN_NS` tasks, not only the first MAX_BOOSTED. The
/// fair class's own turn is its base slice, 0.75 ms
/// (`sysctl_sched_base_slice`, kernel/sched/fair.c), scaled by 1 + log2 of
/// the CPU count. Each turn costs the CPU's RT task two policy changes and
/// two switches, and the budget the boost's overrun: so no more turns are
/// made than [`TURN_WINDOW_NS`] needs.
pub const MIN_TURN_NS: u64 = 1_000_000;

/// Tasks take turns in a period only as far as needed for every task
/// starving on the CPU to run once within this window, ns: half the
/// sched_ext watchdog's timeout, after which the kernel ejects the BPF
/// scheduler ("runnable task stall"). 200 tasks at 1 s periods: 40 turns
/// per period, each task served every 5 periods; 40 tasks: the 16 slots
/// once per period, as without turns.
pub const TURN_WINDOW_NS: u64 =
    crate::bpf_intf::floor_consts_FLOOR_WATCHDOG_TIMEOUT_MS as u64 * 1_000_000 / 2;

/// Whether a boost that ran `used_ns` of its `share_ns` has used it up:
/// less than [`END_SLACK_NS`] (or half a small share) is left.
fn share_spent(used_ns: u64, share_ns: u64) -> bool {
    used_ns + END_SLACK_NS.min(share_ns / 2) >= share_ns
}

/// Shares `pool` ns among tasks given as (run time so far, weight) so that
/// their run time per unit of weight rises to one common level, the least
/// served first (water-filling): the fair class's rule over a window, each
/// task's vruntime advancing by run time / weight (kernel/sched/fair.c,
/// `calc_delta_fair()`), applied to what is left of a server period.
/// Returns each task's part, in order; the parts add up to at most `pool`
/// (rounded down). A task already above the level gets 0.
pub fn water_fill(pool: u64, tasks: &[(u64, u32)]) -> Vec<u64> {
    let mut out = vec![0; tasks.len()];
    water_fill_into(pool, tasks, &mut out);
    out
}

/// [`water_fill`] into `out` (one part per task, `out.len() ==
/// tasks.len()`), allocating nothing for up to [`FILL_INLINE`] tasks.
pub fn water_fill_into(pool: u64, tasks: &[(u64, u32)], out: &mut [u64]) {
    debug_assert_eq!(out.len(), tasks.len());
    let mut order: SmallVec<[usize; FILL_INLINE]> = (0..tasks.len()).collect();
    // by run time / weight, compared as products (tasks of equal ratio
    // join the level together: their order does not matter)
    order.sort_unstable_by(|&i, &j| {
        let (si, wi) = (tasks[i].0 as u128, tasks[i].1.max(1) as u128);
        let (sj, wj) = (tasks[j].0 as u128, tasks[j].1.max(1) as u128);
        (si * wj).cmp(&(sj * wi))
    });
    // the lowest k tasks rise together while the level stays below the next
    let (mut sum_s, mut sum_w, mut k) = (0u128, 0u128, 0);
    while k < order.len() {
        let (s, w) = (tasks[order[k]].0 as u128, tasks[order[k]].1.max(1) as u128);
        // level with the first k: (pool + sum_s) / sum_w; the next joins
        // when its own run time per weight is below that level
        if k > 0 && s * sum_w >= (pool as u128 + sum_s) * w {
            break;
        }
        sum_s += s;
        sum_w += w;
        k += 1;
    }
    out.fill(0);
    for &i in &order[..k] {
        let (s, w) = (tasks[i].0 as u128, tasks[i].1.max(1) as u128);
        out[i] = ((pool as u128 + sum_s) * w / sum_w).saturating_sub(s) as u64;
    }
}

/// A reading of the CPU's BPF counters (see `floor_cpu_stat`), ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// CLOCK_MONOTONIC now
    pub now_ns: u64,
    /// normal-task run time, closed runs, boosted ones included
    pub normal_runtime_ns: u64,
    /// boosted run time, closed runs
    pub boosted_runtime_ns: u64,
    /// start of the boosted run in progress, or 0
    pub boost_since_ns: u64,
    /// start of the CPU's open starvation interval, or 0
    pub starved_since_ns: u64,
    /// time normal tasks starved on the CPU, closed intervals
    pub starved_ns: u64,
}

impl Sample {
    fn open_boost(&self) -> u64 {
        if self.boost_since_ns != 0 && self.now_ns > self.boost_since_ns {
            self.now_ns - self.boost_since_ns
        } else {
            0
        }
    }
    /// Normal run time including the boosted run in progress.
    pub fn delivered(&self) -> u64 {
        self.normal_runtime_ns + self.open_boost()
    }
    /// Boosted run time including the run in progress.
    pub fn boosted(&self) -> u64 {
        self.boosted_runtime_ns + self.open_boost()
    }
    /// Starved time including the open interval, ns.
    pub fn starved(&self) -> u64 {
        crate::stats::starved_ns_at(self.starved_ns, self.starved_since_ns, self.now_ns)
    }
}

/// A normal task starving on this CPU (it cannot run anywhere else now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// thread id
    pub pid: u32,
    /// sched_ext weight, 100 = nice 0
    pub weight: u32,
}

/// A boosted task as the server sees it at a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskNow {
    /// its total run time (ns; /proc/PID/schedstat field 1)
    pub runtime_ns: u64,
    /// runnable (running or waiting for the CPU), not blocked
    pub runnable: bool,
    /// its boost was already ended where it runs (the executor's limit):
    /// it ends here as exhausted if its share was used, else as blocked (the
    /// share grew after the cut: the rest goes to a new boost)
    pub cut: bool,
}

/// Why a boost ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreWhy {
    /// its share of the budget is used up
    Exhausted,
    /// it blocked or exited: its unused share goes to the other boosted tasks
    Blocked,
    /// the period ended: the budget is replenished (the next period is
    /// served from its start, or deferred again: see `CpuServer::step`)
    PeriodEnd,
}

/// What the server wants done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Boost `pid` above the RT tasks on this CPU, allowed `budget_ns` of run
    /// time (SCHED_DEADLINE runtime = budget, deadline = period =
    /// `deadline_ns`, or SCHED_FIFO); the server restores it when the share
    /// is used.
    Boost {
        /// thread id
        pid: u32,
        /// run time allowed, ns
        budget_ns: u64,
        /// time left in the server's period, ns: the SCHED_DEADLINE relative
        /// deadline (and period), so that the absolute deadline is the
        /// period's end. A task made SCHED_DEADLINE again before its previous
        /// absolute deadline keeps that deadline and what is left of its old
        /// runtime (the CBS rule: enqueue_dl_entity() sets up a new entity
        /// only once the old deadline has passed, so switching policies
        /// cannot refill a budget). With the whole server period as the
        /// deadline, each boost would come before the previous one's
        /// deadline and get its leftover (docs/design.md, Decisions:
        /// "SCHED_DEADLINE deadline = the time left in the period").
        deadline_ns: u64,
    },
    /// Give `pid` its own policy back.
    Restore {
        /// thread id
        pid: u32,
        /// why
        why: RestoreWhy,
        /// the overrun booked for it, ns, from its run time at this step
        /// (a restore made later, by the executor, is booked again with
        /// [`CpuServer::overran_more`]); 0 when it blocked
        over_ns: u64,
        /// its slot's run time that overrun was taken from, ns
        ran_ns: u64,
    },
}

/// The result of one step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// to carry out now, in order
    pub actions: SmallVec<[Action; 3 * MAX_BOOSTED]>,
    /// when (CLOCK_MONOTONIC ns) the server must be stepped again at the latest
    pub next_ns: u64,
}

/// A boost in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveBoost {
    /// thread id
    pub pid: u32,
    /// weight, 100 = nice 0
    pub weight: u32,
    /// its run time when the boost began, ns (0 when `task` counts from the boost)
    pub base_ns: u64,
    /// run time allowed since the boost began, ns
    pub share_ns: u64,
}

/// A boost in progress and its run time since it began, ns.
type Kept = (ActiveBoost, u64);

/// The boosts a step keeps.
type KeptList = SmallVec<[Kept; INLINE]>;

/// The boosts a step finds done.
type DoneList = SmallVec<[Done; MAX_BOOSTED]>;

/// A boost whose share is used, or that the executor cut: its run time
/// since it began (ns), and whether it was cut.
type Done = (ActiveBoost, u64, bool);

/// Where a step stands in its period, ns: now, the period's end, and what
/// is still owed in it.
#[derive(Clone, Copy, Debug)]
struct Period {
    now: u64,
    end: u64,
    owed: u64,
}

/// Who joins the boosts in a step ([`CpuServer::plan_joins`]).
#[derive(Debug)]
struct JoinPlan {
    /// how many of the eligible join now (the first ones; the eligible
    /// are the starving tasks that may join, least recently served first,
    /// left in the waiters buffer by [`CpuServer::plan_joins`])
    join: usize,
    /// how many after those keep a share for a turn later in the period
    queued: usize,
    /// done tasks that may be boosted again
    again: usize,
    /// the index in `keep` of the first task that joined
    joined_from: usize,
    /// starving tasks were left out of this step
    left_out: bool,
    /// the least share a task that joined is boosted for, ns
    least: u64,
    /// tasks wait for a slot that a booked restore frees
    slot_wait: bool,
}

/// Scales the shares of the boosts in progress down so that what they may
/// still run adds up to at most `owed` (ns); returns what is left of it.
fn cap_to_owed(keep: &mut [Kept], owed: u64) -> u64 {
    let mut allotted: u64 = keep.iter().map(|(a, used)| a.share_ns - used).sum();
    if allotted > owed {
        for (a, used) in keep.iter_mut() {
            let rest = ((a.share_ns - *used) as u128 * owed as u128 / allotted as u128) as u64;
            a.share_ns = *used + rest;
        }
        allotted = keep.iter().map(|(a, used)| a.share_ns - used).sum();
    }
    owed - allotted
}

/// What the server has done, since it started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerStats {
    /// periods completed
    pub periods: u64,
    /// boosts that ended because the task blocked
    pub handed_over: u64,
    /// overruns of boosts that ran past their share, ns
    pub overrun: Hist,
    /// largest overrun, ns
    pub max_overrun_ns: u64,
    /// normal run time delivered in the last complete period, ns
    pub last_period_delivered_ns: u64,
    /// boosted run time in the last complete period, ns
    pub last_period_boosted_ns: u64,
    /// time normal tasks starved on the CPU in the last complete period, ns
    pub last_period_starved_ns: u64,
    /// the most boosted run time in one period, ns, over the periods
    /// closed one at a time (a late step that closes several cannot tell
    /// them apart): the runtime plus what its boosts ran past their ends
    pub max_period_boosted_ns: u64,
    /// tasks boosted in the last complete period that wanted more than
    /// they got (no boost of theirs ended because they blocked)
    pub last_period_tasks: u32,
    /// the least run time one of those got from its boosts in that
    /// period, ns (0 when there were none)
    pub last_period_min_share_ns: u64,
    /// steps that left starving tasks waiting for a boost slot (a later
    /// turn in the period, or a later period: see [`MIN_TURN_NS`]) because
    /// every slot of the CPU ([`MAX_BOOSTED`]) was taken, though the budget
    /// had a share of at least [`MIN_SHARE_NS`] for more
    pub slots_full: u64,
}

fn restores_in(st: &Step) -> impl Iterator<Item = u32> + '_ {
    st.actions.iter().filter_map(|a| match a {
        Action::Restore { pid, .. } => Some(*pid),
        _ => None,
    })
}

/// Most tasks boosted at once on one CPU (`FLOOR_SLOTS_PER_CPU`).
pub const MAX_BOOSTED: usize = crate::bpf_intf::floor_consts_FLOOR_SLOTS_PER_CPU as usize;

/// The server of one CPU.
#[derive(Clone, Debug)]
pub struct CpuServer {
    cfg: ServerConfig,
    period_start_ns: u64,
    delivered_base_ns: u64,
    boosted_base_ns: u64,
    starved_base_ns: u64,
    active: Vec<ActiveBoost>,
    /// tasks that used their whole share this period: not boosted again in
    /// it while others starve
    exhausted: Vec<u32>,
    /// run time each task got from its boosts that ended in this period,
    /// ns: what the shares of the rest of the period are levelled against
    /// (see [`water_fill`])
    period_runtime: std::collections::HashMap<u32, u64>,
    /// tasks in `period_runtime` one of whose boosts in this period ended
    /// because they blocked (they did not want all they were given)
    period_blocked: Vec<u32>,
    /// serving (periods running); false: idle until normal tasks starve
    started: bool,
    /// boosted run time delivered beyond the budget and not yet paid back,
    /// ns: taken off what the next periods owe (see [`CpuServer::owed_ns`])
    debt_ns: u64,
    /// overruns of the boosts ended in this period, ns (debt at its edge)
    period_overrun_ns: u64,
    /// boosts this server made in the current period (failed ones taken
    /// back by [`CpuServer::drop_boost`])
    boosts_in_period: u32,
    /// the starvation outlived a zero-laxity activation: the server serves
    /// each next period from its start, not deferred, for as long as it
    /// has to boost in every period (see [`CpuServer::step`]). Never in
    /// kernel-cut mode, which stays deferred in every period: each wake-up
    /// of a sleeper served at once would be a SCHED_DEADLINE boost and
    /// restore, and that churn leaked the root domain's DL admission total
    /// on 7.3.4 (docs/design.md, Decisions: "Kernel-cut mode stays
    /// deferred in every period").
    running: bool,
    /// tasks take turns in this period (see [`MIN_TURN_NS`]): more starving
    /// tasks wait for a slot, and the caller lists the waiters while boosts
    /// run ([`CpuServer::taking_turns`])
    taking_turns: bool,
    /// past the activation point with nothing boosted, the CPU starved at
    /// or since the last step: the server looks again after the margin
    /// and wants no starvation kick until a look finds it quiet
    polling: bool,
    /// the CPU's starved time ([`Sample::starved`]) at the last step, ns
    look_starved_ns: u64,
    /// boost slots of the CPU still taken by restores not yet booked (set
    /// by the caller before each step: [`CpuServer::set_unsettled_slots`])
    unsettled_slots: usize,
    /// the period in which each task was last boosted: the least recently
    /// served go first when more starve than can be boosted at once
    served_in: std::collections::HashMap<u32, u64>,
    /// the waiters a step lists, kept between steps with its room
    /// ([`WAITERS_INLINE`])
    ws_buf: Vec<Waiter>,
    /// counters
    pub stats: ServerStats,
}

impl CpuServer {
    /// A server that stays idle until normal tasks starve on its CPU.
    pub fn idle(cfg: ServerConfig, s: &Sample) -> Self {
        CpuServer {
            started: false,
            ..Self::new(cfg, s)
        }
    }

    /// A server whose first period starts at `s.now_ns`.
    pub fn new(cfg: ServerConfig, s: &Sample) -> Self {
        assert!(cfg.period_ns > 0 && cfg.runtime_ns <= cfg.period_ns);
        CpuServer {
            cfg,
            period_start_ns: s.now_ns,
            delivered_base_ns: s.delivered(),
            boosted_base_ns: s.boosted(),
            starved_base_ns: s.starved(),
            // made with their room now: a step never grows them for the
            // tasks of one ordinary period (docs/design.md, "One malloc
            // arena")
            active: Vec::with_capacity(MAX_BOOSTED),
            exhausted: Vec::with_capacity(WAITERS_INLINE),
            period_runtime: std::collections::HashMap::with_capacity(WAITERS_INLINE),
            period_blocked: Vec::with_capacity(WAITERS_INLINE),
            started: true,
            debt_ns: 0,
            period_overrun_ns: 0,
            boosts_in_period: 0,
            running: false,
            taking_turns: false,
            polling: false,
            look_starved_ns: s.starved(),
            unsettled_slots: 0,
            served_in: std::collections::HashMap::with_capacity(WAITERS_INLINE),
            ws_buf: Vec::with_capacity(WAITERS_INLINE),
            stats: ServerStats::default(),
        }
    }

    /// Makes this server as [`CpuServer::idle`] makes a new one, with
    /// configuration `cfg`, keeping its statistics and the room of its lists
    /// (nothing allocated: a planner calls it at a hand-off).
    pub fn reset_idle(&mut self, cfg: ServerConfig, s: &Sample) {
        assert!(cfg.period_ns > 0 && cfg.runtime_ns <= cfg.period_ns);
        self.cfg = cfg;
        self.period_start_ns = s.now_ns;
        self.delivered_base_ns = s.delivered();
        self.boosted_base_ns = s.boosted();
        self.starved_base_ns = s.starved();
        self.active.clear();
        self.exhausted.clear();
        self.period_runtime.clear();
        self.period_blocked.clear();
        self.started = false;
        self.debt_ns = 0;
        self.period_overrun_ns = 0;
        self.boosts_in_period = 0;
        self.running = false;
        self.taking_turns = false;
        self.polling = false;
        self.look_starved_ns = s.starved();
        self.unsettled_slots = 0;
        self.served_in.clear();
        self.ws_buf.clear();
    }

    /// Tells the server how many of the CPU's [`MAX_BOOSTED`] boost slots
    /// are taken by restores it ordered that are not booked yet (the
    /// executor has not reported them): a step boosts no more tasks than
    /// the slots left.
    pub fn set_unsettled_slots(&mut self, n: usize) {
        self.unsettled_slots = n;
    }

    /// Whether starving tasks take turns in the slots in this period: the
    /// tasks waiting on the CPU are needed at each step, also while boosted
    /// tasks run (false: only while the higher class holds it).
    pub fn taking_turns(&self) -> bool {
        self.taking_turns
    }

    /// Whether the server is serving (false: idle until starvation).
    pub fn started(&self) -> bool {
        self.started
    }

    /// Whether the server wants to be woken when starvation begins: it is
    /// idle; or nothing is boosted and a starvation beginning now would
    /// change what it does: normal tasks got the whole runtime in this
    /// period by themselves (see the restart rule; a server in debt does
    /// not), or the period has reached its activation point with at least
    /// [`MIN_BOOST_NS`] owed (it would boost at once), unless it polls
    /// (the CPU starved lately: it looks again after the margin anyway).
    /// Elsewhere a starvation changes nothing before the step already
    /// planned, and a wake-up for each (an RT task that runs every
    /// millisecond) would cost the CPU more than it serves.
    pub fn wants_starve_kick(&self, s: &Sample) -> bool {
        !self.started
            || (self.active.is_empty()
                && (self.got_runtime(s) || (!self.polling && self.would_boost_now(s))))
    }

    /// Whether a starving task would be boosted at this sample: at least
    /// [`MIN_BOOST_NS`] owed, and the period served from its start
    /// (`running`) or past its zero-laxity activation point.
    fn would_boost_now(&self, s: &Sample) -> bool {
        let owed = self.owed_ns(s);
        owed >= MIN_BOOST_NS && (self.running || s.now_ns >= self.activation_ns(owed))
    }

    /// The zero-laxity activation point of the period with `owed` ns
    /// still owed, less the margin ([`activation_margin_ns`]), ns.
    fn activation_ns(&self, owed: u64) -> u64 {
        self.period_end_ns()
            .saturating_sub(owed + self.cfg.margin_ns)
    }

    /// The boosts in progress.
    pub fn active(&self) -> &[ActiveBoost] {
        &self.active
    }

    /// End of the current period, ns.
    pub fn period_end_ns(&self) -> u64 {
        self.period_start_ns + self.cfg.period_ns
    }

    /// Normal run time delivered so far in this period, ns.
    pub fn delivered_ns(&self, s: &Sample) -> u64 {
        s.delivered().saturating_sub(self.delivered_base_ns)
    }

    /// Budget still owed in this period, ns: the runtime less what normal
    /// tasks got in this period and less the debt. Boosts overrun their share
    /// (by the timer latency: ~0.3 ms under TCG, where a 20 us budget then
    /// delivers 16 times its due); as in the kernel's CBS, where a
    /// SCHED_DEADLINE task's overrun is left as negative runtime that the
    /// next replenishments pay off (replenish_dl_entity(), deadline.c), the
    /// overrun of each boost is taken off the next periods, so that over
    /// several periods the server delivers its runtime per period, not
    /// runtime + overrun. (Per-CPU kthreads' run time, overruns included,
    /// counts neither as delivered nor as debt.)
    pub fn owed_ns(&self, s: &Sample) -> u64 {
        self.cfg
            .runtime_ns
            .saturating_sub(self.delivered_ns(s) + self.debt_ns)
    }

    /// Whether normal tasks got the whole runtime in this period (debt aside:
    /// a server in debt owes nothing but was not paid).
    fn got_runtime(&self, s: &Sample) -> bool {
        self.delivered_ns(s) >= self.cfg.runtime_ns
    }

    /// Overrun still to be paid back by the next periods, ns.
    pub fn debt_ns(&self) -> u64 {
        self.debt_ns
    }

    /// Starts a period at `start_ns`: what is delivered and boosted counts
    /// from `s`, and no task has been boosted or used its share in it.
    fn open_period(&mut self, start_ns: u64, s: &Sample) {
        self.period_start_ns = start_ns;
        self.delivered_base_ns = s.delivered();
        self.boosted_base_ns = s.boosted();
        self.starved_base_ns = s.starved();
        self.boosts_in_period = 0;
        self.taking_turns = false;
        self.exhausted.clear();
        self.period_runtime.clear();
        self.period_blocked.clear();
    }

    fn end_boost(&mut self, a: &ActiveBoost, used: u64, why: RestoreWhy, out: &mut Step) {
        let over = used.saturating_sub(a.share_ns);
        self.period_overrun_ns += over;
        *self.period_runtime.entry(a.pid).or_default() += used;
        if why != RestoreWhy::Blocked {
            if over > 0 {
                self.stats.overrun.record(over);
            }
            self.stats.max_overrun_ns = self.stats.max_overrun_ns.max(over);
        } else {
            self.stats.handed_over += 1;
        }
        let over_ns = if why == RestoreWhy::Blocked { 0 } else { over };
        out.actions.push(Action::Restore {
            pid: a.pid,
            why,
            over_ns,
            ran_ns: a.base_ns + used,
        });
    }

    /// A boost whose end was booked with an overrun of `booked_ns` ran
    /// `extra_ns` more before its restore took effect (made later, by the
    /// executor): its overrun is `booked_ns + extra_ns` in the statistics,
    /// and the extra counts toward this period's overrun (the debt's cap).
    pub fn overran_more(&mut self, booked_ns: u64, extra_ns: u64) {
        if extra_ns == 0 {
            return;
        }
        let over = booked_ns + extra_ns;
        if booked_ns > 0 {
            self.stats.overrun.replace(booked_ns, over);
        } else {
            self.stats.overrun.record(over);
        }
        self.stats.max_overrun_ns = self.stats.max_overrun_ns.max(over);
        // an idle server's periods hold no overrun (its debt was forgiven)
        if self.started {
            self.period_overrun_ns += extra_ns;
        }
    }

    /// Ends the `done` boosts of a step (share used, or cut by the
    /// executor), each with `extra[i]` ns more to run in this period (0 when
    /// `extra` is short): a boost still in place grows by it; one the
    /// executor cut is restored and made again for it (a new boost, pushed
    /// to `keep`). Without extra, as before: a cut one with share left
    /// ends as blocked (its rest was shared out), the rest as exhausted.
    fn end_done(
        &mut self,
        now: u64,
        done: DoneList,
        extra: &[u64],
        keep: &mut KeptList,
        out: &mut Step,
    ) {
        for (i, (mut a, used, cut)) in done.into_iter().enumerate() {
            let e = extra.get(i).copied().unwrap_or(0);
            let spent = share_spent(used, a.share_ns);
            if e >= MIN_SHARE_NS && !cut {
                a.share_ns = used + e;
                keep.push((a, used));
            } else if e >= MIN_SHARE_NS {
                // its rest handed on (to itself): not a block
                self.end_boost(&a, used, RestoreWhy::Blocked, out);
                self.boosts_in_period += 1;
                self.served_in.insert(a.pid, self.stats.periods);
                out.actions.push(Action::Boost {
                    pid: a.pid,
                    budget_ns: 0,
                    deadline_ns: self.period_end_ns().saturating_sub(now),
                });
                keep.push((
                    ActiveBoost {
                        base_ns: 0,
                        share_ns: e,
                        ..a
                    },
                    0,
                ));
            } else if cut && !spent {
                // cut below a share that grew since: its rest was shared out
                self.end_boost(&a, used, RestoreWhy::Blocked, out);
            } else {
                self.end_boost(&a, used, RestoreWhy::Exhausted, out);
                self.exhausted.push(a.pid);
            }
        }
    }

    /// Advances the server to `s.now_ns`. `task` tells a boosted task's run
    /// time since its boost began and its state (None: it is gone);
    /// `waiters` is called (at most once) only when the server needs the
    /// tasks starving on this CPU.
    ///
    /// The step runs off the served CPU (the planner, placed by the kernel),
    /// so a boosted task may still run while it reads: a boost it ends is
    /// counted up to the step, and the little it runs until its restore
    /// takes effect is not (FIFO mode: the executor, on the served CPU, ends
    /// boosts at their limit itself, and those are counted in full: `cut`).
    pub fn step(
        &mut self,
        s: &Sample,
        task: impl Fn(u32) -> Option<TaskNow>,
        mut waiters: impl FnMut() -> Vec<Waiter>,
    ) -> Step {
        self.step_into(s, task, |buf| buf.extend(waiters()))
    }

    /// [`CpuServer::step`], with `waiters` appending the starving tasks to
    /// the buffer it is given (empty, with room for [`WAITERS_INLINE`]):
    /// the step then allocates nothing.
    pub fn step_into(
        &mut self,
        s: &Sample,
        task: impl Fn(u32) -> Option<TaskNow>,
        mut waiters: impl FnMut(&mut Vec<Waiter>),
    ) -> Step {
        let now = s.now_ns;
        let mut out = Step::default();
        let starved = s.starved();
        let starved_lately = s.starved_since_ns != 0
            || starved > std::mem::replace(&mut self.look_starved_ns, starved);
        self.polling = false;
        if !self.start(s) || (now >= self.period_end_ns() && self.replenish(s, &task, &mut out)) {
            // Idle: the BPF side wakes the server when starvation begins.
            out.next_ns = now + IDLE_RECHECK_NS;
            return out;
        }
        let end = self.period_end_ns();
        let owed = self.owed_ns(s);
        let (mut keep, done) = self.sort_active(owed, &task, &mut out);
        if owed < MIN_BOOST_NS {
            self.end_done(now, done, &[], &mut keep, &mut out);
            out.next_ns = end;
            return out;
        }
        // Zero laxity: the latest start that still delivers what is owed.
        // Only until the first activation: a server that had to boost in
        // the last period serves this one from its start. That is the
        // kernel's deferred dl_server (deadline.c, 6.12+): once the zero-
        // laxity timer has fired (dl_defer_running), each replenishment
        // runs at once, not deferred again, until the fair class gets its
        // runtime on its own or the server stops. A deferral in every
        // period would serve only inside its last `owed` ms, which a task
        // that sleeps between short runs mostly misses (docs/design.md,
        // Decisions: "Deferred only until the first activation").
        let activate_at = self.activation_ns(owed);
        if keep.is_empty() && now < activate_at && !self.running {
            self.end_done(now, done, &[], &mut keep, &mut out);
            out.next_ns = activate_at;
            return out;
        }
        // the tasks starving here, less those restored or done in this step
        // (at most one call: `waiters` may be costly), in the kept buffer
        let mut skip: SmallVec<[u32; INLINE]> = restores_in(&out).collect();
        skip.extend(done.iter().map(|(a, _, _)| a.pid));
        let mut ws = std::mem::take(&mut self.ws_buf);
        ws.clear();
        let mut listed = false;
        let mut starving = |ws: &mut Vec<Waiter>| {
            if !listed {
                listed = true;
                waiters(ws);
                ws.retain(|w| !skip.contains(&w.pid));
            }
        };
        let (mut end, mut owed) = (end, owed);
        if keep.is_empty() && !self.running && !self.cfg.kernel_cut {
            starving(&mut ws);
            if self.activate(s, &ws) {
                end = self.period_end_ns();
                owed = self.owed_ns(s);
            }
        }
        let pool = cap_to_owed(&mut keep, owed);
        let mut done_extra: SmallVec<[u64; MAX_BOOSTED]> = SmallVec::from_elem(0, done.len());
        let mut slot_wait = false;
        if pool >= MIN_BOOST_NS {
            starving(&mut ws);
            let at = Period { now, end, owed };
            slot_wait = self.share_out(
                at,
                pool,
                &mut ws,
                &done,
                &mut keep,
                &mut done_extra,
                &mut out,
            );
        }
        self.ws_buf = ws;
        self.end_done(now, done, &done_extra, &mut keep, &mut out);
        self.schedule(now, end, slot_wait, starved_lately, keep, &mut out);
        out
    }

    /// Starts the server at the first starvation; false while nothing has
    /// starved yet (idle).
    fn start(&mut self, s: &Sample) -> bool {
        if !self.started {
            if s.starved_since_ns == 0 {
                return false;
            }
            self.started = true;
            self.open_period(s.starved_since_ns.min(s.now_ns), s);
        }
        // A new starvation while nothing is owed and nothing is boosted
        // (normal tasks had their budget on their own before the hog came):
        // the period restarts at the starvation, so that the first service
        // comes within one period of it. Boosts per period stay <= runtime.
        // (Whether this server boosted in the period, not whether the CPU's
        // boosted run time moved: a task another CPU's server boosted may
        // run here.)
        let now = s.now_ns;
        if self.active.is_empty()
            && self.boosts_in_period == 0
            && s.starved_since_ns > self.period_start_ns
            && s.starved_since_ns <= now
            && now < self.period_end_ns()
            && self.got_runtime(s)
        {
            self.open_period(s.starved_since_ns, s);
            self.running = false;
        }
        true
    }

    /// The period edge: everything boosted gives its policy back, the debt
    /// is settled and the runtime replenished (a late step closes several
    /// periods at once). True when the server stops (debts forgiven):
    /// nothing starves now and, in the period that ended, normal tasks got
    /// their budget on their own or never starved. Without the second, a
    /// server that one short RT run started on a mostly idle CPU (where
    /// normal tasks never use the runtime) would step through every period
    /// from then on. The kernel's dl_server likewise stops once it finds
    /// the fair class with nothing to run (deadline.c, dl_server_stopped(),
    /// 6.17+).
    fn replenish(
        &mut self,
        s: &Sample,
        task: &impl Fn(u32) -> Option<TaskNow>,
        out: &mut Step,
    ) -> bool {
        let active: SmallVec<[ActiveBoost; MAX_BOOSTED]> = self.active.drain(..).collect();
        for a in active {
            let used = task(a.pid)
                .map(|t| t.runtime_ns.saturating_sub(a.base_ns))
                .unwrap_or(0);
            self.end_boost(&a, used, RestoreWhy::PeriodEnd, out);
        }
        let n = (s.now_ns - self.period_start_ns) / self.cfg.period_ns;
        self.close_periods(s, n);
        self.open_period(self.period_start_ns + n * self.cfg.period_ns, s);
        if out.actions.is_empty()
            && s.starved_since_ns == 0
            && (self.stats.last_period_delivered_ns >= self.cfg.runtime_ns
                || self.stats.last_period_starved_ns == 0)
        {
            self.started = false;
            self.running = false;
            self.debt_ns = 0;
            self.period_overrun_ns = 0;
            return true;
        }
        // forget tasks not served for a while (bounded memory)
        let p = self.stats.periods;
        self.served_in
            .retain(|_, last| p.saturating_sub(*last) < 64);
        false
    }

    /// Books `n` (>= 1) ended periods: what the last one delivered, the
    /// debt, whether the next is served from its start (`running`), and how
    /// the last one was split among its tasks.
    fn close_periods(&mut self, s: &Sample, n: u64) {
        self.stats.last_period_delivered_ns = s.delivered().saturating_sub(self.delivered_base_ns);
        self.stats.last_period_boosted_ns = s.boosted().saturating_sub(self.boosted_base_ns);
        self.stats.last_period_starved_ns = s.starved().saturating_sub(self.starved_base_ns);
        if n == 1 {
            self.stats.max_period_boosted_ns = self
                .stats
                .max_period_boosted_ns
                .max(self.stats.last_period_boosted_ns);
        }
        // Each period pays back up to its runtime of the debt (however its
        // normal tasks ran: the debt is what lowered what it owed). What was
        // delivered beyond what it then owed becomes debt, up to the
        // overruns of the boosts that ended in it: the CBS balance,
        // delivered = periods x runtime + debt left, and time normal tasks
        // ran on their own never becomes debt. (The sum of the overruns
        // alone overstates it when several boosts shared the period: their
        // shares shrink as the budget is used.)
        let due = self.cfg.runtime_ns.saturating_mul(n);
        let paid = self.debt_ns.min(due);
        let excess = self
            .stats
            .last_period_delivered_ns
            .saturating_sub(due - paid);
        self.debt_ns =
            self.debt_ns - paid + excess.min(std::mem::take(&mut self.period_overrun_ns));
        self.stats.periods += n;
        // Deferred again after a period (or more: a late step) in which the
        // server did not have to boost, or in which normal tasks got the
        // runtime on their own besides the boosts (the kernel leaves
        // dl_defer_running when the fair class consumes the runtime in the
        // background: update_curr_dl_se()); else an RT task that only
        // briefly starves normal tasks would get a boost at each of its
        // runs, period after period.
        let own = self
            .stats
            .last_period_delivered_ns
            .saturating_sub(self.stats.last_period_boosted_ns);
        self.running = n == 1
            && self.boosts_in_period > 0
            && own < self.cfg.runtime_ns
            && !self.cfg.kernel_cut;
        let wanting = self
            .period_runtime
            .iter()
            .filter(|(p, _)| !self.period_blocked.contains(p));
        self.stats.last_period_tasks = wanting.clone().count() as u32;
        self.stats.last_period_min_share_ns = wanting.map(|(_, r)| *r).min().unwrap_or(0);
    }

    /// Sorts the boosts in progress: those that blocked or exited end now
    /// (their unused share is freed). One that used its share, or whose
    /// boost the executor cut at its limit, is `done`: it ends once the rest
    /// of the period is shared out, unless that gives it more
    /// ([`Self::end_done`]). Returns (kept with their run time, done with
    /// their run time and whether the executor cut them).
    fn sort_active(
        &mut self,
        owed: u64,
        task: &impl Fn(u32) -> Option<TaskNow>,
        out: &mut Step,
    ) -> (KeptList, DoneList) {
        let mut keep = KeptList::new();
        let mut done = DoneList::new();
        let active: SmallVec<[ActiveBoost; MAX_BOOSTED]> = self.active.drain(..).collect();
        for a in active {
            match task(a.pid) {
                Some(t) if t.runnable || t.cut => {
                    let used = t.runtime_ns.saturating_sub(a.base_ns);
                    if share_spent(used, a.share_ns) || t.cut || owed < MIN_BOOST_NS {
                        done.push((a, used, t.cut));
                    } else {
                        keep.push((a, used));
                    }
                }
                other => {
                    let used = other
                        .map(|t| t.runtime_ns.saturating_sub(a.base_ns))
                        .unwrap_or(0);
                    self.end_boost(&a, used, RestoreWhy::Blocked, out);
                    if !self.period_blocked.contains(&a.pid) {
                        self.period_blocked.push(a.pid);
                    }
                }
            }
        }
        (keep, done)
    }

    /// The zero-laxity activation of a deferred server opens a new period
    /// now, with the whole runtime (less any debt), as the kernel does when
    /// the defer timer of a dl_server fires: a deferred reservation reaching
    /// replenish_dl_entity() with its density above its bandwidth gets
    /// deadline = now + dl_deadline and runtime = dl_runtime (deadline.c,
    /// 6.12+). Periods then follow from the activation, and each next one
    /// is served from its start (`running`), so no window of one period
    /// holds more than one runtime of service (docs/design.md, Decisions:
    /// "The zero-laxity activation opens a new period"). Only when a task
    /// is there to boost (`ws`), else the period would move for nothing;
    /// never in kernel-cut mode, which defers every period (see `running`).
    /// Returns whether it opened a period.
    fn activate(&mut self, s: &Sample, ws: &[Waiter]) -> bool {
        if ws.is_empty() {
            return false;
        }
        self.open_period(s.now_ns, s);
        true
    }

    /// Shares `pool` (what is owed and not allotted to the boosts in
    /// progress) out by weight, levelling each task's run time in this
    /// period ([`water_fill`]): newly starving tasks (`ws`) join, and a
    /// `done` task gets more (`done_extra`) only where the others would
    /// otherwise end the period ahead of it by weight (a task that blocked
    /// right after its boost left its share to those after it, while the
    /// first to run had used its own already: docs/design.md, "The
    /// bandwidth server"). Tasks that used their share
    /// already join only when nobody else starves. Returns whether tasks
    /// wait for a slot that a booked restore will free (look again soon).
    #[allow(clippy::too_many_arguments)]
    fn share_out(
        &mut self,
        at: Period,
        pool: u64,
        ws: &mut Vec<Waiter>,
        done: &[Done],
        keep: &mut KeptList,
        done_extra: &mut [u64],
        out: &mut Step,
    ) -> bool {
        let plan = self.plan_joins(at.owed, ws, done, keep, out);
        let eligible: &[Waiter] = ws;
        for w in &eligible[..plan.join] {
            let a = ActiveBoost {
                pid: w.pid,
                weight: w.weight.max(1),
                base_ns: 0,
                share_ns: 0,
            };
            keep.push((a, 0));
        }
        self.level(pool, &plan, eligible, done, keep, done_extra);
        self.admit(at, &plan, keep, out);
        plan.slot_wait
    }

    /// Who joins the boosts in this step, and who keeps a share for a turn
    /// later in the period ([`JoinPlan`]); leaves in `ws` the starving tasks
    /// that may join, least recently served first.
    fn plan_joins(
        &mut self,
        owed: u64,
        ws: &mut Vec<Waiter>,
        done: &[Done],
        keep: &[Kept],
        out: &Step,
    ) -> JoinPlan {
        // stable: the caller lists the longest waiting first (no allocation
        // for up to 512 waiters: std sorts that many in a stack buffer)
        ws.sort_by_key(|w| self.served_in.get(&w.pid).map_or(0, |p| p + 1));
        let fresh = ws.iter().any(|w| !self.exhausted.contains(&w.pid));
        // turns needed per period for each starving task to run within
        // TURN_WINDOW_NS
        let needed =
            ((ws.len() + done.len()) as u64 * self.cfg.period_ns).div_ceil(TURN_WINDOW_NS) as usize;
        let shares = (owed / MIN_SHARE_NS) as usize;
        let room = if self.cfg.kernel_cut {
            1
        } else {
            shares.clamp(1, MAX_BOOSTED)
        };
        // done tasks may be boosted again (not in kernel-cut mode: the
        // kernel holds a SCHED_DEADLINE boost to the runtime it was given)
        let again = if self.cfg.kernel_cut { 0 } else { done.len() };
        ws.retain(|w| {
            let boosted = keep.iter().any(|(a, _)| a.pid == w.pid);
            !(boosted || (fresh && self.exhausted.contains(&w.pid)))
        });
        let eligible: &[Waiter] = ws;
        // Boost slots a new boost can take in this step. A restore this
        // step orders frees its slot only once it is booked, except that of
        // a boost the executor already cut (booked at once; the caller
        // carries out restores before boosts).
        let cut_done = done.iter().filter(|(_, _, cut)| *cut).count();
        let held = self.unsettled_slots + keep.len() + restores_in(out).count() + done.len();
        let free = MAX_BOOSTED.saturating_sub(held);
        let left_out = !eligible.is_empty()
            && (keep.len() + again + eligible.len() > room || eligible.len() > free);
        // Turns: more tasks starve than the slots serve once per period
        // within TURN_WINDOW_NS (never in kernel-cut mode, one boost at a
        // time). Else as many join as the room leaves beside the boosts in
        // progress and those done in this step.
        let turn_mode = !self.cfg.kernel_cut && needed > MAX_BOOSTED;
        self.taking_turns = left_out && turn_mode;
        let mut slot_wait = false;
        let (join, queued) = if left_out && turn_mode {
            // The done boosts end, and the starving take turns in the slots
            // within the period, each turn at least MIN_TURN_NS of the
            // budget (see there), until every task the window needs per
            // period had one.
            let turns = ((owed / MIN_TURN_NS) as usize)
                .min(needed.saturating_sub(self.exhausted.len() + done.len()))
                .max(keep.len() + 1);
            let n = (room.saturating_sub(keep.len()))
                .min(free + cut_done)
                .min(turns - keep.len())
                .min(eligible.len());
            (n, (eligible.len() - n).min(turns - keep.len() - n))
        } else if left_out {
            let n = room
                .saturating_sub(keep.len() + again)
                .min(free)
                .min(eligible.len());
            // Those the room has place for but no slot is free for yet
            // (restores not booked) keep their part of the budget, and the
            // server looks again soon.
            let queued = room
                .saturating_sub(keep.len() + again + n)
                .min(eligible.len() - n);
            slot_wait = queued > 0;
            (n, queued)
        } else {
            (eligible.len(), 0)
        };
        if left_out && !self.cfg.kernel_cut && shares > MAX_BOOSTED {
            self.stats.slots_full += 1;
        }
        JoinPlan {
            join,
            queued,
            again,
            joined_from: keep.len(),
            left_out,
            least: if left_out && turn_mode {
                MIN_SHARE_NS.min(owed)
            } else {
                MIN_BOOST_NS
            },
            slot_wait,
        }
    }

    /// Levels `pool` over the boosts in `keep` (the joined ones included),
    /// the `done` tasks boosted again and the tasks whose turn comes later
    /// in the period: grows each kept boost's share, and writes what each
    /// done task gets more to `done_extra`.
    fn level(
        &self,
        pool: u64,
        plan: &JoinPlan,
        eligible: &[Waiter],
        done: &[Done],
        keep: &mut [Kept],
        done_extra: &mut [u64],
    ) {
        // run time in the period so far, ended boosts included, and what
        // each boost in progress may still run
        let ran = |pid: u32| self.period_runtime.get(&pid).copied().unwrap_or(0);
        let levels: SmallVec<[(u64, u32); FILL_INLINE]> = keep
            .iter()
            .map(|(a, _)| (ran(a.pid) + a.share_ns, a.weight.max(1)))
            .collect();
        let mut with: SmallVec<[usize; MAX_BOOSTED]> = if plan.left_out {
            SmallVec::new()
        } else {
            (0..plan.again).collect()
        };
        let later = &eligible[plan.join..plan.join + plan.queued];
        // A done task boosted again for less than MIN_SHARE_NS costs more
        // than it gives: fill again without those (the others only gain).
        let extra = loop {
            let mut l = levels.clone();
            l.extend(with.iter().map(|&i| {
                let (a, used, _) = &done[i];
                (ran(a.pid) + used, a.weight.max(1))
            }));
            // the tasks whose turn comes later in the period take part in
            // the levelling: what they are owed is kept for them
            l.extend(later.iter().map(|w| (ran(w.pid), w.weight.max(1))));
            let mut e: SmallVec<[u64; FILL_INLINE]> = SmallVec::from_elem(0, l.len());
            water_fill_into(pool, &l, &mut e);
            let n = keep.len();
            let worth: SmallVec<[usize; MAX_BOOSTED]> = with
                .iter()
                .enumerate()
                .filter(|(j, _)| e[n + j] >= MIN_SHARE_NS)
                .map(|(_, &i)| i)
                .collect();
            if worth.len() == with.len() {
                break e;
            }
            with = worth;
        };
        let n = keep.len();
        for (j, &i) in with.iter().enumerate() {
            done_extra[i] = extra[n + j];
        }
        for (k, (a, _)) in keep.iter_mut().enumerate() {
            a.share_ns += extra[k];
        }
    }

    /// Boosts the tasks that joined with a share of at least `plan.least`
    /// and drops the others. Below MIN_BOOST_NS a share is nothing; while
    /// tasks take turns, below MIN_SHARE_NS (or all that is owed, if less)
    /// it is too little: late in a period the rest of the budget is levelled
    /// with the boosts in progress, and a turn of microseconds would count
    /// as the task's turn.
    fn admit(&mut self, at: Period, plan: &JoinPlan, keep: &mut KeptList, out: &mut Step) {
        let mut k = plan.joined_from;
        while k < keep.len() {
            if keep[k].0.share_ns < plan.least {
                keep.remove(k);
            } else {
                k += 1;
            }
        }
        for (a, _) in &keep[plan.joined_from..] {
            self.served_in.insert(a.pid, self.stats.periods);
            self.boosts_in_period += 1;
            // not in kernel-cut mode: see `running`
            self.running = !self.cfg.kernel_cut;
            out.actions.push(Action::Boost {
                pid: a.pid,
                budget_ns: 0,
                deadline_ns: at.end - at.now,
            });
        }
    }

    /// Sets when the server must be stepped next and gives each new boost
    /// its budget; `keep` becomes the boosts in progress.
    fn schedule(
        &mut self,
        now: u64,
        end: u64,
        slot_wait: bool,
        starved_lately: bool,
        keep: KeptList,
        out: &mut Step,
    ) {
        let retry = if slot_wait {
            now + SLOT_RETRY_NS
        } else {
            u64::MAX
        };
        if keep.is_empty() {
            // Nothing boosted, and nobody to boost. If the CPU starved at
            // or since the last step (its tasks may run elsewhere, or
            // restores hold their slots), look again after the margin,
            // with no kick armed meanwhile: an RT task that runs every
            // millisecond then costs one step per margin, not one per run.
            // A look that finds the CPU quiet sleeps until the period's end
            // and lets the BPF side's kick (wants_starve_kick) wake it.
            self.polling = starved_lately;
            out.next_ns = if starved_lately {
                (now + self.cfg.margin_ns.max(1_000_000)).min(end)
            } else {
                end
            }
            .min(retry);
            return;
        }
        // The earliest any of them can use up its share, never sooner than
        // min_step: a wake-up costs more than that.
        let min_step = if self.cfg.kernel_cut {
            KERNEL_CUT_MIN_STEP_NS
        } else {
            END_SLACK_NS
        };
        let mut next = end.min(retry);
        for (a, used) in &keep {
            next = next.min(now + (a.share_ns - used).max(min_step));
        }
        for act in out.actions.iter_mut() {
            if let Action::Boost { pid, budget_ns, .. } = act {
                if let Some((a, _)) = keep.iter().find(|(a, _)| a.pid == *pid) {
                    *budget_ns = a.share_ns;
                }
            }
        }
        self.active.clear();
        self.active.extend(keep.iter().map(|(a, _)| *a));
        out.next_ns = next;
    }

    /// Forgets the boost of `pid` without restoring (the caller found it
    /// could not be boosted).
    pub fn drop_boost(&mut self, pid: u32) {
        let n = self.active.len();
        self.active.retain(|a| a.pid != pid);
        if self.active.len() < n {
            self.boosts_in_period = self.boosts_in_period.saturating_sub(1);
        }
    }

    /// A boost of `pid` that was never made: the executor did not take it
    /// within its timeout (a SCHED_FIFO 99 or DEADLINE task held its CPU).
    /// Dropped as [`CpuServer::drop_boost`] drops one, and not counted as
    /// the task's turn: still waiting, it is among the first served next.
    /// Counted as a turn, it went to the back of the line, and with 200
    /// tasks taking turns on one CPU (a turn each about 5 s) the wait for
    /// the next passed sched_ext's 10 s watchdog.
    pub fn boost_missed(&mut self, pid: u32) {
        self.drop_boost(pid);
        self.served_in.remove(&pid);
    }

    /// Forgets every boost (the caller restored them).
    pub fn drop_all(&mut self) {
        self.active.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    const MS: u64 = 1_000_000;

    fn cfg(runtime_ms: u64) -> ServerConfig {
        cfg_ns(runtime_ms * MS)
    }

    fn cfg_ns(runtime_ns: u64) -> ServerConfig {
        ServerConfig {
            runtime_ns,
            period_ns: 1000 * MS,
            margin_ns: 2 * MS,
            kernel_cut: false,
        }
    }

    fn at(now_ms: u64, normal_ms: u64, boosted_ms: u64) -> Sample {
        Sample {
            now_ns: now_ms * MS,
            normal_runtime_ns: normal_ms * MS,
            boosted_runtime_ns: boosted_ms * MS,
            boost_since_ns: 0,
            starved_since_ns: 0,
            starved_ns: 0,
        }
    }

    fn w(pid: u32, weight: u32) -> Waiter {
        Waiter { pid, weight }
    }

    /// Tasks: pid -> (run time ns, runnable); the pids whose boost the
    /// executor cut.
    struct Tasks(RefCell<HashMap<u32, (u64, bool)>>, RefCell<Vec<u32>>);
    impl Tasks {
        fn new(pids: &[u32]) -> Self {
            Tasks(
                RefCell::new(pids.iter().map(|p| (*p, (0, true))).collect()),
                RefCell::new(Vec::new()),
            )
        }
        fn cut(&self, pid: u32) {
            self.1.borrow_mut().push(pid);
        }
        fn run(&self, pid: u32, ns: u64) {
            self.0.borrow_mut().get_mut(&pid).unwrap().0 += ns;
        }
        /// a new boost of `pid`: its run time counts from 0 again
        fn reboost(&self, pid: u32) {
            self.0.borrow_mut().get_mut(&pid).unwrap().0 = 0;
            self.1.borrow_mut().retain(|p| *p != pid);
        }
        fn block(&self, pid: u32) {
            self.0.borrow_mut().get_mut(&pid).unwrap().1 = false;
        }
        fn get(&self, pid: u32) -> Option<TaskNow> {
            self.0.borrow().get(&pid).map(|(r, ok)| TaskNow {
                runtime_ns: *r,
                runnable: *ok,
                cut: self.1.borrow().contains(&pid),
            })
        }
    }

    fn boosts(st: &Step) -> Vec<(u32, u64)> {
        st.actions
            .iter()
            .filter_map(|a| match a {
                Action::Boost { pid, budget_ns, .. } => Some((*pid, *budget_ns)),
                _ => None,
            })
            .collect()
    }

    fn restores(st: &Step) -> Vec<(u32, RestoreWhy)> {
        st.actions
            .iter()
            .filter_map(|a| match a {
                Action::Restore { pid, why, .. } => Some((*pid, *why)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_reset_server_is_a_new_idle_one_with_its_statistics() {
        let t = Tasks::new(&[1, 2]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        // past the zero-laxity activation (1000 - 50 - 2 ms)
        let mut starved = at(990, 0, 0);
        starved.starved_since_ns = 1;
        let st = s.step(&starved, |p| t.get(p), || vec![w(1, 100), w(2, 100)]);
        assert!(!boosts(&st).is_empty(), "serving before the reset");
        t.run(1, 60 * MS);
        let _ = s.step(&at(1001, 60, 60), |p| t.get(p), Vec::new);
        let stats = s.stats.clone();
        let kc = cfg(20).kernel_cut();
        let now = at(1500, 70, 60);
        s.reset_idle(kc, &now);
        let mut fresh = CpuServer::idle(kc, &now);
        fresh.stats = stats;
        assert_eq!(format!("{s:?}"), format!("{fresh:?}"));
    }

    #[test]
    fn water_fill_levels_run_time_per_weight() {
        // equal weights, equal run times: equal parts
        assert_eq!(
            water_fill(30, &[(0, 100), (0, 100), (0, 100)]),
            vec![10, 10, 10]
        );
        // the least served first: 4 and 6 to bring both to 10, the rest split
        assert_eq!(water_fill(10, &[(6, 100), (4, 100)]), vec![4, 6]);
        // one far ahead gets nothing
        assert_eq!(
            water_fill(10, &[(50, 100), (0, 100), (2, 100)]),
            vec![0, 6, 4]
        );
        // CFS weights of nice 0, 0, 5 (1024, 1024, 335): 21.48 / 21.48 / 7.03
        let p = water_fill(50_000, &[(0, 1024), (0, 1024), (0, 335)]);
        assert_eq!(p, vec![21_485, 21_485, 7_028]);
        assert!(p.iter().sum::<u64>() <= 50_000);
        assert_eq!(water_fill(0, &[(0, 1)]), vec![0]);
        assert!(water_fill(5, &[]).is_empty());
    }

    #[test]
    fn what_a_task_that_blocked_at_once_left_is_shared_with_the_first_to_run() {
        // Traced live (three nice-0 tasks on CPU 1 under an RR 25 hog, and
        // two kernel threads starving there too): five boosts of 10 ms;
        // the kernel threads block at once; the first nice-0 task runs its
        // 10 ms and the executor cuts it before the planner looks again.
        // The 20 ms the kernel threads left went to the other two only
        // (they got 20 each, the first 10). Levelled by weight over the
        // period, each of the three gets 16.7: the first is boosted again.
        let t = Tasks::new(&[1, 2, 7, 8, 9]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let all = || vec![w(1, 100), w(2, 100), w(7, 100), w(8, 100), w(9, 100)];
        let st = s.step(&at(948, 0, 0), |p| t.get(p), all);
        assert_eq!(boosts(&st).len(), 5);
        assert!(boosts(&st).iter().all(|&(_, b)| b == 10 * MS));
        t.block(1);
        t.block(2);
        t.run(7, 10 * MS);
        t.cut(7);
        // task 7 is runnable again at its own policy: not a new waiter here
        let st = s.step(&at(960, 10, 10), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(
            restores(&st),
            vec![
                (1, RestoreWhy::Blocked),
                (2, RestoreWhy::Blocked),
                (7, RestoreWhy::Blocked)
            ]
        );
        let third = 20 * MS / 3;
        assert_eq!(boosts(&st), vec![(7, third)]);
        let shares: Vec<(u32, u64)> = s.active().iter().map(|a| (a.pid, a.share_ns)).collect();
        assert_eq!(
            shares,
            vec![(8, 10 * MS + third), (9, 10 * MS + third), (7, third)]
        );
        // the rest of the period as boosted: 16.7 ms each, nothing more owed
        t.reboost(7);
        t.run(8, 10 * MS + third);
        t.cut(8);
        t.run(9, 10 * MS + third);
        t.cut(9);
        t.run(7, third);
        t.cut(7);
        let ran = 30 * MS + 3 * third;
        let smp = Sample {
            now_ns: 1000 * MS,
            normal_runtime_ns: ran,
            boosted_runtime_ns: ran,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(restores(&st).len(), 3);
        assert!(boosts(&st).is_empty());
        // the period's split as --stats shows it: the kernel threads blocked
        let edge = Sample {
            now_ns: 1948 * MS,
            ..smp
        };
        s.step(&edge, |p| t.get(p), Vec::new);
        assert_eq!(s.stats.periods, 1);
        assert_eq!(s.stats.last_period_tasks, 3);
        assert_eq!(s.stats.last_period_min_share_ns, 10 * MS + third);
    }

    #[test]
    fn idles_without_starvation_and_starts_when_it_begins() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        // a whole period in which normal tasks ran 600 ms: the server stops
        let st = s.step(
            &at(1000, 600, 0),
            |p| t.get(p),
            || panic!("no waiters needed"),
        );
        assert_eq!(st.next_ns, 1000 * MS + IDLE_RECHECK_NS);
        let st = s.step(&at(1500, 900, 0), |p| t.get(p), || panic!("idle"));
        assert!(st.actions.is_empty());
        // starvation began at 1700 ms: the first period runs 1700..2700 ms
        let smp = Sample {
            starved_since_ns: 1700 * MS,
            ..at(1710, 900, 0)
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("not yet"));
        assert_eq!(s.period_end_ns(), 2700 * MS);
        assert_eq!(st.next_ns, 2648 * MS, "zero laxity minus the 2 ms margin");
    }

    #[test]
    fn restarts_the_period_when_starvation_begins_with_nothing_owed() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        // normal tasks ran 300 ms on their own, then a hog came at 400 ms
        let smp = Sample {
            starved_since_ns: 400 * MS,
            ..at(410, 300, 0)
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("not yet"));
        assert_eq!(s.period_end_ns(), 1400 * MS);
        assert_eq!(st.next_ns, 1400 * MS - 52 * MS);
        // the same when a task another CPU's server boosted ran here (the
        // CPU's boosted run time moved, this server boosted nothing)
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let smp = Sample {
            starved_since_ns: 400 * MS,
            ..at(410, 300, 1)
        };
        s.step(&smp, |p| t.get(p), || panic!("not yet"));
        assert_eq!(s.period_end_ns(), 1400 * MS);
        // after a boost of its own in the period, no restart
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 50 * MS);
        let st = s.step(&at(998, 50, 50), |p| t.get(p), Vec::new);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Exhausted)]);
        let smp = Sample {
            starved_since_ns: 999 * MS,
            ..at(999, 50, 50)
        };
        s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(s.period_end_ns(), 1948 * MS, "the activation's period");
        // a boost that failed (dropped) does not count as one
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(8, 100)]);
        s.drop_boost(8);
        let smp = Sample {
            starved_since_ns: 980 * MS,
            ..at(990, 50, 0)
        };
        s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(s.period_end_ns(), 1980 * MS);
        // with something owed, no restart: the period stays
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let smp = Sample {
            starved_since_ns: 400 * MS,
            ..at(410, 10, 0)
        };
        s.step(&smp, |p| t.get(p), || panic!("not yet"));
        assert_eq!(s.period_end_ns(), 1000 * MS);
    }

    #[test]
    fn the_last_microseconds_of_a_share_end_it() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        // IRQ time is not charged to the task: at the predicted end it is
        // 30 us short; that ends it rather than waking again in 30 us.
        t.run(7, 50 * MS - 30_000);
        let smp = Sample {
            now_ns: 998 * MS,
            normal_runtime_ns: 50 * MS - 30_000,
            boosted_runtime_ns: 50 * MS - 30_000,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), Vec::new);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Exhausted)]);
        // 1 ms short: one more wake-up, not earlier than the rest needs
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let t = Tasks::new(&[7]);
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 49 * MS);
        let st = s.step(&at(998, 49, 49), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 999 * MS);
    }

    #[test]
    fn margin() {
        assert_eq!(activation_margin_ns(50 * MS, 1000 * MS), 17_500_000);
        assert_eq!(activation_margin_ns(20_000, 1000 * MS), 5_005_000);
        assert_eq!(activation_margin_ns(990 * MS, 1000 * MS), 10 * MS);
        assert_eq!(activation_margin_ns(1000 * MS, 1000 * MS), 0);
        // kernel-cut mode: 3 ms more, still within what the period leaves
        let k = cfg_ns(20_000).kernel_cut();
        assert!(k.kernel_cut);
        assert_eq!(k.margin_ns, 5 * MS);
        assert_eq!(cfg(998).kernel_cut().margin_ns, 2 * MS);
    }

    #[test]
    fn defers_while_normal_tasks_get_their_share() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        // 60 ms delivered on their own by t=500: nothing owed, nothing done.
        let st = s.step(
            &at(500, 60, 0),
            |p| t.get(p),
            || panic!("waiters not needed"),
        );
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 1000 * MS, "sleeps to the period end");
    }

    #[test]
    fn activates_at_zero_laxity_minus_margin() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let st = s.step(&at(100, 10, 0), |p| t.get(p), || panic!("not yet"));
        // owed 40 ms: activate at 1000 - 40 - 2 = 958 ms
        assert_eq!(st.next_ns, 958 * MS);
        assert!(st.actions.is_empty());
        // the activation opens a new period there with the whole runtime
        // (the kernel's replenish_dl_entity() for a deferred server)
        let st = s.step(&at(958, 10, 0), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(
            st.actions.to_vec(),
            vec![Action::Boost {
                pid: 7,
                budget_ns: 50 * MS,
                deadline_ns: 1000 * MS
            }]
        );
        assert_eq!(s.period_end_ns(), 1958 * MS);
        assert_eq!(st.next_ns, 1008 * MS);
    }

    #[test]
    fn no_window_of_one_period_gets_two_runtimes() {
        // A hog from 0: activated at 948 ms, the task runs its 50 ms; the
        // next period begins 1 s after the activation and is served from
        // its start, so the two 50 ms services come 1 s apart (on the old
        // grid, 948-998 and 1000-1050 ms: 100 ms inside 0.1 s).
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &starving(0, 0, 0));
        let st = s.step(&starving(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
        t.run(7, 50 * MS);
        let st = s.step(&starving(998, 50, 50), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Exhausted)]);
        let st = s.step(&starving(1000, 50, 50), |p| t.get(p), || vec![w(7, 100)]);
        assert!(st.actions.is_empty(), "nothing more before 1948 ms");
        assert_eq!(st.next_ns, 1948 * MS);
        t.0.borrow_mut().insert(7, (0, true));
        let st = s.step(&starving(1948, 50, 50), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
    }

    #[test]
    fn throttles_when_the_share_is_used_and_measures_overrun() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        // woken 30 ms later: 30 ms used, 20 to go
        t.run(7, 30 * MS);
        let st = s.step(&at(978, 30, 30), |p| t.get(p), || vec![w(7, 100)]);
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 998 * MS);
        // woken late: 50.3 ms used -> restored, 0.3 ms overrun
        t.run(7, 20 * MS + 300_000);
        let smp = Sample {
            now_ns: 998 * MS + 300_000,
            normal_runtime_ns: 50 * MS + 300_000,
            boosted_runtime_ns: 50 * MS + 300_000,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Exhausted)]);
        assert_eq!(s.stats.max_overrun_ns, 300_000);
        assert_eq!(s.stats.overrun.total(), 1);
        assert!(s.active().is_empty());
        assert_eq!(st.next_ns, 1948 * MS, "the end of the activation's period");
    }

    #[test]
    fn a_restore_made_late_books_the_run_until_it() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 50 * MS + 300_000);
        let smp = Sample {
            now_ns: 998 * MS + 300_000,
            normal_runtime_ns: 50 * MS + 300_000,
            boosted_runtime_ns: 50 * MS + 300_000,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        let booked = match st.actions.as_slice() {
            [Action::Restore {
                pid: 7,
                why: RestoreWhy::Exhausted,
                over_ns,
                ran_ns,
            }] => {
                assert_eq!(*ran_ns, 50 * MS + 300_000, "its slot's run time then");
                *over_ns
            }
            a => panic!("{a:?}"),
        };
        assert_eq!(booked, 300_000);
        // the executor's restore came 10 ms later: one overrun of 10.3 ms
        s.overran_more(booked, 10 * MS);
        assert_eq!(s.stats.max_overrun_ns, 10 * MS + 300_000);
        assert_eq!(s.stats.overrun.total(), 1);
        let mut one = Hist::default();
        one.record(10 * MS + 300_000);
        assert_eq!(s.stats.overrun, one, "the booked 0.3 ms is replaced");
        // nothing more: nothing changes
        let before = s.stats.clone();
        s.overran_more(booked, 0);
        assert_eq!(s.stats, before);
    }

    #[test]
    fn a_boost_cut_by_the_executor_counts_its_overrun_or_hands_on_the_rest() {
        // Cut at its limit after 50.2 ms of a 50 ms share: exhausted, with
        // its overrun measured (not as blocked, which has no overrun stat).
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 50 * MS + 200_000);
        t.cut(7);
        let smp = Sample {
            now_ns: 999 * MS,
            normal_runtime_ns: 50 * MS + 200_000,
            boosted_runtime_ns: 50 * MS + 200_000,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Exhausted)]);
        assert_eq!(s.stats.max_overrun_ns, 200_000);
        assert_eq!(s.stats.handed_over, 0);
        // Cut at a limit below its share (the share grew after the cut): the
        // rest is owed and shared at once with a new waiter by weight over
        // the period, 25 ms each: 8 boosted for 25, 7 again for 5 more.
        let t = Tasks::new(&[7, 8]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 20 * MS);
        t.cut(7);
        let st = s.step(&at(970, 20, 20), |p| t.get(p), || vec![w(8, 100)]);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Blocked)]);
        assert_eq!(boosts(&st), vec![(8, 25 * MS), (7, 5 * MS)]);
    }

    #[test]
    fn replenishes_at_the_period_edge() {
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        // the activation's period runs 948..1948 ms
        t.run(7, 40 * MS); // preempted by a higher RT task: only 40 of 50 used
        let st = s.step(&starving(1948, 40, 40), |p| t.get(p), Vec::new);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::PeriodEnd)]);
        assert_eq!(s.stats.periods, 1);
        assert_eq!(s.stats.last_period_delivered_ns, 40 * MS);
        assert_eq!(s.stats.last_period_boosted_ns, 40 * MS);
        assert_eq!(s.stats.max_period_boosted_ns, 40 * MS);
        assert_eq!(s.owed_ns(&at(1948, 40, 40)), 50 * MS);
        // it had to boost: the new period is served from its start (the
        // kernel's dl_defer_running), looking again after the margin
        assert_eq!(
            st.next_ns,
            1950 * MS,
            "served from the start of the new period"
        );
        let st = s.step(&at(1950, 40, 40), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
    }

    /// A 50 ms / 1 s server: task 7 starved until the zero laxity (948 ms),
    /// was boosted there (its activation's period runs 948..1948 ms) and ran
    /// the whole 50 ms budget, and the step at that period's edge has run.
    fn boosted_through_period_one(t: &Tasks) -> CpuServer {
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        t.run(7, 50 * MS);
        s.step(&at(998, 50, 50), |p| t.get(p), Vec::new);
        s.step(&starving(1948, 50, 50), |p| t.get(p), Vec::new);
        s
    }

    #[test]
    fn deferred_again_after_a_period_without_a_boost() {
        let t = Tasks::new(&[7]);
        let mut s = boosted_through_period_one(&t);
        // period 2: the task ran on its own (the hog left): no boost
        let st = s.step(&at(1950, 50, 50), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        let st = s.step(&at(2048, 100, 50), |p| t.get(p), || panic!("owes nothing"));
        assert!(st.actions.is_empty());
        // period 3 (something starves again, so the server goes on) starts
        // deferred: nothing before its zero laxity
        let st = s.step(
            &starving(2948, 100, 50),
            |p| t.get(p),
            || panic!("deferred"),
        );
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 3896 * MS, "zero laxity minus the margin");
    }

    #[test]
    fn deferred_again_when_normal_tasks_got_the_runtime_on_their_own() {
        // a boost in period 1, then an RT task that starves them only
        // briefly: in period 2 normal tasks run 60 ms on their own besides
        // a boost of 5 ms; period 3 is deferred again
        let t = Tasks::new(&[7]);
        let mut s = boosted_through_period_one(&t);
        t.0.borrow_mut().insert(7, (0, true));
        let st = s.step(&at(1958, 50, 50), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
        t.run(7, 5 * MS);
        t.block(7);
        s.step(&at(1963, 55, 55), |p| t.get(p), Vec::new);
        s.step(&at(2448, 115, 55), |p| t.get(p), || panic!("owes nothing"));
        let st = s.step(
            &starving(2948, 115, 55),
            |p| t.get(p),
            || panic!("deferred"),
        );
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 3896 * MS);
    }

    #[test]
    fn a_sleeper_is_served_on_each_wake_up_once_activated() {
        // 2 ms runs between 20 ms sleeps under an RT hog: after the first
        // activation every wake-up is boosted at once, also in the next
        // period, until the budget is used
        let t = Tasks::new(&[7]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let st = s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
        t.run(7, 2 * MS);
        t.block(7);
        let st = s.step(&at(950, 2, 2), |p| t.get(p), Vec::new);
        assert_eq!(restores(&st), vec![(7, RestoreWhy::Blocked)]);
        // awake again 20 ms later: boosted at once (its sleep put the
        // period past the zero laxity of what is owed)
        t.0.borrow_mut().insert(7, (0, true));
        let st = s.step(&at(970, 2, 2), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 48 * MS)]);
        t.run(7, 2 * MS);
        t.block(7);
        s.step(&at(972, 4, 4), |p| t.get(p), Vec::new);
        s.step(&starving(1948, 4, 4), |p| t.get(p), Vec::new);
        // the next period, 10 ms in: at once too, with the whole runtime
        // (deferred, it would wait until 2896 ms: the kernel's
        // dl_defer_running state, not a new zero-laxity wait)
        t.0.borrow_mut().insert(7, (0, true));
        let st = s.step(&at(1958, 4, 4), |p| t.get(p), || vec![w(7, 100)]);
        assert_eq!(boosts(&st), vec![(7, 50 * MS)]);
    }

    #[test]
    fn a_short_starvation_on_an_idle_cpu_costs_two_periods_of_steps() {
        // a 1 ms RT run at 100 ms starts the server on a CPU whose normal
        // tasks use 2 ms per period: they never get the runtime by
        // themselves, and nothing starves after that run
        let t = Tasks::new(&[]);
        let mut s = CpuServer::idle(cfg(50), &at(0, 0, 0));
        let open = Sample {
            starved_since_ns: 100 * MS,
            ..at(100, 0, 0)
        };
        let st = s.step(&open, |p| t.get(p), Vec::new);
        assert!(s.started());
        assert_eq!(s.period_end_ns(), 1100 * MS);
        // owed 50 ms: activation at 1100 - 50 - 2 = 1048 ms
        assert_eq!(st.next_ns, 1048 * MS);
        let quiet = |now_ms: u64, normal_ms: u64| Sample {
            starved_ns: MS,
            ..at(now_ms, normal_ms, 0)
        };
        // a starvation before the activation changes nothing planned
        assert!(!s.wants_starve_kick(&quiet(101, 0)));
        // at the activation nobody starves, but the CPU starved since the
        // last look: one more look after the margin, no kick meanwhile
        let st = s.step(&quiet(1049, 1), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 1051 * MS);
        assert!(!s.wants_starve_kick(&quiet(1049, 1)));
        // quiet since: no polling until the period's end, the BPF side's
        // kick wakes the server if a hog comes
        let st = s.step(&quiet(1051, 1), |p| t.get(p), Vec::new);
        assert_eq!(st.next_ns, 1100 * MS);
        assert!(s.wants_starve_kick(&quiet(1051, 1)));
        // the period that ended had that starvation: serving goes on
        let st = s.step(&quiet(1100, 2), |p| t.get(p), Vec::new);
        assert!(s.started());
        assert_eq!(s.stats.last_period_starved_ns, MS);
        assert_eq!(st.next_ns, 2048 * MS);
        let st = s.step(&quiet(2050, 3), |p| t.get(p), Vec::new);
        assert_eq!(st.next_ns, 2100 * MS);
        // a period without any starvation: stopped, though its normal tasks
        // got 2 ms of the 50
        let st = s.step(&quiet(2100, 4), |p| t.get(p), Vec::new);
        assert!(!s.started());
        assert_eq!(s.stats.last_period_delivered_ns, 2 * MS);
        assert_eq!(st.next_ns, 2100 * MS + IDLE_RECHECK_NS);
    }

    #[test]
    fn starvations_between_looks_are_polled_once_per_margin_without_kicks() {
        // past the activation, an RT task preempts normal tasks that can
        // run elsewhere (no waiters here) every millisecond: one look per
        // margin, and no kick armed, until a margin passes quietly
        let t = Tasks::new(&[]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let mut starved_us = 0;
        for now in [960, 962, 964] {
            starved_us += 20 * 2;
            let smp = Sample {
                starved_ns: starved_us * 1000,
                ..at(now, 0, 0)
            };
            let st = s.step(&smp, |p| t.get(p), Vec::new);
            assert_eq!(st.next_ns, (now + 2) * MS);
            assert!(!s.wants_starve_kick(&smp));
        }
        let smp = Sample {
            starved_ns: starved_us * 1000,
            ..at(966, 0, 0)
        };
        let st = s.step(&smp, |p| t.get(p), Vec::new);
        assert_eq!(st.next_ns, 1000 * MS);
        assert!(s.wants_starve_kick(&smp));
    }

    #[test]
    fn a_starvation_without_waiters_past_the_activation_is_looked_at_again() {
        // starving tasks that can run on another CPU are not waiters here:
        // with the starvation still open, the server looks again after the
        // margin (a kick comes only when a starvation opens)
        let t = Tasks::new(&[]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let st = s.step(&starving(960, 0, 0), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 962 * MS);
        // the same moment with no starvation open: until the period's end
        let st = s.step(&at(960, 0, 0), |p| t.get(p), Vec::new);
        assert_eq!(st.next_ns, 1000 * MS);
    }

    #[test]
    fn skips_several_periods_after_a_long_sleep() {
        let t = Tasks::new(&[]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(3500, 0, 0), |p| t.get(p), Vec::new);
        assert_eq!(s.stats.periods, 3);
        assert_eq!(s.period_end_ns(), 4000 * MS);
    }

    #[test]
    fn several_waiters_share_by_weight() {
        let t = Tasks::new(&[1, 2]);
        let mut s = CpuServer::new(cfg(60), &at(0, 0, 0));
        let ws = || vec![w(1, 100), w(2, 200)];
        let st = s.step(&at(938, 0, 0), |p| t.get(p), ws);
        // 60 ms owed, weights 1:2, both boosted at once
        assert_eq!(boosts(&st), vec![(1, 20 * MS), (2, 40 * MS)]);
        assert_eq!(
            st.next_ns,
            958 * MS,
            "wakes when the smaller share could be used"
        );
        // 1 ran its 20 ms (FIFO order): restored; 2 keeps 40
        t.run(1, 20 * MS);
        let st = s.step(&at(958, 20, 20), |p| t.get(p), ws);
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Exhausted)]);
        assert_eq!(s.active().len(), 1);
        assert_eq!(s.active()[0].share_ns, 40 * MS);
        assert_eq!(st.next_ns, 998 * MS);
    }

    #[test]
    fn a_task_blocking_mid_boost_hands_over_the_rest() {
        let t = Tasks::new(&[1, 2]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(1, 100), w(2, 100)]); // 25 ms each
                                                                             // 1 ran 5 ms and blocked; 2 ran 20 ms meanwhile
        t.run(1, 5 * MS);
        t.block(1);
        t.run(2, 20 * MS);
        let st = s.step(&at(973, 25, 25), |p| t.get(p), || vec![w(2, 100)]);
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Blocked)]);
        // 25 ms still owed, all of it now 2's: share 20 used + 25
        assert_eq!(
            s.active(),
            &[ActiveBoost {
                pid: 2,
                weight: 100,
                base_ns: 0,
                share_ns: 45 * MS
            }]
        );
        assert_eq!(s.stats.handed_over, 1);
    }

    #[test]
    fn a_task_that_exits_is_dropped() {
        let t = Tasks::new(&[1]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        s.step(&at(948, 0, 0), |p| t.get(p), || vec![w(1, 100)]);
        let st = s.step(&at(950, 2, 2), |_| None, Vec::new);
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Blocked)]);
        assert!(s.active().is_empty());
    }

    #[test]
    fn total_boost_per_period_never_exceeds_runtime() {
        // 50 tasks starve on one CPU; run them FIFO as the kernel would, with
        // the server woken 0.2 ms late every time: per period, the boosted
        // total stays within the runtime plus one wake-up latency per boost,
        // and within four periods every task has been served.
        let pids: Vec<u32> = (1..=50).collect();
        let t = Tasks::new(&pids);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let ws = || pids.iter().map(|p| w(*p, 100)).collect::<Vec<_>>();
        let mut now = 0;
        let mut boosted_total = 0u64;
        let mut per_period = [0u64; 4];
        let mut active: Vec<u32> = Vec::new();
        let mut served = std::collections::HashSet::new();
        while now < 4000 * MS {
            let smp = Sample {
                now_ns: now,
                normal_runtime_ns: boosted_total,
                boosted_runtime_ns: boosted_total,
                boost_since_ns: 0,
                starved_since_ns: 1,
                starved_ns: 0,
            };
            let st = s.step(&smp, |p| t.get(p), ws);
            for a in &st.actions {
                match a {
                    Action::Boost { pid, .. } => {
                        active.push(*pid);
                        served.insert(*pid);
                        t.0.borrow_mut().get_mut(pid).unwrap().0 = 0; // counts from the boost
                    }
                    Action::Restore { pid, .. } => active.retain(|p| p != pid),
                }
            }
            let next = (st.next_ns.max(now + 1) + 200_000).min(4000 * MS);
            // the head of the FIFO runs until the server wakes
            if let Some(head) = active.first() {
                t.run(*head, next - now);
                boosted_total += next - now;
                per_period[(now / (1000 * MS)) as usize] += next - now;
            }
            now = next;
        }
        for (i, b) in per_period.iter().enumerate() {
            assert!(
                *b <= 50 * MS + MAX_BOOSTED as u64 * 2 * 200_000,
                "period {i}: boosted {b}"
            );
            // less by what the previous period overran (debt)
            assert!(*b >= 45 * MS, "period {i}: boosted {b}");
        }
        // the CBS balance: delivered = periods x runtime + what is still owed back
        let total: u64 = per_period.iter().sum();
        assert!(
            total.abs_diff(4 * 50 * MS + s.debt_ns()) <= 2 * MS,
            "boosted {total} in 4 periods, debt {}",
            s.debt_ns()
        );
        assert_eq!(served.len(), 50, "every task served within 4 periods");
    }

    #[test]
    fn no_waiters_no_boost() {
        let t = Tasks::new(&[]);
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let st = s.step(&at(960, 0, 0), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        assert!(st.next_ns > 960 * MS && st.next_ns <= 1000 * MS);
    }

    #[test]
    fn a_tiny_budget_boosts_one_task_per_period_in_turn() {
        let t = Tasks::new(&[1, 2, 3]);
        let c = cfg_ns(20_000);
        let ws = || vec![w(1, 100), w(2, 100), w(3, 100)];
        let mut s = CpuServer::new(c, &at(0, 0, 0));
        let mut served = Vec::new();
        // activated at the zero laxity of the first period, 997.98 ms; each
        // next period starts 1 s later and is served from its start
        let first = 1000 * MS - 20_000 - 2 * MS;
        for p in 0..3u64 {
            let now = first + p * 1000 * MS;
            let smp = Sample {
                now_ns: now,
                normal_runtime_ns: p * 20_000,
                boosted_runtime_ns: p * 20_000,
                starved_since_ns: 1,
                ..Default::default()
            };
            let st = s.step(&smp, |q| t.get(q), ws);
            let b = boosts(&st);
            assert_eq!(b.len(), 1, "period {p}: one boost, not three of 7 us");
            assert_eq!(b[0].1, 20_000, "the whole budget");
            served.push(b[0].0);
            t.run(b[0].0, 20_000);
            let smp = Sample {
                now_ns: now + 20_000,
                normal_runtime_ns: (p + 1) * 20_000,
                boosted_runtime_ns: (p + 1) * 20_000,
                starved_since_ns: 1,
                ..Default::default()
            };
            let st = s.step(&smp, |q| t.get(q), ws);
            assert_eq!(restores(&st), vec![(b[0].0, RestoreWhy::Exhausted)]);
            // the next period begins
            let smp = Sample {
                now_ns: first + (p + 1) * 1000 * MS,
                normal_runtime_ns: (p + 1) * 20_000,
                boosted_runtime_ns: (p + 1) * 20_000,
                starved_since_ns: 1,
                ..Default::default()
            };
            s.step(&smp, |q| t.get(q), Vec::new);
        }
        served.sort();
        assert_eq!(
            served,
            vec![1, 2, 3],
            "each waiter served once in three periods"
        );
    }

    #[test]
    fn a_boost_never_made_keeps_the_tasks_turn() {
        let c = cfg_ns(20_000);
        let ws = || vec![w(1, 100), w(2, 100), w(3, 100)];
        let first = 1000 * MS - 20_000 - 2 * MS;
        let smp = |now: u64, ran: u64| Sample {
            now_ns: now,
            normal_runtime_ns: ran,
            boosted_runtime_ns: ran,
            starved_since_ns: 1,
            ..Default::default()
        };
        for missed in [false, true] {
            let t = Tasks::new(&[1, 2, 3]);
            let mut s = CpuServer::new(c, &at(0, 0, 0));
            let b = boosts(&s.step(&smp(first, 0), |q| t.get(q), ws));
            assert_eq!(b.len(), 1, "one boost of the whole budget");
            let pid = b[0].0;
            if missed {
                // withdrawn before it was made: the task never ran; the
                // next step, with the budget still owed, boosts it again
                s.boost_missed(pid);
                let b = boosts(&s.step(&smp(first + MS, 0), |q| t.get(q), ws));
                assert_eq!(b.len(), 1, "the budget still owed: a boost");
                assert_eq!(b[0].0, pid, "its turn again, not another task's");
                continue;
            }
            t.run(pid, 20_000);
            let st = s.step(&smp(first + 20_000, 20_000), |q| t.get(q), ws);
            assert_eq!(restores(&st), vec![(pid, RestoreWhy::Exhausted)]);
            // the next period: one that had its turn waits for the others'
            let next = first + 1000 * MS;
            s.step(&smp(next, 20_000), |q| t.get(q), Vec::new);
            let b = boosts(&s.step(&smp(next, 20_000), |q| t.get(q), ws));
            assert_eq!(b.len(), 1, "one boost in the next period");
            assert_ne!(b[0].0, pid, "served last period: another task's turn");
        }
    }

    fn starving(now_ms: u64, normal_ms: u64, boosted_ms: u64) -> Sample {
        Sample {
            starved_since_ns: 1,
            ..at(now_ms, normal_ms, boosted_ms)
        }
    }

    #[test]
    fn an_overrun_is_paid_back_by_the_next_periods() {
        let t = Tasks::new(&[1]);
        let mut s = CpuServer::new(cfg(10), &starving(0, 0, 0));
        let st = s.step(&starving(988, 0, 0), |p| t.get(p), || vec![w(1, 100)]);
        assert_eq!(boosts(&st), vec![(1, 10 * MS)]);
        // the kernel cut it 15 ms late (its period runs 988..1988 ms)
        t.run(1, 25 * MS);
        let st = s.step(&starving(1003, 25, 25), |p| t.get(p), Vec::new);
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Exhausted)]);
        assert_eq!(s.stats.max_overrun_ns, 15 * MS);
        s.step(&starving(1988, 25, 25), |p| t.get(p), Vec::new);
        assert_eq!(s.debt_ns(), 15 * MS);
        // the next period owes nothing: no boost (served from its start)
        assert_eq!(s.owed_ns(&starving(1988, 25, 25)), 0);
        let st = s.step(
            &starving(1990, 25, 25),
            |p| t.get(p),
            || panic!("nothing owed"),
        );
        assert!(st.actions.is_empty());
        // the one after owes what is left: 10 - (15 - 10) = 5 ms, deferred
        // again (no boost in the last period) to its zero laxity, where a
        // new period opens
        let st = s.step(&starving(2988, 25, 25), |p| t.get(p), Vec::new);
        assert!(st.actions.is_empty());
        assert_eq!(s.debt_ns(), 5 * MS);
        assert_eq!(st.next_ns, 3981 * MS);
        let st = s.step(&starving(3981, 25, 25), |p| t.get(p), || vec![w(1, 100)]);
        assert_eq!(boosts(&st), vec![(1, 5 * MS)]);
        assert_eq!(s.period_end_ns(), 4981 * MS);
        t.0.borrow_mut().get_mut(&1).unwrap().0 = 0; // counts from the boost
        t.run(1, 5 * MS);
        s.step(&starving(4981, 30, 30), |p| t.get(p), Vec::new);
        assert_eq!(
            s.debt_ns(),
            0,
            "paid back: 30 ms delivered in 3 periods of 10"
        );
    }

    #[test]
    fn a_server_in_debt_keeps_its_period_and_wants_no_starvation_kicks() {
        let t = Tasks::new(&[1]);
        let mut s = CpuServer::new(cfg(10), &starving(0, 0, 0));
        s.step(&starving(988, 0, 0), |p| t.get(p), || vec![w(1, 100)]);
        t.run(1, 25 * MS);
        s.step(&starving(1003, 25, 25), |p| t.get(p), Vec::new);
        s.step(&starving(1988, 25, 25), |p| t.get(p), Vec::new);
        assert_eq!(s.debt_ns(), 15 * MS);
        // a new starvation interval in a period that owes nothing because of
        // the debt: not "normal tasks got their runtime", so no restart (a
        // restart at every new interval woke the server thread every 1-2 ms)
        let smp = Sample {
            starved_since_ns: 2488 * MS,
            ..at(2488, 25, 25)
        };
        assert!(!s.wants_starve_kick(&smp));
        s.step(&smp, |p| t.get(p), || panic!("nothing owed"));
        assert_eq!(s.period_end_ns(), 2988 * MS);
    }

    #[test]
    fn run_time_of_its_own_is_no_debt_and_an_idle_server_forgets_debts() {
        let t = Tasks::new(&[1]);
        let mut s = CpuServer::new(cfg(10), &starving(0, 0, 0));
        // 300 ms unboosted (the hog left room): nothing is owed, no debt
        s.step(&starving(1000, 300, 0), |p| t.get(p), Vec::new);
        assert_eq!(s.debt_ns(), 0);
        s.step(&starving(1988, 300, 0), |p| t.get(p), || vec![w(1, 100)]);
        t.run(1, 12 * MS);
        s.step(&starving(2000, 312, 12), |p| t.get(p), Vec::new);
        s.step(&starving(2988, 312, 12), |p| t.get(p), Vec::new);
        assert_eq!(s.debt_ns(), 2 * MS);
        // a clean boost, then normal tasks run 17 ms by themselves: no debt
        let t2 = Tasks::new(&[2]);
        let mut s2 = CpuServer::new(cfg(50), &starving(0, 0, 0));
        s2.step(&starving(948, 0, 0), |p| t2.get(p), || vec![w(2, 100)]);
        t2.run(2, 50 * MS);
        s2.step(&starving(1948, 67, 50), |p| t2.get(p), Vec::new);
        assert_eq!(s2.debt_ns(), 0);
        // a period of plenty with nothing starving: idle, debt forgotten
        s.step(&at(3988, 400, 12), |p| t.get(p), Vec::new);
        assert!(!s.started());
        assert_eq!(s.debt_ns(), 0);
    }

    #[test]
    fn kernel_cut_boosts_one_task_at_a_time_and_hands_on_what_a_blocker_left() {
        let t = Tasks::new(&[1, 2]);
        let c = ServerConfig {
            kernel_cut: true,
            ..cfg(50)
        };
        let mut s = CpuServer::new(c, &starving(0, 0, 0));
        let st = s.step(
            &starving(948, 0, 0),
            |p| t.get(p),
            || vec![w(1, 100), w(2, 100)],
        );
        // all that is owed to one task (the kernel enforces it per task)
        assert_eq!(boosts(&st), vec![(1, 50 * MS)]);
        t.run(1, 5 * MS);
        t.block(1);
        let st = s.step(
            &starving(953, 5, 5),
            |p| t.get(p),
            || vec![w(1, 100), w(2, 100)],
        );
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Blocked)]);
        assert_eq!(boosts(&st), vec![(2, 45 * MS)]);
        // a 20 us share is looked at again after 1 ms, not 50 us
        let c = ServerConfig {
            kernel_cut: true,
            ..cfg_ns(20_000)
        };
        let mut s = CpuServer::new(c, &starving(0, 0, 0));
        let now = 1000 * MS - 20_000 - 2 * MS;
        let smp = Sample {
            now_ns: now,
            starved_since_ns: 1,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || vec![w(2, 100)]);
        assert_eq!(boosts(&st), vec![(2, 20_000)]);
        assert_eq!(st.next_ns, now + KERNEL_CUT_MIN_STEP_NS);
    }

    #[test]
    fn kernel_cut_defers_every_period() {
        // each wake-up served at once would be a SCHED_DEADLINE switch of a
        // task that sleeps again (see `running`): deferred in each period
        let t = Tasks::new(&[1]);
        let c = ServerConfig {
            kernel_cut: true,
            ..cfg(50)
        };
        let mut s = CpuServer::new(c, &starving(0, 0, 0));
        let st = s.step(&starving(948, 0, 0), |p| t.get(p), || vec![w(1, 100)]);
        assert_eq!(boosts(&st), vec![(1, 50 * MS)]);
        t.run(1, 50 * MS);
        s.step(&starving(1000, 50, 50), |p| t.get(p), Vec::new);
        t.0.borrow_mut().insert(1, (0, true));
        let st = s.step(&starving(1010, 50, 50), |p| t.get(p), || panic!("deferred"));
        assert!(st.actions.is_empty());
        assert_eq!(st.next_ns, 1948 * MS);
    }

    #[test]
    fn shares_stay_above_the_minimum() {
        let t = Tasks::new(&[1, 2, 3, 4]);
        let c = cfg_ns(600_000);
        let mut s = CpuServer::new(c, &at(0, 0, 0));
        let st = s.step(
            &at(998, 0, 0),
            |p| t.get(p),
            || vec![w(1, 100), w(2, 100), w(3, 100), w(4, 100)],
        );
        // 600 us owed: two shares of 300 us, not four of 150 us
        assert_eq!(boosts(&st), vec![(1, 300_000), (2, 300_000)]);
    }

    #[test]
    fn more_starving_tasks_than_slots_are_counted() {
        let pids: Vec<u32> = (1..=MAX_BOOSTED as u32 + 4).collect();
        let t = Tasks::new(&pids);
        let ws = || pids.iter().map(|&p| w(p, 100)).collect::<Vec<_>>();
        // 60 ms owed: room for 240 shares of MIN_SHARE_NS, slots for 16
        let mut s = CpuServer::new(cfg(60), &at(0, 0, 0));
        let st = s.step(&at(938, 0, 0), |p| t.get(p), ws);
        assert_eq!(boosts(&st).len(), MAX_BOOSTED);
        // 20 tasks need 4 turns a period to run within TURN_WINDOW_NS:
        // the slots once, the budget all theirs (60 / 16 ms)
        assert!(boosts(&st).iter().all(|&(_, ns)| ns == 3_750_000));
        assert!(!s.taking_turns());
        assert_eq!(s.stats.slots_full, 1);
        // as many tasks as slots: nobody left out, nothing counted
        let t = Tasks::new(&pids[..MAX_BOOSTED]);
        let mut s = CpuServer::new(cfg(60), &at(0, 0, 0));
        let st = s.step(
            &at(938, 0, 0),
            |p| t.get(p),
            || {
                pids[..MAX_BOOSTED]
                    .iter()
                    .map(|&p| w(p, 100))
                    .collect::<Vec<_>>()
            },
        );
        assert_eq!(boosts(&st).len(), MAX_BOOSTED);
        assert_eq!(s.stats.slots_full, 0);
        // a budget that has shares for fewer tasks than slots leaves tasks
        // out by the budget, not by the slots
        let t = Tasks::new(&pids);
        let mut s = CpuServer::new(cfg_ns(4 * MIN_SHARE_NS), &at(0, 0, 0));
        let st = s.step(&at(998, 0, 0), |p| t.get(p), ws);
        assert_eq!(boosts(&st).len(), 4);
        assert_eq!(s.stats.slots_full, 0);
    }

    #[test]
    fn more_starving_tasks_than_slots_take_turns_in_a_period() {
        let pids: Vec<u32> = (1..=200).collect();
        let t = Tasks::new(&pids);
        let ws = || pids.iter().map(|&p| w(p, 100)).collect::<Vec<_>>();
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let mut smp = at(948, 0, 0);
        let mut served: Vec<u32> = Vec::new();
        let mut waves = Vec::new();
        for _ in 0..4 {
            let st = s.step(&smp, |p| t.get(p), ws);
            let b = boosts(&st);
            if b.is_empty() {
                break;
            }
            // 200 tasks: 40 turns a period (each within 5 s), of 50 ms:
            // 1.25 ms each, whichever turn
            assert!(b.iter().all(|&(_, ns)| ns == 1_250_000), "{b:?}");
            waves.push(b.len());
            assert!(s.taking_turns());
            for (pid, ns) in b {
                served.push(pid);
                t.run(pid, ns);
                t.cut(pid);
                smp.normal_runtime_ns += ns;
                smp.boosted_runtime_ns += ns;
                smp.now_ns += ns;
            }
        }
        // three turns of the 16 slots serve 40 in the period, each once
        assert_eq!(waves, vec![MAX_BOOSTED, MAX_BOOSTED, 8]);
        served.sort_unstable();
        assert_eq!(served, pids[..40]);
        assert!(s.stats.slots_full >= 2);
        // the budget is used: the next step boosts nobody before the edge
        let st = s.step(&smp, |p| t.get(p), ws);
        assert!(boosts(&st).is_empty());
        assert_eq!(s.owed_ns(&smp), 0);
    }

    #[test]
    fn a_turn_of_microseconds_is_not_made() {
        let pids: Vec<u32> = (1..=200).collect();
        let t = Tasks::new(&pids);
        let ws = || pids.iter().map(|&p| w(p, 100)).collect::<Vec<_>>();
        let mut s = CpuServer::new(cfg(50), &at(0, 0, 0));
        let mut smp = at(948, 0, 0);
        // 40 turns of 1.25 ms: 16 now, 24 later
        let st = s.step(&smp, |p| t.get(p), ws);
        assert_eq!(boosts(&st).len(), MAX_BOOSTED);
        assert!(boosts(&st).iter().all(|&(_, ns)| ns == 1_250_000));
        // the first overruns its share by 29.9 ms before its cut: 18.85
        // ms owed, 18.75 of it the other 15 boosts' shares
        t.run(1, 31_150_000);
        t.cut(1);
        smp.now_ns += 31_150_000;
        smp.normal_runtime_ns += 31_150_000;
        smp.boosted_runtime_ns += 31_150_000;
        let st = s.step(&smp, |p| t.get(p), ws);
        // the 0.1 ms left would give the next 3 turns 33 us each: none
        assert_eq!(boosts(&st), vec![]);
        assert_eq!(restores(&st), vec![(1, RestoreWhy::Exhausted)]);
        assert_eq!(s.active().len(), MAX_BOOSTED - 1);
    }

    #[test]
    fn unsettled_slots_hold_back_boosts() {
        let pids: Vec<u32> = (1..=20).collect();
        let t = Tasks::new(&pids);
        let ws = || pids.iter().map(|&p| w(p, 100)).collect::<Vec<_>>();
        let mut s = CpuServer::new(cfg(60), &at(0, 0, 0));
        s.set_unsettled_slots(MAX_BOOSTED - 6);
        let st = s.step(&at(938, 0, 0), |p| t.get(p), ws);
        assert_eq!(boosts(&st).len(), 6);
        let first: Vec<u32> = boosts(&st).iter().map(|b| b.0).collect();
        assert_eq!(first, (1..=6).collect::<Vec<u32>>());
        // the 10 the room holds but no slot yet keep their part of the
        // budget (60 / 16 ms each), and the server looks again soon
        assert!(boosts(&st).iter().all(|&(_, ns)| ns == 3_750_000));
        assert_eq!(st.next_ns, 938 * MS + SLOT_RETRY_NS);
        // the restores booked: the next step boosts them
        s.set_unsettled_slots(0);
        let st = s.step(&at(939, 0, 0), |p| t.get(p), ws);
        let next: Vec<u32> = boosts(&st).iter().map(|b| b.0).collect();
        assert_eq!(next, (7..=16).collect::<Vec<u32>>());
    }

    #[test]
    fn period_edge_at_exact_boundary_and_tiny_budget() {
        let t = Tasks::new(&[9]);
        let c = cfg_ns(20_000);
        let mut s = CpuServer::new(c, &at(0, 0, 0));
        let st = s.step(&at(500, 0, 0), |p| t.get(p), Vec::new);
        assert_eq!(st.next_ns, 1000 * MS - 20_000 - 2 * MS);
        let smp = Sample {
            now_ns: 1000 * MS - 20_000 - 2 * MS,
            ..Default::default()
        };
        let st = s.step(&smp, |p| t.get(p), || vec![w(9, 100)]);
        assert_eq!(boosts(&st), vec![(9, 20_000)]);
        // a 20 us share: checked after END_SLACK_NS (a wake-up costs more)
        assert_eq!(st.next_ns, smp.now_ns + END_SLACK_NS);
        // exactly at the edge of the period the activation opened:
        // restored, new period starts
        let edge = smp.now_ns + 1000 * MS;
        let st = s.step(
            &Sample {
                now_ns: edge,
                ..Default::default()
            },
            |p| t.get(p),
            Vec::new,
        );
        assert_eq!(restores(&st), vec![(9, RestoreWhy::PeriodEnd)]);
        assert_eq!(s.period_end_ns(), edge + 1000 * MS);
    }
}
