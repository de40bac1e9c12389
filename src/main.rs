// SPDX-License-Identifier: GPL-2.0-only
//! scx_floor: a sched_ext scheduler that gives normal (SCHED_OTHER) tasks a
//! guaranteed bandwidth floor under real-time hogs and ends every slice on
//! time with a per-CPU hrtimer. See README.md for the design.

mod bpf_intf;
mod bpf_skel;
mod checks;
mod hist;
mod sched;
mod stats;

use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use log::info;

/// scx_floor: a bandwidth floor for normal tasks under RT hogs, and slices
/// that end on time (sched_ext, BPF + Rust).
///
/// Must run as root on a kernel with sched_ext (CONFIG_SCHED_CLASS_EXT).
/// Unloads on SIGINT or SIGTERM; the kernel falls back to its fair class.
#[derive(Debug, Parser)]
#[command(name = "scx_floor", version)]
pub struct Opts {
    /// Time slice of a normal task, in us (20 to 100000). A per-CPU hrtimer
    /// preempts the task when it expires.
    #[arg(long, default_value_t = 3000, value_name = "US",
          value_parser = clap::value_parser!(u64).range(20..=100_000))]
    slice_us: u64,

    /// Do not arm the per-CPU slice hrtimer: slices end at the next
    /// scheduler tick instead (for A/B comparison).
    #[arg(long)]
    no_slice_timer: bool,

    /// Arm the slice timer this many us before the slice ends, to absorb the
    /// timer's own latency (expiry, softirq, kick, reschedule): "auto" learns
    /// it per CPU from the runs the timer ended (at most half the slice); 0
    /// arms it at the slice's end exactly.
    #[arg(long, default_value = "auto", value_name = "US|auto", value_parser = parse_timer_lead)]
    timer_lead_us: TimerLead,

    /// Print per-CPU accounting every SECS seconds (0.1 to 3600): normal-task
    /// ms/s, time taken by higher classes, slice expiries and overshoots.
    #[arg(long, value_name = "SECS", value_parser = parse_stats_secs)]
    stats: Option<f64>,

    /// Size in bytes of the debug dump printed when the kernel ejects the
    /// scheduler (0: the kernel's default).
    #[arg(long, default_value_t = 0, value_name = "BYTES")]
    exit_dump_len: u32,

    /// Verbose output, including libbpf's.
    #[arg(short, long)]
    verbose: bool,
}

/// `--timer-lead-us`: learned per CPU, or fixed (us).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerLead {
    /// learn the timer latency per CPU
    Auto,
    /// a fixed lead, us
    Fixed(u64),
}

fn parse_timer_lead(s: &str) -> std::result::Result<TimerLead, String> {
    if s == "auto" {
        return Ok(TimerLead::Auto);
    }
    match s.parse::<u64>() {
        Ok(v) if v <= 10_000 => Ok(TimerLead::Fixed(v)),
        _ => Err(format!(
            "'{s}' is neither 'auto' nor a lead of 0 to 10000 us"
        )),
    }
}

fn parse_stats_secs(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.1..=3600.0).contains(&v) {
        return Err(format!("{v} s is out of range (0.1 to 3600)"));
    }
    Ok(v)
}

fn init_log(verbose: bool) -> Result<()> {
    let level = if verbose {
        simplelog::LevelFilter::Debug
    } else {
        simplelog::LevelFilter::Info
    };
    let cfg = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Error)
        .set_location_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .build();
    simplelog::TermLogger::init(
        level,
        cfg,
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Auto,
    )?;
    if verbose {
        scx_utils::init_libbpf_logging(None);
    }
    Ok(())
}

fn run(opts: Opts) -> Result<()> {
    // Nothing on the system changes before all of these pass.
    checks::require_root(unsafe { libc::geteuid() })?;
    checks::require_scx_free(&checks::read_state(Path::new(checks::SCX_SYSFS)))?;
    if let Ok(cmdline) = std::fs::read_to_string("/proc/cmdline") {
        checks::require_no_isolcpus(&cmdline)?;
    }

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the SIGINT/SIGTERM handler")?;

    let cfg = sched::SchedConfig {
        slice_ns: opts.slice_us * 1000,
        slice_timer: !opts.no_slice_timer,
        timer_lead_ns: match opts.timer_lead_us {
            TimerLead::Auto => -1,
            TimerLead::Fixed(us) => us as i64 * 1000,
        },
        exit_dump_len: opts.exit_dump_len,
        verbose: opts.verbose,
        stats_every: opts.stats.map(Duration::from_secs_f64),
    };
    loop {
        let mut open_object = MaybeUninit::uninit();
        let mut sched = sched::Scheduler::init(&cfg, &mut open_object)?;
        let uei = sched.run(&shutdown)?;
        drop(sched);
        if shutdown.load(Ordering::Relaxed) || !uei.should_restart() {
            break;
        }
        info!("the kernel asked for a restart: reloading");
    }
    Ok(())
}

fn main() {
    let opts = Opts::parse();
    if let Err(e) = init_log(opts.verbose) {
        eprintln!("scx_floor: cannot set up logging: {e}");
    }
    if let Err(e) = run(opts) {
        eprintln!("scx_floor: error: {e:#}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Opts, clap::Error> {
        Opts::try_parse_from(std::iter::once("scx_floor").chain(args.iter().copied()))
    }

    #[test]
    fn slice_range() {
        assert_eq!(parse(&[]).unwrap().slice_us, 3000);
        assert_eq!(parse(&["--slice-us", "500"]).unwrap().slice_us, 500);
        for bad in ["0", "-5", "19", "100001", "18446744073709551616", "abc"] {
            assert!(
                parse(&["--slice-us", bad]).is_err(),
                "--slice-us {bad} accepted"
            );
        }
    }

    #[test]
    fn stats_range() {
        assert_eq!(parse(&["--stats", "1"]).unwrap().stats, Some(1.0));
        for bad in ["0", "-1", "nan", "1e9", "x"] {
            assert!(parse(&["--stats", bad]).is_err(), "--stats {bad} accepted");
        }
    }

    #[test]
    fn timer_lead() {
        assert_eq!(parse(&[]).unwrap().timer_lead_us, TimerLead::Auto);
        assert_eq!(
            parse(&["--timer-lead-us", "0"]).unwrap().timer_lead_us,
            TimerLead::Fixed(0)
        );
        for bad in ["-1", "10001", "manual"] {
            assert!(
                parse(&["--timer-lead-us", bad]).is_err(),
                "--timer-lead-us {bad} accepted"
            );
        }
    }

    #[test]
    fn unknown_flag_is_an_error() {
        assert!(parse(&["--no-such-flag"]).is_err());
    }
}
