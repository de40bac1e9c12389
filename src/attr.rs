// SPDX-License-Identifier: GPL-2.0-only
//! A thread's scheduling attributes: libc's `struct sched_attr` (the first
//! version, SCHED_ATTR_SIZE_VER0 = 48 bytes, include/uapi/linux/sched/types.h),
//! the `SCHED_*` policies and flags from libc, and `sched_getattr(2)` /
//! `sched_setattr(2)`, which glibc does not wrap.

/// `struct sched_attr`: policy, flags, nice, RT priority and the
/// SCHED_DEADLINE runtime, deadline and period (ns).
pub type SchedAttr = libc::sched_attr;

/// The size the kernel is told `struct sched_attr` has, bytes (48).
pub const ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

/// `SCHED_OTHER` (include/uapi/linux/sched.h), as `sched_attr` holds it.
pub const SCHED_OTHER: u32 = libc::SCHED_OTHER as u32;
/// `SCHED_FIFO`
pub const SCHED_FIFO: u32 = libc::SCHED_FIFO as u32;
/// `SCHED_RR`
pub const SCHED_RR: u32 = libc::SCHED_RR as u32;
/// `SCHED_DEADLINE`
pub const SCHED_DEADLINE: u32 = libc::SCHED_DEADLINE as u32;
/// `SCHED_EXT` (Linux >= 6.12; not in libc): the class a BPF scheduler runs
/// when it does not take every task (no `SCX_OPS_SWITCH_PARTIAL` here).
pub const SCHED_EXT: u32 = 7;
/// Children of a boosted task start at their parent's original policy.
pub const SCHED_FLAG_RESET_ON_FORK: u64 = libc::SCHED_FLAG_RESET_ON_FORK as u64;

/// The policies sched_ext schedules (`SCHED_OTHER`, `SCHED_BATCH`,
/// `SCHED_IDLE`, `SCHED_EXT`): a task at one of them is a normal task.
pub fn is_normal_policy(policy: u32) -> bool {
    [
        SCHED_OTHER,
        libc::SCHED_BATCH as u32,
        libc::SCHED_IDLE as u32,
        SCHED_EXT,
    ]
    .contains(&policy)
}

/// SCHED_DEADLINE needs a runtime of at least this many ns (kernel: 1 << DL_SCALE).
pub const DL_MIN_RUNTIME_NS: u64 = 1024;
/// Shortest SCHED_DEADLINE period the kernel accepts by default, ns
/// (kernel.sched_deadline_period_min_us = 100).
pub const DL_MIN_PERIOD_NS: u64 = 100_000;
/// Period of the zero-bandwidth reservation, ns: with [`DL_MIN_RUNTIME_NS`]
/// per period, the kernel's bandwidth (runtime << 20) / period rounds to 0
/// for any period above 1.07 s (kernel/sched/core.c `to_ratio()`); 2 s is
/// within the default `kernel.sched_deadline_period_max_us` (4.19 s).
pub const DL_ZERO_BW_PERIOD_NS: u64 = 2_000_000_000;

/// All fields zero (SCHED_OTHER, nice 0, no flags) but the size.
pub const fn empty() -> SchedAttr {
    SchedAttr {
        size: ATTR_SIZE,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    }
}

/// SCHED_DEADLINE with reset-on-fork: `runtime_ns` every `period_ns`
/// (deadline = period; the period raised to the runtime and to
/// [`DL_MIN_PERIOD_NS`] if shorter, the runtime to [`DL_MIN_RUNTIME_NS`]).
pub fn deadline_attr(runtime_ns: u64, period_ns: u64) -> SchedAttr {
    let runtime = runtime_ns.max(DL_MIN_RUNTIME_NS);
    let period = period_ns.max(runtime).max(DL_MIN_PERIOD_NS);
    SchedAttr {
        sched_policy: SCHED_DEADLINE,
        sched_flags: SCHED_FLAG_RESET_ON_FORK,
        sched_runtime: runtime,
        sched_deadline: period,
        sched_period: period,
        ..empty()
    }
}

/// The policy of scx_floor's own real-time threads (planners, executors,
/// slice-end threads, the watchdog): SCHED_FIFO 99, reset on fork.
pub fn agent_attr() -> SchedAttr {
    SchedAttr {
        sched_policy: SCHED_FIFO,
        sched_priority: 99,
        sched_flags: SCHED_FLAG_RESET_ON_FORK,
        ..empty()
    }
}

/// A SCHED_DEADLINE reservation the kernel counts as zero bandwidth.
pub fn dl_zero_attr() -> SchedAttr {
    deadline_attr(DL_MIN_RUNTIME_NS, DL_ZERO_BW_PERIOD_NS)
}

/// `sched_getattr(2)` of thread `tid`. Errors: ESRCH when it is gone.
pub fn get_attr(tid: u32) -> std::io::Result<SchedAttr> {
    let mut a = empty();
    // SAFETY: the kernel writes at most ATTR_SIZE bytes into `a`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut a,
            ATTR_SIZE,
            0,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(a)
}

/// `sched_setattr(2)` of thread `tid` (0: the caller). Errors: those of the
/// call (EPERM, EBUSY when SCHED_DEADLINE admission refuses, ESRCH).
pub fn set_attr(tid: u32, a: &SchedAttr) -> std::io::Result<()> {
    let mut a = *a;
    a.size = ATTR_SIZE;
    // SAFETY: `a` is a valid sched_attr of the size it declares.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid as libc::pid_t, &a, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_is_the_first_version_and_the_policies_are_the_kernels() {
        assert_eq!(ATTR_SIZE, 48);
        assert_eq!(
            (SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE),
            (0, 1, 2, 6)
        );
        assert!(is_normal_policy(3) && is_normal_policy(5) && is_normal_policy(7));
        assert!(!is_normal_policy(SCHED_FIFO) && !is_normal_policy(SCHED_DEADLINE));
    }

    #[test]
    fn deadline_attr_raises_short_values_to_the_kernels_minimum() {
        let a = deadline_attr(10, 50);
        assert_eq!(a.sched_runtime, DL_MIN_RUNTIME_NS);
        assert_eq!(
            (a.sched_deadline, a.sched_period),
            (DL_MIN_PERIOD_NS, DL_MIN_PERIOD_NS)
        );
        let b = deadline_attr(30_000_000, 1_000_000);
        assert_eq!(b.sched_period, 30_000_000, "period raised to the runtime");
        assert_ne!(b.sched_flags & SCHED_FLAG_RESET_ON_FORK, 0);
        assert_eq!(b.size, ATTR_SIZE);
    }

    #[test]
    fn get_attr_of_this_thread_reads_a_normal_policy_and_a_gone_one_fails() {
        let a = get_attr(0).unwrap();
        assert!(is_normal_policy(a.sched_policy), "{a:?}");
        // pid_max is at most 4194304 (2^22): this tid cannot exist
        let e = get_attr(u32::MAX >> 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
    }
}
