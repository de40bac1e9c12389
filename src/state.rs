// SPDX-License-Identifier: GPL-2.0-only
//! The state directories: root-only, on tmpfs, gone at reboot.
//!
//! scx_floor's, /run/scx_floor, holds the lock that keeps one scx_floor (or
//! the guardian of one that exited) at a time, the boost journal
//! (`boosted.v2.journal`, written by the scheduler's `boost.rs`) and the knob
//! journal (`knobs/`, [`crate::knobs`]). Its guardian and its next start
//! replay both journals. scx_floor-ab keeps its own lock and knob journal in
//! /run/scx_floor-ab.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Where the journals live: root-only, gone at reboot (tmpfs).
pub const STATE_DIR: &str = "/run/scx_floor";

/// The journal of boosted tasks under `state_dir`.
pub fn journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("boosted.v2.journal")
}

/// The boost journal of scx_floor versions before the boost's attributes
/// were journaled (32-byte records), replayed once at start.
pub fn legacy_journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join("boosted.journal")
}

/// The journal of kernel knobs under `state_dir`.
pub fn knobs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("knobs")
}

/// Creates `dir` (and parents) readable and writable by root only.
pub fn private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// Writes `data` to `path` atomically, mode 0600: a new temporary file in
/// the same directory (a random name, created with O_EXCL by `tempfile`,
/// so that a file or symlink planted there by another user is never opened),
/// then renamed over `path` (a symlink at `path` is replaced, not followed).
/// Errors: the directory is not writable, or the rename fails.
pub fn write_atomic(path: &Path, data: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut f = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    f.write_all(data.as_bytes())
        .with_context(|| format!("writing {}", f.path().display()))?;
    f.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

/// Takes `dir`/lock and holds it while the returned file is open (a child
/// forked without exec, such as scx_floor's guardian, shares it): one
/// scx_floor at a time, and none while an earlier one's guardian restores. Held by someone else, the lock
/// is tried every 50 ms for up to `wait_ms`; nothing has changed before it is
/// taken. Errors: the directory cannot be made private, or the lock is still
/// held after the wait.
pub fn lock_state_dir(dir: &Path, wait_ms: u64, holders: &str) -> Result<fs::File> {
    private_dir(dir)?;
    let path = dir.join("lock");
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let t0 = std::time::Instant::now();
    let mut told = false;
    // an exclusive flock(2): held by the open file, which the guardian's
    // fork shares
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()))
            }
        }
        let waited = t0.elapsed().as_millis() as u64;
        if waited >= wait_ms {
            anyhow::bail!(
                "{}/lock has been held for {waited} ms by {holders}",
                dir.display()
            );
        }
        if !told {
            log::info!(
                "waiting for {}/lock (up to {wait_ms} ms), held by {holders}",
                dir.display()
            );
            told = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_taken_once_and_a_second_taker_waits_then_fails() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("state");
        let held = lock_state_dir(&d, 0, "a test").unwrap();
        let t0 = std::time::Instant::now();
        let e = lock_state_dir(&d, 120, "a test").unwrap_err().to_string();
        assert!(e.contains("has been held"), "{e}");
        assert!(t0.elapsed() >= std::time::Duration::from_millis(120));
        drop(held);
        assert!(lock_state_dir(&d, 0, "a test").is_ok());
    }

    #[test]
    fn write_atomic_replaces_a_planted_symlink_and_sets_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        // the old fixed temporary name, and the target, planted as symlinks
        let out = dir.path().join("stats.json");
        std::os::unix::fs::symlink(&victim, dir.path().join("stats.tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_atomic(&out, "{}").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&out).unwrap(), "{}");
        assert!(!fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        // a file created beforehand with another mode ends up 0600
        let pre = dir.path().join("pre.json");
        fs::write(&pre, "x").unwrap();
        fs::set_permissions(&pre, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&pre, "y").unwrap();
        let mode = fs::metadata(&pre).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // a directory that does not exist: an error, nothing written
        assert!(write_atomic(Path::new("/nonexistent-dir/x.json"), "z").is_err());
    }
}
