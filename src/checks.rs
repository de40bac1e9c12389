// SPDX-License-Identifier: GPL-2.0-only
//! Pre-flight checks, run before anything on the system is touched: each
//! failure is a clear error and leaves the system as it was.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// Where the kernel publishes sched_ext's state (Documentation/scheduler/sched-ext.rst).
pub const SCX_SYSFS: &str = "/sys/kernel/sched_ext";

/// What `/sys/kernel/sched_ext` says about the running BPF scheduler.
#[derive(Debug, PartialEq, Eq)]
pub enum ScxState {
    /// the kernel has no sched_ext (no `/sys/kernel/sched_ext`)
    Unsupported,
    /// sched_ext is there and no BPF scheduler is loaded
    Disabled,
    /// a BPF scheduler is loaded (or being loaded/unloaded); its ops name
    Loaded { state: String, ops: String },
}

/// Interprets the contents of `state` and `root/ops` (`None`: file missing).
pub fn parse_state(state: Option<&str>, ops: Option<&str>) -> ScxState {
    match state.map(str::trim) {
        None => ScxState::Unsupported,
        Some("disabled") => ScxState::Disabled,
        Some(s) => ScxState::Loaded {
            state: s.to_string(),
            ops: ops
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty())
                .unwrap_or_else(|| "unknown".into()),
        },
    }
}

/// Reads the sched_ext state from sysfs under `root` (normally [`SCX_SYSFS`]).
pub fn read_state(root: &Path) -> ScxState {
    let state = std::fs::read_to_string(root.join("state")).ok();
    if state.is_none() && !root.exists() {
        return ScxState::Unsupported;
    }
    let ops = std::fs::read_to_string(root.join("root/ops"))
        .or_else(|_| std::fs::read_to_string(root.join("root/ops_name")))
        .ok();
    parse_state(state.as_deref().or(Some("unknown")), ops.as_deref())
}

/// Whether sysfs text `state` (of /sys/kernel/sched_ext) says the kernel is
/// taking the loaded BPF scheduler down or has done so: "disabling" or
/// "disabled". The kernel writes "disabling" when its disable work starts
/// (an ejection, SysRq-S, or our own detach) and calls the scheduler's
/// `ops.exit()`, which fills the exit report, only at its end.
pub fn is_leaving(state: &str) -> bool {
    matches!(state.trim(), "disabling" | "disabled")
}

/// sched_ext's sysfs `state`, kept open: each [`StateFile::leaving`] is one
/// pread(2) (a sysfs attribute is generated anew at every read from
/// offset 0).
pub struct StateFile(std::fs::File);

impl StateFile {
    /// Opens `root`/state (root normally [`SCX_SYSFS`]); None if it cannot.
    pub fn open(root: &Path) -> Option<Self> {
        std::fs::File::open(root.join("state")).ok().map(Self)
    }

    /// Whether the kernel is disabling the BPF scheduler or has ([`is_leaving`]);
    /// false if the file cannot be read.
    pub fn leaving(&self) -> bool {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 32];
        match self.0.read_at(&mut buf, 0) {
            Ok(n) => std::str::from_utf8(&buf[..n]).is_ok_and(is_leaving),
            Err(_) => false,
        }
    }
}

/// Fails unless `euid` is root; the error says "must run as root: " and
/// then `why` (what the tool does that needs it, and how to run it).
pub fn require_root(euid: u32, why: &str) -> Result<()> {
    if euid != 0 {
        bail!("must run as root: {why}");
    }
    Ok(())
}

/// Fails unless sched_ext is available and no other BPF scheduler is loaded.
pub fn require_scx_free(state: &ScxState) -> Result<()> {
    match state {
        ScxState::Unsupported => bail!(
            "this kernel has no sched_ext ({SCX_SYSFS} is missing): boot a kernel built with \
             CONFIG_SCHED_CLASS_EXT=y (Linux >= 6.12), e.g. Debian's 7.3.4 from trixie-backports"
        ),
        ScxState::Disabled => Ok(()),
        ScxState::Loaded { state, ops } => bail!(
            "another sched_ext scheduler is loaded: {ops} (state: {state}); stop it first \
             (e.g. systemctl stop scx, or kill the process that loaded it)"
        ),
    }
}

/// Fails when the kernel was booted with `isolcpus=` domain isolation, which
/// sched_ext refuses ("Not compatible with isolcpus= domain isolation").
/// `cmdline` is the contents of /proc/cmdline.
pub fn require_no_isolcpus(cmdline: &str) -> Result<()> {
    for arg in cmdline.split_whitespace() {
        if let Some(v) = arg.strip_prefix("isolcpus=") {
            // isolcpus=nohz,... without "domain" (and without a bare CPU list)
            // does not isolate scheduling domains.
            let flags: Vec<&str> = v.split(',').collect();
            let domain = flags.contains(&"domain")
                || !flags.iter().any(|f| *f == "nohz" || *f == "managed_irq");
            if domain {
                bail!(
                    "the kernel was booted with '{arg}': sched_ext refuses to load with isolcpus= \
                     domain isolation; use nohz_full= (and cpusets) instead"
                );
            }
        }
    }
    Ok(())
}

/// The CPUs to serve: `list` (a cpulist such as "1,3-5") or all online CPUs,
/// in ascending order, each once ("1,1" is CPU 1: one server per CPU).
/// Errors: a malformed list, a range that runs backwards, or a CPU that
/// does not exist or is offline.
pub fn served_cpus(list: Option<&str>) -> Result<Vec<usize>> {
    let online = crate::sys::online_cpus()?;
    let Some(l) = list else { return Ok(online) };
    check_cpulist_ranges(l, &online)?;
    let mut want = scx_utils::read_cpulist(l)
        .with_context(|| format!("--server-cpus '{l}' is not a CPU list"))?;
    want.sort_unstable();
    want.dedup();
    check_cpus(&want, &online)?;
    Ok(want)
}

/// Checks the ranges of a cpulist before it is expanded: each `A-B` runs
/// low to high, and no CPU named is above the highest online one (scx_utils
/// expands a range entry by entry: "0-4000000000" would take 32 GB first).
/// Groups that are not numbers are left to the parser's error.
fn check_cpulist_ranges(list: &str, online: &[usize]) -> Result<()> {
    let max = online.iter().copied().max().unwrap_or(0);
    for g in list.trim_end_matches('\0').split(',') {
        let g = g.trim();
        let (a, b) = g.split_once('-').unwrap_or((g, g));
        let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
            continue;
        };
        if a > b {
            anyhow::bail!("--server-cpus: the range {g} runs backwards (write {b}-{a})");
        }
        if b > max {
            check_cpus(&[b], online)?;
        }
    }
    Ok(())
}

/// Fails unless every CPU of `want` is in `online`.
pub fn check_cpus(want: &[usize], online: &[usize]) -> Result<()> {
    if want.is_empty() {
        anyhow::bail!("--server-cpus names no CPU");
    }
    for c in want {
        if !online.contains(c) {
            anyhow::bail!(
                "--server-cpus: CPU {c} does not exist or is offline (online: {online:?})"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(parse_state(None, None), ScxState::Unsupported);
        assert_eq!(parse_state(Some("disabled\n"), None), ScxState::Disabled);
        assert_eq!(
            parse_state(Some("enabled\n"), Some("scx_bpfland_1.0\n")),
            ScxState::Loaded {
                state: "enabled".into(),
                ops: "scx_bpfland_1.0".into()
            }
        );
        assert_eq!(
            parse_state(Some("enabling"), None),
            ScxState::Loaded {
                state: "enabling".into(),
                ops: "unknown".into()
            }
        );
    }

    #[test]
    fn errors_name_the_cause() {
        assert!(require_root(0, "x").is_ok());
        let e = require_root(1000, "it loads a BPF scheduler").unwrap_err();
        assert_eq!(e.to_string(), "must run as root: it loads a BPF scheduler");
        assert!(require_scx_free(&ScxState::Disabled).is_ok());
        let e = require_scx_free(&ScxState::Unsupported)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no sched_ext"), "{e}");
        let e = require_scx_free(&ScxState::Loaded {
            state: "enabled".into(),
            ops: "scx_lavd".into(),
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("scx_lavd"), "{e}");
    }

    #[test]
    fn read_state_from_a_directory() {
        let d = std::env::temp_dir().join(format!("scx_floor_checks_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        assert_eq!(read_state(&d), ScxState::Unsupported);
        std::fs::create_dir_all(d.join("root")).unwrap();
        std::fs::write(d.join("state"), "enabled\n").unwrap();
        std::fs::write(d.join("root/ops"), "scx_simple\n").unwrap();
        assert_eq!(
            read_state(&d),
            ScxState::Loaded {
                state: "enabled".into(),
                ops: "scx_simple".into()
            }
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn leaving_states() {
        assert!(is_leaving("disabling\n"));
        assert!(is_leaving("disabled"));
        for s in ["enabled\n", "enabling", "prepping", ""] {
            assert!(!is_leaving(s), "{s:?}");
        }
        let d = tempfile::tempdir().unwrap();
        assert!(StateFile::open(d.path()).is_none());
        std::fs::write(d.path().join("state"), "enabled\n").unwrap();
        let f = StateFile::open(d.path()).unwrap();
        assert!(!f.leaving());
        // read again from offset 0 through the same descriptor
        std::fs::write(d.path().join("state"), "disabling\n").unwrap();
        assert!(f.leaving());
    }

    #[test]
    fn isolcpus() {
        assert!(require_no_isolcpus("quiet nohz_full=1").is_ok());
        assert!(require_no_isolcpus("isolcpus=nohz,1").is_ok());
        assert!(require_no_isolcpus("ro isolcpus=1-3").is_err());
        assert!(require_no_isolcpus("isolcpus=domain,managed_irq,2").is_err());
    }

    #[test]
    fn cpu_lists() {
        assert!(check_cpus(&[0, 1], &[0, 1, 2]).is_ok());
        let e = check_cpus(&[7], &[0, 1]).unwrap_err().to_string();
        assert!(e.contains("CPU 7 does not exist"), "{e}");
        assert!(check_cpus(&[], &[0]).is_err());
        // ranges are checked before they are expanded
        assert!(check_cpulist_ranges("0-1,1", &[0, 1]).is_ok());
        let e = check_cpulist_ranges("0-4000000000", &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 4000000000 does not exist"), "{e}");
        let e = check_cpulist_ranges("3-1", &[0, 1, 2, 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs backwards (write 1-3)"), "{e}");
        assert!(
            check_cpulist_ranges("1-x", &[0, 1]).is_ok(),
            "left to the parser"
        );
    }
}
