// SPDX-License-Identifier: GPL-2.0-only
//! Reads the kernel's SCHED_DEADLINE admission state: how much of the root
//! domain's admission total (`dl_bw->total_bw`) belongs to no live
//! reservation, i.e. is still counted for tasks that have left
//! SCHED_DEADLINE and is released only at their 0-lag time.
//!
//! Why it matters: every write of `kernel.sched_rt_runtime_us` makes the
//! kernel rebuild the sched domains, and the rebuild recomputes `total_bw`
//! from the attached dl_servers and the tasks whose policy is SCHED_DEADLINE
//! now (`dl_clear_root_domain()`, `dl_add_task_root_domain()`,
//! kernel/sched/deadline.c). A task switched out of SCHED_DEADLINE a moment
//! before is not counted by the rebuild, yet its 0-lag ("inactive") timer
//! still subtracts its bandwidth later: `total_bw` wraps below zero, every
//! later admission check fails with EBUSY, and sched_ext's disable cannot
//! re-attach the fair_server ("failed to re-attach fair_server on CPU N",
//! a WARNING in `scx_root_disable()`), which leaves normal tasks with no
//! server against RT hogs until reboot (docs/design.md, "Putting
//! sched_rt_runtime_us back").
//!
//! Bandwidths are in the kernel's fixed point: 1 << 20 is one CPU
//! (`to_ratio()`, kernel/sched/core.c).

use std::fs;
use std::path::Path;

use crate::attr;

/// The kernel's `BW_SHIFT`: bandwidth 1 << 20 is one whole CPU.
pub const BW_SHIFT: u32 = 20;

/// `SCHED_FLAG_SUGOV`: a schedutil worker, whose reservation the kernel
/// never counts in `total_bw` (`dl_entity_is_special()`).
const SCHED_FLAG_SUGOV: u64 = 0x1000_0000;

/// The scheduler's debug dump in debugfs: one `dl_bw->total_bw` line per
/// CPU, giving the total of that CPU's root domain.
pub const SCHED_DEBUG: &str = "/sys/kernel/debug/sched/debug";

/// The kernel's `to_ratio(period, runtime)`: `runtime` per `period` (both
/// ns) as a bandwidth; 0 for a zero period.
pub fn to_ratio(period_ns: u64, runtime_ns: u64) -> u64 {
    if period_ns == 0 {
        return 0;
    }
    ((runtime_ns as u128) << BW_SHIFT)
        .checked_div(period_ns as u128)
        .unwrap_or(0) as u64
}

/// The root domain's `total_bw` from a debug dump: `None` when the dump has
/// no such line or when CPUs disagree (more than one root domain, e.g.
/// cpuset partitions: this module then knows too little to tell).
pub fn parse_total_bw(debug: &str) -> Option<i64> {
    let mut v = None;
    for l in debug.lines() {
        let Some(rest) = l.trim_start().strip_prefix(".dl_bw->total_bw") else {
            continue;
        };
        let x: i64 = rest.trim_start().strip_prefix(':')?.trim().parse().ok()?;
        match v {
            None => v = Some(x),
            Some(y) if y != x => return None,
            _ => {}
        }
    }
    v
}

/// Which dl_servers hold bandwidth in `total_bw`: the fair_server of each
/// CPU, the ext_server, or both. From sched_ext's sysfs `state` and
/// `switch_all`: with every task switched to sched_ext the fair_servers are
/// detached and the ext_servers attached; with sched_ext off only the
/// fair_servers are; in partial mode both (`scx_root_enable()` and
/// `scx_root_disable()`, kernel/sched/ext). `None` while sched_ext is
/// enabling or disabling: its servers are being swapped.
pub fn attached_servers(scx_state: &str, switch_all: &str) -> Option<(bool, bool)> {
    match scx_state.trim() {
        "disabled" => Some((true, false)),
        "enabled" if switch_all.trim() == "1" => Some((false, true)),
        "enabled" => Some((true, true)),
        _ => None,
    }
}

/// Sum of the attached servers' bandwidth on `cpus`, from their debugfs
/// `runtime` and `period` (ns) under `debug_sched` (normally
/// /sys/kernel/debug/sched). `None` when a file is unreadable.
fn servers_bw(debug_sched: &Path, cpus: &[usize], fair: bool, ext: bool) -> Option<u64> {
    let read = |kind: &str, cpu: usize, f: &str| -> Option<u64> {
        fs::read_to_string(debug_sched.join(format!("{kind}/cpu{cpu}/{f}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut sum = 0;
    for &cpu in cpus {
        for (on, kind) in [(fair, "fair_server"), (ext, "ext_server")] {
            if on {
                sum += to_ratio(read(kind, cpu, "period")?, read(kind, cpu, "runtime")?);
            }
        }
    }
    Some(sum)
}

/// Bandwidth of one task's reservation as the kernel counts it: 0 unless
/// SCHED_DEADLINE (and not a schedutil worker); the period is the deadline
/// when 0 (`__setparam_dl()`).
pub fn task_bw(attr: &attr::SchedAttr) -> u64 {
    if attr.sched_policy != attr::SCHED_DEADLINE || attr.sched_flags & SCHED_FLAG_SUGOV != 0 {
        return 0;
    }
    let period = if attr.sched_period != 0 {
        attr.sched_period
    } else {
        attr.sched_deadline
    };
    to_ratio(period, attr.sched_runtime)
}

/// Sum of [`task_bw`] over every thread on the system (/proc/*/task/*).
fn live_tasks_bw() -> u64 {
    let Ok(procs) = fs::read_dir("/proc") else {
        return 0;
    };
    let mut sum = 0;
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(tasks) = fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(tid) = t.file_name().to_string_lossy().parse::<u32>() {
                sum += attr::get_attr(tid).map(|a| task_bw(&a)).unwrap_or(0);
            }
        }
    }
    sum
}

/// What [`pending_release`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Bandwidth in `total_bw` that no attached server and no live
    /// SCHED_DEADLINE task holds: still to be released at some task's 0-lag
    /// time when positive; negative after the wrap of the module doc.
    Pending(i64),
    /// Not told this time: sched_ext is swapping its servers, or `total_bw`
    /// moved while the tasks were read. Ask again.
    Changing,
    /// Cannot be told here: no debugfs or sysfs file, or more than one
    /// root domain.
    Unknown,
}

/// Compares the root domain's `total_bw` with the bandwidth of the attached
/// dl_servers and of every live SCHED_DEADLINE task (one sched_getattr()
/// per thread on the system).
pub fn pending_release() -> Release {
    let scx = Path::new(crate::checks::SCX_SYSFS);
    let read = |p: &Path| fs::read_to_string(p).ok();
    let (Some(state), Ok(cpus), Some(debug0)) = (
        read(&scx.join("state")),
        crate::sys::online_cpus(),
        read(Path::new(SCHED_DEBUG)),
    ) else {
        return Release::Unknown;
    };
    let switch_all = read(&scx.join("switch_all")).unwrap_or_default();
    let Some((fair, ext)) = attached_servers(&state, &switch_all) else {
        return Release::Changing;
    };
    let Some(before) = parse_total_bw(&debug0) else {
        return Release::Unknown;
    };
    let dir = Path::new(SCHED_DEBUG).parent().unwrap_or(Path::new("/"));
    let Some(servers) = servers_bw(dir, &cpus, fair, ext) else {
        return Release::Unknown;
    };
    if before <= servers as i64 {
        // tasks' bandwidth is never negative: nothing can be pending, and
        // the scan of every thread is skipped
        return Release::Pending(before - servers as i64);
    }
    let tasks = live_tasks_bw();
    let after = read(Path::new(SCHED_DEBUG)).and_then(|d| parse_total_bw(&d));
    if after != Some(before) || read(&scx.join("state")).as_deref() != Some(state.as_str()) {
        return Release::Changing;
    }
    Release::Pending(before - servers as i64 - tasks as i64)
}

/// The kernel's `sched_rt_period_us` sysctl: with `sched_rt_runtime_us`,
/// the share of each CPU that SCHED_DEADLINE admission may hand out.
const SCHED_RT_PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";

/// The root domain's SCHED_DEADLINE admission state, as the kernel checks
/// a new reservation against it (`__dl_overflow()`, kernel/sched/deadline.c:
/// refused when `total_bw` plus the new bandwidth exceeds the limit).
/// Bandwidths in the kernel's fixed point (1 << 20 = one CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// `dl_bw->total_bw`: what admission counts as taken.
    pub total_bw: i64,
    /// sched_rt_runtime_us / sched_rt_period_us times the online CPUs
    /// (all of capacity 1024 assumed); `None` when the runtime is -1 (no
    /// limit).
    pub limit_bw: Option<u64>,
    /// What every online CPU's ext_server asks when sched_ext attaches them
    /// (debugfs runtime / period).
    pub ext_servers_bw: u64,
}

impl Admission {
    /// Whether the ext_servers fit beside what is counted now.
    pub fn ext_servers_fit(&self) -> bool {
        self.limit_bw
            .is_none_or(|l| self.total_bw.saturating_add(self.ext_servers_bw as i64) <= l as i64)
    }
}

/// The admission limit for `cpus` online CPUs from the two sysctls' values
/// (us): `None` for a runtime of -1.
pub fn limit_bw(runtime_us: i64, period_us: u64, cpus: usize) -> Option<u64> {
    let runtime = u64::try_from(runtime_us).ok()?;
    Some(to_ratio(period_us.saturating_mul(1000), runtime.saturating_mul(1000)) * cpus as u64)
}

/// Reads [`Admission`] now. `None` when a file is missing or unreadable,
/// or with more than one root domain (see [`parse_total_bw`]).
pub fn admission() -> Option<Admission> {
    let read = |p: &str| fs::read_to_string(p).ok();
    let cpus = crate::sys::online_cpus().ok()?;
    let total_bw = parse_total_bw(&read(SCHED_DEBUG)?)?;
    let runtime: i64 = read(crate::knobs::SCHED_RT_RUNTIME)?.trim().parse().ok()?;
    let period: u64 = read(SCHED_RT_PERIOD)?.trim().parse().ok()?;
    let dir = Path::new(SCHED_DEBUG).parent()?;
    Some(Admission {
        total_bw,
        limit_bw: limit_bw(runtime, period, cpus.len()),
        ext_servers_bw: servers_bw(dir, &cpus, false, true)?,
    })
}

/// One line for a log: the admission state and what holds it.
pub fn describe(a: &Admission) -> String {
    let limit = a
        .limit_bw
        .map_or_else(|| "none (sched_rt_runtime_us -1)".into(), |l| l.to_string());
    format!(
        "dl_bw->total_bw {}, limit {limit}, ext_servers {}, live SCHED_DEADLINE tasks {} \
         (1 << 20 = one CPU)",
        a.total_bw,
        a.ext_servers_bw,
        live_tasks_bw()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_ratio_matches_the_kernels_fixed_point() {
        // 50 ms / 1 s: each fair_server at boot; two of them made the
        // 104856 read in the VM
        assert_eq!(to_ratio(1_000_000_000, 50_000_000), 52428);
        assert_eq!(to_ratio(1_000_000_000, 1_000_000_000), 1 << 20);
        assert_eq!(to_ratio(0, 5), 0);
        assert_eq!(to_ratio(1_000_000_000, 0), 0);
        // the zero-bandwidth reservation rounds to 0
        let z = attr::dl_zero_attr();
        assert_eq!(to_ratio(z.sched_period, z.sched_runtime), 0);
    }

    #[test]
    fn total_bw_is_one_root_domains_or_none() {
        let one = "cpu#0\n  .dl_bw->bw                     : 1048576\n  .dl_bw->total_bw               : 104856\n\
                   cpu#1\n  .dl_bw->total_bw               : 104856\n";
        assert_eq!(parse_total_bw(one), Some(104856));
        let wrapped = "  .dl_bw->total_bw               : -731016\n";
        assert_eq!(parse_total_bw(wrapped), Some(-731016));
        let two = "  .dl_bw->total_bw : 104856\n  .dl_bw->total_bw : 52428\n";
        assert_eq!(parse_total_bw(two), None);
        assert_eq!(parse_total_bw("cpu#0\n  .dl_nr_running : 0\n"), None);
        assert_eq!(parse_total_bw("  .dl_bw->total_bw : x\n"), None);
    }

    #[test]
    fn servers_follow_sched_ext_state() {
        assert_eq!(attached_servers("disabled\n", ""), Some((true, false)));
        assert_eq!(attached_servers("enabled\n", "1\n"), Some((false, true)));
        assert_eq!(attached_servers("enabled\n", "0\n"), Some((true, true)));
        assert_eq!(attached_servers("disabling\n", "1\n"), None);
        assert_eq!(attached_servers("enabling\n", "1\n"), None);
    }

    #[test]
    fn servers_bw_sums_attached_servers_per_cpu() {
        let d = tempfile::tempdir().unwrap();
        for (kind, rt) in [("fair_server", 50_000_000u64), ("ext_server", 25_000_000)] {
            for cpu in [0, 1] {
                let c = d.path().join(format!("{kind}/cpu{cpu}"));
                fs::create_dir_all(&c).unwrap();
                fs::write(c.join("runtime"), format!("{rt}\n")).unwrap();
                fs::write(c.join("period"), "1000000000\n").unwrap();
            }
        }
        assert_eq!(servers_bw(d.path(), &[0, 1], true, false), Some(104856));
        assert_eq!(servers_bw(d.path(), &[0, 1], false, true), Some(52428));
        assert_eq!(servers_bw(d.path(), &[0, 1], true, true), Some(157284));
        assert_eq!(servers_bw(d.path(), &[1], false, true), Some(26214));
        assert_eq!(servers_bw(d.path(), &[0, 2], true, false), None);
    }

    #[test]
    fn task_bw_counts_only_deadline_reservations() {
        let dl = attr::deadline_attr(10_000_000, 100_000_000);
        assert_eq!(task_bw(&dl), to_ratio(100_000_000, 10_000_000));
        let mut by_deadline = dl;
        by_deadline.sched_period = 0;
        assert_eq!(task_bw(&by_deadline), task_bw(&dl));
        let mut sugov = dl;
        sugov.sched_flags |= SCHED_FLAG_SUGOV;
        assert_eq!(task_bw(&sugov), 0);
        assert_eq!(
            task_bw(&attr::SchedAttr {
                sched_policy: attr::SCHED_FIFO,
                sched_priority: 10,
                ..attr::empty()
            }),
            0
        );
    }

    #[test]
    fn the_limit_is_the_rt_share_of_every_cpu() {
        assert_eq!(limit_bw(950_000, 1_000_000, 2), Some(2 * 996_147));
        assert_eq!(limit_bw(1_000_000, 1_000_000, 2), Some(2 << 20));
        assert_eq!(limit_bw(-1, 1_000_000, 2), None);
    }

    #[test]
    fn ext_servers_fit_under_the_limit_only() {
        // two CPUs, two fair_servers of 50 ms/s counted, two ext_servers
        // of 50 ms/s asked
        let mut a = Admission {
            total_bw: 104856,
            limit_bw: Some(2 << 20),
            ext_servers_bw: 104856,
        };
        assert!(a.ext_servers_fit());
        // two 990 ms/s SCHED_DEADLINE tasks still counted
        a.total_bw += 2 * to_ratio(1_000_000_000, 990_000_000) as i64;
        assert!(!a.ext_servers_fit());
        // no limit: anything fits
        a.limit_bw = None;
        assert!(a.ext_servers_fit());
    }
}
