// SPDX-License-Identifier: GPL-2.0-only
//! What the scheduler (`scx_floor`) and its A/B harness (`scx_floor-ab`)
//! share: the system helpers, scheduling attributes, the pre-flight checks,
//! the kernel-knob journal and its state directory, the SCHED_DEADLINE
//! admission reader, and the `--stats-json` document the scheduler writes
//! and the harness reads. The scheduler's
//! own modules are in the binary (`main.rs`).

/// The version both binaries print (`-V`, the log, ab.json): the package
/// version, `-g` and the commit's short hash when built from a git
/// checkout, and the target triple, e.g. `0.1.0-g1a2b3c4d x86_64-unknown-linux-gnu`.
pub const VERSION: &str = env!("SCX_FLOOR_VERSION");

pub mod attr;
pub mod bpf_intf;
pub mod checks;
pub mod dlbw;
pub mod hist;
pub mod knobs;
pub mod server;
pub mod slice;
pub mod state;
pub mod stats;
pub mod sys;

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_package_version_commit_and_target() {
        let (ver, target) = super::VERSION.split_once(' ').unwrap();
        assert!(ver.starts_with(env!("CARGO_PKG_VERSION")), "{ver}");
        let commit = &ver[env!("CARGO_PKG_VERSION").len()..];
        // git prints at least 8 hex digits, more where 8 are ambiguous
        let hash = commit.strip_prefix("-g").unwrap_or("");
        assert!(
            commit.is_empty() || (hash.len() >= 8 && hash.chars().all(|c| c.is_ascii_hexdigit())),
            "{commit}"
        );
        assert!(target.contains("-linux-"), "{target}");
    }
}
