// SPDX-License-Identifier: GPL-2.0-only
//! The process's logger: simplelog's terminal logger, with the lines of
//! the real-time threads deferred to the main thread.
//!
//! A line logged by a thread that serves ([`crate::rtalloc::serving`]) is
//! formatted into a fixed buffer on that thread's stack and put in a
//! bounded lock-free queue; the main thread writes the queued lines at its
//! next tick ([`drain`]; at most 1 s later while nothing starves or is
//! boosted, 250 ms while something is, 10 ms in latency mode). So a
//! real-time thread that logs neither allocates (a terminal line costs
//! simplelog about a thousand allocations) nor takes the stderr lock, which
//! a normal-policy thread may hold while an RT task has preempted it. A
//! line longer than [`LINE_MAX`] is cut; lines that find the queue full
//! are counted and the count is logged ([`drain`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crossbeam::queue::ArrayQueue;
use log::{Level, Log, Metadata, Record};

/// Longest deferred line, bytes.
pub const LINE_MAX: usize = 480;

/// Deferred lines the queue holds.
const QUEUE_LINES: usize = 256;

/// One deferred line.
struct Line {
    level: Level,
    len: usize,
    text: [u8; LINE_MAX],
}

impl Line {
    fn as_str(&self) -> &str {
        // cut on a byte boundary by `write_str`: only whole characters
        std::str::from_utf8(&self.text[..self.len]).unwrap_or("(not text)")
    }
}

impl std::fmt::Write for Line {
    /// Appends what fits, whole characters only; never fails, so that a
    /// long line is cut, not lost.
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = LINE_MAX - self.len;
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.text[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// The logger: `inner` writes; `queue` holds the real-time threads' lines.
pub struct Deferring {
    inner: Box<dyn Log>,
    queue: ArrayQueue<Line>,
    dropped: AtomicU64,
}

static LOGGER: OnceLock<Deferring> = OnceLock::new();

/// Installs the logger, writing through `inner` up to `level`. Errors: a
/// logger is already installed.
pub fn init(inner: Box<dyn Log>, level: log::LevelFilter) -> Result<(), log::SetLoggerError> {
    let l = LOGGER.get_or_init(|| Deferring {
        inner,
        queue: ArrayQueue::new(QUEUE_LINES),
        dropped: AtomicU64::new(0),
    });
    log::set_logger(l)?;
    log::set_max_level(level);
    Ok(())
}

impl Deferring {
    /// Queues `record` as a line; false when the queue is full.
    fn defer(&self, record: &Record) -> bool {
        let mut line = Line {
            level: record.level(),
            len: 0,
            text: [0; LINE_MAX],
        };
        let _ = write!(line, "{}", record.args());
        self.queue.push(line).is_ok()
    }

    /// Writes the queued lines through the inner logger.
    fn drain(&self) {
        while let Some(l) = self.queue.pop() {
            self.inner.log(
                &Record::builder()
                    .level(l.level)
                    .args(format_args!("{}", l.as_str()))
                    .build(),
            );
        }
        let n = self.dropped.swap(0, Ordering::Relaxed);
        if n > 0 {
            self.inner.log(
                &Record::builder()
                    .level(Level::Warn)
                    .args(format_args!(
                        "{n} log line(s) of the real-time threads lost: their queue was full"
                    ))
                    .build(),
            );
        }
    }
}

impl Log for Deferring {
    fn enabled(&self, metadata: &Metadata) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if crate::rtalloc::is_serving() {
            if !self.defer(record) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.inner.log(record);
        }
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

/// Writes the lines the real-time threads queued (main thread: at each
/// tick and at exit). Does nothing before [`init`].
pub fn drain() {
    if let Some(l) = LOGGER.get() {
        l.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_on_a_character() {
        let mut l = Line {
            level: Level::Info,
            len: 0,
            text: [0; LINE_MAX],
        };
        let s = "é".repeat(LINE_MAX);
        write!(l, "{s}").unwrap();
        assert_eq!(l.len, LINE_MAX, "2-byte characters fill it exactly");
        write!(l, "more").unwrap();
        assert_eq!(l.as_str().chars().count(), LINE_MAX / 2);
        let mut l = Line {
            level: Level::Info,
            len: 0,
            text: [0; LINE_MAX],
        };
        write!(l, "x{s}").unwrap();
        assert_eq!(l.len, LINE_MAX - 1, "no half character");
        assert!(l.as_str().starts_with("xé"));
    }

    /// A logger that keeps what it is given.
    struct Keep(std::sync::Mutex<Vec<String>>);
    impl Log for Keep {
        fn enabled(&self, _: &Metadata) -> bool {
            true
        }
        fn log(&self, r: &Record) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", r.level(), r.args()));
        }
        fn flush(&self) {}
    }

    #[test]
    fn lines_of_a_serving_thread_wait_for_the_drain() {
        let keep = Box::leak(Box::new(Keep(std::sync::Mutex::new(Vec::new()))));
        let d = Deferring {
            inner: Box::new(KeepRef(keep)),
            queue: ArrayQueue::new(2),
            dropped: AtomicU64::new(0),
        };
        let rec = |d: &Deferring, msg: &str| {
            d.log(
                &Record::builder()
                    .level(Level::Warn)
                    .args(format_args!("{msg}"))
                    .build(),
            )
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::rtalloc::serving(true);
                for m in ["one", "two", "three"] {
                    rec(&d, m);
                }
                crate::rtalloc::serving(false);
            });
        });
        assert!(
            keep.0.lock().unwrap().is_empty(),
            "nothing written before the drain"
        );
        rec(&d, "main");
        d.drain();
        assert_eq!(
            *keep.0.lock().unwrap(),
            [
                "WARN main",
                "WARN one",
                "WARN two",
                "WARN 1 log line(s) of the real-time threads lost: their queue was full"
            ]
        );
    }

    struct KeepRef(&'static Keep);
    impl Log for KeepRef {
        fn enabled(&self, m: &Metadata) -> bool {
            self.0.enabled(m)
        }
        fn log(&self, r: &Record) {
            self.0.log(r)
        }
        fn flush(&self) {}
    }
}
