// SPDX-License-Identifier: GPL-2.0-only
//! The guardian: a small process forked before scx_floor changes anything.
//! It blocks reading a pipe whose only writer is scx_floor; when scx_floor
//! dies for any reason (SIGKILL included) the pipe closes, and the guardian
//! replays the journals: every task still boosted gets its policy back and
//! every kernel knob its saved value. After a normal exit the journals are
//! empty and it just exits.
//!
//! While scx_floor is stopped (SIGSTOP, SIGTSTP, a debugger) its server
//! threads cannot end a boost on time, and the kernel's ext_server is off on
//! the CPUs it serves. The guardian checks the state of scx_floor every
//! `STOP_POLL_MS`; when it finds it stopped it replays the journals the same
//! way (boosted tasks back to their policy, ext_server runtime back to its
//! saved value), so that no boost outlives the stop by more than
//! `STOP_POLL_MS`, and logs it. Measured on 7.3: the ext_server does not start
//! serving a task that was already queued when its runtime comes back, so a
//! task pinned under an RT hog waits until scx_floor continues or the
//! sched_ext watchdog (10 s) ejects scx_floor and the fair class takes over. When scx_floor continues, its main loop sees the jump in time
//! and sets the knobs again (`policy.rs`).
//!
//! It ignores SIGINT, SIGTERM and SIGHUP (a Ctrl-C reaches the whole process
//! group; the guardian must outlive scx_floor, not die with it), runs at
//! SCHED_FIFO 99 so that RT hogs cannot delay it, and is named
//! `scx_floor-guard` so that `pkill -x scx_floor` does not hit it. If it is
//! killed too, the next start of scx_floor replays the journals.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{bail, Result};

use crate::boost::{self, Journal};
use crate::knobs::Knobs;

/// How often the guardian checks whether scx_floor is stopped, ms: also the
/// longest a SCHED_FIFO boost can outlive a SIGSTOP of scx_floor.
pub const STOP_POLL_MS: i32 = 50;

/// Whether the state letter (field 3 of /proc/PID/stat) is a stopped task
/// ('T': stopped by a signal, 't': stopped by a tracer).
pub fn is_stopped_state(stat: &str) -> bool {
    // The comm field may hold spaces and parentheses: the state follows the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|st| st == "T" || st == "t")
}

/// Replays both journals under `state_dir`; returns (tasks, knobs) restored.
/// `keep_trying`: see [`Knobs::restore_all`].
pub fn replay_all(state_dir: &Path, keep_trying: &dyn Fn() -> bool) -> (usize, usize) {
    let tasks = Journal::open(&crate::policy::journal_path(state_dir))
        .map(|j| boost::replay(&j))
        .unwrap_or(0);
    let knobs = Knobs::open(&crate::policy::knobs_dir(state_dir))
        .map(|k| k.restore_all(keep_trying))
        .unwrap_or(0);
    (tasks, knobs)
}

/// The running guardian, as its parent holds it.
pub struct Guardian {
    /// its pid (one thread: also its tid)
    pub pid: u32,
    /// the pipe's write end: the guardian replays the journals when it closes
    _pipe: OwnedFd,
}

/// Forks the guardian. Keep the returned [`Guardian`] for as long as anything
/// may need restoring: dropping it closes the pipe, which tells the guardian
/// to replay the journals and exit. `lock_fd` (the state directory's lock) is
/// closed in the guardian so that only scx_floor holds the lock. Call while
/// single-threaded. Errors: `pipe2` or `fork` failing.
pub fn spawn(state_dir: &Path, lock_fd: i32) -> Result<Guardian> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe2: {}", std::io::Error::last_os_error());
    }
    let (rd, wr) = (fds[0], fds[1]);
    // SAFETY: the caller is single-threaded (no locks can be held across fork).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: we own these fds in the child.
        unsafe {
            libc::close(wr);
            libc::close(lock_fd);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_IGN);
            }
            libc::prctl(
                libc::PR_SET_NAME,
                c"scx_floor-guard".as_ptr() as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        let _ = boost::set_attr(
            0,
            &boost::SchedAttr {
                sched_policy: boost::SCHED_FIFO,
                sched_priority: 99,
                ..Default::default()
            },
        );
        let parent = format!("/proc/{}/stat", unsafe { libc::getppid() });
        let parent_stopped =
            || std::fs::read_to_string(&parent).is_ok_and(|s| is_stopped_state(&s));
        let mut buf = [0u8; 64];
        let mut stopped = false;
        loop {
            let mut pfd = libc::pollfd {
                fd: rd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd of our own.
            let r = unsafe { libc::poll(&mut pfd, 1, STOP_POLL_MS) };
            if r > 0 {
                // SAFETY: reading into our own buffer.
                let n = unsafe { libc::read(rd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
                if n == 0
                    || (n < 0
                        && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR))
                {
                    break;
                }
                continue;
            }
            let now_stopped = parent_stopped();
            if now_stopped && !stopped {
                let (t, k) = replay_all(state_dir, &parent_stopped);
                eprintln!(
                    "scx_floor-guard: scx_floor is stopped: restored {t} boosted task(s) and {k} kernel knob(s); its server is paused until it continues"
                );
            } else if !now_stopped && stopped {
                eprintln!("scx_floor-guard: scx_floor continues");
            }
            stopped = now_stopped;
        }
        let (t, k) = replay_all(state_dir, &|| true);
        if t + k > 0 {
            eprintln!("scx_floor-guard: scx_floor is gone; restored {t} boosted task(s) and {k} kernel knob(s)");
        }
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: rd is ours; wr is returned as owned.
    unsafe { libc::close(rd) };
    Ok(Guardian {
        pid: pid as u32,
        _pipe: unsafe { OwnedFd::from_raw_fd(wr) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopped_states() {
        assert!(is_stopped_state("123 (scx_floor) T 1 123 123 0 -1"));
        assert!(is_stopped_state("123 (a) b) (c) t 1 2"));
        assert!(!is_stopped_state("123 (scx_floor) S 1 123 123 0 -1"));
        assert!(!is_stopped_state("123 (T) R 1"));
        assert!(!is_stopped_state("garbage"));
    }
}
