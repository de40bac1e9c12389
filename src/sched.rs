// SPDX-License-Identifier: GPL-2.0-only
//! Loading, running and unloading the BPF dispatcher.

use std::mem::MaybeUninit;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle, OpenObject};
use log::info;
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_report, UserExitInfo};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::attr;
use crate::bpf_intf::floor_boost_slot as BoostSlot;
use crate::bpf_intf::floor_waiter as Waiter;
use crate::bpf_skel::{types, BpfSkel, BpfSkelBuilder};
use crate::hist::Hist;
use crate::server::Sample;
use crate::slice::SliceEnd;
use crate::stats::CpuCounters;
use crate::sys::monotonic_ns;

/// What the loader needs from the command line.
#[derive(Clone, Debug)]
pub struct SchedConfig {
    /// default slice, ns
    pub slice_ns: u64,
    /// how slices end (`Auto` is resolved by the caller: it loads as
    /// `BpfTimer`)
    pub slice_end: SliceEnd,
    /// arm the timer this many ns early; -1: learn the latency per CPU
    pub timer_lead_ns: i64,
    /// a waking task with a much lower vtime preempts the running one
    pub wakeup_preempt: bool,
    /// a task preempted inside an RCU read-side section queues at the
    /// front, on its own vtime (see `rcu_reader_preempted()`, bpf/main.bpf.c)
    pub rcu_boost: bool,
    /// a task that may run on several CPUs queues in its CPU's DSQ, and
    /// idle CPUs take from the others' (see `percpu_dsq`, bpf/main.bpf.c);
    /// false: in the one shared DSQ
    pub percpu_dsq: bool,
    /// tasks that may run elsewhere leave the DSQ of a CPU a higher class
    /// took (false only under the test fault `no-drain`)
    pub spread_drain: bool,
    /// sample each CPU's runnable count at run start (latency-target mode)
    pub sample_load: bool,
    /// debug dump length for the kernel's exit report (0: kernel default)
    pub exit_dump_len: u32,
    /// libbpf debug output
    pub verbose: bool,
    /// the lowest RT priority of the `irq_work/N` threads (PREEMPT_RT;
    /// [`crate::boost::irq_work_prio`]); None: irq_work runs in hard IRQ
    /// context. With Some, a server wake-up the BPF side writes on a CPU
    /// whose task holds `irq_work/N` back is handed to another CPU
    /// (`server_kick()`, bpf/main.bpf.c)
    pub irq_work_prio: Option<u32>,
}

/// Raises the calling thread to SCHED_FIFO 99, then pins it to `cpus`. In
/// that order: pinned first, at its normal policy, to a CPU an RT task hogs,
/// it would never run again to raise itself.
pub fn rt_setup(cpus: &[usize]) -> Result<()> {
    attr::set_attr(0, &attr::agent_attr())
        .context("sched_setattr(SCHED_FIFO 99) for the server thread")?;
    crate::sys::pin_thread(0, cpus)
        .with_context(|| format!("pinning the server thread to CPUs {cpus:?}"))
}

/// Registers the calling thread as one of scx_floor's own (its runs never
/// count as a higher class taking a CPU: done before it becomes RT), faults
/// in the top of its stack ([`crate::sys::prefault_stack`]), then
/// [`rt_setup`].
pub fn agent_setup(view: &BpfView, cpus: &[usize]) -> Result<()> {
    crate::sys::prefault_stack();
    // SAFETY: plain syscall.
    view.register_agent(unsafe { libc::gettid() } as u32)?;
    rt_setup(cpus)
}

/// Deletes key `key` from `map` (a map keyed by u32); returns whether it
/// was there. A direct system call: libbpf-rs makes an error value, which
/// allocates, for a key not there (ENOENT), which is common here (the BPF
/// side drops entries of tasks that ran or left).
fn delete_u32(map: &MapHandle, key: u32) -> bool {
    // SAFETY: the key has the map's key size.
    unsafe {
        libbpf_rs::libbpf_sys::bpf_map_delete_elem(
            map.as_fd().as_raw_fd(),
            std::ptr::addr_of!(key).cast(),
        ) == 0
    }
}

/// Entries of the waiters map one system call reads
/// ([`BpfView::waiters_into`]).
const WAITERS_BATCH: usize = 128;

/// A loaded and attached scx_floor.
pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
}

fn counters_of(s: &types::floor_cpu_stat) -> CpuCounters {
    // The BPF side writes these while we read: take each word once, volatile.
    let rd = |p: &u64| unsafe { std::ptr::read_volatile(p) };
    let hist = |h: &[u64]| Hist::from_counts(&h.iter().map(rd).collect::<Vec<_>>());
    CpuCounters {
        normal_runtime_ns: rd(&s.normal_runtime_ns),
        boosted_runtime_ns: rd(&s.boosted_runtime_ns),
        starved_ns: rd(&s.starved_ns),
        starved_since_ns: rd(&s.starved_since_ns),
        nr_hi_preempt: rd(&s.nr_hi_preempt),
        nr_hi_migrated: rd(&s.nr_hi_migrated),
        nr_runs: rd(&s.nr_runs),
        nr_slice_expired: rd(&s.nr_slice_expired),
        overshoot_sum_ns: rd(&s.overshoot_sum_ns),
        overshoot_max_ns: rd(&s.overshoot_max_ns),
        nr_timer_kicks: rd(&s.nr_timer_kicks),
        nr_timer_arms: rd(&s.nr_timer_arms),
        nr_tick_ends: rd(&s.nr_tick_ends),
        hi_running: rd(&s.hi_running),
        timer_lat_ns: rd(&s.timer_lat_ns),
        nr_runnable: rd(&s.nr_runnable),
        last_slice_ns: rd(&s.last_slice_ns),
        nr_wakeup_preempt: rd(&s.nr_wakeup_preempt),
        nr_timer_ended: rd(&s.nr_timer_ended),
        timer_fire_delay_sum_ns: rd(&s.timer_fire_delay_sum_ns),
        timer_switch_delay_sum_ns: rd(&s.timer_switch_delay_sum_ns),
        nr_starve_rescue: rd(&s.nr_starve_rescue),
        nr_rcu_boost: rd(&s.nr_rcu_boost),
        runlen: hist(&s.runlen_hist),
        overshoot: hist(&s.overshoot_hist),
    }
}

impl<'a> Scheduler<'a> {
    /// Opens, configures, loads and attaches the BPF scheduler.
    ///
    /// Errors: the BPF program fails to load (verifier, missing kfuncs) or
    /// to attach (another scheduler won the race, kernel refused).
    pub fn init(cfg: &SchedConfig, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(cfg.verbose);
        let mut skel = scx_ops_open!(builder, open_object, floor_ops, None)?;

        let nr_cpu_ids = *scx_utils::NR_CPU_IDS;
        let max = crate::bpf_intf::floor_consts_FLOOR_MAX_CPUS as usize;
        if nr_cpu_ids > max {
            anyhow::bail!("{nr_cpu_ids} possible CPUs; scx_floor is built for at most {max}");
        }
        let ops = skel.struct_ops.floor_ops_mut();
        ops.exit_dump_len = cfg.exit_dump_len;
        // Tasks with migration disabled come to ops.enqueue() too (the flag
        // is 0 on a kernel without it). Without it the kernel puts them on
        // their CPU's local DSQ itself; there, under an RT hog, the switch
        // hook's re-enqueue of that DSQ puts them straight back until the
        // kernel ejects the scheduler ("reenqueued N times without
        // running"), and no server sees them waiting (docs/design.md, "The
        // dispatcher").
        ops.flags |= *scx_utils::compat::SCX_OPS_ENQ_MIGRATION_DISABLED;
        let ro = skel.maps.rodata_data.as_mut().context("no rodata")?;
        ro.slice_ns = cfg.slice_ns;
        ro.slice_end = cfg.slice_end.bpf_value();
        ro.timer_lead_ns = cfg.timer_lead_ns;
        ro.wakeup_preempt = cfg.wakeup_preempt;
        ro.sample_load = cfg.sample_load;
        ro.rcu_boost = cfg.rcu_boost;
        ro.percpu_dsq = cfg.percpu_dsq;
        ro.spread_drain_on = cfg.spread_drain;

        let mut skel = scx_ops_load!(skel, floor_ops, uei)?;
        // The policy loop runs on this (the main) thread: its runs are not load samples.
        // SAFETY: plain syscall.
        let tid = unsafe { libc::gettid() } as u32;
        let bss = skel.maps.bss_data.as_mut().context("bss not mapped")?;
        bss.policy_tid = tid;
        bss.irq_work_threaded = cfg.irq_work_prio.is_some();
        bss.irq_work_prio = cfg.irq_work_prio.unwrap_or(0);
        // held-up wake-ups go to CPUs that are not isolated
        let nohz_full = crate::sys::nohz_full_cpus();
        for (cpu, ok) in bss.relay_ok.iter_mut().enumerate().take(nr_cpu_ids) {
            *ok = u8::from(!nohz_full.contains(&cpu));
        }
        let link = scx_ops_attach!(skel, floor_ops)?;
        info!(
            "scx_floor {} attached: slice {} us, {} ({} CPUs)",
            scx_floor::VERSION,
            cfg.slice_ns / 1000,
            cfg.slice_end.describe(),
            nr_cpu_ids
        );
        Ok(Scheduler {
            skel,
            link: Some(link),
        })
    }

    /// A Send + Sync view of the loaded program for the policy threads.
    /// Valid while `self` lives: the threads must end first (scoped threads).
    pub fn view(&mut self) -> Result<BpfView> {
        let bss: *mut types::bss =
            &mut **self.skel.maps.bss_data.as_mut().context("bss not mapped")?;
        let data = self
            .skel
            .maps
            .data_data
            .as_ref()
            .context("data not mapped")?;
        Ok(BpfView {
            bss,
            uei_kind: &data.uei.kind as *const i32,
            waiters: MapHandle::try_from(&self.skel.maps.waiters)?,
            boosted: MapHandle::try_from(&self.skel.maps.boosted_pids)?,
            agents: MapHandle::try_from(&self.skel.maps.agent_tids)?,
            wake: MapHandle::try_from(&self.skel.maps.server_wake)?,
            slicer_wake: MapHandle::try_from(&self.skel.maps.slicer_wake)?,
        })
    }

    /// Detaches (if still attached) and returns the kernel's exit report.
    pub fn finish(&mut self) -> Result<UserExitInfo> {
        self.link.take();
        uei_report!(&self.skel, uei)
    }
}

/// The last higher-class task seen on a CPU (0s when none yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HiTask {
    /// thread id
    pub pid: u32,
    /// RT priority (1..99)
    pub prio: u32,
    /// SCHED_FIFO, SCHED_RR or SCHED_DEADLINE
    pub policy: u32,
}

/// Reads a CPU's counters that BPF updates together (`floor_cpu_stat.seq`,
/// a sequence count: odd while a writer is inside): `read()` until `seq()`
/// gives the same even value before and after it. A writer holds the CPU's
/// rq lock for a few stores; under TCG its vCPU can still be descheduled
/// there by the host, so after [`SEQ_READ_TRIES`] reads the last one is
/// taken as it is (the server sees it one step, as before the count).
pub fn read_consistent<T>(seq: impl Fn() -> u64, mut read: impl FnMut() -> T) -> T {
    let mut tries = 0;
    loop {
        let before = seq();
        std::sync::atomic::fence(Ordering::Acquire);
        let v = read();
        std::sync::atomic::fence(Ordering::Acquire);
        tries += 1;
        if (before.is_multiple_of(2) && seq() == before) || tries >= SEQ_READ_TRIES {
            return v;
        }
        std::hint::spin_loop();
    }
}

/// Reads [`read_consistent`] makes at most before it takes the last one.
pub const SEQ_READ_TRIES: usize = 1000;

/// What the policy threads may touch of the loaded BPF program: the per-CPU
/// counters (read), the waiters map, the boosted_pids map and its count.
pub struct BpfView {
    bss: *mut types::bss,
    uei_kind: *const i32,
    waiters: MapHandle,
    boosted: MapHandle,
    agents: MapHandle,
    wake: MapHandle,
    slicer_wake: MapHandle,
}

/// One CPU's `struct floor_slicer` as the BPF side last wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlicerState {
    /// when the slice of the CPU's current run is due, ns; 0: none
    pub due_ns: u64,
    /// what a run started now would get before it is due, ns
    pub len_ns: u64,
    /// runs started on the CPU
    pub nr_starts: u64,
    /// from the thread going to sleep to the next run's start, ns (EWMA)
    pub gap_ns: u64,
}

// SAFETY: the pointers are into the skeleton's mmapped .bss/.data, which
// outlive every user (scoped threads); all reads are volatile and the only
// write (nr_boosted) is atomic.
unsafe impl Send for BpfView {}
unsafe impl Sync for BpfView {}

impl BpfView {
    fn stat(&self, cpu: usize) -> *const types::floor_cpu_stat {
        // SAFETY: cpu < FLOOR_MAX_CPUS is checked at load (nr_cpu_ids).
        unsafe { std::ptr::addr_of!((*self.bss).cpu_stats[cpu]) }
    }

    /// Current counters of `cpu`.
    pub fn counters(&self, cpu: usize) -> CpuCounters {
        // SAFETY: see stat(); the struct is read field by field, volatile.
        counters_of(unsafe { &*self.stat(cpu) })
    }

    /// The server's view of `cpu`: its counters now, whether a higher class
    /// owns it, and the last RT/DL task (not ours) that ran there.
    pub fn sample(&self, cpu: usize) -> (Sample, bool, HiTask) {
        // SAFETY: see stat().
        let s = unsafe { &*self.stat(cpu) };
        let rd = |p: &u64| unsafe { std::ptr::read_volatile(p) };
        let now_ns = monotonic_ns();
        let sample = read_consistent(
            || rd(&s.seq),
            || Sample {
                now_ns,
                // Per-CPU kthreads (ksoftirqd, kworkers) are served too, but
                // their run time does not count against the floor: it is the
                // kernel's housekeeping, small (a few ms/s), and would
                // otherwise come out of what user tasks are promised.
                normal_runtime_ns: rd(&s.normal_runtime_ns)
                    .saturating_sub(rd(&s.kthread_runtime_ns)),
                boosted_runtime_ns: rd(&s.boosted_runtime_ns),
                boost_since_ns: rd(&s.boost_since_ns),
                starved_since_ns: rd(&s.starved_since_ns),
                starved_ns: rd(&s.starved_ns),
            },
        );
        (
            sample,
            rd(&s.hi_running) != 0,
            HiTask {
                pid: rd(&s.hi_pid) as u32,
                prio: rd(&s.hi_prio) as u32,
                policy: rd(&s.hi_policy) as u32,
            },
        )
    }

    /// Waiters of `cpu` the full BPF waiters map refused since load
    /// (`nr_waiters_dropped`).
    pub fn waiters_dropped(&self, cpu: usize) -> u64 {
        // SAFETY: see stat().
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.stat(cpu)).nr_waiters_dropped)) }
    }

    /// Every entry of the BPF `waiters` map, (tid, entry), appended to
    /// `out` (cleared first). Batched lookups (a system call per
    /// [`WAITERS_BATCH`] entries) into buffers on the stack: nothing is
    /// allocated while `out` has room. A read that fails midway keeps what
    /// it read; one interrupted (EINTR) is made again.
    pub fn waiters_into(&self, out: &mut Vec<(u32, Waiter)>) {
        out.clear();
        let fd = self.waiters.as_fd().as_raw_fd();
        #[allow(clippy::needless_update)]
        let opts = libbpf_rs::libbpf_sys::bpf_map_batch_opts {
            sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_batch_opts>() as _,
            ..Default::default()
        };
        let mut keys = [0u32; WAITERS_BATCH];
        // SAFETY: struct floor_waiter is plain data: all zeroes is valid.
        let mut vals: [Waiter; WAITERS_BATCH] = unsafe { std::mem::zeroed() };
        // a hash map's batch token is a bucket index (4 bytes; kernel/bpf/hashtab.c)
        let (mut at, mut next, mut first) = (0u32, 0u32, true);
        loop {
            let mut count = WAITERS_BATCH as u32;
            let in_batch = if first {
                std::ptr::null_mut()
            } else {
                std::ptr::addr_of_mut!(at).cast()
            };
            // SAFETY: the buffers hold `count` keys and values of the map's
            // sizes (u32, struct floor_waiter); the tokens are 4 bytes.
            let r = unsafe {
                libbpf_rs::libbpf_sys::bpf_map_lookup_batch(
                    fd,
                    in_batch,
                    std::ptr::addr_of_mut!(next).cast(),
                    keys.as_mut_ptr().cast(),
                    vals.as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            if r == -libc::EINTR {
                continue;
            }
            let n = (count as usize).min(WAITERS_BATCH);
            if r == 0 || r == -libc::ENOENT {
                out.extend(keys[..n].iter().copied().zip(vals[..n].iter().copied()));
            }
            // ENOENT: the last batch
            if r != 0 {
                return;
            }
            at = next;
            first = false;
        }
    }

    /// CPU hotplug events (online + offline) the BPF side has seen since
    /// load: the online CPU set changed when this did.
    pub fn cpu_hotplug_events(&self) -> u64 {
        // SAFETY: a u64 in the mmapped .bss, written by the BPF side.
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.bss).nr_cpu_hotplug)) }
    }

    /// The CPUs online now: `/sys/devices/system/cpu/online` corrected by
    /// the hotplug events the BPF side has seen (`cpu_hp_state`): the sysfs
    /// mask still holds a CPU whose `ops.cpu_offline()` has run, and a
    /// planner woken by that event read it there and never parked.
    /// Read into `online`, replacing what it held, allocating nothing while
    /// it has room for `nr_cpu_ids` CPUs: for the loop's threads while they
    /// serve (`sys::online_cpus_into`). On a sysfs error it is unchanged.
    /// Errors: sysfs unreadable, or its text not a CPU list that fits.
    pub fn online_cpus_into(&self, online: &mut Vec<usize>) -> std::io::Result<()> {
        crate::sys::online_cpus_into(online)?;
        // SAFETY: a byte array in the mmapped .bss, written by the BPF side.
        let hp = unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.bss).cpu_hp_state)) };
        online.retain(|&c| {
            hp.get(c).copied().map(u32::from)
                != Some(crate::bpf_intf::floor_consts_FLOOR_CPU_WENT_DOWN)
        });
        for (c, &st) in hp.iter().enumerate() {
            if u32::from(st) == crate::bpf_intf::floor_consts_FLOOR_CPU_CAME_UP
                && !online.contains(&c)
            {
                online.push(c);
            }
        }
        online.sort_unstable();
        Ok(())
    }

    /// Runnable normal tasks on `cpu` at its last run start (see
    /// `nr_runnable` in bpf/intf.h).
    pub fn nr_runnable(&self, cpu: usize) -> u64 {
        // SAFETY: see stat().
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.stat(cpu)).nr_runnable)) }
    }

    /// Server wake-ups the BPF side handed to another CPU because the task
    /// on the writing CPU held its `irq_work/N` back, and those another CPU
    /// then wrote (`server_kick()`, `relay_run()` in bpf/main.bpf.c):
    /// (handed on, written).
    pub fn relayed_wakeups(&self) -> (u64, u64) {
        // SAFETY: u64s in the mmapped .bss, written by the BPF side only.
        unsafe {
            (
                std::ptr::read_volatile(std::ptr::addr_of!((*self.bss).nr_relayed)),
                std::ptr::read_volatile(std::ptr::addr_of!((*self.bss).nr_relay_sent)),
            )
        }
    }

    /// Sets the slice (ns) of runs starting on `cpu` from now on; 0 returns
    /// the CPU to the loader's default slice.
    pub fn set_slice(&self, cpu: usize, slice_ns: u64) {
        // SAFETY: a u64 in the mmapped .bss (cpu < FLOOR_MAX_CPUS, checked
        // at load); the BPF side only reads it.
        let p = unsafe { std::ptr::addr_of_mut!((*self.bss).cpu_slice_ns[cpu]) };
        unsafe { AtomicU64::from_ptr(p) }.store(slice_ns, Ordering::Relaxed);
    }

    /// Asks the BPF side to wake CPU `cpu`'s server when starvation begins.
    pub fn arm_starve_kick(&self, cpu: usize) {
        // SAFETY: a u64 in the mmapped .bss; BPF clears it atomically.
        let p = unsafe { std::ptr::addr_of_mut!((*self.bss).cpu_stats[cpu].kick_on_starve) };
        unsafe { AtomicU64::from_ptr(p) }.store(1, Ordering::SeqCst);
    }

    /// Marks `tid` as one of scx_floor's own threads (not a hog to beat).
    pub fn register_agent(&self, tid: u32) -> Result<()> {
        self.agents
            .update(&tid.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
            .context("agent_tids update")
    }

    /// A ring buffer through which the BPF side wakes CPU `cpu`'s server
    /// thread (see `server_wake` in bpf/main.bpf.c).
    pub fn wake_ringbuf(&self, cpu: usize) -> Result<MapHandle> {
        Self::ringbuf_in(&self.wake, cpu).context("server_wake update")
    }

    /// A ring buffer through which the BPF side wakes CPU `cpu`'s slice-end
    /// thread (see `slicer_wake` in bpf/main.bpf.c).
    pub fn slicer_ringbuf(&self, cpu: usize) -> Result<MapHandle> {
        Self::ringbuf_in(&self.slicer_wake, cpu).context("slicer_wake update")
    }

    /// A new ring buffer, put at index `cpu` of the map-of-maps `outer`.
    fn ringbuf_in(outer: &MapHandle, cpu: usize) -> Result<MapHandle> {
        let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        };
        let rb = MapHandle::create(
            libbpf_rs::MapType::RingBuf,
            Some("floor_wake"),
            0,
            0,
            4096,
            &opts,
        )
        .context("creating a wake ring buffer")?;
        let fd = rb.as_fd().as_raw_fd() as u32;
        outer.update(
            &(cpu as u32).to_ne_bytes(),
            &fd.to_ne_bytes(),
            MapFlags::ANY,
        )?;
        Ok(rb)
    }

    fn slicer_ptr(&self, cpu: usize) -> *mut types::floor_slicer {
        // SAFETY: cpu < FLOOR_MAX_CPUS is checked at load (nr_cpu_ids).
        unsafe { std::ptr::addr_of_mut!((*self.bss).slicers[cpu]) }
    }

    /// CPU `cpu`'s slice-end state as the BPF side wrote it.
    pub fn slicer(&self, cpu: usize) -> SlicerState {
        let p = self.slicer_ptr(cpu);
        // SAFETY: volatile reads of u64s in the mmapped .bss.
        unsafe {
            SlicerState {
                due_ns: std::ptr::read_volatile(std::ptr::addr_of!((*p).due_ns)),
                len_ns: std::ptr::read_volatile(std::ptr::addr_of!((*p).len_ns)),
                nr_starts: std::ptr::read_volatile(std::ptr::addr_of!((*p).nr_starts)),
                gap_ns: std::ptr::read_volatile(std::ptr::addr_of!((*p).gap_ns)),
            }
        }
    }

    /// Tells the BPF side when CPU `cpu`'s slice-end thread wakes next (ns;
    /// 0: parked) and that it goes to sleep at `now_ns`.
    pub fn set_slicer_wake(&self, cpu: usize, now_ns: u64, at_ns: u64) {
        let p = self.slicer_ptr(cpu);
        // SAFETY: u64s in the mmapped .bss.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).wake_ns), at_ns);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).slept_ns), now_ns);
        }
    }

    /// Lists `tid` in the waiters map as `w` (a task found waiting that the
    /// map lacked); it leaves the map when it runs, as any waiter.
    pub fn add_waiter(&self, tid: u32, w: &Waiter) {
        // SAFETY: Waiter is plain data (bindgen of struct floor_waiter).
        let v = unsafe {
            std::slice::from_raw_parts(
                (w as *const Waiter).cast::<u8>(),
                std::mem::size_of::<Waiter>(),
            )
        };
        // SAFETY: key and value have the map's sizes (u32, struct floor_waiter).
        let _ = unsafe {
            libbpf_rs::libbpf_sys::bpf_map_update_elem(
                self.waiters.as_fd().as_raw_fd(),
                std::ptr::addr_of!(tid).cast(),
                v.as_ptr().cast(),
                libbpf_rs::libbpf_sys::BPF_ANY as u64,
            )
        };
    }

    /// Drops a stale `waiters` entry.
    pub fn forget_waiter(&self, tid: u32) {
        delete_u32(&self.waiters, tid);
    }

    fn nr_boosted(&self) -> &AtomicU64 {
        // SAFETY: a u64 in the mmapped .bss, aligned; BPF only reads it.
        unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*self.bss).nr_boosted)) }
    }

    fn slot_ptr(&self, slot: usize) -> *mut BoostSlot {
        // SAFETY: slot < FLOOR_MAX_CPUS * FLOOR_SLOTS_PER_CPU (callers use
        // cpu * FLOOR_SLOTS_PER_CPU + i with i < FLOOR_SLOTS_PER_CPU).
        unsafe { std::ptr::addr_of_mut!((*self.bss).boost_slots[slot]) as *mut BoostSlot }
    }

    /// The run of the task in boost slot `slot`: (pid, run time ns, blocked).
    pub fn slot(&self, slot: usize) -> (u32, u64, bool) {
        let p = self.slot_ptr(slot);
        // SAFETY: volatile reads of the mmapped slot.
        let rd = |f: *const u64| unsafe { std::ptr::read_volatile(f) };
        let rd32 = |f: *const u32| unsafe { std::ptr::read_volatile(f) };
        // SAFETY (each addr_of!): p points into the mmapped .bss.
        let (pid, runtime, since, blocked) = read_consistent(
            || rd32(unsafe { std::ptr::addr_of!((*p).seq) }) as u64,
            || unsafe {
                (
                    rd32(std::ptr::addr_of!((*p).pid)),
                    rd(std::ptr::addr_of!((*p).runtime_ns)),
                    rd(std::ptr::addr_of!((*p).run_since_ns)),
                    rd32(std::ptr::addr_of!((*p).blocked)),
                )
            },
        );
        let now = monotonic_ns();
        let rt = if since != 0 && now > since {
            runtime + (now - since)
        } else {
            runtime
        };
        (pid, rt, blocked != 0)
    }

    /// Lists `tid` as boosted, its runs counted in `slot` (normal work).
    pub fn boosted_add(&self, tid: u32, slot: usize) -> Result<()> {
        let p = self.slot_ptr(slot);
        // SAFETY: volatile writes into the mmapped slot. The slot is free
        // (not named in boosted_pids), but the switch hook may still end a
        // boosted run of the slot's last task in it (a task restored while
        // it ran, or exiting): its sequence count is left to BPF (a write
        // of 0 between its two increments would leave it odd), and this
        // planner, the slot's only reader, sees the fields torn at worst.
        unsafe {
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).pid), tid);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).runtime_ns), 0);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).run_since_ns), 0);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).blocked), 0);
            std::ptr::write_volatile(std::ptr::addr_of_mut!((*p).policy_back), 0);
        }
        self.boosted
            .update(
                &tid.to_ne_bytes(),
                &(slot as u32).to_ne_bytes(),
                MapFlags::ANY,
            )
            .context("boosted_pids update")?;
        self.nr_boosted().fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Unlists `tid`.
    pub fn boosted_del(&self, tid: u32) {
        if delete_u32(&self.boosted, tid) {
            let _ = self
                .nr_boosted()
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                    Some(v.saturating_sub(1))
                });
        }
    }

    /// Whether the kernel has ejected the scheduler (uei.kind != 0).
    pub fn exited(&self) -> bool {
        // SAFETY: an i32 in the mmapped .data.
        unsafe { std::ptr::read_volatile(self.uei_kind) != 0 }
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        if self.link.take().is_some() {
            info!("scx_floor detached");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A sequence count that gives `vals` in turn (the last one after
    /// them), and a reader that counts its reads.
    fn run(vals: &[u64]) -> (u32, usize) {
        let at = Cell::new(0usize);
        let seq = || {
            let i = at.get();
            at.set(i + 1);
            vals[i.min(vals.len() - 1)]
        };
        let reads = Cell::new(0u32);
        let v = read_consistent(seq, || {
            reads.set(reads.get() + 1);
            reads.get()
        });
        (v, at.get())
    }

    #[test]
    fn read_consistent_retries_until_even_and_unchanged() {
        // even and unchanged: the first read
        assert_eq!(run(&[4]), (1, 2));
        // odd (a writer inside), then changed under the read, then stable
        assert_eq!(run(&[3, 4, 6, 6, 6]), (3, 5));
        // a writer that never leaves: the last of SEQ_READ_TRIES reads
        assert_eq!(run(&[5]).0, SEQ_READ_TRIES as u32);
    }
}
