// SPDX-License-Identifier: GPL-2.0-only
//! scx_floor-ab: the A/B harness. Runs scenarios S0, S1, S2 (scenarios.md),
//! S1 in seed 001's setting (nohz_full, RT throttling off), a throughput
//! scenario (hackbench) and a wake-up latency scenario (cyclictest as
//! SCHED_OTHER) under the stock kernel (fair_server on, then off), and under
//! scx_floor with the kernel's ext_server or with its own server, all in one
//! boot; prints a Markdown table with ratios to stock and writes every raw
//! figure as JSON and PNG plots. See docs/ab.md.

mod parse;
mod plot;
mod probe;
mod report;
mod scenario;
mod sys;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;

use report::Row;
use scenario::{Config, Ctx, Durations, FloorRun, Scenario, Setup};

/// scx_floor-ab: stock scheduling, the kernel's servers and scx_floor side by
/// side on the same machine, in one boot.
///
/// Must run as root on a kernel with sched_ext. Everything it changes (the
/// fair_server/ext_server budgets in debugfs, base_slice_ns,
/// kernel.sched_rt_runtime_us) is restored on exit, on error and on
/// SIGINT/SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "scx_floor-ab", version = scx_floor::VERSION)]
struct Opts {
    /// Scenarios to run, comma-separated (default: all; seed001 is skipped,
    /// with a note, unless the measured CPU is nohz_full).
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_enum)]
    scenarios: Vec<Scenario>,

    /// Configurations to run, comma-separated (default: all; stock-slice500
    /// runs S2 only). The ratios need `stock`.
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_enum)]
    configs: Vec<Config>,

    /// The measured CPU (default: the last online CPU). The controller pins
    /// itself to another one.
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,

    /// Output directory: ab.json, table.md, s1_bandwidth.png, s2_runlen.png, logs/.
    #[arg(long, value_name = "DIR", default_value = "results/ab")]
    out: PathBuf,

    /// The scx_floor binary (default: scx_floor next to this executable).
    #[arg(long, value_name = "PATH")]
    scx_floor: Option<PathBuf>,

    /// Short durations (for tests): S0 3 s, S1 4 s, S2 2 s, one small hackbench, latency 2 s.
    #[arg(long)]
    quick: bool,

    /// Rounds of every scenario, run interleaved in this boot (configuration
    /// A, B, A, B, ...): the table gives each figure's median over the
    /// rounds, and its ratio to stock as the median of the rounds' ratios
    /// (each against stock in the same round) with their range. Default: 3
    /// rounds of throughput and latency and 1 of the others; 1 of each with
    /// --quick.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20))]
    repeat: Option<u32>,

    #[command(subcommand)]
    helper: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Internal: the harness's own workloads (started by the controller).
    #[command(hide = true)]
    Helper {
        #[command(subcommand)]
        what: Helper,
    },
}

#[derive(Debug, Subcommand)]
enum Helper {
    /// A CPU-bound loop that exits after SECS.
    Hog {
        /// lifetime, s
        #[arg(long)]
        secs: f64,
        /// print "ready" on stdout once running (after exec, page faults, ...)
        #[arg(long)]
        ready: bool,
    },
    /// The clock probe: prints its gaps as JSON after SECS.
    Probe {
        /// lifetime, s
        #[arg(long)]
        secs: f64,
        /// record gaps longer than this, us
        #[arg(long, default_value_t = 10)]
        threshold_us: u64,
        /// at most this many gaps
        #[arg(long, default_value_t = 1_000_000)]
        cap: usize,
    },
}

fn progress(msg: &str) {
    eprintln!("{msg}");
}

fn read_or(path: &str, default: &str) -> String {
    sys::read_knob(Path::new(path)).unwrap_or_else(|_| default.into())
}

/// The kernel's dl_server tracepoints, if it has any (names under events/sched).
fn dl_server_tracepoints() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/events/sched")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("server"))
                .collect()
        })
        .unwrap_or_default()
}

/// What a run measures, decided before anything changes.
struct Plan {
    ctx: Ctx,
    /// the controller's CPU
    ctl: usize,
    /// (configuration, scenario, round) in run order
    order: Vec<(Config, Scenario, usize)>,
    /// rows of scenarios skipped with a note (seed001 without nohz_full)
    skipped: Vec<Row>,
    /// `/sys/devices/system/cpu/nohz_full` as read
    nohz_raw: String,
    /// scx_floor writes `--stats-json` (run lengths for S2)
    stats_json: bool,
}

/// Checks the options and the machine (nothing changes here) and plans the
/// run. Errors: not root or no sched_ext, a CPU that is not online, a
/// missing binary or tool, nothing to run.
fn plan(opts: &Opts) -> Result<Plan> {
    let mut scenarios: Vec<Scenario> = if opts.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        opts.scenarios.clone()
    };
    let configs: Vec<Config> = if opts.configs.is_empty() {
        Config::ALL.to_vec()
    } else {
        opts.configs.clone()
    };
    let cpus = sys::preflight()?;
    let cpu = opts.cpu.unwrap_or(*cpus.last().unwrap());
    if !cpus.contains(&cpu) {
        bail!("--cpu {cpu} is not an online CPU (online: {cpus:?})");
    }
    let ctl = *cpus.iter().find(|&&c| c != cpu).unwrap();
    let exe = std::env::current_exe().context("finding this executable")?;
    let floor = match &opts.scx_floor {
        Some(p) => p.clone(),
        None => exe.with_file_name("scx_floor"),
    };
    if configs.iter().any(|c| c.is_scx()) && !floor.is_file() {
        bail!(
            "scx_floor binary {} not found (build it, or give --scx-floor PATH)",
            floor.display()
        );
    }
    if scenarios.contains(&Scenario::Throughput) {
        scenario::require_tool("hackbench", "rt-tests")?;
    }
    if scenarios.contains(&Scenario::Latency) || scenarios.contains(&Scenario::LatencyRt) {
        scenario::require_tool("cyclictest", "rt-tests")?;
    }
    let (nohz, nohz_raw) = sys::nohz_full_cpus();
    let skipped = skip_seed001(&mut scenarios, &configs, cpu, &nohz, &nohz_raw);
    // S0's second noise probe, on a kernel with the osnoise tracer
    let osnoise = if scenarios.contains(&Scenario::S0) {
        sys::tracing_dir().filter(|d| sys::has_osnoise(d))
    } else {
        None
    };
    let logs = opts.out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let stats_json = configs.iter().any(|c| c.is_scx()) && scenario::floor_has_stats_json(&floor);
    let order = run_order(&configs, &scenarios, |s| rounds_of(opts, s));
    if order.is_empty() && skipped.is_empty() {
        bail!("nothing to run: stock-slice500 runs only s2, seed001 runs under stock, scx-ext and scx-floor");
    }
    let ctx = Ctx {
        cpu,
        cpus,
        exe,
        floor,
        logs,
        d: Durations::new(opts.quick),
        osnoise,
    };
    Ok(Plan {
        ctx,
        ctl,
        order,
        skipped,
        nohz_raw,
        stats_json,
    })
}

/// Rounds of the throughput and latency scenarios without --repeat: their
/// figures move with the host from one block of runs to the next by more
/// than stock and scx_floor differ, so they are taken as a median over
/// interleaved rounds (docs/results: a single block per configuration
/// measured the host's drift).
pub const DEFAULT_ROUNDS: usize = 3;

/// How many rounds of `s` the options ask for.
fn rounds_of(opts: &Opts, s: Scenario) -> usize {
    match opts.repeat {
        Some(n) => n as usize,
        None if opts.quick => 1,
        None if matches!(
            s,
            Scenario::Throughput | Scenario::Latency | Scenario::LatencyRt
        ) =>
        {
            DEFAULT_ROUNDS
        }
        None => 1,
    }
}

/// The run order: first the scenarios of one round, each configuration as
/// a block (in [`Config::RUN_ORDER`], and [`Scenario::RUN_ORDER`] within
/// it, so that a set-up serves several scenarios); then those of several
/// rounds, round by round, every configuration in each round: A B A B.
fn run_order(
    configs: &[Config],
    scenarios: &[Scenario],
    rounds: impl Fn(Scenario) -> usize,
) -> Vec<(Config, Scenario, usize)> {
    let mut order = Vec::new();
    let most = scenarios.iter().map(|&s| rounds(s)).max().unwrap_or(1);
    let blocks = |order: &mut Vec<_>, round: usize, keep: &dyn Fn(Scenario) -> bool| {
        for c in Config::RUN_ORDER
            .into_iter()
            .filter(|c| configs.contains(c))
        {
            for s in Scenario::RUN_ORDER {
                if scenarios.contains(&s) && c.runs(s) && keep(s) {
                    order.push((c, s, round));
                }
            }
        }
    };
    blocks(&mut order, 0, &|s| rounds(s) == 1);
    for round in 0..most {
        blocks(&mut order, round, &|s| rounds(s) > 1 && round < rounds(s));
    }
    order
}

/// seed001 needs a boot with the measured CPU nohz_full: without it, it
/// leaves `scenarios`, and its rows say why (not an error).
fn skip_seed001(
    scenarios: &mut Vec<Scenario>,
    configs: &[Config],
    cpu: usize,
    nohz: &[usize],
    nohz_raw: &str,
) -> Vec<Row> {
    let mut skipped: Vec<Row> = Vec::new();
    if !scenarios.contains(&Scenario::Seed001) || nohz.contains(&cpu) {
        return skipped;
    }
    let why = format!(
        "skipped: CPU {cpu} is not nohz_full ({} reads '{nohz_raw}'; boot with nohz_full={cpu} irqaffinity=0)",
        sys::NOHZ_FULL
    );
    for &c in configs.iter().filter(|c| c.runs(Scenario::Seed001)) {
        skipped.push(Row {
            scenario: Scenario::Seed001.name().into(),
            config: c.name().into(),
            figure: "normal ms/s".into(),
            details: why.clone(),
            ..Default::default()
        });
    }
    if !skipped.is_empty() {
        progress(&format!("scx_floor-ab: seed001 {why}"));
    }
    scenarios.retain(|&s| s != Scenario::Seed001);
    skipped
}

/// The machine as the run found it, for ab.json.
fn environment(p: &Plan) -> serde_json::Value {
    let cpu = p.ctx.cpu;
    json!({
        "kernel": sys::kernel_release(),
        "kernel_version": read_or("/proc/sys/kernel/version", "?"),
        "online_cpus": p.ctx.cpus,
        "measured_cpu": cpu,
        "controller_cpu": p.ctl,
        "clocksource": read_or("/sys/devices/system/clocksource/clocksource0/current_clocksource", "?"),
        "base_slice_ns": read_or("/sys/kernel/debug/sched/base_slice_ns", "?"),
        "sched_rt_runtime_us": read_or("/proc/sys/kernel/sched_rt_runtime_us", "?"),
        "fair_server_runtime_ns": read_or(&format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}/runtime"), "?"),
        "ext_server_runtime_ns": read_or(&format!("/sys/kernel/debug/sched/ext_server/cpu{cpu}/runtime"), "?"),
        "dl_server_tracepoints": dl_server_tracepoints(),
        "osnoise_tracer": sys::tracing_dir().is_some_and(|d| sys::has_osnoise(&d)),
        "rtla_osnoise_in_s0": p.ctx.osnoise.is_some(),
        "nohz_full": p.nohz_raw,
        "kernel_cmdline": read_or("/proc/cmdline", "?"),
        "scx_floor_stats_json": p.stats_json,
    })
}

/// What the run produced: a row per (configuration, scenario), and each
/// scx_floor run with the scenarios it served.
struct Outcome {
    rows: Vec<Row>,
    floor_runs: Vec<FloorRun>,
    /// kernel log errors about sched_ext before the run
    dmesg_base: usize,
}

/// The scx_floor instance of the current set-up, and the scenarios it
/// served, with their rounds.
type Running = Option<(scenario::Floor, Config, Vec<(String, usize)>)>;

/// Sets up each (configuration, scenario) of the plan in turn (knobs, and
/// scx_floor started where the configuration has it; a set-up kept while
/// the next step needs the same), runs it and records its row, with any
/// scx_floor exit or kernel log error during it. Stops what it started.
fn execute(p: &Plan, t_start: Instant) -> Outcome {
    let mut rows: Vec<Row> = Vec::new();
    let mut floor_runs: Vec<FloorRun> = Vec::new();
    let mut current: Option<(Config, Setup)> = None;
    let mut running: Running = None;
    let mut setup_err: Option<String> = None;
    let dmesg_base = sys::dmesg_scx_errors().len();
    let mut dmesg_seen = dmesg_base;
    for (k, &(c, s, round)) in p.order.iter().enumerate() {
        let st = scenario::setup_for(c, s, p.ctx.cpu);
        if current.as_ref() != Some(&(c, st.clone())) {
            if let Some((f, fc, sc)) = running.take() {
                floor_runs.push(scenario::stop_floor(f, fc, sc));
            }
            setup_err = set_up(p, c, s, &st, &mut running).err();
            current = Some((c, st.clone()));
        }
        progress(&format!(
            "[{}/{}] {} / {}{} ... ({:.0} s)",
            k + 1,
            p.order.len(),
            s.name(),
            c.name(),
            if round > 0 {
                format!(", round {}", round + 1)
            } else {
                String::new()
            },
            t_start.elapsed().as_secs_f64()
        ));
        let mut row = match &setup_err {
            Some(e) => Err(anyhow::anyhow!("{e}")),
            None => scenario::run(&p.ctx, c, s),
        }
        .unwrap_or_else(|e| Row {
            scenario: s.name().into(),
            config: c.name().into(),
            error: Some(format!("{e:#}")),
            ..Default::default()
        });
        row.round = round;
        check_run(&mut row, s, round, &mut running, &mut dmesg_seen);
        if let Some(v) = row.raw.as_object_mut() {
            v.insert("setup".into(), json!(st));
        }
        progress(&format!(
            "      {}: {} {}{}",
            row.figure,
            row.value.map(report::fmt_num).unwrap_or_else(|| "-".into()),
            row.details,
            row.error
                .as_ref()
                .map(|e| format!(" [{e}]"))
                .unwrap_or_default()
        ));
        rows.push(row);
    }
    if let Some((f, fc, sc)) = running.take() {
        floor_runs.push(scenario::stop_floor(f, fc, sc));
    }
    Outcome {
        rows,
        floor_runs,
        dmesg_base,
    }
}

/// Puts the knobs back, then applies set-up `st` and starts scx_floor if it
/// has one. Errors: the set-up's message, for the rows it would have run.
fn set_up(
    p: &Plan,
    c: Config,
    s: Scenario,
    st: &Setup,
    running: &mut Running,
) -> Result<(), String> {
    for e in sys::restore_knobs() {
        log::warn!("{e}");
    }
    scenario::apply_knobs(st).map_err(|e| format!("setup failed: {e:#}"))?;
    if let Some(args) = &st.floor_args {
        let tag = format!("{}-{}", c.name(), s.name());
        let f = scenario::start_floor(&p.ctx, args, &tag, p.stats_json)
            .map_err(|e| format!("{e:#}"))?;
        *running = Some((f, c, Vec::new()));
    }
    Ok(())
}

/// Marks `row` failed if scx_floor exited or was ejected during it, or the
/// kernel logged a sched_ext error since the last row.
fn check_run(
    row: &mut Row,
    s: Scenario,
    round: usize,
    running: &mut Running,
    dmesg_seen: &mut usize,
) {
    if let Some((f, _, sc)) = running.as_mut() {
        sc.push((s.name().into(), round));
        if !scenario::floor_alive(f) {
            row.error = Some(format!(
                "scx_floor exited or was ejected during the run (state {})",
                sys::scx_state()
            ));
        }
    }
    let errs = sys::dmesg_scx_errors();
    if errs.len() > *dmesg_seen {
        let new = errs[*dmesg_seen..].join(" / ");
        row.error = Some(match row.error.take() {
            Some(e) => format!("{e}; kernel log: {new}"),
            None => format!("kernel log: {new}"),
        });
        *dmesg_seen = errs.len();
    }
}

/// Adds what each scx_floor run said to its rows (S2's run lengths, an
/// exit that was not clean), fills the ratios to stock, folds the rounds of
/// a scenario into one row ([`report::fold_rounds`]), sorts the rows into
/// table order and sets the throughput goal.
fn annotate(rows: &mut Vec<Row>, floor_runs: &[FloorRun], cpu: usize) {
    for fr in floor_runs {
        let served = |r: &Row| {
            r.config == fr.config
                && fr
                    .scenarios
                    .iter()
                    .zip(&fr.rounds)
                    .any(|(s, &k)| *s == r.scenario && k == r.round)
        };
        if let Some(line) = fr.stats.as_ref().and_then(|s| report::floor_runlen(s, cpu)) {
            for r in rows.iter_mut().filter(|r| r.scenario == "s2" && served(r)) {
                r.details.push_str(&format!("; {line}"));
            }
        }
        if fr.ejected || fr.exit_code != Some(0) {
            for r in rows.iter_mut().filter(|r| served(r)) {
                let msg = format!(
                    "scx_floor ended with {:?}, ejected: {}",
                    fr.exit_code, fr.ejected
                );
                r.error = Some(r.error.take().map(|e| format!("{e}; {msg}")).unwrap_or(msg));
            }
        }
    }
    report::fill_ratios(rows, Config::Stock.name());
    *rows = report::fold_rounds(std::mem::take(rows), Config::Stock.name());
    rows.sort_by_key(table_order);
    report::note_machine_floor(
        rows,
        Scenario::Latency.name(),
        Scenario::LatencyRt.name(),
        Config::Stock.name(),
    );
    for r in rows.iter_mut() {
        if r.scenario == Scenario::Throughput.name() && r.config == Config::ScxFloor.name() {
            if let Some(x) = r.ratio {
                r.goal = Some((x >= 0.95, "throughput >= 0.95 of stock".into()));
            }
        }
    }
}

/// Writes ab.json, table.md and the plots to `opts.out`, and prints the
/// table (skipped scenarios included; ab.json keeps them apart).
fn write(opts: &Opts, p: &Plan, env: serde_json::Value, o: &Outcome, wall: f64) -> Result<()> {
    let mut shown = o.rows.clone();
    shown.extend(p.skipped.iter().cloned());
    shown.sort_by_key(table_order);
    let table = report::markdown(&shown);
    // whole seconds, as the table's date shows them
    let now = scx_floor::sys::unix_time_s() as u64;
    let doc = json!({
        "tool": "scx_floor-ab",
        "version": scx_floor::VERSION,
        "date": report::utc_string(now),
        "unix_time": now,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "quick": opts.quick,
        "wall_s": wall,
        "environment": env,
        "durations": p.ctx.d,
        "run_order": p.order.iter().map(|(c, s, k)| format!("{}/{}/{}", c.name(), s.name(), k + 1)).collect::<Vec<_>>(),
        "rows": o.rows,
        "skipped": p.skipped,
        "scx_floor_runs": o.floor_runs,
        "kernel_log_errors": sys::dmesg_scx_errors().get(o.dmesg_base..).unwrap_or_default(),
    });
    std::fs::write(opts.out.join("ab.json"), serde_json::to_string(&doc)?)?;
    let header = format!(
        "scx_floor-ab, {}, kernel {}, {} CPUs (measured CPU {}), `{}`, {:.0} s\n\n",
        report::utc_string(now),
        sys::kernel_release(),
        p.ctx.cpus.len(),
        p.ctx.cpu,
        doc["command"].as_str().unwrap_or(""),
        wall
    );
    std::fs::write(opts.out.join("table.md"), format!("{header}{table}"))?;
    if let Err(e) = plots(&opts.out, &o.rows) {
        eprintln!("scx_floor-ab: plots: {e:#}");
    }
    print!("{header}{table}");
    Ok(())
}

fn run(opts: Opts) -> Result<i32> {
    let t_start = Instant::now();
    // Checks before anything changes.
    let p = plan(&opts)?;
    // held until the harness exits: one harness at a time
    let (_state, back) = sys::open_state(Path::new(sys::STATE_DIR))?;
    for (knob, v) in back {
        log::warn!(
            "put {} back to {v}: a scx_floor-ab killed before its cleanup left it changed",
            knob.display()
        );
    }
    sys::become_controller(p.ctl)?;
    ctrlc::set_handler(|| {
        eprintln!("scx_floor-ab: interrupted: stopping workloads and scx_floor, restoring knobs");
        for e in sys::stop_on_signal() {
            eprintln!("scx_floor-ab: {e}");
        }
        std::process::exit(130);
    })
    .context("installing the SIGINT/SIGTERM handler")?;
    let env = environment(&p);
    progress(&format!(
        "scx_floor-ab: kernel {}, {} CPUs, measuring CPU {}, controller on CPU {} (SCHED_FIFO 99){}",
        sys::kernel_release(),
        p.ctx.cpus.len(),
        p.ctx.cpu,
        p.ctl,
        if opts.quick { ", quick" } else { "" }
    ));
    let mut o = execute(&p, t_start);
    for e in sys::cleanup() {
        log::warn!("{e}");
    }
    annotate(&mut o.rows, &o.floor_runs, p.ctx.cpu);
    let wall = t_start.elapsed().as_secs_f64();
    write(&opts, &p, env, &o, wall)?;
    progress(&format!(
        "scx_floor-ab: done in {wall:.0} s; wrote {}/ab.json, table.md, s1_bandwidth.png, s2_runlen.png",
        opts.out.display()
    ));
    Ok(0)
}

/// A row's place in the table: by scenario, then configuration.
fn table_order(r: &Row) -> (Option<usize>, Option<usize>) {
    (
        Scenario::ALL.iter().position(|s| s.name() == r.scenario),
        Config::ALL.iter().position(|c| c.name() == r.config),
    )
}

/// S1: normal-task ms/s over the last 1 s, every 100 ms, per configuration.
/// S2: the share of runs per 0.1 ms run-length bin, per configuration.
fn plots(out: &Path, rows: &[Row]) -> Result<()> {
    let mut s1 = Vec::new();
    let mut s2 = Vec::new();
    for r in rows {
        // a row folded from rounds: the first round's samples
        let raw = r.raw.as_array().and_then(|a| a.first()).unwrap_or(&r.raw);
        if r.scenario == "s1" {
            if let Some(v) = raw["samples_t_s_normal_ms_rt_ms"].as_array() {
                let pts: Vec<(f64, f64)> = v
                    .iter()
                    .filter_map(|x| Some((x[0].as_f64()?, x[1].as_f64()?)))
                    .collect();
                s1.push(plot::Series {
                    label: r.config.clone(),
                    points: sliding_rate(&pts, 1.0),
                });
            }
        }
        if r.scenario == "s2" {
            if let Some(h) = raw["run_hist"].as_array() {
                let h: Vec<f64> = h.iter().filter_map(|x| x.as_f64()).collect();
                let total: f64 = h.iter().sum();
                if total > 0.0 {
                    s2.push(plot::Series {
                        label: r.config.clone(),
                        points: h
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (i as f64 * 0.1 + 0.05, c / total * 100.0))
                            .collect(),
                    });
                }
            }
        }
    }
    if !s1.is_empty() {
        plot::lines(
            &out.join("s1_bandwidth.png"),
            "S1: normal task's CPU time under an RR hog (last 1 s)",
            "time since the RT hog started (s)",
            "normal task (ms/s)",
            &s1,
        )?;
    }
    if !s2.is_empty() {
        plot::lines(
            &out.join("s2_runlen.png"),
            "S2: run lengths of two CPU-bound normal tasks on one CPU",
            "run length (ms, 0.1 ms bins; last bin: 9.9 ms and more)",
            "share of runs (%)",
            &s2,
        )?;
    }
    Ok(())
}

/// From cumulative (t s, ms) samples, the rate over the trailing `win` s
/// (ms/s) at each sample at least `win` after the first.
fn sliding_rate(pts: &[(f64, f64)], win: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut j = 0;
    for i in 0..pts.len() {
        let (t, v) = pts[i];
        if t - pts[0].0 < win - 1e-9 {
            continue;
        }
        while j + 1 < i && pts[j + 1].0 <= t - win + 1e-9 {
            j += 1;
        }
        let (t0, v0) = pts[j];
        if t > t0 {
            out.push((t, (v - v0) / (t - t0)));
        }
    }
    out
}

fn main() {
    let opts = Opts::parse();
    if let Some(Cmd::Helper { what }) = opts.helper {
        match what {
            Helper::Hog { secs, ready } => {
                if ready {
                    use std::io::Write;
                    let mut o = std::io::stdout().lock();
                    let _ = writeln!(o, "ready").and_then(|_| o.flush());
                }
                probe::hog(secs)
            }
            Helper::Probe {
                secs,
                threshold_us,
                cap,
            } => {
                // A probe that page-faults measures the file system, not the
                // scheduler: over a 9p root its pages come back in a
                // TASK_KILLABLE wait (docs/design.md, Decisions: "The clock
                // probe locks its memory").
                if let Err(e) = sys::lock_memory() {
                    eprintln!("probe: mlockall: {e} (gaps may include page faults)");
                }
                let t = probe::probe(secs, threshold_us * 1000, cap);
                if serde_json::to_writer(std::io::stdout().lock(), &t).is_err() {
                    std::process::exit(1);
                }
            }
        }
        return;
    }
    let _ = simplelog::TermLogger::init(
        simplelog::LevelFilter::Info,
        simplelog::Config::default(),
        simplelog::TerminalMode::Stderr,
        simplelog::ColorChoice::Never,
    );
    let r = run(opts);
    if sys::stopping() {
        // the signal handler is cleaning up and exits with 130
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            for e in sys::cleanup() {
                eprintln!("scx_floor-ab: {e}");
            }
            eprintln!("scx_floor-ab: error: {e:#}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Opts, clap::Error> {
        Opts::try_parse_from(std::iter::once("scx_floor-ab").chain(args.iter().copied()))
    }

    #[test]
    fn scenario_and_config_lists() {
        let o = parse(&[
            "--scenarios",
            "s1,throughput",
            "--configs",
            "stock,scx-floor",
        ])
        .unwrap();
        assert_eq!(o.scenarios, vec![Scenario::S1, Scenario::Throughput]);
        assert_eq!(o.configs, vec![Config::Stock, Config::ScxFloor]);
        let o = parse(&[]).unwrap();
        assert!(o.scenarios.is_empty() && o.configs.is_empty() && !o.quick);
        assert_eq!(o.out, PathBuf::from("results/ab"));
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = parse(&["--scenarios", "s1,s7"]).unwrap_err().to_string();
        assert!(
            e.contains("s7") && e.contains("throughput") && e.contains("latency"),
            "{e}"
        );
        let e = parse(&["--configs", "cfs"]).unwrap_err().to_string();
        assert!(
            e.contains("cfs") && e.contains("stock-noserver") && e.contains("scx-floor"),
            "{e}"
        );
    }

    #[test]
    fn rounds_default_to_three_of_throughput_and_latency() {
        let o = parse(&[]).unwrap();
        assert_eq!(rounds_of(&o, Scenario::Throughput), DEFAULT_ROUNDS);
        assert_eq!(rounds_of(&o, Scenario::Latency), DEFAULT_ROUNDS);
        assert_eq!(rounds_of(&o, Scenario::LatencyRt), DEFAULT_ROUNDS);
        assert_eq!(rounds_of(&o, Scenario::S1), 1);
        let q = parse(&["--quick"]).unwrap();
        assert_eq!(rounds_of(&q, Scenario::Throughput), 1);
        let r = parse(&["--quick", "--repeat", "2"]).unwrap();
        assert_eq!(rounds_of(&r, Scenario::S0), 2);
        for bad in ["0", "21", "x"] {
            assert!(
                parse(&["--repeat", bad]).is_err(),
                "--repeat {bad} accepted"
            );
        }
    }

    #[test]
    fn rounds_interleave_the_configurations() {
        let configs = [Config::Stock, Config::ScxFloor];
        let scenarios = [Scenario::S1, Scenario::Throughput, Scenario::Latency];
        let rounds = |s| if s == Scenario::S1 { 1 } else { 2 };
        let o: Vec<String> = run_order(&configs, &scenarios, rounds)
            .iter()
            .map(|(c, s, k)| format!("{}/{}/{k}", c.name(), s.name()))
            .collect();
        assert_eq!(
            o,
            [
                // one round: a block per configuration
                "scx-floor/s1/0",
                "stock/s1/0",
                // several: A B A B
                "scx-floor/throughput/0",
                "scx-floor/latency/0",
                "stock/throughput/0",
                "stock/latency/0",
                "scx-floor/throughput/1",
                "scx-floor/latency/1",
                "stock/throughput/1",
                "stock/latency/1",
            ]
        );
        // every scenario once: the order as before rounds existed
        let one = run_order(&configs, &scenarios, |_| 1);
        assert!(one.iter().all(|&(_, _, k)| k == 0) && one.len() == 6);
        assert_eq!(one[0], (Config::ScxFloor, Scenario::S1, 0));
    }

    #[test]
    fn seed001_by_name() {
        let o = parse(&["--scenarios", "seed001,s1"]).unwrap();
        assert_eq!(o.scenarios, vec![Scenario::Seed001, Scenario::S1]);
        let o = parse(&["--scenarios", "latency,latency-rt"]).unwrap();
        assert_eq!(o.scenarios, vec![Scenario::Latency, Scenario::LatencyRt]);
    }

    #[test]
    fn sliding_rate_of_a_burst() {
        // 50 ms delivered in one burst between 0.5 and 0.6 s, sampled every 0.1 s
        let pts: Vec<(f64, f64)> = (0..=20)
            .map(|i| {
                let t = i as f64 / 10.0;
                (t, if t >= 0.6 - 1e-9 { 50.0 } else { 0.0 })
            })
            .collect();
        let r = sliding_rate(&pts, 1.0);
        assert!((r[0].0 - 1.0).abs() < 1e-9);
        assert!((r[0].1 - 50.0).abs() < 1e-9, "{r:?}");
        // at t = 1.6 s the window (0.6, 1.6] no longer holds the burst
        let last = r.iter().find(|(t, _)| (*t - 1.6).abs() < 1e-9).unwrap();
        assert!(last.1.abs() < 1e-9, "{r:?}");
    }
}
