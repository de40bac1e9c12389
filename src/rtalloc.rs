// SPDX-License-Identifier: GPL-2.0-only
//! The process's allocator: glibc's malloc (std's [`System`]) with one
//! arena, and a count of what scx_floor's real-time threads allocate while
//! they serve.
//!
//! glibc gives each thread that allocates an arena of its own: a heap of
//! 64 MiB of address space (`HEAP_MAX_SIZE`, malloc/arena.c). Under
//! `mlockall(MCL_FUTURE)` ([`crate::sys::lock_memory`]) each such heap
//! counts whole in `VmLck`, though only the pages used are resident: 2.4 GB
//! at 16 vCPUs. [`one_arena`] keeps every thread on the main arena.
//!
//! One arena means one lock. The main thread and the stats threads take it
//! at their normal policy, and an RT task may preempt one of them while it
//! holds it; a planner that then needed the lock would wait until that RT
//! task yields the CPU. So the real-time threads allocate nothing once
//! they serve: buffers are sized at start and kept. [`serving`] marks the
//! calling thread; every allocation, reallocation and free it makes after
//! that is counted in [`rt_allocations`], which `--stats` prints and the
//! VM tests require to stay 0. What may still allocate on those threads is
//! rare and listed in docs/design.md ("One malloc arena").

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// std's system allocator, counting the calls of threads marked by
/// [`serving`].
pub struct Counting;

thread_local! {
    /// the calling thread serves: its allocations are counted
    static SERVING: Cell<bool> = const { Cell::new(false) };
}

/// Allocator calls (allocations, reallocations, frees) made by threads
/// while marked by [`serving`], since start.
static RT_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// How many of the first counted calls are kept for [`first_calls`].
const KEPT: usize = 4;

/// The first [`KEPT`] counted calls: kind (1 alloc, 2 free, 3 realloc) in
/// bits 62-63, size in bytes in bits 32-61, the thread's tid in bits 0-31.
static FIRST: [AtomicU64; KEPT] = [const { AtomicU64::new(0) }; KEPT];

fn note(kind: u64, size: usize) {
    // A const-initialised thread local without a destructor is a plain TLS
    // read: it never allocates, and `try_with` fails only at thread exit.
    if SERVING.try_with(Cell::get).unwrap_or(false) {
        let n = RT_ALLOCATIONS.fetch_add(1, Ordering::Relaxed) as usize;
        if n < KEPT {
            // SAFETY: gettid() has no arguments and cannot fail.
            let tid = unsafe { libc::gettid() } as u32 as u64;
            let size = (size as u64).min((1 << 30) - 1);
            FIRST[n].store(kind << 62 | size << 32 | tid, Ordering::Relaxed);
        }
    }
}

/// The first counted calls ([`serving`]), at most 4: (kind: "alloc",
/// "free" or "realloc"; size in bytes, capped at 2^30 - 1; tid of the
/// thread). A test that finds `rt_allocations` above 0 names them.
pub fn first_calls() -> Vec<(&'static str, u64, u32)> {
    let n = (rt_allocations() as usize).min(KEPT);
    FIRST[..n]
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .filter(|&v| v != 0)
        .map(|v| {
            let kind = match v >> 62 {
                1 => "alloc",
                2 => "free",
                _ => "realloc",
            };
            (kind, (v >> 32) & ((1 << 30) - 1), v as u32)
        })
        .collect()
}

// SAFETY: every call is passed on unchanged to `System`, which upholds the
// contract; the count has no effect on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(2, layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(3, new_size);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Marks the calling thread as serving (`true`: its allocator calls are
/// counted from now on) or not. A real-time thread marks itself after its
/// warm-up and unmarks itself before its exit path, which may allocate.
pub fn serving(on: bool) {
    let _ = SERVING.try_with(|s| s.set(on));
}

/// Whether the calling thread serves ([`serving`]).
pub fn is_serving() -> bool {
    SERVING.try_with(Cell::get).unwrap_or(false)
}

/// Allocator calls made by serving threads since start ([`serving`]).
pub fn rt_allocations() -> u64 {
    RT_ALLOCATIONS.load(Ordering::Relaxed)
}

/// Limits glibc's malloc to its main arena (`mallopt(M_ARENA_MAX, 1)`).
/// Must run before any thread allocates: a thread that allocated already
/// keeps the arena it got. Returns false when glibc refused (never seen;
/// the arenas then stay as they were, which costs `VmLck`, not safety).
pub fn one_arena() -> bool {
    // SAFETY: plain library call with constant arguments.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) == 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_a_serving_thread() {
        // The count is process-wide and tests run in parallel: only this
        // test marks a thread, and it reads the count on that thread only.
        std::thread::spawn(|| {
            let before = rt_allocations();
            let v: Vec<u64> = Vec::with_capacity(4);
            assert_eq!(rt_allocations(), before, "not marked yet");
            serving(true);
            let w: Vec<u64> = Vec::with_capacity(8);
            drop(v);
            serving(false);
            drop(w);
            assert_eq!(rt_allocations(), before + 2, "one allocation, one free");
            // the first calls are kept, with this thread's tid
            if before == 0 {
                // SAFETY: gettid() has no arguments and cannot fail.
                let me = unsafe { libc::gettid() } as u32;
                let f = first_calls();
                assert_eq!(f.len(), 2, "{f:?}");
                assert_eq!(f[0], ("alloc", 64, me));
                assert_eq!(f[1], ("free", 32, me));
            }
            // An OS error's text, as the serving threads log it
            // (`sys::OsError`), allocates nothing; std's own Display does.
            use std::fmt::Write as _;
            let e = std::io::Error::from_raw_os_error(libc::ESRCH);
            let mut line = Sink::default();
            serving(true);
            let n0 = rt_allocations();
            write!(line, "{}", crate::sys::OsError(&e)).unwrap();
            let n1 = rt_allocations();
            write!(line, "{e}").unwrap();
            let n2 = rt_allocations();
            serving(false);
            assert_eq!(n1, n0, "OsError allocated");
            assert!(n2 > n1, "std's Display of an OS error allocates");
            assert_eq!(
                line.text(),
                "No such process (os error 3)No such process (os error 3)"
            );
        })
        .join()
        .unwrap();
    }

    /// A line in a fixed buffer, as `rtlog` formats one.
    struct Sink {
        buf: [u8; 256],
        len: usize,
    }

    impl Default for Sink {
        fn default() -> Self {
            Sink {
                buf: [0; 256],
                len: 0,
            }
        }
    }

    impl Sink {
        fn text(&self) -> &str {
            std::str::from_utf8(&self.buf[..self.len]).unwrap()
        }
    }

    impl std::fmt::Write for Sink {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            let end = self.len + s.len();
            self.buf
                .get_mut(self.len..end)
                .ok_or(std::fmt::Error)?
                .copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
}
