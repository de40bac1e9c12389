// SPDX-License-Identifier: GPL-2.0-only
//! The journal through which both binaries change kernel knobs: each
//! original value is journaled in a root-only directory before the first
//! write, and written back on every exit path. scx_floor changes the
//! kernel's ext_server runtime per CPU (debugfs) and, only when asked
//! (`--rt-runtime-unlimited`), kernel.sched_rt_runtime_us; its guardian or
//! its next start replays the journal after a SIGKILL. scx_floor-ab changes
//! the servers, `base_slice_ns`, sysctls and rtla's osnoise settings; its
//! next run replays its journal.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::state::{private_dir, write_atomic};
use crate::sys::read_knob;

/// debugfs directory of the kernel's sched_ext dl_server (Linux >= 6.17).
pub const EXT_SERVER_DIR: &str = "/sys/kernel/debug/sched/ext_server";

/// The ext_server runtime file of `cpu` under `dir`.
pub fn ext_server_runtime(dir: &Path, cpu: usize) -> PathBuf {
    dir.join(format!("cpu{cpu}/runtime"))
}

/// The ext_server period file of `cpu` under `dir`.
pub fn ext_server_period(dir: &Path, cpu: usize) -> PathBuf {
    dir.join(format!("cpu{cpu}/period"))
}

/// The CPU whose dl_server `path` sets (`.../fair_server/cpuN/runtime`,
/// `.../ext_server/cpuN/period`), if it is such a knob.
pub fn dl_server_cpu(path: &Path) -> Option<usize> {
    let cpu_dir = path.parent()?;
    let kind = cpu_dir.parent()?.file_name()?.to_str()?;
    if kind != "fair_server" && kind != "ext_server" {
        return None;
    }
    cpu_dir
        .file_name()?
        .to_str()?
        .strip_prefix("cpu")?
        .parse()
        .ok()
}

/// The CPU of `path` if it is a dl_server knob of a CPU that is not fully
/// online now: offline, or between hotplug states (its
/// `hotplug/state` differs from its `hotplug/target`). Such a knob must not
/// be written. An offline CPU's write fails (EIO); but while a CPU comes
/// up it is online before it is active, and a write then makes Debian's
/// 7.3.4 kernel divide by zero in `dl_server_apply_params()` (the CPU's
/// root domain counts no active CPU): an oops that left CPU hotplug and
/// RCU stuck for good (`b_hotplug`, clean-clone CI of 2730132). This
/// narrows the window the kernel leaves open; it cannot close it.
///
/// Reads sysfs through stack buffers (nothing allocated: a planner calls it
/// at a hand-off to the ext_server). A CPU without an `online` file (CPU 0
/// on most machines) cannot go offline.
pub fn offline_dl_server(path: &Path) -> Option<usize> {
    let cpu = dl_server_cpu(path)?;
    fn read<'b>(cpu: usize, f: &str, buf: &'b mut [u8]) -> Option<&'b [u8]> {
        crate::sys::read_path(format_args!("/sys/devices/system/cpu/cpu{cpu}/{f}"), buf)
    }
    let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
    let offline = match read(cpu, "online", &mut a) {
        Some(t) => t.trim_ascii() == b"0",
        // no such CPU, or one that cannot go offline
        None => crate::sys::StackPath::new(format_args!("/sys/devices/system/cpu/cpu{cpu}"))
            .is_none_or(|p| !p.path().exists()),
    };
    let moving = match (
        read(cpu, "hotplug/state", &mut a),
        read(cpu, "hotplug/target", &mut b),
    ) {
        (Some(x), Some(y)) => x != y,
        _ => false,
    };
    (offline || moving).then_some(cpu)
}

/// The RT bandwidth sysctl: -1 turns off RT throttling and SCHED_DEADLINE
/// admission control (Documentation/scheduler/sched-rt-group.rst,
/// sched-deadline.rst), which lets pinned tasks become SCHED_DEADLINE.
pub const SCHED_RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// The scheduler's feature flags (debugfs): HRTICK_DL, when on, ends a
/// SCHED_DEADLINE task's runtime with an hrtimer instead of at the tick.
pub const SCHED_FEATURES: &str = "/sys/kernel/debug/sched/features";

/// Whether `kernel.sched_rt_runtime_us` is -1 now (false when unreadable).
pub fn rt_runtime_is_unlimited() -> bool {
    fs::read_to_string(SCHED_RT_RUNTIME).is_ok_and(|v| v.trim() == "-1")
}

/// Saved knob values, journaled in a root-only directory.
#[derive(Debug)]
pub struct Knobs {
    dir: PathBuf,
}

/// The journal entry's name of a knob's path: the path without its leading
/// '/', each '/' as '%' ("proc%sys%kernel%sched_rt_runtime_us").
struct Key<'a>(&'a str);

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        use std::fmt::Write as _;
        for c in self.0.trim_start_matches('/').chars() {
            f.write_char(if c == '/' { '%' } else { c })?;
        }
        Ok(())
    }
}

fn key_of(path: &Path) -> String {
    Key(&path.to_string_lossy()).to_string()
}

/// Whether the knob at `path` reads `value` now (trimmed), read into a stack
/// buffer: nothing allocated.
fn reads(path: &Path, value: &str) -> bool {
    let mut buf = [0u8; 64];
    crate::sys::read_into(path, &mut buf)
        .is_ok_and(|n| n < buf.len() && buf[..n].trim_ascii() == value.as_bytes())
}

impl Knobs {
    /// Whether `path` has a journal entry, looked up through a path on the
    /// stack (nothing allocated; false when the path is too long for it).
    fn is_saved(&self, path: &Path) -> bool {
        let (Some(dir), Some(p)) = (self.dir.to_str(), path.to_str()) else {
            return false;
        };
        crate::sys::StackPath::new(format_args!("{dir}/{}", Key(p)))
            .is_some_and(|e| e.path().exists())
    }

    /// The knob journal in `dir` (created root-only if missing).
    pub fn open(dir: &Path) -> Result<Self> {
        private_dir(dir)?;
        Ok(Knobs {
            dir: dir.to_path_buf(),
        })
    }

    /// Writes `value` to `path`, journaling the original value first (an
    /// already journaled original is kept: it is the one to restore). A
    /// knob that reads `value` already is not written (a dl_server write
    /// restarts that server; one of sched_rt_runtime_us rebuilds the sched
    /// domains). Errors: the knob cannot be read or written, or it is a
    /// dl_server knob of a CPU that is not fully online
    /// ([`offline_dl_server`]); nothing is changed then.
    pub fn set(&self, path: &Path, value: &str) -> Result<()> {
        self.set_retrying_busy(path, value, 0)
    }

    /// As [`Knobs::set`], but a write the kernel refuses with EBUSY is
    /// retried every 50 ms for up to `busy_ms`: a dl_server or
    /// sched_rt_runtime_us write is refused while the root domain's
    /// SCHED_DEADLINE admission total is over its limit, which passes when
    /// tasks that exited or left SCHED_DEADLINE reach their 0-lag time.
    /// Errors: as [`Knobs::set`]; a write still refused names the admission
    /// state ([`crate::dlbw::describe`]).
    pub fn set_retrying_busy(&self, path: &Path, value: &str, busy_ms: u64) -> Result<()> {
        let t0 = std::time::Instant::now();
        let mut refused = false;
        loop {
            refuse_offline(path)?;
            if reads(path, value) {
                return Ok(()); // nothing changes: nothing to journal
            }
            // the original, before the first write (after it, a look-up)
            self.save(path)?;
            match fs::write(path, value) {
                Ok(()) => {
                    if refused {
                        log::info!(
                            "{} took {value} after {} ms of EBUSY",
                            path.display(),
                            t0.elapsed().as_millis()
                        );
                    }
                    return Ok(());
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::EBUSY)
                        && t0.elapsed() < std::time::Duration::from_millis(busy_ms) =>
                {
                    refused = true;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => {
                    let busy = e.raw_os_error() == Some(libc::EBUSY);
                    let state = crate::dlbw::admission()
                        .filter(|_| busy)
                        .map(|a| format!(" ({})", crate::dlbw::describe(&a)))
                        .unwrap_or_default();
                    return Err(anyhow::Error::new(e))
                        .with_context(|| format!("writing {value} to {}{state}", path.display()));
                }
            }
        }
    }

    /// Journals the value `path` has now, unless one is journaled already,
    /// without writing it: for a knob another program changes on the
    /// caller's behalf (rtla's osnoise settings). Errors: the knob cannot be
    /// read, or the journal cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        if self.is_saved(path) {
            return Ok(());
        }
        let entry = self.dir.join(key_of(path));
        if !entry.exists() {
            let orig = read_knob(path)?;
            write_atomic(&entry, &format!("{}\n{orig}\n", path.display()))?;
        }
        Ok(())
    }

    /// The knobs journaled and not restored yet: (path, original value).
    pub fn pending(&self) -> Vec<(PathBuf, String)> {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<_> = rd
            .flatten()
            .filter_map(|e| {
                let s = fs::read_to_string(e.path()).ok()?;
                let (p, v) = parse_entry(&s)?;
                Some((PathBuf::from(p), v.to_string()))
            })
            .collect();
        out.sort();
        out
    }

    /// Writes back every journaled value and forgets it. Returns the knobs
    /// restored; failures are logged and kept in the journal. A write the
    /// kernel refuses with EBUSY is retried every 50 ms for up to
    /// [`BUSY_RETRY_MS`]: neither sched_rt_runtime_us (back from -1) nor an
    /// ext_server runtime (back from 0) fits while the SCHED_DEADLINE
    /// bandwidth of tasks boosted a moment ago is still counted in the root
    /// domain's dl_bw->total_bw (the kernel releases it at each task's 0-lag
    /// time, about one server period later, later by overrun x period /
    /// runtime after an overrun; docs/design.md, Decisions: "EBUSY retried
    /// for 10 s").
    ///
    /// sched_rt_runtime_us goes last, after a wait for the SCHED_DEADLINE
    /// bandwidth of ended boosts to be released ([`wait_dl_released`]).
    ///
    /// `keep_trying` is asked before each retry and during that wait: the
    /// guardian's restore during a SIGSTOP stops once scx_floor continues
    /// (which sets its knobs again; a late restore would undo that and drop
    /// the journal). A wait cut short that way leaves sched_rt_runtime_us
    /// journaled, for the next replay.
    pub fn restore_all(&self, keep_trying: &dyn Fn() -> bool) -> usize {
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut n = 0;
        let mut busy = Vec::new();
        let t0 = std::time::Instant::now();
        let give_up = t0 + std::time::Duration::from_millis(BUSY_RETRY_MS);
        // sched_rt_runtime_us last, after the ext_server runtimes (a swap of
        // sched_ext's servers at its disable then finds the ext_server's
        // bandwidth to give back) and once no released boost's bandwidth
        // is pending: see `wait_dl_released`.
        let mut heal = false;
        for e in rt_limit_last(rd.flatten().map(|d| d.path()).collect()) {
            if is_rt_limit(&e) {
                let until = std::time::Instant::now()
                    + std::time::Duration::from_millis(DL_RELEASE_WAIT_MS);
                match wait_dl_released(until.min(give_up), keep_trying) {
                    Waited::Stopped => continue,
                    Waited::Pending => heal = true,
                    Waited::Released => {}
                }
            }
            match restore_one(&e) {
                Restored::Yes if is_rt_limit(&e) && heal => {
                    n += 1;
                    recount_if_wrapped(
                        std::time::Instant::now()
                            + std::time::Duration::from_millis(DL_RELEASE_WAIT_MS),
                        keep_trying,
                    );
                }
                Restored::Yes => n += 1,
                Restored::Busy => busy.push(e),
                Restored::No => {}
            }
        }
        if !busy.is_empty() {
            log::info!(
                "the kernel refuses {} knob(s) for now (EBUSY: SCHED_DEADLINE bandwidth of \
                 tasks boosted a moment ago is still counted); retrying for up to {} ms",
                busy.len(),
                give_up
                    .saturating_duration_since(std::time::Instant::now())
                    .as_millis()
            );
        }
        let waited = !busy.is_empty();
        while !busy.is_empty() && std::time::Instant::now() < give_up && keep_trying() {
            std::thread::sleep(std::time::Duration::from_millis(50));
            busy.retain(|e| match restore_one(e) {
                Restored::Yes => {
                    n += 1;
                    false
                }
                Restored::Busy => true,
                Restored::No => false,
            });
        }
        if waited && busy.is_empty() {
            log::info!(
                "the kernel took the refused knob(s) back after {} ms",
                t0.elapsed().as_millis()
            );
        }
        for e in busy {
            log::warn!(
                "could not restore the knob journaled in {}: busy for {BUSY_RETRY_MS} ms (kept)",
                e.display()
            );
        }
        n
    }
}

/// Whether the journal entry `entry` saves kernel.sched_rt_runtime_us.
fn is_rt_limit(entry: &Path) -> bool {
    entry.file_name().and_then(|f| f.to_str()) == Some(&key_of(Path::new(SCHED_RT_RUNTIME)))
}

/// The longest wait for ended boosts' SCHED_DEADLINE bandwidth to be
/// released before sched_rt_runtime_us is written back, ms. A boost's
/// deadline is at most one server period (at most 1 s) after it starts, and
/// the kernel releases its bandwidth at its 0-lag time: by that deadline,
/// later only by an overrun scaled by period / runtime. Bandwidth still
/// counted after this is taken as leaked for good (a boost ended while its
/// task slept past its 0-lag time: no timer will release it), which the
/// write's recomputation of the total drops, as it should (docs/design.md,
/// "Putting sched_rt_runtime_us back").
pub const DL_RELEASE_WAIT_MS: u64 = 2000;

/// `entries` (knob journal files) in restore order: sched_rt_runtime_us
/// last, the others in their given order.
fn rt_limit_last(mut entries: Vec<PathBuf>) -> Vec<PathBuf> {
    entries.sort_by_key(|e| is_rt_limit(e));
    entries
}

/// How [`wait_dl_released`] ended.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    /// Nothing of ended boosts is counted (or it cannot be told).
    Released,
    /// Still counted at the time limit.
    Pending,
    /// `keep_trying` said no: leave sched_rt_runtime_us journaled.
    Stopped,
}

/// Waits, until `give_up` or while `keep_trying` says so, for the root
/// domain's SCHED_DEADLINE admission total to hold no bandwidth of tasks
/// that have left SCHED_DEADLINE: a write of sched_rt_runtime_us recomputes
/// the total without them, and their 0-lag timers then subtract it a second
/// time (`crate::dlbw`). Returns at once when the total cannot be read (no
/// debugfs, several root domains).
fn wait_dl_released(give_up: std::time::Instant, keep_trying: &dyn Fn() -> bool) -> Waited {
    use crate::dlbw::{pending_release, Release};
    let t0 = std::time::Instant::now();
    let mut last = pending_release();
    let mut polls = 0;
    while matches!(last, Release::Changing | Release::Pending(1..))
        && std::time::Instant::now() < give_up
    {
        if !keep_trying() {
            return Waited::Stopped;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        last = pending_release();
        polls += 1;
    }
    let ms = t0.elapsed().as_millis();
    match last {
        Release::Pending(..=0) | Release::Unknown if polls == 0 => {}
        Release::Pending(..=0) | Release::Unknown => log::info!(
            "waited {ms} ms for the SCHED_DEADLINE bandwidth of restored boosts to be released \
             before putting sched_rt_runtime_us back"
        ),
        Release::Pending(p) => log::info!(
            "sched_rt_runtime_us put back after {ms} ms with {p} (1 << 20 = one CPU) of \
             SCHED_DEADLINE bandwidth of ended boosts still counted: taken as leaked, which \
             the kernel's recount at that write drops"
        ),
        Release::Changing => log::warn!(
            "sched_rt_runtime_us put back after {ms} ms while sched_ext was still changing \
             state: the kernel's admission total (dl_bw->total_bw) may be off"
        ),
    }
    match last {
        Release::Pending(1..) | Release::Changing => Waited::Pending,
        _ => Waited::Released,
    }
}

/// After sched_rt_runtime_us was written back with bandwidth of ended
/// boosts still counted: if a late 0-lag timer then drives the admission
/// total below what the live reservations hold (wrapped), writes the same
/// value again, for the kernel to count the total afresh. Watches until
/// `until` or while `keep_trying` says so.
fn recount_if_wrapped(until: std::time::Instant, keep_trying: &dyn Fn() -> bool) {
    use crate::dlbw::{pending_release, Release};
    while std::time::Instant::now() < until && keep_trying() {
        if let Release::Pending(p @ ..=-1) = pending_release() {
            let v = fs::read_to_string(SCHED_RT_RUNTIME).unwrap_or_default();
            let r = fs::write(SCHED_RT_RUNTIME, v.trim());
            log::warn!(
                "the kernel's SCHED_DEADLINE admission total fell {} (1 << 20 = one CPU) below \
                 the live reservations after sched_rt_runtime_us was put back; wrote it again \
                 for a recount: {}",
                -p,
                r.map_or_else(|e| e.to_string(), |()| "done".into())
            );
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// How long a restore refused with EBUSY is retried, ms: ten times the
/// longest server period (1 s; docs/design.md, Decisions: "EBUSY retried
/// for 10 s").
pub const BUSY_RETRY_MS: u64 = 10_000;

enum Restored {
    Yes,
    Busy,
    No,
}

/// An error for a dl_server knob of a CPU not fully online
/// ([`offline_dl_server`]).
fn refuse_offline(path: &Path) -> Result<()> {
    match offline_dl_server(path) {
        Some(cpu) => anyhow::bail!(
            "CPU {cpu} is offline or being hotplugged: {} not written (the kernel may divide \
             by zero on a dl_server write for a CPU not fully online)",
            path.display()
        ),
        None => Ok(()),
    }
}

/// The knob's path and original value in a journal entry's text.
fn parse_entry(s: &str) -> Option<(&str, &str)> {
    let mut lines = s.lines();
    Some((lines.next()?, lines.next()?))
}

/// Writes back the value journaled in `entry`, unless the knob has it
/// already (a write of a dl_server's runtime or period restarts that
/// server, and one of sched_rt_runtime_us rebuilds the sched domains);
/// forgets the entry when done or when the knob is gone.
fn restore_one(entry: &Path) -> Restored {
    let Ok(s) = fs::read_to_string(entry) else {
        return Restored::No;
    };
    let Some((path, val)) = parse_entry(&s) else {
        let _ = fs::remove_file(entry);
        return Restored::No;
    };
    if read_knob(Path::new(path)).is_ok_and(|now| now == val) {
        let _ = fs::remove_file(entry);
        return Restored::No;
    }
    if let Err(e) = refuse_offline(Path::new(path)) {
        // kept for the next replay (the next start, `--restore`)
        log::warn!("{e:#}; its restore to {val} is kept in the journal");
        return Restored::No;
    }
    match fs::write(path, val) {
        Ok(()) => {
            let _ = fs::remove_file(entry);
            Restored::Yes
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // the knob is gone (CPU offline, debugfs unmounted): nothing to restore
            let _ = fs::remove_file(entry);
            Restored::No
        }
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Restored::Busy,
        Err(e) => {
            log::warn!("could not restore {path} to {val}: {e}");
            Restored::No
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dl_server_knobs_name_their_cpu() {
        let d = Path::new("/sys/kernel/debug/sched");
        assert_eq!(dl_server_cpu(&d.join("ext_server/cpu3/runtime")), Some(3));
        assert_eq!(dl_server_cpu(&d.join("fair_server/cpu12/period")), Some(12));
        assert_eq!(dl_server_cpu(Path::new(SCHED_RT_RUNTIME)), None);
        assert_eq!(dl_server_cpu(&d.join("other/cpu1/runtime")), None);
        assert_eq!(dl_server_cpu(&d.join("ext_server/cpux/runtime")), None);
        // a CPU no machine has online
        let far = d.join("ext_server/cpu100000/runtime");
        assert_eq!(offline_dl_server(&far), Some(100000));
        assert!(refuse_offline(&far)
            .unwrap_err()
            .to_string()
            .contains("offline"));
        assert_eq!(offline_dl_server(&d.join("ext_server/cpu0/runtime")), None);
    }

    #[test]
    fn sched_rt_runtime_us_is_restored_last() {
        let d = Path::new("/run/scx_floor/knobs");
        let rt = d.join(key_of(Path::new(SCHED_RT_RUNTIME)));
        let ext0 = d.join(key_of(&ext_server_runtime(Path::new(EXT_SERVER_DIR), 0)));
        let ext1 = d.join(key_of(&ext_server_period(Path::new(EXT_SERVER_DIR), 1)));
        assert!(is_rt_limit(&rt));
        assert!(!is_rt_limit(&ext0));
        assert_eq!(
            rt_limit_last(vec![rt.clone(), ext0.clone(), ext1.clone()]),
            vec![ext0.clone(), ext1.clone(), rt.clone()]
        );
        assert_eq!(
            rt_limit_last(vec![ext1.clone(), rt.clone(), ext0.clone()]),
            vec![ext1, ext0, rt]
        );
    }

    #[test]
    fn set_journals_the_first_original_and_restores_it() {
        let base = std::env::temp_dir().join(format!("scx_floor_knobs_{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let knob_dir = base.join("ext_server");
        fs::create_dir_all(knob_dir.join("cpu1")).unwrap();
        let knob = ext_server_runtime(&knob_dir, 1);
        fs::write(&knob, "50000000\n").unwrap();
        let k = Knobs::open(&base.join("journal")).unwrap();
        k.set(&knob, "0").unwrap();
        k.set(&knob, "0").unwrap(); // a second write keeps the first original
        assert_eq!(fs::read_to_string(&knob).unwrap(), "0");
        // a new Knobs on the same journal (as after a crash) restores it
        let k2 = Knobs::open(&base.join("journal")).unwrap();
        assert_eq!(k2.restore_all(&|| true), 1);
        assert_eq!(fs::read_to_string(&knob).unwrap().trim(), "50000000");
        assert_eq!(k2.restore_all(&|| true), 0, "journal emptied");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_missing_knob_is_an_error_and_changes_nothing() {
        let base =
            std::env::temp_dir().join(format!("scx_floor_knobs_missing_{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let k = Knobs::open(&base.join("journal")).unwrap();
        assert!(k.set(&base.join("nope/runtime"), "0").is_err());
        assert_eq!(fs::read_dir(base.join("journal")).unwrap().count(), 0);
        fs::remove_dir_all(&base).unwrap();
    }
}
