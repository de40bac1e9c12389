// SPDX-License-Identifier: GPL-2.0-only
//! Thin wrappers over the system calls and sysfs files the policy loop's
//! threads use: the clock, the CPU sets, real-time set-up and pinning, the
//! sleep that a stop eventfd ends, and locking memory.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{Context, Result};
use log::warn;

/// CLOCK_MONOTONIC now, ns: the clock of bpf_ktime_get_ns(). Inlined: the
/// A/B harness's clock probe reads it in a tight loop.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time now, Unix seconds (0 before 1970).
pub fn unix_time_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// CPUs online now (`/sys/devices/system/cpu/online`).
pub fn online_cpus() -> Result<Vec<usize>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .context("reading /sys/devices/system/cpu/online")?;
    scx_utils::read_cpulist(s.trim())
}

/// The longest CPU list text [`online_cpus_into`] reads, bytes: "0-8191\n"
/// is 7; a list of single CPUs, every other one of 1024, about 2.0 KiB.
pub const CPULIST_MAX: usize = 4096;

/// [`online_cpus`] for the loop's threads while they serve: read into a
/// stack buffer and parsed into `out` ([`parse_cpulist_into`]), so that
/// nothing is allocated while `out` has room for every CPU (capacity
/// `nr_cpu_ids`). scx_utils' parser compiles a pattern per group, about
/// 900 allocator calls per list. On an error `out` is unchanged. Errors:
/// the read's; InvalidData for a text longer than [`CPULIST_MAX`] or not a
/// CPU list, or one that does not fit.
pub fn online_cpus_into(out: &mut Vec<usize>) -> std::io::Result<()> {
    let mut buf = [0u8; CPULIST_MAX];
    let n = read_into(
        std::path::Path::new("/sys/devices/system/cpu/online"),
        &mut buf,
    )?;
    // io::Error from a kind alone is allocated nowhere
    let invalid = || std::io::Error::from(std::io::ErrorKind::InvalidData);
    if n == buf.len() {
        return Err(invalid());
    }
    let s = std::str::from_utf8(&buf[..n]).map_err(|_| invalid())?;
    parse_cpulist_into(s, out)
}

/// Parses the kernel's CPU list text `s` ("0-3,8,10-11": the `%*pbl` form
/// of the sysfs CPU masks; white space and NULs around it ignored, an empty
/// text is no CPU) into `out`, replacing what it held. Allocates nothing:
/// a list of more CPUs than `out`'s capacity is refused. On an error `out`
/// is unchanged. Errors: InvalidData for a group that is not a number or an
/// ascending range, or a list that does not fit.
pub fn parse_cpulist_into(s: &str, out: &mut Vec<usize>) -> std::io::Result<()> {
    let s = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    let groups = || s.split(',').filter(|_| !s.is_empty());
    let range = |g: &str| -> Option<(usize, usize)> {
        let g = g.trim();
        let (a, b) = g.split_once('-').unwrap_or((g, g));
        let (a, b) = (a.parse().ok()?, b.parse().ok()?);
        (a <= b).then_some((a, b))
    };
    let invalid = || std::io::Error::from(std::io::ErrorKind::InvalidData);
    // checked whole first, so that an error leaves `out` as it was
    let mut n = 0usize;
    for g in groups() {
        let (a, b) = range(g).ok_or_else(invalid)?;
        n = n.saturating_add((b - a).saturating_add(1));
    }
    if n > out.capacity() {
        return Err(invalid());
    }
    out.clear();
    for (a, b) in groups().filter_map(range) {
        out.extend(a..=b);
    }
    Ok(())
}

/// The CPUs booted `nohz_full=` (`/sys/devices/system/cpu/nohz_full`): none
/// when the file is missing, empty or reads "(null)" (the kernel's text when
/// no CPU is nohz_full).
pub fn nohz_full_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/nohz_full")
        .map(|s| parse_nohz_full(&s))
        .unwrap_or_default()
}

/// The CPUs of `/sys/devices/system/cpu/nohz_full`'s text `s`: none for
/// "(null)", an empty text, or anything that is not a CPU list.
pub fn parse_nohz_full(s: &str) -> Vec<usize> {
    scx_utils::read_cpulist(s.trim()).unwrap_or_default()
}

/// The housekeeping CPUs among `online`: those not in `nohz_full`, as the
/// kernel's own housekeeping (unbound workqueues, timers, RCU callbacks)
/// moves off `nohz_full=` CPUs. `online` itself when every online CPU is
/// nohz_full, so that the result is never empty while `online` is not.
pub fn housekeeping_of(online: &[usize], nohz_full: &[usize]) -> Vec<usize> {
    let mut hk = Vec::with_capacity(online.len());
    housekeeping_into(online, nohz_full, &mut hk);
    hk
}

/// [`housekeeping_of`] into `out`, replacing what it held; allocates
/// nothing while `out` has room for `online`.
pub fn housekeeping_into(online: &[usize], nohz_full: &[usize], out: &mut Vec<usize>) {
    out.clear();
    out.extend(online.iter().copied().filter(|c| !nohz_full.contains(c)));
    if out.is_empty() {
        out.extend_from_slice(online);
    }
}

/// An I/O error in a log line of a thread that serves: the text std gives
/// it ("No such process (os error 3)"), without allocating. std's own
/// `Display` of an OS error builds its message in a `String`; one
/// allocator call on such a thread may wait on the arena lock that a
/// preempted normal thread holds (src/rtalloc.rs).
pub struct OsError<'a>(pub &'a std::io::Error);

impl std::fmt::Display for OsError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let Some(n) = self.0.raw_os_error() else {
            // a kind's or a custom error's text: no allocation
            return write!(f, "{}", self.0);
        };
        let mut buf = [0u8; 128];
        // SAFETY: the buffer and its length are valid; the XSI
        // strerror_r() writes a NUL-terminated text into it (glibc's
        // "Unknown error N" for a number it does not know, with EINVAL).
        unsafe { libc::strerror_r(n, buf.as_mut_ptr().cast(), buf.len()) };
        let len = buf.iter().position(|&b| b == 0).unwrap_or(0);
        match std::str::from_utf8(&buf[..len]) {
            Ok(text) if !text.is_empty() => write!(f, "{text} (os error {n})"),
            _ => write!(f, "os error {n}"),
        }
    }
}

/// Pins thread `tid` (0: the caller) to `cpus` (`sched_setaffinity()`).
/// Errors: the kernel's (EINVAL when none of `cpus` is online, ESRCH when
/// `tid` is gone).
pub fn pin_thread(tid: u32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: plain syscall on a valid cpu_set_t.
    if unsafe { libc::sched_setaffinity(tid as i32, std::mem::size_of::<libc::cpu_set_t>(), &set) }
        != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pins a thread of ours that serves one CPU back to that CPU after a CPU
/// hotplug event (the `nr_cpu_hotplug` count changed). Taking a CPU offline
/// breaks the affinity of the tasks pinned to it (the kernel moves them to
/// any allowed CPU, "no longer affine to cpuN"), and bringing it back does not
/// restore it. Returns whether the thread is pinned to `cpu` now.
pub fn repin_after_hotplug(tid: u32, cpu: usize, online: &[usize]) -> bool {
    if !online.contains(&cpu) {
        return false;
    }
    match pin_thread(tid, &[cpu]) {
        Ok(()) => true,
        Err(e) => {
            let e = OsError(&e);
            warn!("pinning thread {tid} back to CPU {cpu} after a CPU hotplug event: {e}");
            false
        }
    }
}

/// Sleeps until `t_ns` (CLOCK_MONOTONIC) or until one of `fds` becomes
/// readable, whichever comes first; returns whether `fds[0]` did. ppoll()
/// takes a nanosecond timeout, and an RT task's poll timeout has no slack.
/// `u64::MAX` waits for the fds alone.
pub fn sleep_until(t_ns: u64, fds: &[i32; 2]) -> bool {
    let now = monotonic_ns();
    if t_ns <= now {
        return false;
    }
    let d = t_ns - now;
    let ts = libc::timespec {
        tv_sec: (d / 1_000_000_000) as i64,
        tv_nsec: (d % 1_000_000_000) as i64,
    };
    let tsp = if t_ns == u64::MAX {
        std::ptr::null()
    } else {
        &ts as *const libc::timespec
    };
    let mut pfd = [
        libc::pollfd {
            fd: fds[0],
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: fds[1],
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds; EINTR just ends the sleep early.
    let n = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, tsp, std::ptr::null()) };
    n > 0 && pfd[0].revents != 0
}

/// A new eventfd, non-blocking and close-on-exec. Errors: `eventfd(2)`'s.
pub fn eventfd_new() -> std::io::Result<i32> {
    // SAFETY: plain syscall.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Adds 1 to eventfd `fd` (errors ignored: nothing to do about one).
/// One `write(2)`, no allocation.
pub fn eventfd_add(fd: i32) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes of our own to an eventfd.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// Reads and resets the count of non-blocking eventfd `fd` (0: nothing
/// written since the last read).
pub fn eventfd_take(fd: i32) -> u64 {
    let mut n = 0u64;
    // SAFETY: reads 8 bytes into our own u64.
    unsafe { libc::read(fd, &mut n as *mut u64 as *mut libc::c_void, 8) };
    n
}

/// The main thread's wake-up eventfd (-1: not made yet, or `eventfd(2)`
/// failed: the main thread then sleeps its whole tick).
static MAIN_WAKE_FD: AtomicI32 = AtomicI32::new(-1);

/// The eventfd that wakes the policy loop's main thread from its tick
/// ([`wake_main`]), made at the first call; -1 if it could not be made
/// (`ppoll()` ignores a negative fd).
pub fn main_wake_fd() -> i32 {
    let fd = MAIN_WAKE_FD.load(Ordering::Acquire);
    if fd >= 0 {
        return fd;
    }
    let Ok(new) = eventfd_new() else { return -1 };
    match MAIN_WAKE_FD.compare_exchange(-1, new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => new,
        Err(old) => {
            // SAFETY: our fd, never shared.
            unsafe { libc::close(new) };
            old
        }
    }
}

/// Wakes the policy loop's main thread now: a stop asked (SIGINT,
/// SIGTERM) or a stats request waits for no tick. One `write(2)`.
pub fn wake_main() {
    let fd = main_wake_fd();
    if fd >= 0 {
        eventfd_add(fd);
    }
}

/// An eventfd that tells the server threads to stop.
pub struct StopFd(pub i32);

impl StopFd {
    pub fn new() -> Result<Self> {
        let fd = eventfd_new().map_err(|e| anyhow::anyhow!("eventfd: {e}"))?;
        Ok(StopFd(fd))
    }
    pub fn fire(&self) {
        eventfd_add(self.0);
    }
}

/// Stops the server and slice-end threads when dropped: sets the flag and
/// fires the eventfd they poll.
pub struct StopOnExit<'a>(pub &'a AtomicBool, pub &'a StopFd);

impl Drop for StopOnExit<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        self.1.fire();
    }
}

impl Drop for StopFd {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.0) };
    }
}

/// Stack size of scx_floor's own real-time threads (planners, executors,
/// slice-end threads, the watchdog), bytes: 256 KiB, against std's 2 MiB.
/// A stack page, once touched, stays resident and locked for the thread's
/// life ([`lock_memory`]), and each thread touches its top 64 KiB at start
/// ([`prefault_stack`]). An overflow hits the guard page and aborts
/// scx_floor ("has overflowed its stack"), which every VM test would
/// report; none does at this size.
pub const RT_STACK_BYTES: usize = 256 << 10;

/// A builder for one of scx_floor's real-time threads: named `name`, with a
/// stack of `RT_STACK_BYTES`.
pub fn rt_thread(name: String) -> std::thread::Builder {
    std::thread::Builder::new()
        .name(name)
        .stack_size(RT_STACK_BYTES)
}

/// Locks the calling process's memory so that its real-time threads never
/// wait for I/O on a page fault, nor for reclaim, while an RT task holds
/// their CPU. Called before the BPF scheduler is attached: in a fresh boot,
/// faulting the binary in (over a VM's 9p root, say) would let a hog started
/// as soon as sched_ext reports "enabled" starve its CPU before the server
/// thread runs (docs/design.md, Decisions: "All memory locked before
/// attaching").
///
/// - What is mapped now (the binary, the libraries, the heap so far) is
///   faulted in and locked at once: `mlockall(MCL_CURRENT)`.
/// - What is mapped later (thread stacks, malloc arenas, the journal) is
///   locked page by page as it is first touched:
///   `mlockall(MCL_FUTURE | MCL_ONFAULT)`. A first touch is a minor fault
///   (a zeroed page or a tmpfs page, no I/O), and the page is never
///   reclaimed after. Without `MCL_ONFAULT` each new mapping is faulted in
///   whole: every thread's whole stack and every arena's first heap became
///   resident, 2.5 MB per thread.
///
/// The second call changes only the flags for future mappings
/// (`apply_mlockall_flags()`, mm/mlock.c). Errors: the `mlockall` error
/// (EPERM without CAP_IPC_LOCK, ENOMEM beyond RLIMIT_MEMLOCK).
pub fn lock_memory() -> std::io::Result<()> {
    for flags in [libc::MCL_CURRENT, libc::MCL_FUTURE | libc::MCL_ONFAULT] {
        // SAFETY: plain syscall.
        if unsafe { libc::mlockall(flags) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Stack a real-time thread faults in when it starts, bytes: 64 KiB, more
/// than its deepest path uses in the tests, so that no step of the policy
/// loop takes a fault on a new stack page ([`lock_memory`] locks each page
/// at that first touch).
pub const RT_STACK_PREFAULT_BYTES: usize = 64 << 10;

/// Touches [`RT_STACK_PREFAULT_BYTES`] of the calling thread's stack below
/// this frame, so that those pages are resident (and locked) before the
/// thread's real-time work begins.
#[inline(never)]
pub fn prefault_stack() {
    let mut page = [0u8; RT_STACK_PREFAULT_BYTES];
    // the writes must happen: the compiler cannot see the array is unused
    std::hint::black_box(&mut page);
}

/// A path formatted in a buffer on the stack, for the real-time threads'
/// reads of /proc and debugfs, which allocate nothing (docs/design.md, "One
/// malloc arena"). std opens a path of up to 384 bytes through a stack
/// buffer as well.
pub struct StackPath {
    buf: [u8; STACK_PATH_MAX],
    len: usize,
}

/// Longest [`StackPath`], bytes.
pub const STACK_PATH_MAX: usize = 128;

impl StackPath {
    /// The path `args` formats to; None when it is longer than
    /// [`STACK_PATH_MAX`].
    pub fn new(args: std::fmt::Arguments) -> Option<Self> {
        use std::io::Write;
        let mut buf = [0u8; STACK_PATH_MAX];
        let mut w = &mut buf[..];
        w.write_fmt(args).ok()?;
        let len = STACK_PATH_MAX - w.len();
        Some(StackPath { buf, len })
    }

    /// The path.
    pub fn path(&self) -> &std::path::Path {
        use std::os::unix::ffi::OsStrExt;
        std::path::Path::new(std::ffi::OsStr::from_bytes(&self.buf[..self.len]))
    }
}

/// `v` in decimal, written into `buf` (nothing allocated).
pub fn decimal(v: u64, buf: &mut [u8; 20]) -> &str {
    use std::io::Write;
    let mut w = &mut buf[..];
    // u64::MAX has 20 digits: it always fits
    let _ = write!(w, "{v}");
    let n = 20 - w.len();
    std::str::from_utf8(&buf[..n]).unwrap_or("0")
}

/// Reads the file at the path `args` formats to (a [`StackPath`]) into
/// `buf`, up to its length; returns the bytes read. Allocates nothing.
/// None: the path is longer than [`STACK_PATH_MAX`], or the file cannot be
/// read.
pub fn read_path<'b>(args: std::fmt::Arguments, buf: &'b mut [u8]) -> Option<&'b [u8]> {
    let p = StackPath::new(args)?;
    let n = read_into(p.path(), buf).ok()?;
    Some(&buf[..n])
}

/// Reads the file at `path` into `buf`, up to its length; returns the bytes
/// read. Allocates nothing. Errors: the open or read error.
pub fn read_into(path: &std::path::Path, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Calls `f` with each entry of the directory at `path` whose name is a
/// number (a pid in /proc, a tid in /proc/PID/task), in directory order.
/// Reads the entries with `getdents64()` into a stack buffer: allocates
/// nothing, unlike `std::fs::read_dir`. Stops at the first read error.
/// Errors: the directory cannot be opened.
pub fn for_each_id(path: &std::path::Path, mut f: impl FnMut(u32)) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let dir = std::fs::File::open(path)?;
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: the buffer is ours and its length is passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n <= 0 {
            return Ok(());
        }
        // struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2),
        // d_type (1), then the name, NUL-terminated (include/linux/dirent.h)
        let mut off = 0;
        while off + 19 < n as usize {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 || off + reclen > n as usize {
                return Ok(());
            }
            let name = &buf[off + 19..off + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if let Some(id) = std::str::from_utf8(name).ok().and_then(|s| s.parse().ok()) {
                f(id);
            }
            off += reclen;
        }
    }
}

/// Reads a kernel knob (sysfs, debugfs, procfs, tracefs), trimmed. Read with a 4 KiB buffer: some files
/// refuse a read shorter than their whole text (tracefs' osnoise/cpus
/// answered std::fs::read_to_string with EINVAL on 7.3.4).
/// Errors: the file cannot be opened or read.
pub fn read_knob(path: &std::path::Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4096];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nohz_full_lists() {
        assert_eq!(parse_nohz_full("1\n"), vec![1]);
        assert_eq!(parse_nohz_full("1-3"), vec![1, 2, 3]);
        assert!(parse_nohz_full("(null)\n").is_empty());
        assert!(parse_nohz_full("").is_empty());
    }

    #[test]
    fn cpulists_parse_as_scx_utils_does_in_place() {
        let mut out = Vec::with_capacity(64);
        let buf = out.as_ptr();
        for s in ["0", "0-3", "0-1,4,6-7\n", "2,3", "5-5", "0-63\0"] {
            parse_cpulist_into(s, &mut out).unwrap();
            let want = scx_utils::read_cpulist(s.trim().trim_end_matches('\0')).unwrap();
            assert_eq!(out, want, "{s:?}");
            assert_eq!(out.as_ptr(), buf, "{s:?}: reallocated");
        }
        parse_cpulist_into("\n", &mut out).unwrap();
        assert!(out.is_empty(), "an empty mask is no CPU");
    }

    #[test]
    fn a_bad_cpulist_leaves_the_list_as_it_was() {
        let mut out = Vec::with_capacity(8);
        parse_cpulist_into("1-2", &mut out).unwrap();
        for s in [
            "x",
            "3-1",
            "1-",
            "-1",
            "1,,2",
            "0-8",
            "1 2",
            "0-18446744073709551615",
        ] {
            let e = parse_cpulist_into(s, &mut out).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{s:?}");
            assert_eq!(out, vec![1, 2], "{s:?}");
        }
        // 8 CPUs fit a capacity of 8, 9 do not
        parse_cpulist_into("0-7", &mut out).unwrap();
        assert_eq!(out.len(), 8);
        assert_eq!(out.capacity(), 8);
    }

    #[test]
    fn os_errors_read_as_std_writes_them() {
        for n in [libc::ESRCH, libc::EPERM, libc::EBUSY, libc::EINVAL] {
            let e = std::io::Error::from_raw_os_error(n);
            assert_eq!(OsError(&e).to_string(), e.to_string());
        }
        let e = std::io::Error::from(std::io::ErrorKind::InvalidData);
        assert_eq!(OsError(&e).to_string(), e.to_string());
        let e = std::io::Error::from_raw_os_error(100_000);
        assert_eq!(OsError(&e).to_string(), e.to_string());
    }

    #[test]
    fn housekeeping_leaves_out_nohz_full_cpus() {
        assert_eq!(housekeeping_of(&[0, 1, 2, 3], &[1, 3]), vec![0, 2]);
        assert_eq!(housekeeping_of(&[0, 1], &[]), vec![0, 1]);
        // a nohz_full CPU that is offline changes nothing
        assert_eq!(housekeeping_of(&[0, 1], &[5]), vec![0, 1]);
    }

    #[test]
    fn stack_paths_and_reads() {
        let p = StackPath::new(format_args!("/proc/{}/stat", 42)).unwrap();
        assert_eq!(p.path(), std::path::Path::new("/proc/42/stat"));
        let mut b = [0u8; 20];
        assert_eq!(decimal(0, &mut b), "0");
        assert_eq!(decimal(u64::MAX, &mut b), "18446744073709551615");
        let long = "x".repeat(STACK_PATH_MAX + 1);
        assert!(StackPath::new(format_args!("{long}")).is_none());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("knob");
        std::fs::write(&f, "12345\n").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(
            read_into(&f, &mut buf).unwrap(),
            4,
            "cut at the buffer's length"
        );
        assert_eq!(&buf, b"1234");
        let mut buf = [0u8; 16];
        assert_eq!(read_into(&f, &mut buf).unwrap(), 6);
        assert!(read_into(&dir.path().join("none"), &mut buf).is_err());
        let d = dir.path().display();
        assert_eq!(
            read_path(format_args!("{d}/knob"), &mut buf),
            Some(&b"12345\n"[..])
        );
        assert_eq!(read_path(format_args!("{d}/none"), &mut buf), None);
    }

    #[test]
    fn ids_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["7", "12", "x1", "4294967296", "003"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let mut ids = Vec::new();
        for_each_id(dir.path(), |id| ids.push(id)).unwrap();
        ids.sort();
        // "x1" is no number, 2^32 no u32
        assert_eq!(ids, vec![3, 7, 12]);
        assert!(for_each_id(&dir.path().join("none"), |_| {}).is_err());
        // this process is in /proc
        let mut me = false;
        for_each_id(std::path::Path::new("/proc"), |id| {
            me |= id == std::process::id()
        })
        .unwrap();
        assert!(me);
    }

    #[test]
    fn housekeeping_is_never_empty() {
        assert_eq!(housekeeping_of(&[1, 2], &[1, 2]), vec![1, 2]);
    }
}
