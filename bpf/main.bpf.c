/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * scx_floor - the BPF dispatcher.
 *
 * A weighted-vtime scheduler for every SCHED_NORMAL/BATCH/IDLE task, built to
 * measure and enforce two things the policy loop in user space relies on:
 *
 * 1. Slices end on time. When a task starts running, a per-CPU bpf_timer (an
 *    hrtimer pinned to that CPU) is armed for the task's slice; when it fires
 *    it preempts the task with SCX_KICK_PREEMPT. Without it a slice would end
 *    at the first scheduler tick after it expired (4 ms at HZ=250). Where the
 *    verifier refuses bpf_timer (PREEMPT_RT kernels), a per-CPU thread in
 *    user space sleeps until the slice is due instead: its wake-up preempts
 *    the task and ops.stopping() ends the slice (floor_slicer in intf.h).
 *    Which one runs is the read-only slice_end: the verifier does not walk
 *    the timer calls of a program loaded without it.
 *
 * 2. The time a higher class (RT, DL, stop) takes from normal tasks is known.
 *    A tp_btf/sched_switch program sees every switch: when a higher class
 *    takes a CPU while normal tasks wait for it, the CPU starts a starvation
 *    interval, and the queued tasks that may run elsewhere move to the
 *    shared DSQ (the local DSQ's at once, the CPU's own DSQ's at the next
 *    dispatch anywhere) so that other CPUs run them. A BPF scheduler cannot take a CPU
 *    back from an RT task (the kernel ignores kicks to a CPU that runs a
 *    higher class); the policy loop does that by boosting, and tells us which
 *    tasks it boosted (boosted_pids) so that their runs count as normal work.
 *
 * Queues: CPU N owns DSQ N, where tasks placed on N wait (per-CPU kthreads
 * go straight to N's local DSQ); a CPU with nothing to run takes from
 * another's. Tasks that may run elsewhere wait in one shared DSQ while a
 * higher class holds their CPU. All are ordered by vtime, charged as run
 * time scaled by 100 / weight.
 *
 * The BPF side measures and enforces; it does not decide budgets.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

#define SCHED_FIFO 1
#define SCHED_RR 2
#define SCHED_DEADLINE 6
#define TASK_RUNNING 0

/* Set by user space before load. */
const volatile u64 slice_ns = 3000000;	/* default slice, ns */
const volatile u32 slice_end = FLOOR_SLICE_END_BPF_TIMER;	/* enum floor_slice_end */
/*
 * How much earlier than the slice's end the timer is armed, ns: a fixed
 * value, or -1 for "auto": the CPU's measured timer latency (from the timer's
 * expiry to the task being switched out: softirq, kick, reschedule), an EWMA
 * with weight 1/8 of samples clipped to twice the estimate + 20 us (so that
 * one long stall does not shorten the following slices), used up to 7/8 of
 * the slice (the timer is armed at least slice/8 into the run). With it the
 * run lengths centre on the slice instead of on slice + latency; a slice
 * shorter than the latency itself ends after about the latency.
 */
const volatile s64 timer_lead_ns = -1;
/*
 * Wake-up preemption by the vtime rule: a task that slept long enough to
 * bank a full slice of credit and wakes with a vtime lower than the running
 * task's (charged up to now) by more than a quarter of the CPU's slice
 * preempts it at once instead of waiting for the slice to end.
 * The quarter-slice gap keeps tasks that are close in vtime from preempting
 * each other back and forth on every wake-up.
 */
const volatile bool wakeup_preempt = true;
/*
 * Preempted RCU readers first (see rcu_reader_preempted()): a task that was
 * preempted inside an RCU read-side section queues at the front, not at its
 * vtime. false: it queues like any other task (for A/B comparison).
 */
const volatile bool rcu_boost = true;
/* Sample each CPU's runnable count at every run start (latency-target mode only). */
const volatile bool sample_load = false;
/*
 * A task that may run on several CPUs queues in the DSQ of the CPU it was
 * placed on (ops.select_cpu(), or the CPU it ran on), as the fair class
 * keeps it on that CPU's runqueue; a CPU with nothing else to run takes
 * one from another CPU's DSQ. false: every such task queues in the one
 * shared DSQ, whose lock every CPU takes at each enqueue and dispatch (for
 * A/B comparison; docs/design.md, Decisions: "A DSQ per CPU").
 */
const volatile bool percpu_dsq = true;
/* false only under the test fault no-drain (src/fault.rs). */
const volatile bool spread_drain_on = true;

/* Written by the policy loop while running: per-CPU slice (ns), 0 = slice_ns. */
u64 cpu_slice_ns[FLOOR_MAX_CPUS];
/* The policy loop's own thread (a normal task): its runs are not load samples. */
u32 policy_tid;
/* CPUs online: the shared DSQ's tasks are counted 1/nr_online per CPU. */
u64 nr_online;

/*
 * The normal run in progress on each CPU, read by other CPUs' wake-ups for
 * the preemption rule: its start (0: none), the task's vtime at the start
 * and its weight, and whether it started out of vtime order (see
 * floor_running). A plain array, not a map: ops.enqueue reads it.
 */
struct cur_run {
	u64 since_ns;
	u64 vtime;
	u64 weight;
	u64 out_of_order;
};
struct cur_run cur_runs[FLOOR_MAX_CPUS];

/* Read by user space. */
struct floor_cpu_stat cpu_stats[FLOOR_MAX_CPUS];
/* Shared with the slice-end threads (FLOOR_SLICE_END_THREAD). */
struct floor_slicer slicers[FLOOR_MAX_CPUS];
struct floor_boost_slot boost_slots[FLOOR_MAX_CPUS * FLOOR_SLOTS_PER_CPU];
u64 nr_cpu_hotplug;
/*
 * Each CPU's last hotplug event since load, read by user space: 0 none,
 * FLOOR_CPU_WENT_DOWN, FLOOR_CPU_CAME_UP. Written before nr_cpu_hotplug
 * moves (a full barrier), so a reader that sees the new count sees it. The
 * sysfs online mask is not that: ops.cpu_offline() runs before the CPU
 * leaves cpu_online_mask, and a planner woken by its kick read it there.
 */
u8 cpu_hp_state[FLOOR_MAX_CPUS];
/*
 * Virtual time has one clock per DSQ, as the kernel's fair class keeps one
 * min_vruntime per runqueue: cpu_vnow[N] for CPU N's DSQ (and its local
 * one), vtime_now for the shared DSQ. CPUs with more tasks queued advance
 * their clock more slowly. With one clock for all, the tasks of a slower CPU
 * fall more than a slice behind it and are placed at the clock minus a
 * slice at every requeue: they take turns whatever their weights, and a
 * waking sleeper there queues behind them instead of preempting (t_weight;
 * docs/design.md, Decisions: "A vtime clock per CPU"). A task's vtime is
 * kept in the frame of the DSQ it was last queued on or ran from
 * (task_ctx.frame) and is moved to another frame with its lag (vtime minus
 * the clock) unchanged, as the kernel's fair class carried a migrating
 * task's vruntime relative to min_vruntime. vtime_now is the highest CPU
 * clock.
 */
u64 cpu_vnow[FLOOR_MAX_CPUS];
u64 vtime_now;

/* True between ops.init() and ops.exit(): the tracepoint must not call the
 * sched_ext kfuncs while no scheduler is attached. */
static bool floor_enabled;

/* Per-CPU slice timer and the current run. A bpf_timer must live in a map. */
struct slice_ctx {
	struct bpf_timer timer;
	u64 started_ns;		/* start of the current normal run; 0 = none */
	u64 slice_ns;		/* slice the current run was given */
	u64 boost_started_ns;	/* start of the current boosted run; 0 = none */
	u64 timer_at_ns;	/* when the timer of the current run fires */
	u64 armed_ns;		/* expiry the timer is pending for; 0 = not pending */
	u64 exec_start_ns;	/* the running task's se.sum_exec_runtime at its start */
	u32 boost_slot;		/* slot of the boosted run in progress */
	u32 boost_pid;		/* its task */
	/* its task's se.sum_exec_runtime at its start: apart from
	 * exec_start_ns, which ops.running() sets for a task that gets its own
	 * policy back while it runs (boost_run_end()) */
	u64 boost_exec_start_ns;
	u64 lat_est_ns;		/* EWMA of timer expiry -> switch-out latency */
	u64 fired_ns;		/* when the timer's callback ran for the current run */
	u32 pid;
	/* the current run's slice ended: 1 by the timer (or slice-end thread),
	 * 2 at a boost's end, 3 by the tick (floor_tick()) */
	u32 expired;
	u64 tick_last_ns;	/* the last scheduler tick seen here (ops.tick()) */
	u64 tick_ref_ns;	/* a tick and jiffies then: the tick period's base */
	u64 tick_ref_jiffies;
	u64 tick_ns;		/* the tick period, learnt; 0 = not yet */
	/* The current run's timer is not armed until a task queues for this
	 * CPU (timer_waiter()) or a tick finds one queued (floor_tick()). */
	u32 deferred;
	/* The current run's task blocked early in its last run: its timer is
	 * left to the tick (floor_tick()). */
	u32 short_run;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FLOOR_MAX_CPUS);
	__type(key, u32);
	__type(value, struct slice_ctx);
} slice_ctxs SEC(".maps");

/*
 * Tasks the policy loop has boosted to SCHED_DEADLINE or SCHED_FIFO on behalf
 * of normal work: tid -> boost slot. Written by user space only.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOOR_MAX_BOOSTED);
	__type(key, u32);
	__type(value, u32);
} boosted_pids SEC(".maps");

/*
 * RT threads that are not the hog a boost must beat (tid -> 1), written by
 * user space: scx_floor's own threads (per CPU at most a planner, an
 * executor and a slice-end thread; one watchdog), its guardian, and on PREEMPT_RT the
 * irq_work/N, rcuc/N, ktimers/N (per CPU) and rcub/N (per rcu_node) threads
 * it runs at FIFO 99 (short items, like its own).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 7 * FLOOR_MAX_CPUS + 1);
	__type(key, u32);
	__type(value, u32);
} agent_tids SEC(".maps");

/* Normal tasks queued while some CPU runs a higher class (see intf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOOR_MAX_WAITERS);
	__type(key, u32);
	__type(value, struct floor_waiter);
} waiters SEC(".maps");

/* CPUs currently owned by a higher class; waiters are tracked only then. */
u64 nr_hi_cpus;
/* Entries in boosted_pids, kept by user space: lookups are skipped at 0. */
u64 nr_boosted;

/*
 * One ring buffer per CPU, created by that CPU's server thread: a record in
 * it wakes the thread at once (it sleeps in ppoll() on the buffer until its
 * next timed event). Sent when a task it boosted blocks or exits, so that
 * the rest of the budget goes to the other starving tasks without waiting.
 */
struct server_wake_rb {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FLOOR_MAX_CPUS);
	__type(key, u32);
	__array(values, struct server_wake_rb);
} server_wake SEC(".maps");

/*
 * The same for each CPU's slice-end thread (FLOOR_SLICE_END_THREAD), created
 * by that thread: a record wakes it while it is parked and a run starts.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, FLOOR_MAX_CPUS);
	__type(key, u32);
	__array(values, struct server_wake_rb);
} slicer_wake SEC(".maps");

static __always_inline struct floor_cpu_stat *cpu_stat(s32 cpu)
{
	if (cpu < 0 || cpu >= FLOOR_MAX_CPUS)
		return NULL;
	return &cpu_stats[cpu & (FLOOR_MAX_CPUS - 1)];
}

static __always_inline struct slice_ctx *slice_ctx(s32 cpu)
{
	u32 key = cpu;

	return bpf_map_lookup_elem(&slice_ctxs, &key);
}

static __always_inline struct floor_slicer *slicer(s32 cpu)
{
	if (cpu < 0 || cpu >= FLOOR_MAX_CPUS)
		return NULL;
	return &slicers[cpu & (FLOOR_MAX_CPUS - 1)];
}

/*
 * A slice-end thread that wakes this early for a run (ns) still ends it:
 * its wake-up is a prediction when it went to sleep before the run began.
 * An eighth of the slice, and at most 50 us.
 */
static __always_inline u64 slicer_slack(u64 slice)
{
	return slice / 8 < 50000 ? slice / 8 : 50000;
}

/*
 * Per CPU: 1 while a run there has a slice to end and its slice-end thread
 * was left parked because no task waited for the CPU when the run began
 * (slicer_arm()); nr_slicers_deferred counts them.
 */
static u32 slicer_deferred[FLOOR_MAX_CPUS];
static u32 nr_slicers_deferred;

/* Wakes cpu's slice-end thread through its ring buffer. */
static __always_inline void slicer_wake_up(s32 cpu)
{
	u32 key = cpu;
	void *rb = bpf_map_lookup_elem(&slicer_wake, &key);

	if (rb)
		bpf_ringbuf_output(rb, &key, sizeof(key), 0);
}

/*
 * A task now waits for cpu (queued in its DSQ or local DSQ): if the run
 * there began with nobody waiting and its slice-end thread was left parked
 * (or its slice timer not armed: timer_waiter()), the run's slice now
 * matters. The thread sleeps until the run is due, or ends it at once if it
 * is overdue.
 */
static __always_inline void timer_waiter(s32 cpu);

static __always_inline void slicer_waiter(s32 cpu)
{
	struct floor_slicer *sl = slicer(cpu);

	timer_waiter(cpu);
	if (slice_end != FLOOR_SLICE_END_THREAD || !sl ||
	    !slicer_deferred[cpu & (FLOOR_MAX_CPUS - 1)])
		return;
	if (!__sync_lock_test_and_set(&slicer_deferred[cpu & (FLOOR_MAX_CPUS - 1)], 0))
		return;
	__sync_fetch_and_sub(&nr_slicers_deferred, 1);
	if (!sl->due_ns || sl->wake_ns)
		return;
	sl->wake_ns = sl->due_ns;
	slicer_wake_up(cpu);
}

/*
 * A task waits in the shared DSQ and no CPU was idle for it: every run that
 * began with nobody waiting now has a slice to end. With bpf_timer, this
 * CPU's run arms its timer now; the other CPUs' runs at their next tick
 * (floor_tick()), not kicked one by one.
 */
static __always_inline void slicer_waiter_any(void)
{
	u32 i, n = scx_bpf_nr_cpu_ids();

	timer_waiter(bpf_get_smp_processor_id());
	if (slice_end != FLOOR_SLICE_END_THREAD || !nr_slicers_deferred)
		return;
	bpf_for(i, 0, n) {
		if (i >= FLOOR_MAX_CPUS)
			break;
		slicer_waiter(i);
	}
}

static __always_inline u64 cpu_slice(s32 cpu)
{
	u64 s = 0;

	if (cpu >= 0 && cpu < FLOOR_MAX_CPUS)
		s = cpu_slice_ns[cpu & (FLOOR_MAX_CPUS - 1)];
	return s ? s : slice_ns;
}

static __always_inline bool vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/* The vtime a run of ran_ns costs a task of weight weight (100 = nice 0). */
static __always_inline u64 vtime_charge(u64 ran_ns, u64 weight)
{
	return ran_ns * 100 / (weight ? weight : 1);
}

static __always_inline struct cur_run *cur_run(s32 cpu)
{
	if (cpu < 0 || cpu >= FLOOR_MAX_CPUS)
		return NULL;
	return &cur_runs[cpu & (FLOOR_MAX_CPUS - 1)];
}

/*
 * A task waking with vtime `vtime` (its preemption vtime, in cpu's frame:
 * see ops.enqueue()) queues for CPU cpu: whether it preempts
 * the normal task running there, whose vtime, charged for the time it has
 * run so far, is ahead by more than a quarter of the CPU's slice (counted in
 * nr_wakeup_preempt; the caller preempts).
 */
static __always_inline bool wakeup_preempts(s32 cpu, u64 vtime, u64 slice,
					    struct floor_cpu_stat *st)
{
	struct cur_run *r = cur_run(cpu);
	u64 since, now, cur, w;

	if (!r || !st)
		return false;
	since = r->since_ns;
	if (!since || r->out_of_order)
		return false;	/* idle, not ours, or a run not to cut short */
	now = bpf_ktime_get_ns();
	w = r->weight ? r->weight : 100;
	cur = r->vtime + vtime_charge(now > since ? now - since : 0, w);
	if (vtime_before(vtime + slice / 4, cur)) {
		__sync_fetch_and_add(&st->nr_wakeup_preempt, 1);
		return true;
	}
	return false;
}

/* floor(log2(v)) for v > 0, without a loop (BPF has no clz). */
static __always_inline u32 ilog2_u64(u64 v)
{
	u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* The bucket of v (ns) in a FLOOR_HIST_* histogram; mirrored in src/hist.rs. */
static __always_inline u32 hist_bucket(u64 v)
{
	u32 e, b;

	if (v < (1 << FLOOR_HIST_SUB_BITS))
		return 0;
	e = ilog2_u64(v);
	b = (e << FLOOR_HIST_SUB_BITS) |
	    ((v >> (e - FLOOR_HIST_SUB_BITS)) & ((1 << FLOOR_HIST_SUB_BITS) - 1));
	return b < FLOOR_HIST_BUCKETS ? b : FLOOR_HIST_BUCKETS - 1;
}

/* A task of a class above sched_ext: the kernel runs it before any of ours. */
static __always_inline bool is_higher_class(const struct task_struct *p)
{
	u32 policy = p->policy;

	return policy == SCHED_FIFO || policy == SCHED_RR || policy == SCHED_DEADLINE;
}

static __always_inline u32 *boost_slot_of(const struct task_struct *p)
{
	u32 pid = p->pid;

	return pid ? bpf_map_lookup_elem(&boosted_pids, &pid) : NULL;
}

static __always_inline struct floor_boost_slot *boost_slot(u32 i)
{
	if (i >= FLOOR_MAX_CPUS * FLOOR_SLOTS_PER_CPU)
		return NULL;
	return &boost_slots[i];
}

/*
 * p, listed as boosted, starts a run in sched_ext: true the first time
 * since its last boosted run began, and marks that run as the one.
 */
static __always_inline bool policy_back_first(const struct task_struct *p)
{
	struct floor_boost_slot *slot;
	u32 *idx = boost_slot_of(p);

	if (!idx)
		return false;
	slot = boost_slot(*idx);
	if (!slot || slot->pid != p->pid)
		return false;
	return !__sync_lock_test_and_set(&slot->policy_back, 1);
}

/*
 * A ring buffer's wake-up is an irq_work queued on the CPU that writes the
 * record. PREEMPT_RT runs it in that CPU's irq_work/N thread (not in hard
 * IRQ context), and a SCHED_DEADLINE task, or an RT task at that thread's
 * priority or above, keeps it from running: a wake-up written under such a
 * task waits until the task leaves the CPU. irq_work_threaded and
 * irq_work_prio (the lowest RT priority of the irq_work/N threads, 0 for
 * one that is not RT) are set by user space before attach.
 */
bool irq_work_threaded;
u32 irq_work_prio;

/*
 * The CPUs a held-up wake-up may be handed to (relay_ok[cpu] = 1): those
 * not isolated with nohz_full, set by user space before attach.
 */
u8 relay_ok[FLOOR_MAX_CPUS];

/* Server wake-ups handed on (relay_pending[cpu]: one waits), and any at all. */
static u32 relay_pending[FLOOR_MAX_CPUS];
static u32 relay_any;
/* Wake-ups handed on, and those written by another CPU for them. */
u64 nr_relayed;
u64 nr_relay_sent;

/* Whether p, running on this CPU, keeps its irq_work/N thread from running. */
static __always_inline bool holds_irq_work(const struct task_struct *p)
{
	if (!irq_work_threaded || !p || !is_higher_class(p))
		return false;
	return p->policy == SCHED_DEADLINE || p->rt_priority >= irq_work_prio;
}

/*
 * Whether this CPU's irq_work/N thread may not run a record's wake-up soon:
 * an RT task at its priority or above is queued here, or the CPU is going
 * down (ops.cpu_offline() has run: its irq_work/N is parked later in the
 * teardown, and a wake-up still pending then stays on the offline CPU,
 * while ops.tick() and the switch hook still run here until the CPU stops).
 * ops.dispatch() and ops.tick() run with such an RT task queued when it
 * has just preempted a sched_ext task (the kernel balances the outgoing
 * task's class before it picks) or when the CPU's ext_server runs
 * sched_ext tasks ahead of it. rt_rq.highest_prio.curr is the kernel
 * priority of the highest queued RT task, 99 - rt_priority, and
 * MAX_RT_PRIO - 1 (99, which no RT task has) when there is none
 * (init_rt_rq(), dec_rt_prio() in kernel/sched/rt.c). irq_work/N's own
 * pending run counts as well: the relay then waits for another CPU. A
 * SCHED_DEADLINE task is not seen here (the CPU's dl_servers share its
 * counts).
 */
static __always_inline bool irq_work_held_here(void)
{
	u32 me = bpf_get_smp_processor_id();
	struct rq *rq;
	int prio;

	if (!irq_work_threaded)
		return false;
	if (me < FLOOR_MAX_CPUS && cpu_hp_state[me & (FLOOR_MAX_CPUS - 1)] == FLOOR_CPU_WENT_DOWN)
		return true;
	rq = bpf_this_cpu_ptr(&runqueues);
	prio = rq->rt.highest_prio.curr;
	return prio < 99 && prio <= 99 - (int)irq_work_prio;
}

/* Writes the record that wakes CPU cpu's server thread (see server_wake). */
static __always_inline void server_wake_up(u32 cpu)
{
	void *rb = bpf_map_lookup_elem(&server_wake, &cpu);

	if (rb)
		bpf_ringbuf_output(rb, &cpu, sizeof(cpu), 0);
}

/*
 * Kicks one idle CPU allowed by relay_ok, not this one, so that its
 * ops.dispatch() writes the wake-ups handed on (relay_run()). The kick's
 * irq_work runs in hard IRQ context on every kernel.
 */
static __always_inline void relay_kick_idle(void)
{
	s32 me = bpf_get_smp_processor_id();
	u32 i, k, n = scx_bpf_nr_cpu_ids();

	bpf_for(i, 0, n) {
		if (i == me || i >= FLOOR_MAX_CPUS)
			continue;
		k = i & (FLOOR_MAX_CPUS - 1);
		/*
		 * A CPU gone offline since the load keeps the idle bit its
		 * idle task left, and the kernel drops a kick to an offline
		 * CPU: the kick would be lost.
		 */
		if (!relay_ok[k] || cpu_hp_state[k] == FLOOR_CPU_WENT_DOWN)
			continue;
		if (scx_bpf_test_and_clear_cpu_idle(i)) {
			scx_bpf_kick_cpu(i, SCX_KICK_IDLE);
			break;
		}
	}
}

/*
 * Hands CPU cpu's server wake-up to another CPU: an idle one is kicked
 * (relay_kick_idle()); a busy one writes it at its next ops.dispatch() or
 * ops.tick() (relay_run()).
 */
static __always_inline void server_relay(u32 cpu)
{
	/* cpu < nr_cpu_ids <= FLOOR_MAX_CPUS (floor_init()) */
	__sync_lock_test_and_set(&relay_pending[cpu & (FLOOR_MAX_CPUS - 1)], 1);
	__sync_lock_test_and_set(&relay_any, 1);
	__sync_fetch_and_add(&nr_relayed, 1);
	relay_kick_idle();
}

/*
 * Wakes CPU cpu's server thread. ahead is the task this CPU runs once the
 * calling kernel path is done (the switch's next, or the current task).
 * When it, or an RT task queued behind a sched_ext task that this CPU's
 * ext_server runs (irq_work_held_here()), holds this CPU's irq_work/N back,
 * the wake-up is handed to another CPU (server_relay()). Written here, the
 * record's irq_work would stay pending on this CPU, and a pending irq_work
 * is not queued again from any CPU: every later wake-up of that server
 * would wait too.
 */
static __always_inline void server_kick(u32 cpu, const struct task_struct *ahead)
{
	if (!holds_irq_work(ahead) && !irq_work_held_here())
		server_wake_up(cpu);
	else
		server_relay(cpu);
}

/*
 * Writes the server wake-ups another CPU handed on (server_kick()), on a
 * CPU that runs sched_ext work now and whose irq_work/N thread can run
 * (irq_work_held_here()); held, they wait for another CPU, and an idle one
 * is kicked for them.
 */
static __always_inline void relay_run(void)
{
	u32 i, n = scx_bpf_nr_cpu_ids();

	if (!relay_any)
		return;
	if (irq_work_held_here()) {
		relay_kick_idle();
		return;
	}
	if (!__sync_lock_test_and_set(&relay_any, 0))
		return;
	bpf_for(i, 0, n) {
		if (i >= FLOOR_MAX_CPUS)
			break;
		if (relay_pending[i & (FLOOR_MAX_CPUS - 1)] &&
		    __sync_lock_test_and_set(&relay_pending[i & (FLOOR_MAX_CPUS - 1)], 0)) {
			server_wake_up(i);
			__sync_fetch_and_add(&nr_relay_sent, 1);
		}
	}
}

/*
 * Open the CPU's starvation interval unless one is open already, and wake
 * its server thread if it asked for it (an idle server starts serving at
 * this moment).
 */
static __always_inline void starve_open(struct floor_cpu_stat *st, s32 cpu, u64 now,
					const struct task_struct *ahead)
{
	if (__sync_val_compare_and_swap(&st->starved_since_ns, 0, now) == 0) {
		__sync_fetch_and_add(&st->nr_hi_preempt, 1);
		if (st->kick_on_starve && __sync_lock_test_and_set(&st->kick_on_starve, 0))
			server_kick(cpu, ahead);
	}
}

/*
 * Around an update of st's fields that user space reads together (see
 * floor_cpu_stat.seq). The atomic adds are full barriers on x86.
 */
static __always_inline void stat_write_begin(struct floor_cpu_stat *st)
{
	__sync_fetch_and_add(&st->seq, 1);
}

static __always_inline void stat_write_end(struct floor_cpu_stat *st)
{
	__sync_fetch_and_add(&st->seq, 1);
}

static __always_inline void starve_close(struct floor_cpu_stat *st, u64 now)
{
	u64 since;

	if (!st->starved_since_ns)
		return;
	/* a read between the two stores would miss the interval */
	stat_write_begin(st);
	since = __sync_lock_test_and_set(&st->starved_since_ns, 0);
	if (since && now > since)
		__sync_fetch_and_add(&st->starved_ns, now - since);
	stat_write_end(st);
}

/*
 * Whether p can run on its current CPU only: pinned, or inside a
 * migrate_disable() section. PREEMPT_RT disables migration in every
 * spinlock_t/rwlock_t section (each also an RCU read-side section), and BPF
 * programs run with it disabled everywhere. A task switched out in one has
 * p->cpus_ptr narrowed to its CPU (migrate_disable_switch(),
 * kernel/sched/core.c) while p->nr_cpus_allowed keeps its affinity's weight.
 * Such tasks come here because user space sets
 * SCX_OPS_ENQ_MIGRATION_DISABLED; they queue in their CPU's DSQ, where the
 * server sees them as pinned waiters.
 */
static __always_inline bool only_this_cpu(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1 || bpf_cpumask_weight(p->cpus_ptr) == 1;
}

/*
 * Whether every online CPU p may run on is held by a higher class now. Such
 * a task waits in the shared DSQ as a pinned one waits in its CPU's DSQ,
 * and the server of its CPU lists it as a waiter (all_allowed_hogged() in
 * src/planner.rs, which sees only online CPUs): its enqueue must open a
 * starvation there as a pinned task's does, or no kick tells that server
 * and no period counts it. CPUs not online count as held: a task's mask
 * may name every possible CPU. Cheap unless p may run on no more CPUs than
 * are held or offline.
 */
static __always_inline bool all_allowed_held(const struct task_struct *p)
{
	const struct cpumask *online;
	u32 i, n = scx_bpf_nr_cpu_ids();
	u64 offline = n > nr_online ? n - nr_online : 0;
	bool all = true;

	if ((u64)p->nr_cpus_allowed > nr_hi_cpus + offline)
		return false;
	online = scx_bpf_get_online_cpumask();
	bpf_for(i, 0, n) {
		struct floor_cpu_stat *st;

		if (!bpf_cpumask_test_cpu(i, p->cpus_ptr) || !bpf_cpumask_test_cpu(i, online))
			continue;
		st = cpu_stat(i);
		if (!st || !st->hi_running) {
			all = false;
			break;
		}
	}
	scx_bpf_put_cpumask(online);
	return all;
}

/*
 * Per CPU: non-zero while its DSQ may hold tasks that may run elsewhere and
 * the CPU does not dispatch: DRAIN_HELD, a higher class holds it (drained
 * only if it still does), or DRAIN_OFFLINE. The next ops.dispatch() on any
 * CPU moves them to the shared DSQ (spread_drain()). nr_drain counts the
 * CPUs marked.
 */
#define DRAIN_HELD	1
#define DRAIN_OFFLINE	2
static u32 drain_wanted[FLOOR_MAX_CPUS];
static u32 nr_drain;

static __always_inline void drain_request(s32 cpu, u32 why)
{
	u32 idx = cpu;

	if (idx < FLOOR_MAX_CPUS && !__sync_lock_test_and_set(&drain_wanted[idx], why))
		__sync_fetch_and_add(&nr_drain, 1);
}

/*
 * Per task. A task queued at the front (a preempted RCU reader, or a task
 * handed back because a higher class took its CPU) keeps its own vtime here
 * (vtime, valid): the DSQ key it queued with is not its vtime, and running()
 * or the next enqueue() puts this one back, so the run is charged in full.
 *
 * wait_since_ns is the starvation guard's clock: when the task last woke,
 * entered sched_ext, or ended a run that was not cut short. The kernel's own
 * p->scx.runnable_at restarts at every run, so a task the guard rescued
 * after FLOOR_STARVE_MS, then preempted by an RT task before it was back in
 * user space, would wait a second full FLOOR_STARVE_MS with it; with this
 * clock the next scan rescues it again (docs/design.md, Decisions:
 * "Starvation guard").
 */
struct task_ctx {
	u64 vtime;
	u64 valid;
	u64 wait_since_ns;
	/* The clock p->scx.dsq_vtime (and vtime) is measured against: a CPU, or
	 * FRAME_SHARED for vtime_now (see cpu_vnow). */
	u64 frame;
	/* Its last run blocked within a quarter of the slice (run_end()). */
	u32 blocked_early;
};

#define FRAME_SHARED ((u64)FLOOR_SHARED_DSQ)

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* p's context, made (its wait starting now) if it has none yet; NULL on ENOMEM. */
static __always_inline struct task_ctx *task_ctx_of(struct task_struct *p)
{
	struct task_ctx *tc = bpf_task_storage_get(&task_ctxs, p, 0, 0);

	if (tc)
		return tc;
	tc = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (tc) {
		tc->wait_since_ns = bpf_ktime_get_ns();
		/* ops.enable() placed it on vtime_now, the shared DSQ's clock. */
		tc->frame = FRAME_SHARED;
	}
	return tc;
}

static __always_inline void waiter_add(struct task_struct *p, s32 cpu, u64 now)
{
	struct floor_waiter w = {
		.since_ns = now,
		.cpu = cpu,
		.weight = p->scx.weight,
		.pinned = only_this_cpu(p),
		.kthread = !!(p->flags & PF_KTHREAD),
		/* nsec_to_clock_t() with USER_HZ = 100 (x86) */
		.start_ticks = p->start_boottime / 10000000,
	};
	u32 pid = p->pid;
	struct floor_cpu_stat *st;

	if (bpf_map_update_elem(&waiters, &pid, &w, BPF_ANY)) {
		st = cpu_stat(cpu);
		if (st)
			__sync_fetch_and_add(&st->nr_waiters_dropped, 1);
	}
}

/*
 * Takes p out of waiters. Always a delete: user space lists tasks there too
 * (the scan for waiters the map lacks, src/planner.rs).
 */
static __always_inline void waiter_del(struct task_struct *p)
{
	u32 pid = p->pid;

	bpf_map_delete_elem(&waiters, &pid);
}

/*
 * True if p was preempted inside an RCU read-side section and has not left
 * it since: the kernel's PREEMPT_RCU marks such a task (rcu_read_unlock_special
 * .b.blocked, set by rcu_note_context_switch() in kernel/rcu/tree_plugin.h)
 * and every grace period that began before waits for it. The kernel's own
 * remedy, RCU priority boosting (CONFIG_RCU_BOOST), lends such a reader
 * the priority of its rcu_node's rcub/N thread after CONFIG_RCU_BOOST_DELAY
 * ms, which moves it out of sched_ext (ops.disable()) into the RT class.
 * rcub/N runs at SCHED_FIFO 1 (rcutree.kthread_prio), where an RT hog above
 * 1 keeps the reader off its CPU; user space raises it to 99 while
 * scx_floor runs. Debian's generic kernel is built without it, its
 * PREEMPT_RT kernel with it (500 ms). A reader
 * left at its vtime waits as long as its weight says (seconds per run for a
 * nice-19 kthread under load), the grace period with it, until the kernel's
 * RCU stall detector ejects the scheduler (docs/design.md, Decisions:
 * "Preempted RCU readers queue at the front"). Kernels without PREEMPT_RCU
 * never preempt a reader.
 */
static __always_inline bool rcu_reader_preempted(struct task_struct *p)
{
	if (!bpf_core_field_exists(p->rcu_read_unlock_special))
		return false;
	return BPF_CORE_READ(p, rcu_read_unlock_special.b.blocked) != 0;
}

/* p's own vtime: the stashed one while it queues as a preempted reader. */
static __always_inline u64 task_vtime(struct task_struct *p, bool clear)
{
	struct task_ctx *rs = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	/*
	 * Read first, unconditionally: with two returns clang merges both
	 * loads into one through a selected pointer, which the verifier
	 * rejects (same insn, map value and task pointer).
	 */
	u64 vtime = p->scx.dsq_vtime;

	if (rs && rs->valid) {
		if (clear)
			rs->valid = 0;
		vtime = rs->vtime;
	}
	return vtime;
}

/* The clock of frame f (a CPU, or FRAME_SHARED), ns of virtual time. */
static __always_inline u64 frame_clock(u64 f)
{
	u64 i = f & (FLOOR_MAX_CPUS - 1);

	/*
	 * The index is masked and hidden from the optimizer: clang otherwise
	 * drops the mask inside the test and computes the address before it,
	 * which the verifier refuses as an unbounded offset.
	 */
	asm volatile("" : "+r"(i));
	if (f < FLOOR_MAX_CPUS)
		return cpu_vnow[i];
	return vtime_now;
}

/* vtime v of frame from, moved to frame to with its lag kept. */
static __always_inline u64 frame_move(u64 v, u64 from, u64 to)
{
	if (from == to)
		return v;
	return v - frame_clock(from) + frame_clock(to);
}

/*
 * Records frame to as tc's, moving a stashed vtime there with it; the
 * caller moves p->scx.dsq_vtime (or the DSQ key it is queued with).
 */
static __always_inline void task_ctx_frame_set(struct task_ctx *tc, u64 to)
{
	if (tc->valid)
		tc->vtime = frame_move(tc->vtime, tc->frame, to);
	tc->frame = to;
}

/*
 * Moves p's vtime (and a stashed one) into frame to and records it; p
 * without a context (ENOMEM) keeps its vtime as it is.
 */
static __always_inline void task_frame_set(struct task_struct *p, u64 to)
{
	struct task_ctx *tc = task_ctx_of(p);

	if (!tc || tc->frame == to)
		return;
	p->scx.dsq_vtime = frame_move(p->scx.dsq_vtime, tc->frame, to);
	task_ctx_frame_set(tc, to);
}

/*
 * Whether a task at vtime (in cpu's frame) that preempts cpu's run may go
 * straight to the head of cpu's local DSQ with SCX_ENQ_PREEMPT: only if
 * nothing waits there already (a per-CPU kthread) and neither head that
 * ops.dispatch() would weigh it against (cpu's DSQ, the shared DSQ) comes
 * first, such as a preempted RCU reader queued at the front. Otherwise it
 * queues at its vtime and a kick preempts, and the dispatch picks in order.
 */
static __always_inline bool preempt_direct(s32 cpu, u64 vtime)
{
	struct task_struct *q;

	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0)
		return false;
	q = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (q && vtime_before(q->scx.dsq_vtime, vtime))
		return false;
	q = __COMPAT_scx_bpf_dsq_peek(FLOOR_SHARED_DSQ);
	return !(q && vtime_before(frame_move(q->scx.dsq_vtime, FRAME_SHARED, cpu), vtime));
}

/*
 * A waking task p that preempts cpu's run (wakeup_preempts() said so) is
 * queued: at the head of the local DSQ with SCX_ENQ_PREEMPT where nothing
 * comes before it (preempt_direct()): the kernel takes the running task's
 * slice and reschedules the CPU within this call (an IPI if it is another
 * CPU), as the fair class does on a wake-up preemption, where a kick would
 * first raise an irq_work (a self-IPI on this CPU). Otherwise at its vtime
 * in cpu's DSQ, and a kick preempts. The run it ends needs no slice timer.
 */
static __always_inline void wakeup_preempt_insert(struct task_struct *p, s32 cpu, u64 vtime,
						  u64 slice, u64 enq_flags)
{
	if (preempt_direct(cpu, vtime)) {
		p->scx.dsq_vtime = vtime;
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags | SCX_ENQ_PREEMPT);
		return;
	}
	scx_bpf_dsq_insert_vtime(p, cpu, slice, vtime, enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
}

s32 BPF_STRUCT_OPS(floor_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, cpu_slice(cpu), 0);
	return cpu;
}

void BPF_STRUCT_OPS(floor_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p), idle = -1;
	u64 slice = cpu_slice(cpu), vtime, preempt_vtime;
	bool sleeper = false, reader, migr, own, preempted = false, direct = false, picked = false;
	bool kick_preempt = false;
	struct floor_cpu_stat *st = cpu_stat(cpu);
	struct task_ctx *rs;
	u64 frame, clock;

	/*
	 * Its CPU's DSQ (pinned, or every task with per-CPU DSQs) unless a
	 * higher class holds that CPU, or took it from this task
	 * (SCX_ENQ_REENQ): then the shared DSQ, where every CPU it may use
	 * looks. Its vtime moves to that DSQ's clock.
	 */
	own = only_this_cpu(p) ||
	      (percpu_dsq && !(enq_flags & SCX_ENQ_REENQ) && !(st && st->hi_running));
	frame = own ? (u64)cpu : FRAME_SHARED;
	task_frame_set(p, frame);
	clock = frame_clock(frame);

	/* Queued before as a preempted reader, dequeued without running. */
	p->scx.dsq_vtime = task_vtime(p, true);
	vtime = p->scx.dsq_vtime;

	/*
	 * A task that slept long must not bank more than a slice of credit.
	 * Only such a sleeper may preempt on wake-up (below): tasks that wake
	 * each other in quick succession (pipes, futexes) are close in vtime,
	 * and preempting for them costs throughput (docs/design.md, Decisions:
	 * "Wake-up preemption only for sleepers").
	 */
	/*
	 * A sleeper by the highest clock (vtime_now), as when all CPUs shared
	 * one: on a CPU whose clock lags, a task that slept a while is one
	 * even if that clock has not moved a slice since it last ran.
	 */
	sleeper = vtime_before(vtime, vtime_now - slice);
	if (vtime_before(vtime, clock - slice))
		vtime = clock - slice;
	/*
	 * The slice of credit decides only whether a waking task preempts
	 * (preempt_vtime). It queues at its DSQ's clock at the earliest,
	 * behind the waiting tasks at or before that clock: placed a slice
	 * ahead, a pipe reader woken for each message ran next, read that one
	 * message and slept again, and under hackbench the CPUs switched and
	 * woke tasks twice as often as the fair class does, 7-10% slower at 2
	 * vCPUs (docs/design.md, Decisions: "A waking task queues with no
	 * sleep credit").
	 */
	preempt_vtime = vtime;
	if ((enq_flags & SCX_ENQ_WAKEUP) && vtime_before(vtime, clock))
		vtime = clock;

	/*
	 * A preempted RCU reader queues ahead of any capped sleeper, with its
	 * own vtime kept aside: it runs within about a slice per CPU, finishes
	 * its read-side section, and its run is charged to its own vtime as
	 * usual, so it gets no more than its share over time. So does a task
	 * switched out with migration disabled (on PREEMPT_RT, in a spinlock).
	 *
	 * So does a task handed back because a higher class took its CPU
	 * (SCX_ENQ_REENQ, from the switch hook below) with at least half of
	 * its slice left: it was running there or next to run, and it runs
	 * next (on another CPU, or on its own once the higher class leaves).
	 * At its own vtime it would queue again behind everyone it had already
	 * waited for: a task that the starvation guard rescued after a second,
	 * preempted by a stop-class or RT task of a few microseconds before it
	 * was back in user space, would wait for the guard's next scan. A task
	 * that had most of its run goes back to its vtime, so one that higher
	 * classes preempt often does not jump the queue at every preemption.
	 */
	reader = rcu_boost && rcu_reader_preempted(p);
	/* Switched out with migration disabled (see only_this_cpu()). */
	migr = p->nr_cpus_allowed > 1 && only_this_cpu(p);
	if ((reader || migr || ((enq_flags & SCX_ENQ_REENQ) && p->scx.slice >= slice / 2)) &&
	    vtime_before(clock - 2 * slice, vtime)) {
		rs = task_ctx_of(p);
		if (rs) {
			/* A waking one runs with the credit, as one that preempts. */
			rs->vtime = preempt_vtime;
			rs->valid = 1;
			vtime = clock - 2 * slice;
			if (st && reader)
				__sync_fetch_and_add(&st->nr_rcu_boost, 1);
		}
	}
	/* A task queued at the front (a reader woken from a lock) preempts from there. */
	if (vtime_before(vtime, preempt_vtime))
		preempt_vtime = vtime;

	if (enq_flags & SCX_ENQ_WAKEUP) {
		rs = task_ctx_of(p);
		if (rs)
			rs->wait_since_ns = bpf_ktime_get_ns();
	}

	if (nr_hi_cpus)
		waiter_add(p, cpu, bpf_ktime_get_ns());

	if (only_this_cpu(p)) {
		/* A waking sleeper here may preempt (wakeup_preempts()). */
		bool may_preempt = !(st && st->hi_running) && wakeup_preempt && sleeper &&
				   (enq_flags & SCX_ENQ_WAKEUP);

		/*
		 * While a higher class owns the CPU, a per-CPU kthread waits in
		 * the CPU's DSQ like any pinned task (the server serves it): in
		 * the local DSQ it would only be re-enqueued again and again.
		 */
		if (((p->flags & PF_KTHREAD) || migr) && !(st && st->hi_running)) {
			/*
			 * Per-CPU kthreads (ksoftirqd, kworkers) run first, and so
			 * does a task with migration disabled, as the kernel queues
			 * it when the scheduler does not ask for it: it holds up
			 * whatever it disabled migration for. Under a higher class
			 * it queues in the CPU's DSQ, at the front (above).
			 */
			preempted = may_preempt && wakeup_preempts(cpu, preempt_vtime, slice, st);
			direct = preempted && preempt_direct(cpu, preempt_vtime);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice,
					   enq_flags | (direct ? SCX_ENQ_PREEMPT : 0));
		} else if (may_preempt && wakeup_preempts(cpu, preempt_vtime, slice, st)) {
			/* A sleeper that preempts: no waiter, no idle kick. */
			wakeup_preempt_insert(p, cpu, preempt_vtime, slice, enq_flags);
			return;
		} else {
			scx_bpf_dsq_insert_vtime(p, cpu, slice, vtime, enq_flags);
		}
		if (preempted && !direct)
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		if (st && st->hi_running)
			starve_open(st, cpu, bpf_ktime_get_ns(), bpf_get_current_task_btf());
		/*
		 * A waking task that preempts ends the run at once: the run's
		 * slice then has nothing to end.
		 */
		if (!preempted)
			slicer_waiter(cpu);
		/*
		 * An idle CPU is rescheduled by the kernel itself when a task
		 * is queued on its runqueue (wakeup_preempt(): this class is
		 * above the idle class); the kick covers the rest. On the CPU
		 * running this code it cannot take the runqueue lock held here
		 * and would raise an irq_work (a self-IPI) for a CPU that is
		 * either busy or about to reschedule; a CPU preempted above or
		 * held by a higher class is not idle either.
		 */
		if (cpu != bpf_get_smp_processor_id() && !preempted && !(st && st->hi_running))
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		return;
	}

	/*
	 * A waking sleeper with no idle CPU to take it may preempt: on its own
	 * CPU's DSQ as a pinned one does, the local DSQ with SCX_ENQ_PREEMPT,
	 * not a kick (an irq_work first); in the shared DSQ by a kick, queued
	 * at preempt_vtime so that the dispatch the kick forces most likely
	 * takes it (another CPU's dispatch may take it first).
	 */
	if (wakeup_preempt && sleeper && (enq_flags & SCX_ENQ_WAKEUP)) {
		idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		picked = true;
		if (idle < 0 && own && wakeup_preempts(cpu, preempt_vtime, slice, st)) {
			wakeup_preempt_insert(p, cpu, preempt_vtime, slice, enq_flags);
			return;
		}
		if (idle < 0 && !own &&
		    wakeup_preempts(cpu, frame_move(preempt_vtime, frame, cpu), slice, st)) {
			kick_preempt = true;
			vtime = preempt_vtime;	/* never after vtime (above) */
		}
	}

	/*
	 * (own, above.) The enqueue and the switch hook that sets hi_running
	 * both run under the CPU's runqueue lock: a higher class that takes
	 * the CPU later finds the task in the hook's walk.
	 */
	scx_bpf_dsq_insert_vtime(p, own ? (u64)cpu : FLOOR_SHARED_DSQ, slice, vtime, enq_flags);
	if (!own) {
		/* Re-enqueued because a higher class took this CPU: it moves away. */
		if ((enq_flags & SCX_ENQ_REENQ) && st)
			__sync_fetch_and_add(&st->nr_hi_migrated, 1);
		if (st && st->hi_running && all_allowed_held(p))
			starve_open(st, cpu, bpf_ktime_get_ns(), bpf_get_current_task_btf());
	}
	/*
	 * Picked before the insert and none idle: a CPU that found the shared
	 * DSQ empty since then has gone idle without this task; look again.
	 */
	if (!picked || (!own && idle < 0 && !kick_preempt))
		idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		/* The idle CPU takes it: no run here to cut for it (timer_waiter()). */
		if (own && slice_end == FLOOR_SLICE_END_THREAD)
			slicer_waiter(cpu);
		/* (Its own CPU, idle, running this: the kernel reschedules it, above.) */
		if (idle != cpu || idle != bpf_get_smp_processor_id())
			scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
	} else if (kick_preempt) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	} else if (own) {
		slicer_waiter(cpu);
	} else {
		slicer_waiter_any();
	}
}

/* Per CPU: the last starvation scan, ns. */
static u64 starve_scan_ns[FLOOR_MAX_CPUS];

/*
 * The clock of cpu (cpu_vnow; vtime_now is the highest of them), where new
 * and waking tasks are placed, follows the runs that start there (vtime, in
 * cpu's frame) but never passes the head of the queues cpu dispatches from
 * (its own DSQ and the shared one), as the kernel's fair class keeps
 * min_vruntime at or below the leftmost queued entity. Runs out of vtime
 * order (a task the starvation guard rescued, a per-CPU kthread put straight
 * into the local DSQ) would otherwise drag it far ahead, and every waking
 * task would queue behind all the tasks already waiting (docs/design.md,
 * Decisions: "`vtime_now` bounded by the queues' heads").
 */
static __always_inline u64 vtime_now_advance(s32 cpu, u64 vtime)
{
	struct task_struct *q;

	/*
	 * Not a shared head this CPU may not run: a task whose allowed CPUs are
	 * all held by RT stays at the head, served only by boosts (RT runs,
	 * never charged), and would freeze vtime_now on every CPU.
	 */
	u64 head;

	q = __COMPAT_scx_bpf_dsq_peek(FLOOR_SHARED_DSQ);
	if (q && bpf_cpumask_test_cpu(cpu, q->cpus_ptr)) {
		head = frame_move(q->scx.dsq_vtime, FRAME_SHARED, cpu);
		if (vtime_before(head, vtime))
			vtime = head;
	}
	q = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (q && vtime_before(q->scx.dsq_vtime, vtime))
		vtime = q->scx.dsq_vtime;
	if (cpu >= 0 && cpu < FLOOR_MAX_CPUS &&
	    vtime_before(cpu_vnow[cpu & (FLOOR_MAX_CPUS - 1)], vtime))
		cpu_vnow[cpu & (FLOOR_MAX_CPUS - 1)] = vtime;
	if (vtime_before(vtime_now, vtime))
		vtime_now = vtime;
	return vtime;
}

/*
 * Moves up to FLOOR_STARVE_MAX_RESCUE tasks of DSQ dsq that may run on cpu
 * and have waited FLOOR_STARVE_MS or longer (task_ctx.wait_since_ns; a task
 * without one gets one, its wait starting now) to cpu's local DSQ; returns
 * how many. Walks the whole DSQ from its tail (the highest vtime: where a
 * low-weight task that waits too long sits; when everybody has waited that
 * long, the head would only take the tasks vtime order takes next anyway).
 * Called at most every FLOOR_STARVE_SCAN_MS.
 */
static __always_inline u32 starve_rescue(u64 dsq, s32 cpu, u64 now, u32 done)
{
	struct task_struct *p;
	struct task_ctx *tc;

	bpf_for_each(scx_dsq, p, dsq, SCX_DSQ_ITER_REV) {
		if (done >= FLOOR_STARVE_MAX_RESCUE)
			break;
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		tc = task_ctx_of(p);
		if (!tc || (s64)(now - tc->wait_since_ns) < (s64)(FLOOR_STARVE_MS * 1000000ULL))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			done++;
	}
	return done;
}

/*
 * A timer due this little before a run's expiry ends the run rather than
 * being re-armed for the rest: a sixty-fourth of the slice, at most 10 us.
 */
static __always_inline u64 timer_early_ns(u64 slice)
{
	return slice / 64 < 10000 ? slice / 64 : 10000;
}

/*
 * Makes cpu's slice timer fire at at_ns, unless it is pending to fire no
 * later: the callback then re-arms it for the run in progress (below). A
 * CPU switching between short runs (pipe ping-pong) thus writes its timer
 * about once a slice, not once a run; each write is an hrtimer dequeue,
 * enqueue and often a clock event reprogram. Called with IRQs off on cpu or
 * from the timer's callback there, so the two never interleave.
 */
static __always_inline void slice_timer_arm(struct slice_ctx *sc, s32 cpu, u64 now, u64 at_ns)
{
	struct floor_cpu_stat *st = cpu_stat(cpu);
	u64 delay = at_ns > now ? at_ns - now : 1;

	if (now < sc->armed_ns && sc->armed_ns <= at_ns)
		return;
	if (bpf_timer_start(&sc->timer, delay, BPF_F_TIMER_CPU_PIN)) {
		sc->armed_ns = 0;
		return;
	}
	sc->armed_ns = now + delay;
	if (st)
		st->nr_timer_arms++;
}

/*
 * Whether the scheduler tick on sc's CPU may arm the timer for a run due at
 * at_ns instead of the caller arming it now: the tick period is known and
 * the next tick comes a margin (an eighth of the period) before at_ns. The
 * tick keeps running under a task with a finite slice (the kernel stops it
 * only for SCX_SLICE_INF), keeps its phase across idle (tick_nohz_restart()
 * forwards the last tick), and ops.tick() arms the timer then, or ends the
 * run if it is due (floor_tick()). Runs that block or are preempted before
 * the tick thus cost no timer write and no expiry: under pipe ping-pong or
 * a task woken every millisecond next to a hog, most runs.
 */
static __always_inline bool tick_arms(struct slice_ctx *sc, u64 now, u64 at_ns)
{
	u64 t = sc->tick_ns, last = sc->tick_last_ns, next;

	if (!t || !last || now < last || now - last > 8 * t)
		return false;
	next = last + ((now - last) / t + 1) * t;
	return next + t / 8 < at_ns;
}

static int slice_timer_fn(void *map, int *key, struct slice_ctx *sc)
{
	s32 cpu = *key;
	struct floor_cpu_stat *st = cpu_stat(cpu);
	u64 now = bpf_ktime_get_ns();

	sc->armed_ns = 0;
	/* No run in progress: the one it was armed for ended (blocked, preempted). */
	if (!sc->started_ns)
		return 0;
	/* Armed by an earlier run: the one in progress is due later. */
	if (!sc->expired && now + timer_early_ns(sc->slice_ns) < sc->timer_at_ns) {
		if (!sc->deferred && !sc->short_run && !tick_arms(sc, now, sc->timer_at_ns))
			slice_timer_arm(sc, cpu, now, sc->timer_at_ns);
		return 0;
	}
	if (!sc->expired) {
		sc->expired = 1;
		sc->fired_ns = now;
	}
	if (st)
		__sync_fetch_and_add(&st->nr_timer_kicks, 1);
	/* Ends the current task's slice now, as the tick would have later. */
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return 0;
}

/*
 * A task was queued for cpu: a run there whose timer was deferred for want
 * of a waiter gets it now. On another CPU (the caller holds that CPU's
 * runqueue lock: ops.enqueue()), the timer cannot be armed from here (it is
 * pinned to the CPU that arms it, and its state is written only there), and
 * a plain kick would let the run go on untouched (the kernel keeps a task
 * with slice left without a new ops.running()). So that run ends now: vtime
 * order then picks the waiter, or the same task for a new run, whose timer
 * the waiter arms (prev_runs_on()).
 */
static __always_inline void timer_waiter(s32 cpu)
{
	struct slice_ctx *sc;
	u64 now;

	if (slice_end != FLOOR_SLICE_END_BPF_TIMER)
		return;
	sc = slice_ctx(cpu);
	if (!sc || !sc->deferred || !sc->started_ns || sc->expired || sc->short_run)
		return;
	sc->deferred = 0;
	if (cpu != bpf_get_smp_processor_id()) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		return;
	}
	now = bpf_ktime_get_ns();
	/*
	 * Already due: ended now (expired 3), not by a timer armed in the
	 * past, whose expiry would teach lat_est_ns the time the run went on
	 * unwatched rather than the timer's latency.
	 */
	if (now + timer_early_ns(sc->slice_ns) >= sc->timer_at_ns) {
		sc->expired = 3;
		sc->fired_ns = now;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		return;
	}
	if (!tick_arms(sc, now, sc->timer_at_ns))
		slice_timer_arm(sc, cpu, now, sc->timer_at_ns);
}

/*
 * Whether a normal task waits for cpu: in its local DSQ, its own DSQ, or the
 * shared one. The caller may run on another CPU (ops.running() of a task
 * whose class changed in place, from the CPU that changed it).
 */
static __always_inline bool cpu_has_waiters(s32 cpu)
{
	return scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0 || scx_bpf_dsq_nr_queued(cpu) > 0 ||
	       scx_bpf_dsq_nr_queued(FLOOR_SHARED_DSQ) > 0;
}

/*
 * A run whose slice is due at due_ns starts on cpu at now: tell its
 * slice-end thread, and wake it if it is parked or would wake too late.
 * len_ns is what a run with a whole slice gets before it is due; with the
 * gap from the thread's last sleep to a run start, the thread's prediction.
 *
 * A parked thread is not woken for a run that nobody waits behind (the
 * CPU's DSQ, its local DSQ and the shared DSQ empty): ending that slice
 * would only give the CPU back to the same task. On a nohz_full CPU where a
 * kernel thread runs now and then, each such run cost two wake-ups of the
 * thread (the run's start and its due time). A task queued for the CPU
 * later wakes it (slicer_waiter()).
 */
static __always_inline void slicer_arm(s32 cpu, u64 now, u64 due_ns, u64 len_ns)
{
	struct floor_slicer *sl = slicer(cpu);
	u64 slept, gap;

	if (!sl)
		return;
	sl->due_ns = due_ns;
	sl->len_ns = len_ns;
	sl->nr_starts++;
	slept = sl->slept_ns;
	if (slept) {
		sl->slept_ns = 0;
		gap = now > slept ? now - slept : 0;
		if (gap < len_ns)
			sl->gap_ns = (u64)((s64)sl->gap_ns + ((s64)gap - (s64)sl->gap_ns) / 8);
	}
	if (sl->wake_ns && sl->wake_ns <= due_ns + slicer_slack(len_ns))
		return;
	if (!sl->wake_ns && !cpu_has_waiters(cpu)) {
		if (!__sync_lock_test_and_set(&slicer_deferred[cpu & (FLOOR_MAX_CPUS - 1)], 1))
			__sync_fetch_and_add(&nr_slicers_deferred, 1);
		return;
	}
	sl->wake_ns = due_ns;
	slicer_wake_up(cpu);
}

/*
 * The run on cpu stops. A task still runnable whose slice is due (or nearly:
 * the slice-end thread's wake-up preempted it) gets no slice left, so the
 * kernel hands it to ops.enqueue() instead of back to the head of the local
 * DSQ; the thread has nothing to end once the run is over.
 */
static __always_inline void slicer_stopping(struct task_struct *p, s32 cpu,
					    struct slice_ctx *sc, bool runnable, u64 now)
{
	struct floor_slicer *sl = slicer(cpu);

	/* (the kernel charged the run before this: a slice used up reads 0) */
	if (runnable && !sc->expired &&
	    (!p->scx.slice || now + slicer_slack(sc->slice_ns) >= sc->timer_at_ns)) {
		p->scx.slice = 0;
		sc->expired = 1;
	}
	if (sl && (!runnable || !p->scx.slice))
		sl->due_ns = 0;
}

/*
 * The slice timer of the run of p that starts on cpu (sc->timer_at_ns set),
 * armed only where a run may need it before the tick could act:
 * - p blocked within a quarter slice last time (task_ctx.blocked_early):
 *   left to the tick, which arms it once the run has lasted a quarter
 *   slice, or ends the run if it is due. A run that lasts its whole slice
 *   with no tick in it ends at the first tick after it is due: at most a
 *   tick period late, once per task that stops blocking early.
 * - nobody waits for cpu: ending the slice would give the CPU back to p.
 *   The first task queued for cpu arms it (timer_waiter()).
 * - otherwise armed now, unless a tick comes first (tick_arms()).
 * A timer armed for a run that then blocks or is preempted still fires (an
 * interrupt, a softirq and a clock event write or two); under the emulator
 * those made hackbench 10-25% slower and a SCHED_OTHER cyclictest's p99 1.2x
 * (docs/design.md, Decisions: "The slice timer only where a run needs it").
 */
static __always_inline void slice_timer_run(struct task_struct *p, struct slice_ctx *sc, s32 cpu)
{
	struct task_ctx *tc = bpf_task_storage_get(&task_ctxs, p, 0, 0);

	sc->deferred = 0;
	sc->short_run = tc && tc->blocked_early;
	if (sc->short_run)
		return;
	/*
	 * From another CPU (a class change in place, made there), the timer,
	 * pinned to the CPU that arms it, cannot be armed for cpu: cpu's tick
	 * arms it once a task waits (floor_tick()).
	 */
	if (!cpu_has_waiters(cpu) || cpu != bpf_get_smp_processor_id()) {
		sc->deferred = 1;
		return;
	}
	if (!tick_arms(sc, sc->started_ns, sc->timer_at_ns))
		slice_timer_arm(sc, cpu, sc->started_ns, sc->timer_at_ns);
}

/*
 * The boosted run in progress on sc's CPU, of p, ends: its run time as the
 * kernel charged it (se.sum_exec_runtime since the run began) goes to the
 * CPU's normal and boosted run time and to p's boost slot. blocked: p
 * blocked, and its server is woken to hand its share on (ahead: the task
 * the CPU runs next, see server_kick()).
 */
static __always_inline void boost_run_end(struct slice_ctx *sc, struct floor_cpu_stat *st,
					  struct task_struct *p, bool blocked,
					  const struct task_struct *ahead)
{
	struct floor_boost_slot *slot;
	u64 d = p->se.sum_exec_runtime > sc->boost_exec_start_ns ?
		p->se.sum_exec_runtime - sc->boost_exec_start_ns : 0;

	sc->boost_started_ns = 0;
	sc->boost_pid = 0;
	/*
	 * Read apart, the open run gone and its time not yet added, the CPU's
	 * delivered time is short by the whole boosted run (hundreds of ms)
	 * for a step, and the server boosts again for it.
	 */
	stat_write_begin(st);
	st->boost_since_ns = 0;
	st->normal_runtime_ns += d;
	st->boosted_runtime_ns += d;
	if (p->flags & PF_KTHREAD)
		st->kthread_runtime_ns += d;
	stat_write_end(st);
	slot = boost_slot(sc->boost_slot);
	if (slot && slot->pid == p->pid) {
		__sync_fetch_and_add(&slot->seq, 1);
		slot->runtime_ns += d;
		slot->run_since_ns = 0;
		if (blocked)
			slot->blocked = 1;
		__sync_fetch_and_add(&slot->seq, 1);
		if (blocked)
			server_kick(sc->boost_slot / FLOOR_SLOTS_PER_CPU, ahead);
	}
}

/* A run of p begins on its CPU (ops.running(), or a run kept on, below). */
static __always_inline void run_begin(struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct slice_ctx *sc = slice_ctx(cpu);
	struct floor_cpu_stat *st = cpu_stat(cpu);
	struct cur_run *r = cur_run(cpu);
	u64 lead, slice = cpu_slice(cpu), head;

	/* Its vtime, from the DSQ it was queued on (or stolen from), is cpu's now. */
	if (cpu >= 0)
		task_frame_set(p, (u64)cpu);
	head = vtime_now_advance(cpu, p->scx.dsq_vtime);
	/* A task queued at the front runs on its own vtime. */
	p->scx.dsq_vtime = task_vtime(p, true);
	/*
	 * Not more than a slice behind cpu's clock, as ops.enqueue() places
	 * every task it queues: a task put straight into a local DSQ (woken
	 * onto an idle CPU in ops.select_cpu(), a per-CPU kthread) skipped
	 * that, and with the vtime it had before a long sleep it would run on
	 * at every slice end (prev_runs_on()) and no waking task could
	 * preempt it, until the starvation guard rescued the others.
	 */
	if (cpu >= 0) {
		u64 lowest = frame_clock((u64)cpu) - slice;

		if (vtime_before(p->scx.dsq_vtime, lowest))
			p->scx.dsq_vtime = lowest;
	}
	waiter_del(p);
	/* The CPU's slice may have shrunk since the task was queued. */
	if (p->scx.slice > slice)
		p->scx.slice = slice;
	if (st)
		st->last_slice_ns = p->scx.slice;
	if (st && sample_load && p->pid != policy_tid) {
		s32 own = scx_bpf_dsq_nr_queued(cpu);
		s32 local = scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu);
		s32 shared = scx_bpf_dsq_nr_queued(FLOOR_SHARED_DSQ);
		u64 on = nr_online ? nr_online : 1;

		st->nr_runnable = 1 + (own > 0 ? own : 0) + (local > 0 ? local : 0) +
				  ((shared > 0 ? (u64)shared : 0) + on - 1) / on;
	}
	if (!sc)
		return;
	/*
	 * p got its own policy back while it ran boosted (a restore made from
	 * another CPU): the kernel moved it back to this class in place, with
	 * ops.running() and no context switch, so the switch hook has not
	 * ended its boosted run. It ends here. Left open, the hook would end it
	 * at p's switch-out with exec_start_ns, which this run sets: the boosted
	 * run (hundreds of ms) was lost from the CPU's counters, its server saw
	 * that much still owed and boosted again (docs/design.md, Decisions:
	 * "A boost restored while its task runs").
	 */
	if (st && sc->boost_started_ns && sc->boost_pid == p->pid)
		boost_run_end(sc, st, p, false, p);
	sc->started_ns = bpf_ktime_get_ns();
	if (r) {
		r->vtime = p->scx.dsq_vtime;
		r->weight = p->scx.weight;
		/*
		 * More than a slice ahead of the queues' head: a task the
		 * starvation guard rescued (or a per-CPU kthread put straight
		 * into the local DSQ). Any waking sleeper would preempt it at
		 * once and a rescued task then waits another second
		 * (docs/design.md, Decisions: "Starvation guard").
		 */
		r->out_of_order = vtime_before(head + slice, p->scx.dsq_vtime);
		r->since_ns = sc->started_ns;
	}
	sc->exec_start_ns = p->se.sum_exec_runtime;
	sc->slice_ns = p->scx.slice;
	sc->pid = p->pid;
	sc->expired = 0;
	/*
	 * A boosted task that just got its own policy back while it ran: the
	 * policy change does not reschedule, so end its slice at once and let
	 * the RT task it was boosted above have the CPU back. Once per boost
	 * (see floor_boost_slot.policy_back): later runs are the server's.
	 */
	if (nr_boosted && policy_back_first(p)) {
		sc->expired = 2;
		/* (The restore may come from another CPU: its timer is not cpu's.) */
		if (slice_end == FLOOR_SLICE_END_BPF_TIMER && cpu == bpf_get_smp_processor_id())
			slice_timer_arm(sc, cpu, sc->started_ns, sc->started_ns);
		else
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		return;
	}
	if (slice_end == FLOOR_SLICE_END_TICK)
		return;
	/*
	 * p->scx.slice is the rest of this task's slice (all of it, unless a
	 * higher class interrupted it).
	 */
	lead = timer_lead_ns >= 0 ? (u64)timer_lead_ns : sc->lat_est_ns;
	if (lead > sc->slice_ns - sc->slice_ns / 8)
		lead = sc->slice_ns - sc->slice_ns / 8;
	sc->timer_at_ns = sc->started_ns + sc->slice_ns - lead;
	if (slice_end == FLOOR_SLICE_END_BPF_TIMER) {
		slice_timer_run(p, sc, cpu);
	} else {
		lead = timer_lead_ns >= 0 ? (u64)timer_lead_ns : sc->lat_est_ns;
		if (lead > slice - slice / 8)
			lead = slice - slice / 8;
		slicer_arm(cpu, sc->started_ns, sc->timer_at_ns, slice - lead);
	}
}

/* The run of p on its CPU ends (ops.stopping(), or a run kept on, below). */
static __always_inline void run_end(struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct slice_ctx *sc = slice_ctx(cpu);
	struct floor_cpu_stat *st = cpu_stat(cpu);
	u64 now = bpf_ktime_get_ns(), ran, over, exec;
	struct cur_run *r = cur_run(cpu);

	if (r)
		r->since_ns = 0;
	if (!sc || !st || !sc->started_ns)
		return;
	if (slice_end == FLOOR_SLICE_END_THREAD)
		slicer_stopping(p, cpu, sc, runnable, now);
	ran = now > sc->started_ns ? now - sc->started_ns : 0;
	sc->started_ns = 0;
	/*
	 * Run time as the kernel charges it (se.sum_exec_runtime, without IRQ
	 * time when IRQ_TIME_ACCOUNTING is on, as /proc/PID/schedstat shows
	 * it); the slice statistics below use wall-clock time.
	 */
	exec = p->se.sum_exec_runtime > sc->exec_start_ns ? p->se.sum_exec_runtime - sc->exec_start_ns : 0;
	if (p->flags & PF_KTHREAD) {
		/* a kthread's run counts out of the floor: both or neither */
		stat_write_begin(st);
		st->normal_runtime_ns += exec;
		st->kthread_runtime_ns += exec;
		stat_write_end(st);
	} else {
		st->normal_runtime_ns += exec;
	}
	st->nr_runs++;
	st->runlen_hist[hist_bucket(ran) & (FLOOR_HIST_BUCKETS - 1)]++;

	/* Still runnable with no slice left: the slice expired (timer or tick). */
	if (runnable && sc->expired != 2 && (sc->expired || p->scx.slice == 0)) {
		/* Learn the timer's latency from the runs it ended. */
		if (sc->expired == 1 && now > sc->timer_at_ns) {
			u64 sample = now - sc->timer_at_ns, cap = 2 * sc->lat_est_ns + 20000;
			s64 err;

			if (sample > cap)
				sample = cap;
			err = (s64)sample - (s64)sc->lat_est_ns;

			sc->lat_est_ns = (u64)((s64)sc->lat_est_ns + err / 8);
			st->timer_lat_ns = sc->lat_est_ns;
			if (sc->expired == 1 && sc->fired_ns >= sc->timer_at_ns && now >= sc->fired_ns) {
				st->nr_timer_ended++;
				st->timer_fire_delay_sum_ns += sc->fired_ns - sc->timer_at_ns;
				st->timer_switch_delay_sum_ns += now - sc->fired_ns;
			}
		}
		over = ran > sc->slice_ns ? ran - sc->slice_ns : 0;
		st->nr_slice_expired++;
		st->overshoot_sum_ns += over;
		if (over > st->overshoot_max_ns)
			st->overshoot_max_ns = over;
		st->overshoot_hist[hist_bucket(over) & (FLOOR_HIST_BUCKETS - 1)]++;
	}

	/*
	 * The wait ends with a run that was not cut short: one that used up its
	 * slice (or yielded it), blocked, or ran at least half a slice. A run a
	 * higher class preempted early (slice left) does not end it.
	 */
	{
		struct task_ctx *tc = task_ctx_of(p);

		if (tc) {
			if (!runnable || !p->scx.slice || ran >= cpu_slice(cpu) / 2)
				tc->wait_since_ns = now;
			tc->blocked_early = !runnable && ran < cpu_slice(cpu) / 4;
		}
	}

	/* Charge the run to the task's vtime, scaled by its weight (100 = nice 0). */
	p->scx.dsq_vtime += vtime_charge(ran, p->scx.weight);
}

void BPF_STRUCT_OPS(floor_running, struct task_struct *p)
{
	run_begin(p);
}

void BPF_STRUCT_OPS(floor_stopping, struct task_struct *p, bool runnable)
{
	run_end(p, runnable);
}

/*
 * A scheduler tick on p's CPU while p runs there. Learns the tick's period
 * (ns per jiffy: first over 100 ms of ticks, within a jiffy in 25 at HZ=250,
 * then over each second) and phase, then arms the
 * slice timer for a run that tick_arms() left to the tick, or ends the run
 * here if it is due: the kernel reschedules after ops.tick() when the slice
 * reads 0 (task_tick_scx() in kernel/sched/ext.c).
 */
void BPF_STRUCT_OPS(floor_tick, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct slice_ctx *sc;
	u64 now, j;

	relay_run();
	if (slice_end != FLOOR_SLICE_END_BPF_TIMER)
		return;
	sc = slice_ctx(cpu);
	if (!sc)
		return;
	now = bpf_ktime_get_ns();
	j = bpf_jiffies64();
	sc->tick_last_ns = now;
	if (!sc->tick_ref_ns || j <= sc->tick_ref_jiffies) {
		sc->tick_ref_ns = now;
		sc->tick_ref_jiffies = j;
	} else if (now - sc->tick_ref_ns >= (sc->tick_ns ? 1000000000ULL : 100000000ULL)) {
		sc->tick_ns = (now - sc->tick_ref_ns) / (j - sc->tick_ref_jiffies);
		sc->tick_ref_ns = now;
		sc->tick_ref_jiffies = j;
	}
	if (!sc->started_ns || sc->pid != p->pid || sc->expired)
		return;
	if (sc->deferred) {
		if (!cpu_has_waiters(cpu))
			return;
		sc->deferred = 0;
	}
	/*
	 * Due (timer_at_ns, the slice less the timer's lead): end it here
	 * (expired 3: no timer latency to learn from).
	 */
	if (now + timer_early_ns(sc->slice_ns) >= sc->timer_at_ns) {
		struct floor_cpu_stat *st = cpu_stat(cpu);

		sc->expired = 3;
		sc->fired_ns = now;
		p->scx.slice = 0;
		if (st)
			__sync_fetch_and_add(&st->nr_tick_ends, 1);
		return;
	}
	if (sc->short_run) {
		if (now - sc->started_ns < sc->slice_ns / 4)
			return;
		sc->short_run = 0;
	}
	if (!tick_arms(sc, now, sc->timer_at_ns))
		slice_timer_arm(sc, cpu, now, sc->timer_at_ns);
}

/*
 * Starvation guard: vtime order first, but no queued task waits much longer
 * than FLOOR_STARVE_MS (see intf.h). At most every FLOOR_STARVE_SCAN_MS per
 * CPU, the tasks queued past the limit in the CPU's own DSQ and the shared
 * one move to its local DSQ. Returns true when it moved some and the CPU
 * has something to run: the dispatch is done.
 */
static __always_inline bool starve_guard(s32 cpu)
{
	struct floor_cpu_stat *st;
	u32 idx = cpu, n;
	u64 now;

	/* Unsigned: a negative cpu fails too, and the index is zero-extended. */
	if (idx >= FLOOR_MAX_CPUS)
		return false;
	now = bpf_ktime_get_ns();
	if (now - starve_scan_ns[idx] < FLOOR_STARVE_SCAN_MS * 1000000ULL)
		return false;
	starve_scan_ns[idx] = now;
	n = starve_rescue(cpu, cpu, now, 0);
	n = starve_rescue(FLOOR_SHARED_DSQ, cpu, now, n);
	if (!n)
		return false;
	st = cpu_stat(cpu);
	if (st)
		st->nr_starve_rescue += n;
	/*
	 * A task moved from another CPU's runqueue may have been dequeued
	 * meanwhile: done only if this CPU has something to run.
	 */
	return scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) != 0;
}

/*
 * Moves the tasks that may run elsewhere out of the DSQs of the CPUs marked
 * by drain_request() into the shared DSQ, each at its DSQ key. Pinned tasks
 * stay: their CPU's server serves them.
 */
static __always_inline void spread_drain(void)
{
	u32 i, n = scx_bpf_nr_cpu_ids();
	struct task_struct *p;
	struct task_ctx *tc;
	bool moved = false;
	u64 from;

	bpf_for(i, 0, n) {
		struct floor_cpu_stat *st;
		u32 why;

		if (i >= FLOOR_MAX_CPUS)
			break;
		if (!drain_wanted[i])
			continue;
		why = __sync_lock_test_and_set(&drain_wanted[i], 0);
		if (!why)
			continue;
		__sync_fetch_and_sub(&nr_drain, 1);
		/* A higher class that already left: the CPU dispatches its own. */
		st = cpu_stat(i);
		if (why == DRAIN_HELD && st && !st->hi_running)
			continue;
		bpf_for_each(scx_dsq, p, i, 0) {
			if (only_this_cpu(p))
				continue;
			/*
			 * Its lag on CPU i's clock becomes its lag on the shared
			 * one (a queued task's dsq_vtime is the DSQ's key: the
			 * move sets it).
			 */
			tc = task_ctx_of(p);
			from = tc ? tc->frame : FRAME_SHARED;
			scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER,
						   frame_move(p->scx.dsq_vtime, from, FRAME_SHARED));
			if (!scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, FLOOR_SHARED_DSQ, 0))
				continue;
			moved = true;
			if (tc && from != FRAME_SHARED)
				task_ctx_frame_set(tc, FRAME_SHARED);
		}
	}
	/* They wait in the shared DSQ now: runs elsewhere have slices to end. */
	if (moved)
		slicer_waiter_any();
}

/*
 * Takes the first task that may run on cpu from another CPU's DSQ, looking
 * from cpu + 1 on so that idle CPUs do not all pull from the same one.
 * O(nr_cpu_ids) DSQ lookups when nothing is queued anywhere; called only
 * when cpu has nothing of its own to run. Skips CPUs a higher class holds:
 * their DSQs hold pinned waiters, which the kernel would walk only to find
 * none it may move here; the others spread_drain() moves to the shared DSQ
 * at the start of a dispatch.
 */
static __always_inline bool steal(s32 cpu)
{
	u32 i, n = scx_bpf_nr_cpu_ids();

	bpf_for(i, 1, n) {
		u32 c = ((u32)cpu + i) % n;
		struct floor_cpu_stat *st = cpu_stat(c);

		if (st && st->hi_running)
			continue;
		if (scx_bpf_dsq_nr_queued(c) > 0 && scx_bpf_dsq_move_to_local(c, 0))
			return true;
	}
	return false;
}

/*
 * Whether prev, still runnable at the end of its slice, runs on ahead of
 * the heads own (this CPU's DSQ) and shared (the shared DSQ's). The kernel
 * calls ops.dispatch() before it puts prev back (ops.enqueue() follows
 * only if another task is picked), so prev is in no DSQ here: taking the
 * heads alone would hand the CPU to the next task at every slice end
 * whatever the weights, and two CPU-bound tasks at nice -5 and nice 0
 * would alternate 50/50. prev runs on while its vtime, charged for this
 * run so far (as run_end() will charge it), is still before every head it
 * competes with; a tie goes to the head.
 */
static __always_inline bool prev_runs_on(s32 cpu, struct task_struct *prev,
					 struct task_struct *own, struct task_struct *shared)
{
	struct slice_ctx *sc = slice_ctx(cpu);
	bool ahead = false;
	u64 now, ran, v;

	/* expired 2: a boost's end gives the CPU back to the RT task at once. */
	if (!sc || !sc->started_ns || sc->pid != prev->pid || sc->expired == 2)
		return false;
	now = bpf_ktime_get_ns();
	ran = now > sc->started_ns ? now - sc->started_ns : 0;
	v = prev->scx.dsq_vtime + vtime_charge(ran, prev->scx.weight);
	if (own) {
		if (!vtime_before(v, own->scx.dsq_vtime))
			return false;
		ahead = true;
	}
	if (shared && bpf_cpumask_test_cpu(cpu, shared->cpus_ptr)) {
		if (!vtime_before(v, frame_move(shared->scx.dsq_vtime, FRAME_SHARED, cpu)))
			return false;
		ahead = true;
	}
	/* Nothing to compete with: the caller looks further (steal()). */
	return ahead;
}

/* prev's run goes on with a new slice, counted and timed as a new run. */
static __always_inline void prev_keep(s32 cpu, struct task_struct *prev)
{
	run_end(prev, true);
	prev->scx.slice = cpu_slice(cpu);
	run_begin(prev);
}

void BPF_STRUCT_OPS(floor_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *own, *shared;
	bool own_first;

	relay_run();
	if (percpu_dsq && spread_drain_on && nr_drain)
		spread_drain();
	if (starve_guard(cpu))
		return;

	/* Take the lower vtime of the CPU's own DSQ and the shared one. */
	own = __COMPAT_scx_bpf_dsq_peek(cpu);
	shared = __COMPAT_scx_bpf_dsq_peek(FLOOR_SHARED_DSQ);
	own_first = own && (!shared || vtime_before(own->scx.dsq_vtime,
						    frame_move(shared->scx.dsq_vtime,
							       FRAME_SHARED, cpu)));
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && prev_runs_on(cpu, prev, own, shared)) {
		/*
		 * Not over a task put in the local DSQ meanwhile (SCX_ENQ_PREEMPT
		 * from another CPU while this dispatch ran: the kernel does not
		 * reschedule a CPU in balance, and keeps prev if it has a slice).
		 */
		if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) <= 0)
			prev_keep(cpu, prev);
		return;
	}

	if (scx_bpf_dsq_move_to_local(own_first ? cpu : FLOOR_SHARED_DSQ, 0) ||
	    scx_bpf_dsq_move_to_local(own_first ? FLOOR_SHARED_DSQ : cpu, 0))
		return;
	if (percpu_dsq && steal(cpu))
		return;
	/*
	 * Nothing else may run here: the task whose slice ended runs on with a
	 * new one, counted and timed as a new run. Were it dropped instead,
	 * the pick would find nothing, and when the kernel's ext_server (a
	 * dl_server) is the one picking, it stops on an empty pick and, as
	 * the task never leaves the runqueue, is not started again: under an
	 * RT hog it then serves almost none of its runtime (docs/design.md,
	 * Decisions: "A lone task keeps running in `ops.dispatch()`").
	 */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) <= 0)
		prev_keep(cpu, prev);
}

void BPF_STRUCT_OPS(floor_enable, struct task_struct *p)
{
	struct task_ctx *rs = task_ctx_of(p);

	/*
	 * Back in sched_ext (after a boost, say): a vtime stashed while it
	 * queued at the front before it left must not override this one. Its
	 * wait starts now.
	 */
	if (rs) {
		rs->valid = 0;
		rs->wait_since_ns = bpf_ktime_get_ns();
		rs->frame = FRAME_SHARED;
	}
	p->scx.dsq_vtime = vtime_now;
}

/* Leaving our queues without running (property change), or sched_ext. */
void BPF_STRUCT_OPS(floor_dequeue, struct task_struct *p, u64 deq_flags)
{
	waiter_del(p);
}

void BPF_STRUCT_OPS(floor_disable, struct task_struct *p)
{
	waiter_del(p);
}

/* Implemented so that CPU hotplug does not force a scheduler restart. */
void BPF_STRUCT_OPS(floor_cpu_online, s32 cpu)
{
	if (cpu >= 0 && cpu < FLOOR_MAX_CPUS)
		cpu_hp_state[cpu & (FLOOR_MAX_CPUS - 1)] = FLOOR_CPU_CAME_UP;
	__sync_fetch_and_add(&nr_cpu_hotplug, 1);
	__sync_fetch_and_add(&nr_online, 1);
	server_kick(cpu, bpf_get_current_task_btf());
}

void BPF_STRUCT_OPS(floor_cpu_offline, s32 cpu)
{
	struct floor_cpu_stat *st = cpu_stat(cpu);
	struct cur_run *r = cur_run(cpu);

	if (cpu >= 0 && cpu < FLOOR_MAX_CPUS)
		cpu_hp_state[cpu & (FLOOR_MAX_CPUS - 1)] = FLOOR_CPU_WENT_DOWN;
	__sync_fetch_and_add(&nr_cpu_hotplug, 1);
	if (nr_online > 1)
		__sync_fetch_and_sub(&nr_online, 1);
	if (r)
		r->since_ns = 0;
	/*
	 * Nothing runs here until the CPU is back: close its starvation
	 * interval and wake its server, which parks until then.
	 */
	if (st) {
		if (__sync_lock_test_and_set(&st->hi_running, 0))
			__sync_fetch_and_sub(&nr_hi_cpus, 1);
		starve_close(st, bpf_ktime_get_ns());
	}
	/* An offline CPU does not dispatch: its DSQ's tasks that may run elsewhere move. */
	if (percpu_dsq)
		drain_request(cpu, DRAIN_OFFLINE);
	/* On PREEMPT_RT another CPU writes it (irq_work_held_here()). */
	server_kick(cpu, bpf_get_current_task_btf());
}

/*
 * Every context switch on every CPU: accounting of higher-class time and of
 * boosted runs, and moving queued tasks away from a CPU a higher class took.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct floor_cpu_stat *st;
	struct slice_ctx *sc;
	bool next_hi, prev_waits;
	struct floor_boost_slot *slot;
	u32 next_pid = next->pid, *slot_idx;
	s32 nr_local;
	u64 now;

	if (!floor_enabled)
		return 0;
	st = cpu_stat(cpu);
	sc = slice_ctx(cpu);
	if (!st || !sc)
		return 0;
	now = bpf_ktime_get_ns();

	/* The boosted run of prev ends. */
	if (sc->boost_started_ns)
		boost_run_end(sc, st, prev, prev_state != TASK_RUNNING, next);
	/*
	 * Boosted tasks run at SCHED_DEADLINE or SCHED_FIFO: look up only those.
	 * scx_floor's own server threads (FIFO 99, microseconds at a time) do
	 * not change the CPU's state: they serve normal tasks, not starve them.
	 */
	next_hi = is_higher_class(next);
	if (next_hi && bpf_map_lookup_elem(&agent_tids, &next_pid))
		return 0;	/* the CPU's state is whatever it was */
	slot_idx = next_hi ? boost_slot_of(next) : NULL;
	if (slot_idx) {
		sc->boost_started_ns = now;
		sc->boost_exec_start_ns = next->se.sum_exec_runtime;
		sc->boost_slot = *slot_idx;
		sc->boost_pid = next_pid;
		st->boost_since_ns = now;
		slot = boost_slot(*slot_idx);
		if (slot && slot->pid == next_pid) {
			__sync_fetch_and_add(&slot->seq, 1);
			slot->run_since_ns = now;
			slot->blocked = 0;
			__sync_fetch_and_add(&slot->seq, 1);
			slot->policy_back = 0;
		}
		next_hi = false;
	}

	if (!next_hi) {
		if (st->hi_running) {
			st->hi_running = 0;
			__sync_fetch_and_sub(&nr_hi_cpus, 1);
		}
		starve_close(st, now);
		return 0;
	}

	if (!st->hi_running) {
		struct task_struct *p;
		bool spread = false;

		st->hi_running = 1;
		__sync_fetch_and_add(&nr_hi_cpus, 1);
		/*
		 * Tasks that queued here before the higher class came are now
		 * waiters. Those that may run elsewhere are moved to the shared
		 * DSQ by the next dispatch on any CPU; an idle one is woken for it.
		 */
		bpf_for_each(scx_dsq, p, cpu, 0) {
			waiter_add(p, cpu, now);
			if (percpu_dsq && !spread && !only_this_cpu(p)) {
				s32 idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

				spread = true;
				drain_request(cpu, DRAIN_HELD);
				if (idle >= 0)
					scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
			}
		}
	}
	st->hi_pid = next_pid;
	st->hi_prio = next->rt_priority;
	st->hi_policy = next->policy;
	/* A normal task preempted here stays runnable on this CPU's local DSQ. */
	prev_waits = prev->pid && prev_state == TASK_RUNNING && !is_higher_class(prev);
	if (prev_waits || scx_bpf_dsq_nr_queued(cpu) > 0 ||
	    scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu) > 0)
		starve_open(st, cpu, now, next);
	/*
	 * The local DSQ is stuck behind the higher class: hand its tasks back
	 * to floor_enqueue() (SCX_ENQ_REENQ), which moves those allowed on
	 * another CPU to the shared DSQ and wakes an idle CPU for them.
	 *
	 * Unless prev alone waits there (put back at its head by the kernel,
	 * which it does only for a task with slice left; with none, it went
	 * through floor_enqueue() and the one task there is another) and may
	 * run nowhere else: floor_enqueue() would only move it to
	 * this CPU's DSQ, and the dispatch after the higher class leaves would
	 * move it back. It is listed as a waiter here instead, as
	 * floor_enqueue() lists it, and runs next from the local DSQ. A
	 * pinned task beside an RT task that wakes often (an isolated CPU's
	 * usual set) saves an ops.enqueue() and an ops.dispatch() per RT run.
	 */
	nr_local = scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu);
	if (prev_waits && nr_local == 1 && prev->scx.slice && only_this_cpu(prev)) {
		waiter_add(prev, cpu, now);
		return 0;
	}
	if (prev_waits || nr_local > 0)
		scx_bpf_reenqueue_local_from_anywhere();
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(floor_init)
{
	u32 nr_cpus = scx_bpf_nr_cpu_ids();
	struct slice_ctx *sc;
	s32 ret;
	u32 i;

	if (nr_cpus > FLOOR_MAX_CPUS) {
		scx_bpf_error("%u CPUs, scx_floor supports %d", nr_cpus, FLOOR_MAX_CPUS);
		return -E2BIG;
	}
	ret = scx_bpf_create_dsq(FLOOR_SHARED_DSQ, -1);
	if (ret)
		return ret;
	{
		const struct cpumask *online = scx_bpf_get_online_cpumask();

		nr_online = bpf_cpumask_weight(online);
		scx_bpf_put_cpumask(online);
	}
	bpf_for(i, 0, nr_cpus) {
		ret = scx_bpf_create_dsq(i, -1);
		if (ret)
			return ret;
		if (slice_end != FLOOR_SLICE_END_BPF_TIMER)
			continue;
		sc = slice_ctx(i);
		if (!sc)
			return -ENOENT;
		ret = bpf_timer_init(&sc->timer, &slice_ctxs, CLOCK_MONOTONIC);
		if (ret)
			return ret;
		ret = bpf_timer_set_callback(&sc->timer, slice_timer_fn);
		if (ret)
			return ret;
	}
	floor_enabled = true;
	return 0;
}

void BPF_STRUCT_OPS(floor_exit, struct scx_exit_info *ei)
{
	floor_enabled = false;
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(floor_ops,
	       .select_cpu = (void *)floor_select_cpu,
	       .enqueue = (void *)floor_enqueue,
	       .dispatch = (void *)floor_dispatch,
	       .running = (void *)floor_running,
	       .stopping = (void *)floor_stopping,
	       .tick = (void *)floor_tick,
	       .enable = (void *)floor_enable,
	       .dequeue = (void *)floor_dequeue,
	       .disable = (void *)floor_disable,
	       .cpu_online = (void *)floor_cpu_online,
	       .cpu_offline = (void *)floor_cpu_offline,
	       .init = (void *)floor_init,
	       .exit = (void *)floor_exit,
	       .timeout_ms = FLOOR_WATCHDOG_TIMEOUT_MS,
	       .name = "scx_floor");
