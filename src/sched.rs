// SPDX-License-Identifier: GPL-2.0-only
//! Loading, running and unloading the BPF dispatcher.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::OpenObject;
use log::{info, warn};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};

use crate::bpf_skel::{types, BpfSkel, BpfSkelBuilder};
use crate::hist::Hist;
use crate::stats::{self, CpuCounters};

/// What the loader needs from the command line.
#[derive(Clone, Debug)]
pub struct SchedConfig {
    /// default slice, ns
    pub slice_ns: u64,
    /// end slices with the per-CPU hrtimer (false: at the tick only)
    pub slice_timer: bool,
    /// arm the timer this many ns early; -1: learn the latency per CPU
    pub timer_lead_ns: i64,
    /// debug dump length for the kernel's exit report (0: kernel default)
    pub exit_dump_len: u32,
    /// libbpf debug output
    pub verbose: bool,
    /// print per-CPU stats every this often
    pub stats_every: Option<Duration>,
}

/// CLOCK_MONOTONIC now, ns: the clock of bpf_ktime_get_ns().
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPUs online now (`/sys/devices/system/cpu/online`).
pub fn online_cpus() -> Result<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .context("reading /sys/devices/system/cpu/online")?;
    scx_utils::read_cpulist(s.trim())
}

/// A loaded and attached scx_floor.
pub struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
    cfg: SchedConfig,
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
        hi_running: rd(&s.hi_running),
        timer_lat_ns: rd(&s.timer_lat_ns),
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
        skel.struct_ops.floor_ops_mut().exit_dump_len = cfg.exit_dump_len;
        let ro = skel.maps.rodata_data.as_mut().context("no rodata")?;
        ro.slice_ns = cfg.slice_ns;
        ro.slice_timer = cfg.slice_timer;
        ro.timer_lead_ns = cfg.timer_lead_ns;

        let mut skel = scx_ops_load!(skel, floor_ops, uei)?;
        let link = scx_ops_attach!(skel, floor_ops)?;
        info!(
            "scx_floor {} attached: slice {} us, {} ({} CPUs)",
            env!("CARGO_PKG_VERSION"),
            cfg.slice_ns / 1000,
            if cfg.slice_timer {
                "ended by per-CPU hrtimer"
            } else {
                "ended at the tick"
            },
            nr_cpu_ids
        );
        Ok(Scheduler {
            skel,
            link: Some(link),
            cfg: cfg.clone(),
        })
    }

    /// Current counters of `cpu`.
    pub fn counters(&self, cpu: usize) -> CpuCounters {
        let bss = self.skel.maps.bss_data.as_ref().expect("bss mapped");
        counters_of(&bss.cpu_stats[cpu])
    }

    fn exited(&self) -> bool {
        uei_exited!(&self.skel, uei)
    }

    /// Runs until `shutdown` is set or the kernel ejects the scheduler; then
    /// detaches and returns the kernel's exit report.
    pub fn run(&mut self, shutdown: &AtomicBool) -> Result<UserExitInfo> {
        let mut last: Option<(u64, Vec<(usize, CpuCounters)>)> = None;
        let mut next_stats = Instant::now() + self.cfg.stats_every.unwrap_or(Duration::MAX / 4);
        let snap = |s: &Self| -> Result<(u64, Vec<(usize, CpuCounters)>)> {
            let t = monotonic_ns();
            Ok((
                t,
                online_cpus()?
                    .into_iter()
                    .map(|c| (c, s.counters(c)))
                    .collect(),
            ))
        };
        if self.cfg.stats_every.is_some() {
            last = Some(snap(self)?);
        }
        while !shutdown.load(Ordering::Relaxed) && !self.exited() {
            std::thread::sleep(Duration::from_millis(50));
            if Instant::now() >= next_stats {
                if let Some(every) = self.cfg.stats_every {
                    next_stats += every;
                    let now = snap(self)?;
                    if let Some((t0, prev)) = &last {
                        let rows: Vec<_> = now
                            .1
                            .iter()
                            .filter_map(|(cpu, b)| {
                                prev.iter()
                                    .find(|(c, _)| c == cpu)
                                    .map(|(_, a)| stats::interval(*cpu, a, *t0, b, now.0))
                            })
                            .collect();
                        info!(
                            "per-CPU accounting over the last {:.1} s:\n{}",
                            every.as_secs_f64(),
                            stats::format_table(&rows)
                        );
                    }
                    last = Some(now);
                }
            }
        }
        if shutdown.load(Ordering::Relaxed) {
            info!("signal received: unloading");
        }
        self.link.take();
        let uei = uei_report!(&self.skel, uei);
        if let Err(e) = &uei {
            warn!("the kernel ejected scx_floor: {e:#}");
        }
        uei
    }
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        if self.link.take().is_some() {
            info!("scx_floor detached");
        }
    }
}
