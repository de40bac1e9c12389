// SPDX-License-Identifier: GPL-2.0-only
//! Which mechanism can take a CPU back from the real-time task that holds
//! it, so that the CPU's starving normal tasks get their floor.
//!
//! The kernel runs the highest class first (stop, deadline, RT, then
//! sched_ext), and within RT the highest priority; an RT task is never
//! preempted by one of equal priority (SCHED_FIFO) before it yields. So:
//!
//! - A SCHED_FIFO/RR hog at priority 1..=97 is beaten by a SCHED_FIFO boost
//!   one above it (scx_floor's own threads run at 99, boosts at most 98).
//! - A hog at 98 or 99, or a SCHED_DEADLINE task, needs a deadline entity:
//!   a SCHED_DEADLINE boost, which the kernel refuses for a task pinned to
//!   fewer CPUs than its root domain while `kernel.sched_rt_runtime_us` is
//!   not -1 (`__sched_setscheduler()`, kernel/sched/syscalls.c: EPERM), or
//!   the kernel's own ext_server, a dl_server that runs sched_ext tasks
//!   above every RT priority (kernel/sched/ext.c, deadline.c).
//! - Where neither is there (no ext_server in debugfs), nothing in user
//!   space can serve the CPU: scx_floor says so instead of delivering 0 in
//!   silence.

use crate::attr::{SCHED_DEADLINE, SCHED_FIFO, SCHED_RR};
use crate::boost::MAX_BOOST_PRIO;

/// How a served CPU's floor is delivered (the `by` column of `--stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// SCHED_FIFO boosts one priority above the hog (the executor)
    Fifo,
    /// SCHED_DEADLINE boosts (kernel-cut mode)
    Deadline,
    /// the kernel's ext_server, handed the CPU's budget
    ExtServer,
    /// nothing can preempt the hog: the CPU is not served
    None,
}

impl Reach {
    /// Short name for the `--stats` table.
    pub fn name(self) -> &'static str {
        match self {
            Reach::Fifo => "fifo",
            Reach::Deadline => "dl",
            Reach::ExtServer => "ext",
            Reach::None => "none",
        }
    }
}

/// What can preempt a task of `policy` at RT priority `prio`:
/// `deadline_ok` when SCHED_DEADLINE boosts are admitted for the CPU's
/// waiters (kernel-cut mode, sched_rt_runtime_us -1), `ext_server` when the
/// kernel's ext_server can be handed the budget.
///
/// SCHED_FIFO boosts come first wherever they reach: the executor ends each
/// on the CPU itself by a local hrtimer, while a SCHED_DEADLINE boost is
/// made from another CPU and, changed back before its deadline, leaves the
/// task's deadline entity throttled (see `CpuServer`'s `running` field;
/// docs/design.md, Decisions: "SCHED_FIFO boosts wherever they reach;
/// SCHED_DEADLINE only above them").
pub fn reach(policy: u32, prio: u32, deadline_ok: bool, ext_server: bool) -> Reach {
    if !at_or_above(policy, prio, MAX_BOOST_PRIO) {
        // (not a higher class at all: the dispatcher serves the CPU)
        Reach::Fifo
    } else if deadline_ok {
        Reach::Deadline
    } else if ext_server {
        Reach::ExtServer
    } else {
        Reach::None
    }
}

/// Whether a task of `policy` at RT priority `prio` is not preempted by a
/// SCHED_FIFO thread at `rt_prio`: a SCHED_DEADLINE task, or a SCHED_FIFO
/// or SCHED_RR one at `rt_prio` or above (equal priority does not preempt).
pub fn at_or_above(policy: u32, prio: u32, rt_prio: u32) -> bool {
    let rt = policy == SCHED_FIFO || policy == SCHED_RR;
    policy == SCHED_DEADLINE || (rt && prio >= rt_prio)
}

/// The setting that would let scx_floor's own server take a CPU from a hog
/// it cannot preempt now, for the warning.
pub fn remedy() -> &'static str {
    "start scx_floor with --rt-runtime-unlimited (or set kernel.sched_rt_runtime_us to -1 first): \
     SCHED_DEADLINE boosts then preempt it"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_boosts_reach_hogs_up_to_97() {
        assert_eq!(reach(SCHED_RR, 25, false, true), Reach::Fifo);
        assert_eq!(reach(SCHED_FIFO, 97, false, true), Reach::Fifo);
        // a boost at 98 would only equal a hog at 98
        assert_eq!(reach(SCHED_FIFO, 98, false, true), Reach::ExtServer);
        assert_eq!(reach(SCHED_FIFO, 99, false, true), Reach::ExtServer);
        assert_eq!(reach(SCHED_DEADLINE, 0, false, true), Reach::ExtServer);
    }

    #[test]
    fn deadline_boosts_reach_what_fifo_boosts_do_not_when_admitted() {
        assert_eq!(reach(SCHED_FIFO, 99, true, false), Reach::Deadline);
        assert_eq!(reach(SCHED_RR, 98, true, true), Reach::Deadline);
        assert_eq!(reach(SCHED_DEADLINE, 0, true, true), Reach::Deadline);
        // below 98 SCHED_FIFO boosts serve even where SCHED_DEADLINE ones
        // would be admitted
        assert_eq!(reach(SCHED_RR, 25, true, true), Reach::Fifo);
    }

    #[test]
    fn nothing_reaches_a_99_hog_without_deadline_or_ext_server() {
        assert_eq!(reach(SCHED_FIFO, 99, false, false), Reach::None);
        assert_eq!(reach(SCHED_RR, 98, false, false), Reach::None);
        assert_eq!(reach(SCHED_RR, 50, false, false), Reach::Fifo);
    }
}
