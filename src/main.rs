// SPDX-License-Identifier: GPL-2.0-only
//! scx_floor: a sched_ext scheduler that gives normal (SCHED_OTHER) tasks a
//! guaranteed bandwidth floor under real-time hogs and ends every slice on
//! time with a per-CPU hrtimer. See docs/design.md for the design.

use scx_floor::{attr, bpf_intf, checks, dlbw, hist, knobs, server, slice, state, stats, sys};

mod boost;
mod bpf_skel;
mod config;
mod executor;
mod fault;
mod guard;
mod man;
mod monitor;
mod planner;
mod policy;
mod reach;
mod rescue;
mod rtalloc;
mod rtlog;
mod sched;
mod slicer;

use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

#[global_allocator]
static ALLOC: rtalloc::Counting = rtalloc::Counting;
use log::{info, warn};

/// scx_floor: a bandwidth floor for normal tasks under RT hogs, and slices
/// that end on time (sched_ext, BPF + Rust).
///
/// Must run as root on a kernel with sched_ext (CONFIG_SCHED_CLASS_EXT).
/// Unloads on SIGINT or SIGTERM; the kernel falls back to its fair class.
#[derive(Debug, Parser)]
#[command(
    name = "scx_floor",
    version = scx_floor::VERSION,
    about = "A bandwidth floor for normal tasks under real-time hogs, and slices that end \
             on time (a sched_ext scheduler)"
)]
pub struct Opts {
    /// Time slice of a normal task, in us (20 to 100000). A per-CPU hrtimer
    /// preempts the task when it expires.
    #[arg(long, default_value_t = 3000, value_name = "US",
          value_parser = clap::value_parser!(u64).range(20..=100_000))]
    slice_us: u64,

    /// Latency-target mode: each runnable normal task on a CPU should run
    /// once within this many us, so the slice there is max(--min-slice-us,
    /// L / runnable tasks), updated by the policy loop as the load changes
    /// (100 to 1000000; replaces --slice-us).
    #[arg(long, value_name = "US", conflicts_with = "slice_us",
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    latency_us: Option<u64>,

    /// Lower bound of the slice in latency-target mode, us (20 to 100000,
    /// at most --latency-us; default: --latency-us / 8, the ratio of the
    /// classic CFS defaults 6 ms / 0.75 ms).
    #[arg(long, value_name = "US", requires = "latency_us",
          value_parser = clap::value_parser!(u64).range(20..=100_000))]
    min_slice_us: Option<u64>,

    /// Do not preempt the running task when a task with a much lower vtime
    /// wakes (by default it is preempted at once, not at its slice's end).
    #[arg(long)]
    no_wakeup_preempt: bool,

    /// Queue a task preempted inside an RCU read-side section at its vtime
    /// like any other (by default it queues at the front, so that a
    /// low-weight reader cannot hold up RCU grace periods; for A/B
    /// comparison).
    #[arg(long)]
    no_rcu_boost: bool,

    /// Queue every task that may run on several CPUs in one DSQ shared by
    /// all CPUs (by default each queues in its own CPU's DSQ, and a CPU
    /// with nothing to run takes one from another's; for A/B comparison).
    #[arg(long)]
    shared_dsq: bool,

    /// How slices end: "auto" arms a per-CPU bpf_timer and, on kernels
    /// whose verifier refuses bpf_timer (PREEMPT_RT), wakes a per-CPU
    /// SCHED_FIFO 99 thread at each slice's end instead; "bpf-timer" and
    /// "thread" force one of them; "tick" leaves it to the scheduler tick
    /// (for A/B comparison).
    #[arg(long, value_enum, default_value_t = slice::SliceEnd::Auto, value_name = "HOW")]
    slice_end: slice::SliceEnd,

    /// The same as --slice-end tick: slices end at the next scheduler tick.
    #[arg(long, conflicts_with = "slice_end")]
    no_slice_timer: bool,

    /// Arm the slice timer this many us before the slice ends, to absorb the
    /// timer's own latency (expiry, softirq, kick, reschedule): "auto" learns
    /// it per CPU from the runs the timer ended; 0 arms it at the slice's
    /// end exactly. Either way the lead is capped at 7/8 of the slice.
    #[arg(long, default_value = "auto", value_name = "US|auto", value_parser = parse_timer_lead)]
    timer_lead_us: TimerLead,

    /// Print per-CPU accounting every SECS seconds (0.1 to 3600): normal-task
    /// ms/s, time taken by higher classes, slice expiries and overshoots.
    #[arg(long, value_name = "SECS", value_parser = parse_stats_secs)]
    stats: Option<f64>,

    /// Also write the stats as JSON to FILE (replaced atomically, mode 0600):
    /// per-CPU counters since load with the run-length and overshoot
    /// histograms, and the server's figures. Written at every --stats
    /// interval and at exit.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<std::path::PathBuf>,

    /// Size in bytes of the debug dump printed when the kernel ejects the
    /// scheduler (0: the kernel's default).
    #[arg(long, default_value_t = 0, value_name = "BYTES")]
    exit_dump_len: u32,

    /// Budget of the bandwidth server: normal tasks on each served CPU get at
    /// least this much run time (us) every period, even under RT hogs
    /// (1 to the period; like the kernel's fair_server runtime).
    #[arg(long, default_value_t = 50_000, value_name = "US")]
    server_runtime_us: u64,

    /// Period of the bandwidth server, us (100 to 1000000).
    #[arg(long, default_value_t = 1_000_000, value_name = "US",
          value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    server_period_us: u64,

    /// CPUs the server serves, as a list ("1,3-5"); default: all online CPUs.
    #[arg(long, value_name = "LIST")]
    server_cpus: Option<String>,

    /// Executor threads that make and end the SCHED_FIFO boosts on the
    /// served CPUs (1 to 1024; at most one per served CPU is started). A
    /// CPU's planner leases one at its first boost and gives it back once
    /// nothing starves there; while all are leased, a CPU's boosts are made
    /// from its planner and end at its wake-up, later (boosts_remote in
    /// --stats).
    #[arg(long, default_value_t = 8, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    executors: u16,

    /// No bandwidth server of our own (the dispatcher and the kernel's
    /// ext_server alone).
    #[arg(long)]
    no_server: bool,

    /// The kernel's ext_server (debugfs sched/ext_server): "off" sets its
    /// runtime to 0 on the served CPUs while scx_floor serves them (restored
    /// on exit); "keep" leaves it alone, for A/B runs.
    #[arg(long, default_value = "off", value_name = "off|keep",
          value_parser = clap::builder::PossibleValuesParser::new(["off", "keep"]))]
    kernel_server: String,

    /// Boost policy for starving tasks: "auto" boosts to SCHED_FIFO one above
    /// the CPU's RT hog (at most 98) and hands a CPU held above every such
    /// boost (RT priority 98-99, SCHED_DEADLINE) to SCHED_DEADLINE boosts
    /// (runtime = share, deadline = period = time left in the server
    /// period) when kernel.sched_rt_runtime_us is -1, else to the kernel's
    /// ext_server; "fifo" never uses SCHED_DEADLINE; "deadline" boosts only
    /// to SCHED_DEADLINE.
    #[arg(long, default_value = "auto", value_name = "auto|fifo|deadline",
          value_parser = clap::builder::PossibleValuesParser::new(["auto", "fifo", "deadline"]))]
    boost: String,

    /// Set kernel.sched_rt_runtime_us to -1 while scx_floor runs (restored on
    /// exit, on error, and by the guardian after a SIGKILL). That turns off
    /// the kernel's RT throttling and SCHED_DEADLINE admission control for
    /// the whole system; in exchange the kernel accepts SCHED_DEADLINE boosts
    /// of pinned tasks, which preempt RT tasks of any priority, and ends each
    /// one at its runtime itself (HRTICK_DL): "kernel-cut" mode, for CPUs
    /// held above every SCHED_FIFO boost (RT priority 98-99), and for every
    /// CPU with --boost deadline. Also used when sched_rt_runtime_us is -1
    /// already; needs 2 CPUs online.
    #[arg(long, conflicts_with = "no_server")]
    rt_runtime_unlimited: bool,

    /// Verbose output, including libbpf's.
    #[arg(short, long)]
    verbose: bool,

    /// Put back what an scx_floor killed together with its guardian left
    /// behind (the journals in /run/scx_floor: boosted tasks, kernel knobs,
    /// raised kernel threads), then exit; loads nothing. For a service
    /// manager's stop hook. A running scx_floor's lock is waited for (up to
    /// 15 s). Exit status 0 when nothing is left to restore.
    #[arg(long, exclusive = true)]
    restore: bool,

    /// Load nothing: print the stats of the scx_floor running now every SECS
    /// seconds (0.1 to 3600), read from its stats server
    /// (/var/run/scx/root/stats, root only): per-CPU rates and the server
    /// rows. With no scx_floor running it waits for one; exits 0 at SIGINT.
    #[arg(long, exclusive = true, value_name = "SECS", value_parser = parse_stats_secs)]
    monitor: Option<f64>,

    /// Describe every field of the stats server that --monitor reads, with
    /// its unit, and exit.
    #[arg(long, exclusive = true)]
    help_stats: bool,

    /// Print this manual page, scx_floor(8), in roff and exit, e.g.
    /// `scx_floor --man | sudo tee /usr/local/share/man/man8/scx_floor.8`.
    #[arg(long, exclusive = true)]
    man: bool,
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
    // simplelog's ColorChoice::Auto colours whatever stderr is: a log
    // written to a file or a journal would carry escape codes
    let colour = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        simplelog::ColorChoice::Auto
    } else {
        simplelog::ColorChoice::Never
    };
    let term = simplelog::TermLogger::new(level, cfg, simplelog::TerminalMode::Stderr, colour);
    rtlog::init(term, level)?;
    if verbose {
        scx_utils::init_libbpf_logging(None);
    }
    Ok(())
}

/// The slice policy from the flags. Errors: --min-slice-us above --latency-us.
fn slice_mode(opts: &Opts) -> Result<slice::SliceMode> {
    let Some(l) = opts.latency_us else {
        return Ok(slice::SliceMode::Fixed(opts.slice_us * 1000));
    };
    let m = opts.min_slice_us.unwrap_or((l / 8).max(20));
    if m > l {
        anyhow::bail!("--min-slice-us {m} must be at most --latency-us ({l})");
    }
    Ok(slice::SliceMode::Latency {
        latency_ns: l * 1000,
        min_ns: m * 1000,
    })
}

/// The server settings, checked. Errors: runtime out of 1..=period.
fn server_config(opts: &Opts) -> Result<Option<server::ServerConfig>> {
    if opts.no_server {
        return Ok(None);
    }
    let (rt, p) = (opts.server_runtime_us, opts.server_period_us);
    if rt == 0 || rt > p {
        anyhow::bail!("--server-runtime-us {rt} must be between 1 and --server-period-us ({p})");
    }
    if opts.rt_runtime_unlimited && opts.boost == "fifo" {
        anyhow::bail!("--rt-runtime-unlimited is for SCHED_DEADLINE boosts: not with --boost fifo");
    }
    let (mut runtime_ns, period_ns) = (rt * 1000, p * 1000);
    if fault::is(fault::Fault::OverBudget) {
        runtime_ns = (runtime_ns * 4).min(period_ns);
    }
    Ok(Some(server::ServerConfig {
        runtime_ns,
        period_ns,
        margin_ns: server::activation_margin_ns(runtime_ns, period_ns),
        kernel_cut: false,
    }))
}

/// How long a start waits for the state directory's lock, ms: longer than
/// the guardian of an scx_floor that just exited may take to restore (a
/// knob refused with EBUSY is retried for [`knobs::BUSY_RETRY_MS`]).
const LOCK_WAIT_MS: u64 = knobs::BUSY_RETRY_MS + 5_000;

/// Who may hold /run/scx_floor/lock, for the messages of a start that waits.
const LOCK_HOLDERS: &str =
    "another scx_floor, or the guardian (scx-floor-guard) of one that exited and is still restoring";

/// The checks that must all pass before anything on the system changes:
/// option ranges, root, sched_ext free, no `isolcpus=`, the served CPUs.
/// Returns the server, the slice policy and the CPUs to serve.
fn preflight(opts: &Opts) -> Result<(Option<server::ServerConfig>, slice::SliceMode, Vec<usize>)> {
    let server = server_config(opts)?;
    let slice = slice_mode(opts)?;
    checks::require_root(
        unsafe { libc::geteuid() },
        "loading a BPF scheduler needs CAP_SYS_ADMIN and CAP_BPF, and the bandwidth server \
         changes other tasks' policies (try: sudo scx_floor ...)",
    )?;
    checks::require_scx_free(&checks::read_state(Path::new(checks::SCX_SYSFS)))?;
    if let Ok(cmdline) = std::fs::read_to_string("/proc/cmdline") {
        checks::require_no_isolcpus(&cmdline)?;
    }
    let cpus = checks::served_cpus(opts.server_cpus.as_deref())?;
    Ok((server, slice, cpus))
}

/// Restores what an earlier scx_floor whose guardian died with it left
/// boosted or changed (its journals under `state_dir`), and says so.
/// Returns the tasks, knobs and kernel threads restored.
fn replay_leftovers(state_dir: &Path) -> (usize, usize, usize) {
    let (t, k, r) = guard::replay_all(state_dir, &|| true);
    let (lt, lr) = boost::replay_legacy(&state::legacy_journal_path(state_dir));
    let (t, r) = (t + lt, r + lr);
    if t + k + r > 0 {
        log::warn!(
            "restored {t} task(s) and {k} knob(s) left boosted/changed by an earlier scx_floor{}",
            guard::raised_note(r)
        );
    }
    (t, k, r)
}

/// `--restore`: replays the journals ([`replay_leftovers`]) once no
/// scx_floor holds the state directory, and nothing else. Errors: not
/// root; an scx_floor still holds the lock after [`LOCK_WAIT_MS`]; a
/// journaled knob could not be put back (it stays journaled).
fn restore_only() -> Result<()> {
    checks::require_root(
        unsafe { libc::geteuid() },
        "the journals in /run/scx_floor are root's (try: sudo scx_floor --restore)",
    )?;
    let state_dir = Path::new(state::STATE_DIR);
    let _lock = state::lock_state_dir(state_dir, LOCK_WAIT_MS, LOCK_HOLDERS)?;
    let (t, k, r) = replay_leftovers(state_dir);
    let left = knobs::Knobs::open(&state::knobs_dir(state_dir))?.pending();
    if !left.is_empty() {
        anyhow::bail!(
            "{} knob(s) could not be put back and stay journaled: {}",
            left.len(),
            left.iter()
                .map(|(p, v)| format!("{} = {v}", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if t + k + r == 0 {
        info!("nothing to restore in {}", state_dir.display());
    }
    Ok(())
}

/// What the BPF loader takes from the options.
fn sched_config(opts: &Opts, slice: &slice::SliceMode) -> sched::SchedConfig {
    sched::SchedConfig {
        // Latency mode: a CPU with one task gets the whole target.
        slice_ns: slice.slice_for(1),
        wakeup_preempt: !opts.no_wakeup_preempt,
        rcu_boost: !opts.no_rcu_boost && !fault::is(fault::Fault::NoRcuBoost),
        percpu_dsq: !opts.shared_dsq,
        spread_drain: !fault::is(fault::Fault::NoDrain),
        sample_load: slice.is_dynamic(),
        slice_end: if opts.no_slice_timer {
            slice::SliceEnd::Tick
        } else {
            opts.slice_end
        },
        timer_lead_ns: match opts.timer_lead_us {
            TimerLead::Auto => -1,
            TimerLead::Fixed(us) => us as i64 * 1000,
        },
        exit_dump_len: opts.exit_dump_len,
        verbose: opts.verbose,
        // read after the kernel threads' raise (run())
        irq_work_prio: None,
    }
}

/// The policy loop's settings from the options and the pre-flight results.
fn policy_config(
    opts: &Opts,
    (server, slice, cpus): (Option<server::ServerConfig>, slice::SliceMode, Vec<usize>),
    state_dir: &Path,
    guardian: &guard::Guardian,
) -> config::PolicyConfig {
    config::PolicyConfig {
        server,
        cpus,
        kernel_server_off: opts.kernel_server == "off",
        rt_runtime_unlimited: opts.rt_runtime_unlimited,
        boost_mode: match opts.boost.as_str() {
            "fifo" => config::BoostMode::Fifo,
            "deadline" => config::BoostMode::Deadline,
            _ => config::BoostMode::Auto,
        },
        executors: opts.executors.into(),
        stats_every: opts.stats.map(Duration::from_secs_f64),
        stats_json: opts.stats_json.clone(),
        slice,
        state_dir: state_dir.to_path_buf(),
        agent_pids: vec![guardian.pid],
        slice_threads: false,
        raised_tids: Vec::new(),
        irq_work_prio: None,
        guardian_restores: Some(guardian.restores),
    }
}

/// Loads the BPF scheduler (with slice-end threads where the kernel refuses
/// bpf_timer), runs the policy loop until a signal or ejection, and loads
/// again when the kernel asks for a restart.
fn load_and_run(
    mut cfg: sched::SchedConfig,
    pcfg: &mut config::PolicyConfig,
    shutdown: &AtomicBool,
) -> Result<()> {
    loop {
        wait_for_ext_server_room(shutdown);
        let mut open_object = MaybeUninit::uninit();
        let mut fallback_object = MaybeUninit::uninit();
        let mut sched = match sched::Scheduler::init(&cfg, &mut open_object) {
            Ok(s) => s,
            Err(e) if cfg.slice_end == slice::SliceEnd::Auto && slicer::is_unsupported(&e) => {
                info!(
                    "this kernel refuses bpf_timer (PREEMPT_RT: EOPNOTSUPP at load): \
                     slices end by per-CPU threads instead"
                );
                cfg.slice_end = slice::SliceEnd::Thread;
                sched::Scheduler::init(&cfg, &mut fallback_object)?
            }
            Err(e) => return Err(e),
        };
        pcfg.slice_threads = cfg.slice_end == slice::SliceEnd::Thread;
        let uei = policy::run(&mut sched, pcfg.clone(), shutdown)?;
        drop(sched);
        if shutdown.load(Ordering::Relaxed) || !uei.should_restart() {
            return Ok(());
        }
        info!("the kernel asked for a restart: reloading");
    }
}

/// Waits up to [`knobs::DL_RELEASE_WAIT_MS`] for the root domain to have
/// room for every CPU's ext_server, which sched_ext attaches as a
/// SCHED_DEADLINE reservation when a BPF scheduler is enabled: the kernel
/// refuses the enable with EBUSY otherwise ("failed to attach ext_server").
/// Room comes back when SCHED_DEADLINE tasks that just exited or left the
/// policy reach their 0-lag time. Goes on (the kernel decides) after the
/// wait, logged, or at once where the state cannot be read.
fn wait_for_ext_server_room(shutdown: &AtomicBool) {
    let Some(a) = dlbw::admission() else {
        return;
    };
    if a.ext_servers_fit() {
        return;
    }
    let t0 = std::time::Instant::now();
    info!(
        "waiting up to {} ms for SCHED_DEADLINE bandwidth: the kernel attaches an ext_server \
         per CPU when scx_floor is enabled and the root domain has no room for them now ({})",
        knobs::DL_RELEASE_WAIT_MS,
        dlbw::describe(&a)
    );
    let mut last = a;
    while t0.elapsed() < Duration::from_millis(knobs::DL_RELEASE_WAIT_MS)
        && !shutdown.load(Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(50));
        match dlbw::admission() {
            Some(a) if a.ext_servers_fit() => {
                info!(
                    "room for the ext_servers after {} ms",
                    t0.elapsed().as_millis()
                );
                return;
            }
            Some(a) => last = a,
            None => return,
        }
    }
    warn!(
        "still no room for the ext_servers after {} ms ({}): loading anyway, the kernel \
         will refuse with EBUSY unless it is freed meanwhile",
        t0.elapsed().as_millis(),
        dlbw::describe(&last)
    );
}

fn run(opts: Opts) -> Result<()> {
    if opts.help_stats {
        return monitor::help_stats();
    }
    if let Some(secs) = opts.monitor {
        return monitor::monitor(secs);
    }
    if opts.restore {
        return restore_only();
    }
    // Nothing on the system changes before all of these pass.
    let pre = preflight(&opts)?;
    let state_dir = Path::new(state::STATE_DIR);
    let _lock = state::lock_state_dir(state_dir, LOCK_WAIT_MS, LOCK_HOLDERS)?;
    replay_leftovers(state_dir);
    // Forked while single-threaded; restores everything if we die.
    let guardian = guard::spawn(state_dir)?;

    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    sys::main_wake_fd();
    ctrlc::set_handler(move || {
        flag.store(true, Ordering::Relaxed);
        sys::wake_main();
    })
    .context("installing the SIGINT/SIGTERM handler")?;

    let mut cfg = sched_config(&opts, &pre.1);
    let mut pcfg = policy_config(&opts, pre, state_dir, &guardian);
    if pcfg.server.is_some() {
        if let Err(e) = sys::lock_memory() {
            log::warn!("mlockall: {e} (the server threads may page-fault)");
        }
    }
    // Raised before the BPF scheduler attaches and put back after it is
    // detached (declared first: dropped last, on every path).
    let raise = boost::KthreadRaise::apply(boost::Journal::open(&state::journal_path(state_dir))?);
    pcfg.raised_tids = raise.tids();
    pcfg.irq_work_prio = boost::irq_work_prio();
    cfg.irq_work_prio = pcfg.irq_work_prio;
    if !pcfg.raised_tids.is_empty() {
        info!(
            "the {} irq_work/N, rcuc/N, ktimers/N and rcub/N kernel thread(s) run at \
             SCHED_FIFO {} while scx_floor runs (restored on exit): each works inside RCU \
             read-side sections, one preempted there by an RT task stalls RCU, irq_work/N \
             delivers the BPF side's wake-ups, ktimers/N runs the timers, sched_ext's watchdog \
             among them, and rcub/N lends its priority to a reader RCU boosts",
            pcfg.raised_tids.len(),
            boost::RAISE_PRIO
        );
    }
    load_and_run(cfg, &mut pcfg, &shutdown)?;
    if !pcfg.raised_tids.is_empty() {
        drop(raise);
        info!(
            "irq_work/N, rcuc/N, ktimers/N and rcub/N threads put back (a failure is warned above)"
        );
    }
    Ok(())
}

fn main() {
    // before any thread allocates (see rtalloc.rs)
    let one_arena = rtalloc::one_arena();
    let opts = Opts::parse();
    if opts.man {
        use clap::CommandFactory;
        use std::io::Write;
        let page = man::render(Opts::command());
        if let Err(e) = page.and_then(|p| std::io::stdout().write_all(&p)) {
            eprintln!("scx_floor: --man: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = init_log(opts.verbose) {
        eprintln!("scx_floor: cannot set up logging: {e}");
    }
    if !one_arena {
        log::warn!("glibc refused mallopt(M_ARENA_MAX, 1): each thread may take a malloc arena");
    }
    match fault::init_from_env() {
        Ok(fault::Fault::None) => {}
        Ok(f) => log::warn!(
            "{f:?} injected for a test ({}): scx_floor is broken on purpose",
            fault::ENV
        ),
        Err(e) => {
            eprintln!("scx_floor: error: {e:#}");
            std::process::exit(1);
        }
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
    fn server_flags() {
        let o = parse(&[]).unwrap();
        let sc = server_config(&o).unwrap().unwrap();
        assert_eq!(
            (sc.runtime_ns, sc.period_ns, sc.margin_ns),
            (50_000_000, 1_000_000_000, 17_500_000)
        );
        let o = parse(&["--server-runtime-us", "20", "--server-period-us", "1000000"]).unwrap();
        assert_eq!(server_config(&o).unwrap().unwrap().runtime_ns, 20_000);
        let o = parse(&["--server-runtime-us", "2000", "--server-period-us", "1000"]).unwrap();
        assert!(server_config(&o)
            .unwrap_err()
            .to_string()
            .contains("between 1 and"));
        let o = parse(&["--server-runtime-us", "0"]).unwrap();
        assert!(server_config(&o).is_err());
        for bad in ["99", "1000001", "0"] {
            assert!(
                parse(&["--server-period-us", bad]).is_err(),
                "period {bad} accepted"
            );
        }
        assert!(server_config(&parse(&["--no-server"]).unwrap())
            .unwrap()
            .is_none());
        assert!(parse(&["--kernel-server", "maybe"]).is_err());
        assert!(parse(&["--boost", "rr"]).is_err());
        let o = parse(&["--server-runtime-us", "1000", "--server-period-us", "1000"]).unwrap();
        assert_eq!(server_config(&o).unwrap().unwrap().margin_ns, 0);
        // kernel-cut mode: needs the server and SCHED_DEADLINE boosts
        assert!(parse(&["--rt-runtime-unlimited", "--no-server"]).is_err());
        let o = parse(&["--rt-runtime-unlimited", "--boost", "fifo"]).unwrap();
        assert!(server_config(&o)
            .unwrap_err()
            .to_string()
            .contains("not with --boost fifo"));
        let o = parse(&["--rt-runtime-unlimited"]).unwrap();
        assert!(server_config(&o).unwrap().is_some());
    }

    #[test]
    fn latency_mode_flags() {
        use slice::SliceMode;
        let m = |a: &[&str]| slice_mode(&parse(a).unwrap());
        assert_eq!(m(&[]).unwrap(), SliceMode::Fixed(3_000_000));
        assert_eq!(
            m(&["--latency-us", "1000", "--min-slice-us", "400"]).unwrap(),
            SliceMode::Latency {
                latency_ns: 1_000_000,
                min_ns: 400_000
            }
        );
        assert_eq!(
            m(&["--latency-us", "6000"]).unwrap(),
            SliceMode::Latency {
                latency_ns: 6_000_000,
                min_ns: 750_000
            }
        );
        assert!(m(&["--latency-us", "1000", "--min-slice-us", "2000"])
            .unwrap_err()
            .to_string()
            .contains("at most --latency-us"));
        // --min-slice-us alone, both modes at once, out of range
        assert!(parse(&["--min-slice-us", "400"]).is_err());
        assert!(parse(&["--latency-us", "1000", "--slice-us", "500"]).is_err());
        for bad in ["99", "1000001", "x"] {
            assert!(parse(&["--latency-us", bad]).is_err(), "{bad} accepted");
        }
        assert!(parse(&["--latency-us", "1000", "--min-slice-us", "19"]).is_err());
    }

    #[test]
    fn dispatcher_flags() {
        let c = |a: &[&str]| {
            let o = parse(a).unwrap();
            sched_config(&o, &slice_mode(&o).unwrap())
        };
        let d = c(&[]);
        assert!(d.percpu_dsq && d.wakeup_preempt);
        assert_eq!(d.slice_ns, 3_000_000);
        let s = c(&["--shared-dsq", "--no-wakeup-preempt"]);
        assert!(!s.percpu_dsq && !s.wakeup_preempt);
        assert!(parse(&["--shared-dsq", "yes"]).is_err());
    }

    #[test]
    fn unknown_flag_is_an_error() {
        assert!(parse(&["--no-such-flag"]).is_err());
    }
}
