/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * intf.h - the contract between scx_floor's BPF dispatcher and its Rust side.
 *
 * Everything here is read by both: the BPF program includes it, and build.rs
 * runs bindgen on it so that src/ sees the same constants and struct layouts.
 * All times are in nanoseconds of CLOCK_MONOTONIC (bpf_ktime_get_ns()).
 */
#ifndef __SCX_FLOOR_INTF_H
#define __SCX_FLOOR_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned long long u64;
typedef unsigned int u32;
typedef int s32;
#endif

enum floor_consts {
	/* Size of the per-CPU arrays in .bss; CPUs at or above it are refused at load. */
	FLOOR_MAX_CPUS = 512,
	/*
	 * DSQ ids: CPU N owns DSQ N (vtime-ordered, for tasks that may only run
	 * on N); every other task waits in the shared vtime DSQ.
	 */
	FLOOR_SHARED_DSQ = FLOOR_MAX_CPUS,
	/* cpu_hp_state[] values: the CPU's last hotplug event since load. */
	FLOOR_CPU_WENT_DOWN = 1,
	FLOOR_CPU_CAME_UP = 2,
	/*
	 * Run-length and overshoot histograms: a value v (ns) falls in bucket
	 * 4 * floor(log2 v) + the next two bits of v below its top bit, so every
	 * power of two is split into 4 sub-buckets (each at most 25% wide).
	 * Bucket 0 holds v < 4 ns; the last bucket holds everything from 7 * 2^29 ns
	 * (3.76 s) up.
	 */
	FLOOR_HIST_SUB_BITS = 2,
	FLOOR_HIST_BUCKETS = 128,
	/*
	 * The sched_ext watchdog: a runnable task that has not run for this long
	 * makes the kernel eject the scheduler ("runnable task stall"). 10 s is
	 * ten of the longest server period scx_floor accepts (1 s): a normal task
	 * that waits that long is a scx_floor bug, not load, and the kernel
	 * taking over with its own fair class is the right outcome. It is
	 * shorter than the kernel's 30 s maximum so that such a bug is caught
	 * within one test run.
	 */
	FLOOR_WATCHDOG_TIMEOUT_MS = 10000,
	/*
	 * Entries of the BPF waiters map (normal tasks queued while a higher
	 * class holds a CPU). A waiter the full map refuses is counted
	 * (nr_waiters_dropped) and found by the policy loop's /proc scan.
	 */
	FLOOR_MAX_WAITERS = 16384,
	/*
	 * Starvation guard of the dispatcher: a queued normal task that has
	 * waited this long (ms, since it last ran) is dispatched before vtime
	 * order. Pure vtime order lets a low-weight task (nice 19 has weight 1
	 * against 100) wait for hundreds of slices of everybody else, until the
	 * watchdog ejects the scheduler (docs/design.md, Decisions: "Starvation
	 * guard"). A tenth of the watchdog timeout.
	 */
	FLOOR_STARVE_MS = 1000,
	/* How often each CPU looks for such tasks, ms, and how many it takes
	 * at most (a power of two). */
	FLOOR_STARVE_SCAN_MS = 100,
	FLOOR_STARVE_MAX_RESCUE = 4,
	/*
	 * Boost slots per CPU: at most this many tasks boosted at once per CPU,
	 * so at most this many starving tasks served per server period. A step
	 * that leaves starving tasks out for this limit is counted (slots_full)
	 * and logged once.
	 */
	FLOOR_SLOTS_PER_CPU = 16,
	/* Upper bound of boosted tasks tracked at once (see boosted_pids). */
	FLOOR_MAX_BOOSTED = FLOOR_MAX_CPUS * FLOOR_SLOTS_PER_CPU,
};

/*
 * How slices end: the `slice_end` read-only setting of the BPF program,
 * fixed at load.
 */
enum floor_slice_end {
	/* at the first scheduler tick after the slice ran out (A/B only) */
	FLOOR_SLICE_END_TICK = 0,
	/* a per-CPU bpf_timer (an hrtimer pinned to the CPU) kicks the task */
	FLOOR_SLICE_END_BPF_TIMER = 1,
	/*
	 * A per-CPU user-space thread (SCHED_FIFO 99, pinned) sleeps until the
	 * slice is due; its wake-up preempts the task and ops.stopping() ends
	 * the slice. For kernels whose verifier refuses bpf_timer (PREEMPT_RT).
	 */
	FLOOR_SLICE_END_THREAD = 2,
};

/*
 * The slice-end thread of one CPU and the BPF side meet here (.bss, one per
 * CPU). Both sides touch a CPU's entry only from that CPU: the thread is
 * pinned there and ops.running()/ops.stopping() run there, so a context
 * switch separates every write of one side from the other's next read.
 */
struct floor_slicer {
	/* BPF: when the slice of the CPU's current run is due (its start +
	 * slice - timer lead), also while that run is preempted with slice
	 * left; 0 when no run needs ending */
	u64 due_ns;
	/* BPF: due_ns - start of the last run: what a run started right now
	 * would be given, used to predict the next due time */
	u64 len_ns;
	/* BPF: runs started on the CPU */
	u64 nr_starts;
	/* thread: its next timed wake-up; 0 while parked (no run to end):
	 * ops.running() then wakes it through its ring buffer */
	u64 wake_ns;
	/* thread: when it last went to sleep after a wake-up, ns; the BPF side
	 * clears it at the next run start */
	u64 slept_ns;
	/* BPF: from the thread going to sleep to the next run's start, EWMA
	 * (weight 1/8) over starts within len_ns of it: the prediction adds it */
	u64 gap_ns;
};

/*
 * Per-CPU accounting, written by the BPF side (only by the CPU it describes,
 * except starved_since_ns which a remote enqueue may open), read by user space.
 * Counters only grow; user space takes differences between two reads.
 */
struct floor_cpu_stat {
	/* ns run on this CPU by normal (sched_ext) tasks, and by tasks the
	 * policy loop boosted to RT/DL on behalf of normal work */
	u64 normal_runtime_ns;
	/* the part of normal_runtime_ns run by boosted tasks */
	u64 boosted_runtime_ns;
	/* the part of normal_runtime_ns run by kernel threads (boosted or not) */
	u64 kthread_runtime_ns;
	/* ns the CPU ran a higher class (RT, DL, stop) while a normal task was
	 * runnable and waiting for this CPU; closed intervals only */
	u64 starved_ns;
	/* start of the open starvation interval, or 0 when none is open */
	u64 starved_since_ns;
	/* times a higher class took the CPU while normal tasks waited for it */
	u64 nr_hi_preempt;
	/* queued normal tasks moved off this CPU when a higher class took it */
	u64 nr_hi_migrated;
	/* runs of normal tasks that ended (any reason) */
	u64 nr_runs;
	/* runs ended by the slice timer (or tick) at slice expiry */
	u64 nr_slice_expired;
	/* sum and maximum of (actual run length - slice) over expired runs */
	u64 overshoot_sum_ns;
	u64 overshoot_max_ns;
	/* slice timer callbacks that preempted a task */
	u64 nr_timer_kicks;
	/* slice timer writes (bpf_timer_start): at most one per run, and
	 * about one per slice while runs are short */
	u64 nr_timer_arms;
	/* runs the scheduler tick ended at slice expiry (ops.tick() found them
	 * due; their timer was left to that tick) */
	u64 nr_tick_ends;
	/* 1 while a higher class owns the CPU */
	u64 hi_running;
	/* the last higher-class task (not scx_floor's own threads) that ran
	 * here: pid, RT priority and policy */
	u64 hi_pid;
	u64 hi_prio;
	u64 hi_policy;
	/* the slice timer's measured latency (expiry to switch-out), EWMA, ns */
	u64 timer_lat_ns;
	/* start of the boosted run in progress on this CPU, or 0 */
	u64 boost_since_ns;
	/* set by user space: wake its server thread at the next starvation
	 * (one shot, cleared by the BPF side when it wakes it) */
	u64 kick_on_starve;
	/* normal tasks runnable on this CPU when the last one started here:
	 * the one starting, those queued in this CPU's own and local DSQs,
	 * and this CPU's share of the shared DSQ (rounded up); the slice
	 * policy's load figure, sampled in latency-target mode only (0
	 * otherwise). Runs of the policy thread are not sampled. */
	u64 nr_runnable;
	/* the slice of the last run started here, ns */
	u64 last_slice_ns;
	/* wake-ups that preempted the running task by the vtime rule */
	u64 nr_wakeup_preempt;
	/* runs the slice timer ended: sums of the delay from the time the
	 * timer was armed for to its callback (fire) and from the callback to
	 * the task's switch-out (switch); their sum is what the timer lead
	 * learns */
	u64 nr_timer_ended;
	u64 timer_fire_delay_sum_ns;
	u64 timer_switch_delay_sum_ns;
	/* queued tasks the starvation guard dispatched out of vtime order
	 * (they had waited FLOOR_STARVE_MS) */
	u64 nr_starve_rescue;
	/* tasks preempted inside an RCU read-side section that queued at the
	 * front (rcu_boost) */
	u64 nr_rcu_boost;
	/* waiters of this CPU the waiters map refused (full: FLOOR_MAX_WAITERS
	 * entries); the policy loop's /proc scan finds them while the CPU
	 * starves (lost_found) */
	u64 nr_waiters_dropped;
	/* log2 histograms (see FLOOR_HIST_*) of run lengths and overshoots, ns */
	u64 runlen_hist[FLOOR_HIST_BUCKETS];
	u64 overshoot_hist[FLOOR_HIST_BUCKETS];
	/* sequence count: odd while a writer updates fields user space reads
	 * together (normal_runtime_ns, boosted_runtime_ns, kthread_runtime_ns
	 * and boost_since_ns; starved_since_ns and starved_ns as an interval
	 * closes); its writers hold the CPU's rq lock, one at a time, except
	 * ops.cpu_offline()'s close of the interval. A reader retries until it
	 * reads the same even value before and after. */
	u64 seq;
};

/*
 * A normal task waiting in a DSQ while at least one CPU runs a higher class:
 * the candidates for the bandwidth server. Key: tid. Inserted by
 * ops.enqueue(), removed when the task runs or leaves sched_ext; user space
 * prunes entries of tasks that are gone.
 */
struct floor_waiter {
	u64 since_ns;	/* when it was queued */
	u32 cpu;	/* the CPU whose DSQ holds it (pinned), else its last CPU */
	u32 weight;	/* sched_ext weight, 100 = nice 0 */
	u32 pinned;	/* 1: may run on this CPU only */
	u32 kthread;	/* 1: a kernel thread (served before user tasks) */
	/* its start time in clock ticks since boot (USER_HZ = 100), as field 22
	 * of /proc/PID/stat shows it: tells a reused tid apart */
	u64 start_ticks;
};

/*
 * The run of one boosted task, kept by the BPF side so that the server reads
 * it from memory instead of /proc. Slot cpu * FLOOR_SLOTS_PER_CPU + i is
 * assigned by CPU cpu's server thread (it writes pid and zeroes the rest),
 * and named as the task's value in boosted_pids.
 */
struct floor_boost_slot {
	u64 runtime_ns;		/* run time while boosted, closed runs */
	u64 run_since_ns;	/* start of the boosted run in progress, or 0 */
	u32 pid;
	u32 blocked;		/* it left the CPU not runnable (slept or exited) */
	/*
	 * 1 once a run of the task in sched_ext, with its own policy back,
	 * was ended for the higher class it had been boosted above; 0 again
	 * when a boosted run starts. That end is owed once per boost: the
	 * listing outlives the boost while user space is stopped or exiting
	 * (the guardian puts the policy back, not the listing), and ending
	 * every later run at its start leaves each run nothing (tasks
	 * switching thousands of times a second, none making progress).
	 */
	u32 policy_back;
	/* sequence count: odd while the BPF side updates runtime_ns,
	 * run_since_ns and blocked together (see floor_cpu_stat.seq) */
	u32 seq;
};

#endif /* __SCX_FLOOR_INTF_H */
