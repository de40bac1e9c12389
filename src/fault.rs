// SPDX-License-Identifier: GPL-2.0-only
//! Faults a VM test injects to show that it fails when the mechanism it
//! checks is broken (`scripts/broken`; docs/testing.md, "Broken variants").
//! Named by the environment variable [`ENV`] at start and unset in normal
//! use. A fault is logged as a warning at start; an unknown name is refused
//! before anything changes.

use std::sync::atomic::{AtomicU8, Ordering};

use anyhow::{bail, Result};

/// The environment variable that names the fault.
pub const ENV: &str = "SCX_FLOOR_TEST_FAULT";

/// One fault, each breaking one mechanism a test checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// none: the scheduler as built
    None = 0,
    /// `no-boost`: boosts are journaled and counted but never reach the
    /// kernel, so a starved task stays at its own policy (the floor is gone)
    NoBoost = 1,
    /// `over-budget`: the server hands out four times its runtime per
    /// period (at most the period)
    OverBudget = 2,
    /// `late-end`: every boost is given its policy back 10 ms late (by the
    /// executor or the planner)
    LateEnd = 3,
    /// `no-restore`: the journals are never replayed (the guardian's and a
    /// start's restores do nothing)
    NoRestore = 4,
    /// `stuck-planner`: the planner of the first served CPU runs only on
    /// another online CPU (the last) until the watchdog first frees it,
    /// as a planner preempted in a migrate-disabled section is bound to its
    /// CPU until the section ends
    StuckPlanner = 5,
    /// `stuck-no-rescue`: `stuck-planner`, and the watchdog never frees it
    StuckNoRescue = 6,
    /// `no-slice-policy`: the slice never follows the number of runnable
    /// tasks (`--latency-us` keeps the one-task slice)
    NoSlicePolicy = 7,
    /// `no-rcu-boost`: as `--no-rcu-boost`, preempted RCU readers are not
    /// queued first
    NoRcuBoost = 8,
    /// `no-drain`: tasks that may run elsewhere stay in the DSQ of a CPU a
    /// higher class took (`spread_drain()` in bpf/main.bpf.c never runs)
    NoDrain = 9,
}

const NAMES: [(&str, Fault); 9] = [
    ("no-boost", Fault::NoBoost),
    ("over-budget", Fault::OverBudget),
    ("late-end", Fault::LateEnd),
    ("no-restore", Fault::NoRestore),
    ("stuck-planner", Fault::StuckPlanner),
    ("stuck-no-rescue", Fault::StuckNoRescue),
    ("no-slice-policy", Fault::NoSlicePolicy),
    ("no-rcu-boost", Fault::NoRcuBoost),
    ("no-drain", Fault::NoDrain),
];

static FAULT: AtomicU8 = AtomicU8::new(Fault::None as u8);

/// The fault named `s` ("" is none). Errors: an unknown name.
pub fn parse(s: &str) -> Result<Fault> {
    if s.is_empty() {
        return Ok(Fault::None);
    }
    match NAMES.iter().find(|(n, _)| *n == s) {
        Some(&(_, f)) => Ok(f),
        None => bail!(
            "{ENV}={s}: no such fault (known: {})",
            NAMES.map(|(n, _)| n).join(", ")
        ),
    }
}

/// Sets the fault from [`ENV`] and returns it. Errors: an unknown name.
pub fn init_from_env() -> Result<Fault> {
    let f = parse(&std::env::var(ENV).unwrap_or_default())?;
    FAULT.store(f as u8, Ordering::Relaxed);
    Ok(f)
}

/// Whether fault `f` is injected.
pub fn is(f: Fault) -> bool {
    FAULT.load(Ordering::Relaxed) == f as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_an_unknown_one_is_refused() {
        assert_eq!(parse("").unwrap(), Fault::None);
        for (n, f) in NAMES {
            assert_eq!(parse(n).unwrap(), f);
        }
        let e = parse("no-boosts").unwrap_err().to_string();
        assert!(e.contains("no such fault") && e.contains("late-end"), "{e}");
        assert!(!is(Fault::NoBoost), "no fault unless set");
    }
}
