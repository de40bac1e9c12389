// SPDX-License-Identifier: GPL-2.0-only
//! Pre-flight checks, run before anything on the system is touched: each
//! failure is a clear error and leaves the system as it was.

use anyhow::{bail, Result};
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

/// Fails unless `euid` is root.
pub fn require_root(euid: u32) -> Result<()> {
    if euid != 0 {
        bail!(
            "must run as root: loading a BPF scheduler needs CAP_SYS_ADMIN and CAP_BPF, and the \
             bandwidth server changes other tasks' policies (try: sudo scx_floor ...)"
        );
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
        assert!(require_root(0).is_ok());
        assert!(require_root(1000).unwrap_err().to_string().contains("root"));
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
    fn isolcpus() {
        assert!(require_no_isolcpus("quiet nohz_full=1").is_ok());
        assert!(require_no_isolcpus("isolcpus=nohz,1").is_ok());
        assert!(require_no_isolcpus("ro isolcpus=1-3").is_err());
        assert!(require_no_isolcpus("isolcpus=domain,managed_irq,2").is_err());
    }
}
