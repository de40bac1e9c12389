// SPDX-License-Identifier: GPL-2.0-only
//! The stats server, in the convention of sched_ext schedulers (`scx_stats`
//! on `/var/run/scx/root/stats`), and its two clients: `--monitor SECS`,
//! which prints a running scx_floor's per-CPU rates and server rows from
//! another shell, and `--help-stats`, which describes every field.
//!
//! The server answers from its own thread; the figures come from the main
//! thread of the policy loop, which serves one request per tick (10-20 ms)
//! through a channel ([`serve_pending`]): the BPF view and the planners'
//! rows live there. The socket is root's, mode 0600: only root connects.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use crossbeam::channel::{Receiver, Sender};
use log::{info, warn};
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use scx_floor::stats::{CpuCounters, ServerRow};

/// Where sched_ext schedulers serve their stats (`scx_stats`' default).
pub const STATS_SOCKET: &str = "/var/run/scx/root/stats";

/// How long a request waits for the policy loop's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

/// One CPU's counters since scx_floor loaded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one CPU's counters since load (cumulative)")]
pub struct CpuMetrics {
    #[stat(desc = "run time of normal (sched_ext) tasks, boosted runs included, ns")]
    pub normal_runtime_ns: u64,
    #[stat(desc = "of that, run time while boosted by the bandwidth server, ns")]
    pub boosted_runtime_ns: u64,
    #[stat(desc = "time a higher class (RT, DEADLINE) ran while normal tasks waited, ns")]
    pub starved_ns: u64,
    #[stat(desc = "times a higher class took the CPU while normal tasks waited (count)")]
    pub nr_hi_preempt: u64,
    #[stat(desc = "runs of normal tasks that ended (count)")]
    pub nr_runs: u64,
    #[stat(desc = "runs that ended at their slice's expiry (count)")]
    pub nr_slice_expired: u64,
    #[stat(desc = "sum of overshoots past the slice, ns")]
    pub overshoot_sum_ns: u64,
    #[stat(desc = "largest overshoot past the slice, ns")]
    pub overshoot_max_ns: u64,
    #[stat(desc = "slice timer callbacks that ended a run (count)")]
    pub nr_timer_kicks: u64,
    #[stat(desc = "slice timer writes, about one per slice while runs are shorter (count)")]
    pub nr_timer_arms: u64,
    #[stat(desc = "runs the scheduler tick ended when due, their timer left to it (count)")]
    pub nr_tick_ends: u64,
    #[stat(desc = "wake-ups that preempted the running task by the vtime rule (count)")]
    pub nr_wakeup_preempt: u64,
    #[stat(desc = "queued tasks the starvation guard dispatched out of vtime order (count)")]
    pub nr_starve_rescue: u64,
    #[stat(desc = "preempted RCU readers queued at the front (count)")]
    pub nr_rcu_boost: u64,
    #[stat(desc = "runnable normal tasks at the last run's start (count)")]
    pub nr_runnable: u64,
}

impl CpuMetrics {
    /// From the counters read at `now_ns` (an open starvation counted up
    /// to then).
    fn of(c: &CpuCounters, now_ns: u64) -> Self {
        CpuMetrics {
            normal_runtime_ns: c.normal_runtime_ns,
            boosted_runtime_ns: c.boosted_runtime_ns,
            starved_ns: c.starved_ns_at(now_ns),
            nr_hi_preempt: c.nr_hi_preempt,
            nr_runs: c.nr_runs,
            nr_slice_expired: c.nr_slice_expired,
            overshoot_sum_ns: c.overshoot_sum_ns,
            overshoot_max_ns: c.overshoot_max_ns,
            nr_timer_kicks: c.nr_timer_kicks,
            nr_timer_arms: c.nr_timer_arms,
            nr_tick_ends: c.nr_tick_ends,
            nr_wakeup_preempt: c.nr_wakeup_preempt,
            nr_starve_rescue: c.nr_starve_rescue,
            nr_rcu_boost: c.nr_rcu_boost,
            nr_runnable: c.nr_runnable,
        }
    }
}

/// One served CPU's bandwidth server (the `--stats` server row).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one served CPU's bandwidth server")]
pub struct ServerMetrics {
    #[stat(
        desc = "what serves the CPU: fifo, dl (SCHED_DEADLINE boosts), ext (the kernel's ext_server), none"
    )]
    pub by: String,
    #[stat(desc = "server periods completed (count)")]
    pub periods: u64,
    #[stat(desc = "normal run time delivered in the last complete period, ms")]
    pub delivered_ms: f64,
    #[stat(desc = "of that, boosted, ms")]
    pub boosted_ms: f64,
    #[stat(desc = "boosts at SCHED_FIFO since start (count)")]
    pub boosts_fifo: u64,
    #[stat(desc = "boosts at SCHED_DEADLINE since start (count)")]
    pub boosts_dl: u64,
    #[stat(desc = "boosts the kernel refused (count)")]
    pub failed: u64,
    #[stat(
        desc = "SCHED_FIFO boosts made from the planner's CPU: every executor was leased (count)"
    )]
    pub boosts_remote: u64,
    #[stat(desc = "boosts that ended because the task blocked (count)")]
    pub handed_over: u64,
    #[stat(desc = "largest overrun of a boost past its share, us")]
    pub overrun_max_us: f64,
    #[stat(desc = "overrun not yet paid back by later periods, us")]
    pub debt_us: f64,
    #[stat(desc = "the most boosted run time in one period, ms")]
    pub period_boosted_max_ms: f64,
    #[stat(desc = "tasks served in the last period that wanted more (count)")]
    pub tasks: u64,
    #[stat(desc = "the least run time one of those got, ms")]
    pub min_share_ms: f64,
    #[stat(desc = "steps that left starving tasks for later: all boost slots taken (count)")]
    pub slots_full: u64,
    #[stat(desc = "planner steps (count)")]
    pub steps: u64,
    #[stat(desc = "longest planner step, us")]
    pub step_max_us: f64,
}

impl From<&ServerRow> for ServerMetrics {
    fn from(r: &ServerRow) -> Self {
        ServerMetrics {
            by: r.by.to_string(),
            periods: r.periods,
            delivered_ms: r.delivered_ms,
            boosted_ms: r.boosted_ms,
            boosts_fifo: r.boosts_fifo,
            boosts_dl: r.boosts_deadline,
            failed: r.boosts_failed,
            boosts_remote: r.boosts_remote,
            handed_over: r.handed_over,
            overrun_max_us: r.overrun_max_us,
            debt_us: r.debt_us,
            period_boosted_max_ms: r.period_boosted_max_ms,
            tasks: r.tasks.into(),
            min_share_ms: r.min_share_ms,
            slots_full: r.slots_full,
            steps: r.steps,
            step_max_us: r.step_max_us,
        }
    }
}

/// What the stats server answers: every online CPU's counters and every
/// server's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top, desc = "scx_floor: per-CPU counters and bandwidth servers")]
pub struct Metrics {
    #[stat(desc = "the build that answers, as -V prints it")]
    pub scx_floor: String,
    #[stat(desc = "wall-clock time of the snapshot, Unix seconds")]
    pub unix_time: f64,
    #[stat(desc = "CLOCK_MONOTONIC time of the snapshot, ns")]
    pub time_ns: u64,
    #[stat(desc = "online CPUs by number")]
    pub cpus: BTreeMap<usize, CpuMetrics>,
    #[stat(desc = "bandwidth servers by served CPU")]
    pub servers: BTreeMap<usize, ServerMetrics>,
}

impl Metrics {
    /// From a snapshot taken at `time_ns` and the servers' rows.
    pub fn of(time_ns: u64, cpus: &[(usize, CpuCounters)], rows: &[ServerRow]) -> Self {
        Metrics {
            scx_floor: scx_floor::VERSION.to_string(),
            unix_time: scx_floor::sys::unix_time_s(),
            time_ns,
            cpus: cpus
                .iter()
                .map(|(c, k)| (*c, CpuMetrics::of(k, time_ns)))
                .collect(),
            servers: rows.iter().map(|r| (r.cpu, r.into())).collect(),
        }
    }
}

/// The policy loop's end of the server's channel: requests in, answers out.
pub struct Channel {
    requests: Receiver<()>,
    answers: Sender<Metrics>,
}

/// The running server; the socket is removed when it is dropped.
pub struct Server {
    _server: StatsServer<(), Metrics>,
    /// the policy loop's end of the channel
    pub channel: Channel,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(STATS_SOCKET);
    }
}

fn server_data() -> StatsServerData<(), Metrics> {
    StatsServerData::new()
        .add_meta(Metrics::meta())
        .add_meta(CpuMetrics::meta())
        .add_meta(ServerMetrics::meta())
}

/// Makes sure that only root can create, remove or rename entries in each
/// directory above [`STATS_SOCKET`] (`/var/run/scx`, `/var/run/scx/root`):
/// one that is missing is made, mode 0755 whatever the umask; one that
/// exists must be a real directory (not a symlink), owned by root, and not
/// writable by group or others. Otherwise another user could put a socket
/// of their own at the path, and `--monitor` would read from it. Errors:
/// names the directory and what is wrong with it; an existing directory is
/// never changed.
fn check_socket_dirs() -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = Path::new(STATS_SOCKET)
        .parent()
        .context("the stats socket has no directory")?;
    let mut dirs: Vec<&Path> = dir.ancestors().take(2).collect();
    dirs.reverse();
    for d in dirs {
        match std::fs::symlink_metadata(d) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .mode(0o755)
                    .create(d)
                    .with_context(|| format!("creating {}", d.display()))?;
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                    .with_context(|| format!("setting the mode of {}", d.display()))?;
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", d.display())),
            Ok(m) => {
                if !m.file_type().is_dir() {
                    anyhow::bail!("{} is not a directory (a symlink?)", d.display());
                }
                if m.uid() != 0 || m.mode() & 0o022 != 0 {
                    anyhow::bail!(
                        "{} is owned by uid {} with mode {:o}: only root may write there \
                         (chown root, chmod go-w)",
                        d.display(),
                        m.uid(),
                        m.mode() & 0o7777
                    );
                }
            }
        }
    }
    Ok(())
}

/// Starts the stats server on [`STATS_SOCKET`], mode 0600, in directories
/// only root can write ([`check_socket_dirs`]). The socket is made under
/// umask 077, so that no other user can connect between its creation and
/// its chmod (a connection, once made, outlives the chmod). Errors: the
/// directories are not safe, or the socket cannot be made (the caller
/// warns and goes on without it).
pub fn launch() -> Result<Server> {
    check_socket_dirs()?;
    let data = server_data().add_stats(
        "top",
        Box::new(|_args, (tx, rx)| {
            tx.send(()).context("the policy loop is gone")?;
            crate::sys::wake_main();
            let m = rx
                .recv_timeout(ANSWER_TIMEOUT)
                .context("the policy loop did not answer")?;
            m.to_json()
        }),
    );
    // The umask is the process's: a file another thread makes meanwhile
    // gets a narrower mode (the journals and the state directory exist
    // before the policy loop starts), never a wider one.
    // SAFETY: plain syscalls.
    let umask = unsafe { libc::umask(0o077) };
    let server = StatsServer::new(data)
        .set_path(STATS_SOCKET)
        .launch()
        .context("starting the stats server");
    // SAFETY: plain syscall.
    unsafe { libc::umask(umask) };
    let server = server?;
    std::fs::set_permissions(STATS_SOCKET, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {STATS_SOCKET} root's only"))?;
    let (answers, requests) = server.channels();
    info!("stats server on {STATS_SOCKET} (scx_floor --monitor SECS)");
    Ok(Server {
        _server: server,
        channel: Channel { requests, answers },
    })
}

/// Policy loop: answers every request waiting, each with `snapshot()`.
/// Never blocks.
pub fn serve_pending(ch: &Channel, snapshot: impl Fn() -> Metrics) {
    while ch.requests.try_recv().is_ok() {
        if ch.answers.send(snapshot()).is_err() {
            warn!("the stats server's channel is closed");
            return;
        }
    }
}

/// `--help-stats`: every field the server answers, with its unit.
pub fn help_stats() -> Result<()> {
    server_data().describe_meta(&mut std::io::stdout(), None)
}

/// Per-CPU rates between two answers `a` and `b`, one line per CPU of `b`:
/// normal, boosted and starved ms/s, higher-class preemptions, runs and
/// slice expiries per s, mean overshoot (us), RCU readers queued first.
pub fn cpu_lines(a: &Metrics, b: &Metrics) -> Vec<String> {
    let dt = b.time_ns.saturating_sub(a.time_ns);
    if dt == 0 {
        return Vec::new();
    }
    let per_s = |d: u64| d as f64 * 1e9 / dt as f64;
    let ms_per_s = |d: u64| d as f64 * 1e3 / dt as f64;
    b.cpus
        .iter()
        .filter_map(|(cpu, y)| {
            let x = a.cpus.get(cpu)?;
            let d = |f: fn(&CpuMetrics) -> u64| f(y).saturating_sub(f(x));
            let expired = d(|c| c.nr_slice_expired);
            let overshoot = if expired > 0 {
                format!(
                    "{:.1}",
                    d(|c| c.overshoot_sum_ns) as f64 / expired as f64 / 1e3
                )
            } else {
                "-".into()
            };
            Some(format!(
                "{cpu:>4} {:>12.1} {:>13.1} {:>13.1} {:>12.0} {:>8.0} {:>10.0} {:>17} {:>11}",
                ms_per_s(d(|c| c.normal_runtime_ns)),
                ms_per_s(d(|c| c.boosted_runtime_ns)),
                ms_per_s(d(|c| c.starved_ns)),
                per_s(d(|c| c.nr_hi_preempt)),
                per_s(d(|c| c.nr_runs)),
                per_s(expired),
                overshoot,
                d(|c| c.nr_rcu_boost),
            ))
        })
        .collect()
}

/// The header of [`cpu_lines`].
pub const CPU_HEADER: &str = " cpu normal_ms/s boosted_ms/s starved_ms/s hi_preempt/s   runs/s expired/s mean_overshoot_us rcu_boosts";

/// One line per server of `m`.
pub fn server_lines(m: &Metrics) -> Vec<String> {
    m.servers
        .iter()
        .map(|(cpu, s)| {
            format!(
                "{cpu:>4} {:>4} {:>7} {:>12.1} {:>10.1} {:>11} {:>9} {:>6} {:>14.1} {:>7.1} {:>21.3} {:>13}",
                s.by,
                s.periods,
                s.delivered_ms,
                s.boosted_ms,
                s.boosts_fifo,
                s.boosts_dl,
                s.failed,
                s.overrun_max_us,
                s.debt_us,
                s.period_boosted_max_ms,
                s.boosts_remote
            )
        })
        .collect()
}

/// The header of [`server_lines`].
pub const SERVER_HEADER: &str = " cpu   by periods delivered_ms boosted_ms boosts_fifo boosts_dl failed overrun_max_us debt_us period_boosted_max_ms boosts_remote";

/// `--monitor SECS`: prints a running scx_floor's stats every `secs`
/// seconds until SIGINT/SIGTERM: the rates over each interval and the
/// server rows. Errors: no permission on the socket (root only), or an
/// answer that is not scx_floor's.
pub fn monitor(secs: f64) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the SIGINT/SIGTERM handler")?;
    if !Path::new(STATS_SOCKET).exists() {
        info!("no stats server at {STATS_SOCKET} yet: waiting for scx_floor");
    }
    let mut last: Option<Metrics> = None;
    scx_utils::monitor_stats::<Metrics>(
        &[],
        Duration::from_secs_f64(secs),
        || stop.load(Ordering::Relaxed),
        |m| {
            if let Some(a) = &last {
                println!(
                    "{} ({:.1} s)",
                    m.scx_floor,
                    (m.time_ns.saturating_sub(a.time_ns)) as f64 / 1e9
                );
                println!("{CPU_HEADER}");
                for l in cpu_lines(a, &m) {
                    println!("{l}");
                }
                if !m.servers.is_empty() {
                    println!("server:");
                    println!("{SERVER_HEADER}");
                    for l in server_lines(&m) {
                        println!("{l}");
                    }
                }
                println!();
            }
            last = Some(m);
            Ok(())
        },
    )
    .with_context(|| format!("reading the stats of scx_floor from {STATS_SOCKET} (root only)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(t_ms: u64, normal_ms: u64, runs: u64) -> Metrics {
        Metrics {
            time_ns: t_ms * 1_000_000,
            cpus: BTreeMap::from([(
                1,
                CpuMetrics {
                    normal_runtime_ns: normal_ms * 1_000_000,
                    nr_runs: runs,
                    nr_slice_expired: runs,
                    overshoot_sum_ns: runs * 20_000,
                    ..Default::default()
                },
            )]),
            ..Default::default()
        }
    }

    #[test]
    fn rates_over_the_interval_between_two_answers() {
        let a = metrics(1000, 100, 10);
        let b = metrics(3000, 200, 410);
        let l = cpu_lines(&a, &b);
        assert_eq!(l.len(), 1);
        let f: Vec<&str> = l[0].split_whitespace().collect();
        // cpu 1: 100 ms in 2 s = 50 ms/s; 400 runs in 2 s = 200/s;
        // mean overshoot 20 us
        assert_eq!(f[0], "1");
        assert_eq!(f[1], "50.0");
        assert_eq!(f[5], "200");
        assert_eq!(f[7], "20.0");
        assert_eq!(f.len(), CPU_HEADER.split_whitespace().count());
        // no time between them: nothing to print
        assert!(cpu_lines(&b, &b).is_empty());
    }

    #[test]
    fn every_field_is_described_with_a_unit_or_kind() {
        let mut out = Vec::new();
        server_data().describe_meta(&mut out, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        for f in [
            "normal_runtime_ns",
            "starved_ns",
            "period_boosted_max_ms",
            "unix_time",
            "by",
        ] {
            assert!(text.contains(f), "{f} missing from:\n{text}");
        }
        for m in [CpuMetrics::meta(), ServerMetrics::meta(), Metrics::meta()] {
            for field in &m.fields {
                let desc = field.1.attrs.desc.as_deref().unwrap_or("");
                assert!(!desc.is_empty(), "{} has no description", field.0);
            }
        }
    }

    #[test]
    fn a_server_row_maps_to_its_metrics() {
        let row = ServerRow {
            cpu: 1,
            by: "dl".into(),
            boosts_deadline: 3,
            period_boosted_max_ms: 0.5,
            ..Default::default()
        };
        let m = Metrics::of(5, &[], std::slice::from_ref(&row));
        assert_eq!(m.servers[&1].by, "dl");
        assert_eq!(m.servers[&1].boosts_dl, 3);
        assert_eq!(
            server_lines(&m)[0].split_whitespace().count(),
            SERVER_HEADER.split_whitespace().count()
        );
    }
}
