// SPDX-License-Identifier: GPL-2.0-only
//! Per-CPU accounting read from the BPF side, differences between two reads,
//! and the `--stats` report.

use crate::hist::Hist;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// One CPU's counters at one instant (`struct floor_cpu_stat`, bpf/intf.h).
/// Times in ns; every counter only grows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuCounters {
    /// ns run by normal tasks, boosted runs included
    pub normal_runtime_ns: u64,
    /// ns of `normal_runtime_ns` run while boosted by the policy loop
    pub boosted_runtime_ns: u64,
    /// ns a higher class ran while normal tasks waited (closed intervals)
    pub starved_ns: u64,
    /// start (CLOCK_MONOTONIC ns) of the open starvation interval, 0 if none
    pub starved_since_ns: u64,
    /// times a higher class took the CPU while normal tasks waited
    pub nr_hi_preempt: u64,
    /// queued tasks moved away when a higher class took the CPU
    pub nr_hi_migrated: u64,
    /// runs of normal tasks that ended
    pub nr_runs: u64,
    /// runs that ended at slice expiry
    pub nr_slice_expired: u64,
    /// sum of overshoots past the slice, ns
    pub overshoot_sum_ns: u64,
    /// largest overshoot since load, ns
    pub overshoot_max_ns: u64,
    /// slice timer expiries that preempted a task
    pub nr_timer_kicks: u64,
    /// slice timer writes (`bpf_timer_start`); about one per slice while
    /// runs are shorter than it
    pub nr_timer_arms: u64,
    /// runs the scheduler tick ended when due (their slice timer was left
    /// to that tick)
    pub nr_tick_ends: u64,
    /// 1 while a higher class owns the CPU
    pub hi_running: u64,
    /// the slice timer's learned latency, ns
    pub timer_lat_ns: u64,
    /// runnable normal tasks at the last run start (the slice policy's
    /// load; 0: not sampled, fixed-slice mode)
    pub nr_runnable: u64,
    /// slice of the last run started, ns
    pub last_slice_ns: u64,
    /// wake-ups that preempted the running task (vtime rule)
    pub nr_wakeup_preempt: u64,
    /// runs the slice timer ended (with the two delays below measured)
    pub nr_timer_ended: u64,
    /// sum of delays from the armed expiry to the timer callback, ns
    pub timer_fire_delay_sum_ns: u64,
    /// sum of delays from the timer callback to the switch-out, ns
    pub timer_switch_delay_sum_ns: u64,
    /// queued tasks the starvation guard dispatched out of vtime order
    /// (they had waited `FLOOR_STARVE_MS`, bpf/intf.h)
    pub nr_starve_rescue: u64,
    /// tasks preempted inside an RCU read-side section that queued at the
    /// front (`rcu_boost`, bpf/main.bpf.c)
    pub nr_rcu_boost: u64,
    /// histogram of run lengths, ns
    pub runlen: Hist,
    /// histogram of overshoots past the slice, ns
    pub overshoot: Hist,
}

impl CpuCounters {
    /// `starved_ns` including the open interval, as of `now_ns`
    /// (CLOCK_MONOTONIC).
    pub fn starved_ns_at(&self, now_ns: u64) -> u64 {
        starved_ns_at(self.starved_ns, self.starved_since_ns, now_ns)
    }
}

/// A CPU's starved time as of `now_ns`, ns: `closed_ns` (its closed
/// starvation intervals) plus the open one since `since_ns` (0: none open).
/// All CLOCK_MONOTONIC.
pub fn starved_ns_at(closed_ns: u64, since_ns: u64, now_ns: u64) -> u64 {
    let open = if since_ns != 0 {
        now_ns.saturating_sub(since_ns)
    } else {
        0
    };
    closed_ns + open
}

/// What one CPU did between two reads `dt_ns` apart.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CpuInterval {
    /// CPU number
    pub cpu: usize,
    /// length of the interval, ns
    pub dt_ns: u64,
    /// normal-task run time delivered, ms per s of wall time
    pub normal_ms_per_s: f64,
    /// of which boosted, ms/s
    pub boosted_ms_per_s: f64,
    /// time taken by a higher class while normal tasks waited, ms/s
    pub starved_ms_per_s: f64,
    /// higher-class preemptions of waiting normal work
    pub hi_preempts: u64,
    /// tasks moved off the CPU because a higher class took it
    pub hi_migrated: u64,
    /// runs that ended
    pub runs: u64,
    /// runs that ended at slice expiry
    pub slice_expired: u64,
    /// mean run length, us (None without runs)
    pub mean_run_us: Option<f64>,
    /// p99 run length (bucket upper bound), us
    pub p99_run_us: Option<f64>,
    /// mean overshoot past the slice, us
    pub mean_overshoot_us: Option<f64>,
    /// p99 overshoot (bucket upper bound), us
    pub p99_overshoot_us: Option<f64>,
    /// largest overshoot since load, us
    pub max_overshoot_us: f64,
    /// the slice timer's learned latency now, us
    pub timer_lat_us: f64,
    /// slice of the last run started, us
    pub slice_us: f64,
    /// runnable normal tasks at the last run start (0: not sampled)
    pub nr_runnable: u64,
    /// wake-ups that preempted the running task
    pub wakeup_preempts: u64,
    /// queued tasks dispatched by the starvation guard
    pub starve_rescues: u64,
    /// preempted RCU readers queued at the front
    pub rcu_boosts: u64,
}

fn per_s(d_ns: u64, dt_ns: u64) -> f64 {
    if dt_ns == 0 {
        0.0
    } else {
        // ns per ns == ms per ms; scale to ms per s
        d_ns as f64 / dt_ns as f64 * 1000.0
    }
}

/// Differences between two reads of one CPU's counters taken at `t0_ns` and
/// `t1_ns` (CLOCK_MONOTONIC).
pub fn interval(
    cpu: usize,
    a: &CpuCounters,
    t0_ns: u64,
    b: &CpuCounters,
    t1_ns: u64,
) -> CpuInterval {
    let dt = t1_ns.saturating_sub(t0_ns);
    let runs = b.nr_runs.saturating_sub(a.nr_runs);
    let expired = b.nr_slice_expired.saturating_sub(a.nr_slice_expired);
    let runlen = b.runlen.delta(&a.runlen);
    let over = b.overshoot.delta(&a.overshoot);
    let d_normal = b.normal_runtime_ns.saturating_sub(a.normal_runtime_ns);
    CpuInterval {
        cpu,
        dt_ns: dt,
        normal_ms_per_s: per_s(d_normal, dt),
        boosted_ms_per_s: per_s(
            b.boosted_runtime_ns.saturating_sub(a.boosted_runtime_ns),
            dt,
        ),
        starved_ms_per_s: per_s(
            b.starved_ns_at(t1_ns)
                .saturating_sub(a.starved_ns_at(t0_ns)),
            dt,
        ),
        hi_preempts: b.nr_hi_preempt.saturating_sub(a.nr_hi_preempt),
        hi_migrated: b.nr_hi_migrated.saturating_sub(a.nr_hi_migrated),
        runs,
        slice_expired: expired,
        mean_run_us: (runs > 0).then(|| {
            d_normal.saturating_sub(b.boosted_runtime_ns.saturating_sub(a.boosted_runtime_ns))
                as f64
                / runs as f64
                / 1000.0
        }),
        p99_run_us: runlen.quantile_upper_ns(0.99).map(|v| v as f64 / 1000.0),
        mean_overshoot_us: (expired > 0).then(|| {
            b.overshoot_sum_ns.saturating_sub(a.overshoot_sum_ns) as f64 / expired as f64 / 1000.0
        }),
        p99_overshoot_us: over.quantile_upper_ns(0.99).map(|v| v as f64 / 1000.0),
        max_overshoot_us: b.overshoot_max_ns as f64 / 1000.0,
        timer_lat_us: b.timer_lat_ns as f64 / 1000.0,
        slice_us: b.last_slice_ns as f64 / 1000.0,
        nr_runnable: b.nr_runnable,
        wakeup_preempts: b.nr_wakeup_preempt.saturating_sub(a.nr_wakeup_preempt),
        starve_rescues: b.nr_starve_rescue.saturating_sub(a.nr_starve_rescue),
        rcu_boosts: b.nr_rcu_boost.saturating_sub(a.nr_rcu_boost),
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

/// The `--stats` table: one line per CPU, with a header.
pub fn format_table(rows: &[CpuInterval]) -> String {
    let mut s = String::from(
        "cpu normal_ms/s boost_ms/s starved_ms/s hi_preempt migrated   runs expired \
         run_mean_us run_p99_us over_mean_us over_p99_us over_max_us timer_lat_us slice_us nr wake_preempt rescued rcu_boost\n",
    );
    for r in rows {
        s += &format!(
            "{:>3} {:>12.1} {:>10.1} {:>12.1} {:>10} {:>8} {:>6} {:>7} {:>11} {:>10} {:>12} {:>11} {:>11.1} {:>12.1} {:>8.0} {:>2} {:>12} {:>7} {:>9}\n",
            r.cpu,
            r.normal_ms_per_s,
            r.boosted_ms_per_s,
            r.starved_ms_per_s,
            r.hi_preempts,
            r.hi_migrated,
            r.runs,
            r.slice_expired,
            opt(r.mean_run_us),
            opt(r.p99_run_us),
            opt(r.mean_overshoot_us),
            opt(r.p99_overshoot_us),
            r.max_overshoot_us,
            r.timer_lat_us,
            r.slice_us,
            if r.nr_runnable == 0 {
                "-".to_string()
            } else {
                r.nr_runnable.to_string()
            },
            r.wakeup_preempts,
            r.starve_rescues,
            r.rcu_boosts
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(normal: u64, runs: u64) -> CpuCounters {
        CpuCounters {
            normal_runtime_ns: normal,
            nr_runs: runs,
            ..Default::default()
        }
    }

    #[test]
    fn the_stats_document_reads_back_as_written() {
        let mut c = counters(50_000_000, 7);
        c.runlen.record(500_000);
        c.runlen.record(600_000);
        let row = ServerRow {
            cpu: 1,
            by: Cow::Borrowed("fifo"),
            delivered_ms: 50.1,
            ..Default::default()
        };
        let mode = crate::slice::SliceMode::Latency {
            latency_ns: 1_000_000,
            min_ns: 400_000,
        };
        let doc = StatsDoc::new(42, &mode, vec![(1, c.clone())], vec![row.clone()]);
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let back: StatsDoc = serde_json::from_str(&text).unwrap();
        assert_eq!(back.schema_version, SCHEMA_VERSION);
        assert_eq!(back.scx_floor, crate::VERSION);
        assert!(back.unix_time > 1.7e9, "{}", back.unix_time);
        assert_eq!(back.slice_mode, "latency");
        assert_eq!((back.slice_ns, back.min_slice_ns), (1_000_000, 400_000));
        assert_eq!(back.cpus.len(), 1);
        assert_eq!(back.cpus[0].counters, c);
        assert_eq!(back.cpus[0].runlen, HistSummary::of(&c.runlen));
        assert_eq!(back.server, vec![row]);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&doc).unwrap()
        );
        // a document of another version, with fields missing or unknown
        let other: StatsDoc =
            serde_json::from_str(r#"{"cpus": [{"cpu": 1, "runlen": {"count": 3}}], "new": 1}"#)
                .unwrap();
        assert_eq!((other.cpus[0].cpu, other.cpus[0].runlen.count), (1, 3));
        assert_eq!(other.cpus[0].runlen.p99_ns, None);
        // schema 1 named the version field `version`
        let v1: StatsDoc = serde_json::from_str(r#"{"version": 1}"#).unwrap();
        assert_eq!(v1.schema_version, 1);
    }

    #[test]
    fn rates_over_an_interval() {
        let a = counters(1_000_000_000, 10);
        let mut b = counters(1_050_000_000, 110);
        b.runlen.record(500_000);
        b.nr_slice_expired = 100;
        b.overshoot_sum_ns = 100 * 20_000;
        let r = interval(1, &a, 0, &b, 1_000_000_000);
        assert!((r.normal_ms_per_s - 50.0).abs() < 1e-9);
        assert_eq!(r.runs, 100);
        assert!((r.mean_run_us.unwrap() - 500.0).abs() < 1e-9);
        assert!((r.mean_overshoot_us.unwrap() - 20.0).abs() < 1e-9);
        assert!(r.p99_run_us.unwrap() >= 500.0);
    }

    #[test]
    fn open_starvation_interval_counts_up_to_now() {
        let a = CpuCounters {
            starved_ns: 0,
            starved_since_ns: 0,
            ..Default::default()
        };
        let b = CpuCounters {
            starved_ns: 100_000_000,
            starved_since_ns: 1_500_000_000,
            ..Default::default()
        };
        let r = interval(0, &a, 1_000_000_000, &b, 2_000_000_000);
        // 100 ms closed + 500 ms still open, over 1 s
        assert!(
            (r.starved_ms_per_s - 600.0).abs() < 1e-6,
            "{}",
            r.starved_ms_per_s
        );
    }

    #[test]
    fn no_runs_no_means_and_zero_interval_is_safe() {
        let a = CpuCounters::default();
        let r = interval(0, &a, 5, &a, 5);
        assert_eq!(r.normal_ms_per_s, 0.0);
        assert!(r.mean_run_us.is_none() && r.p99_run_us.is_none());
        let t = format_table(&[r]);
        assert_eq!(t.lines().count(), 2);
        assert!(t.lines().nth(1).unwrap().contains(" - "));
    }
}

/// Summary of a histogram for the JSON output: count and quantiles (bucket
/// upper bounds, ns: at most 25% above the true value).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistSummary {
    /// values recorded
    pub count: u64,
    /// median, ns
    pub p50_ns: Option<u64>,
    /// 90th percentile, ns
    pub p90_ns: Option<u64>,
    /// 99th percentile, ns
    pub p99_ns: Option<u64>,
    /// 99.9th percentile, ns
    pub p999_ns: Option<u64>,
    /// the highest non-empty bucket's upper bound, ns
    pub max_ns: Option<u64>,
}

impl HistSummary {
    /// Summarises `h`.
    pub fn of(h: &Hist) -> Self {
        HistSummary {
            count: h.total(),
            p50_ns: h.quantile_upper_ns(0.5),
            p90_ns: h.quantile_upper_ns(0.9),
            p99_ns: h.quantile_upper_ns(0.99),
            p999_ns: h.quantile_upper_ns(0.999),
            max_ns: h.quantile_upper_ns(1.0),
        }
    }
}

/// One CPU in `--stats-json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuDoc {
    /// CPU number
    pub cpu: usize,
    /// counters since load; `runlen.counts` / `overshoot.counts` are the
    /// histograms, bucket `i` holding values from `hist_bucket_lo_ns[i]`
    pub counters: CpuCounters,
    /// run lengths of normal tasks since load
    pub runlen: HistSummary,
    /// overshoots past the slice since load
    pub overshoot: HistSummary,
}

/// The version of the `--stats-json` schema: 2 added `scx_floor` and
/// `unix_time` and renamed `version` to `schema_version`; 3 added
/// `rt_allocations`.
pub const SCHEMA_VERSION: u32 = 3;

/// The `--stats-json` document (`serde_json`, pretty-printed), schema
/// [`SCHEMA_VERSION`]; all times in ns unless the name says otherwise.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StatsDoc {
    /// the schema's version ([`SCHEMA_VERSION`]; documents of schema 1
    /// named it `version`)
    #[serde(alias = "version")]
    pub schema_version: u32,
    /// the scx_floor that wrote it: [`crate::VERSION`] (version, commit,
    /// target)
    pub scx_floor: Cow<'static, str>,
    /// wall-clock time of the snapshot, Unix seconds
    pub unix_time: f64,
    /// CLOCK_MONOTONIC of the snapshot, ns
    pub time_ns: u64,
    /// "fixed" or "latency"
    pub slice_mode: Cow<'static, str>,
    /// fixed slice, or the latency target, ns
    pub slice_ns: u64,
    /// minimum slice in latency mode, ns (0 in fixed mode)
    pub min_slice_ns: u64,
    /// lower bound (ns) of each histogram bucket
    pub hist_bucket_lo_ns: Vec<u64>,
    /// every online CPU
    pub cpus: Vec<CpuDoc>,
    /// the bandwidth server, one row per served CPU (empty without server)
    pub server: Vec<ServerRow>,
    /// allocator calls (allocations, reallocations, frees) that scx_floor's
    /// real-time threads made while serving, since start; designed to stay
    /// 0 (docs/design.md, "One malloc arena"). None in documents before
    /// schema 3.
    pub rt_allocations: Option<u64>,
}

impl StatsDoc {
    /// Builds the document from one snapshot taken at `time_ns`.
    pub fn new(
        time_ns: u64,
        mode: &crate::slice::SliceMode,
        cpus: Vec<(usize, CpuCounters)>,
        server: Vec<ServerRow>,
    ) -> Self {
        use crate::slice::SliceMode;
        let (slice_mode, slice_ns, min_slice_ns) = match *mode {
            SliceMode::Fixed(s) => ("fixed", s, 0),
            SliceMode::Latency { latency_ns, min_ns } => ("latency", latency_ns, min_ns),
        };
        StatsDoc {
            schema_version: SCHEMA_VERSION,
            scx_floor: Cow::Borrowed(crate::VERSION),
            unix_time: crate::sys::unix_time_s(),
            time_ns,
            slice_mode: Cow::Borrowed(slice_mode),
            slice_ns,
            min_slice_ns,
            hist_bucket_lo_ns: (0..crate::hist::BUCKETS)
                .map(|b| crate::hist::bucket_bounds(b).0)
                .collect(),
            cpus: cpus
                .into_iter()
                .map(|(cpu, c)| CpuDoc {
                    cpu,
                    runlen: HistSummary::of(&c.runlen),
                    overshoot: HistSummary::of(&c.overshoot),
                    counters: c,
                })
                .collect(),
            server,
            rt_allocations: None,
        }
    }
}

/// What one CPU's bandwidth server did (the `--stats` server table).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerRow {
    /// CPU number
    pub cpu: usize,
    /// server periods completed
    pub periods: u64,
    /// normal-task run time delivered in the last complete period, ms
    pub delivered_ms: f64,
    /// of which boosted, ms
    pub boosted_ms: f64,
    /// boosts at SCHED_DEADLINE since start
    pub boosts_deadline: u64,
    /// boosts at SCHED_FIFO since start
    pub boosts_fifo: u64,
    /// boosts the kernel refused
    pub boosts_failed: u64,
    /// SCHED_FIFO boosts made from the planner's CPU because every executor
    /// was leased to another CPU (they end at the planner's wake-up)
    pub boosts_remote: u64,
    /// boosts that ended because the task blocked (rest handed over)
    pub handed_over: u64,
    /// p99 of overruns past the budget, us: the upper bound of its log2
    /// bucket, never above the largest overrun (a bucket's bound alone may
    /// lie above it; docs/design.md, Decisions: "Overrun p99 capped at the
    /// largest overrun")
    pub overrun_p99_us: Option<f64>,
    /// largest overrun, us
    pub overrun_max_us: f64,
    /// boosts whose overrun was measured as > 0
    pub overrun_count: u64,
    /// server thread steps since start
    pub steps: u64,
    /// their mean and longest duration, us (time the server takes from the CPU)
    pub step_mean_us: f64,
    /// longest step, us
    pub step_max_us: f64,
    /// overrun not yet paid back by later periods, us (see `CpuServer::owed_ns`)
    pub debt_us: f64,
    /// what serves the CPU now: "fifo" (SCHED_FIFO boosts), "dl"
    /// (SCHED_DEADLINE boosts), "ext" (the kernel's ext_server, handed the
    /// budget while a task no boost can preempt holds the CPU), "none"
    /// (nothing can preempt it: not served)
    pub by: Cow<'static, str>,
    /// runnable normal tasks found on the CPU through /proc that the BPF
    /// waiters map lacked (see `runnable_on()` in planner.rs)
    pub lost_found: u64,
    /// tasks served in the last complete period that wanted more than they
    /// got (none of their boosts ended because they blocked)
    pub tasks: u32,
    /// the least run time one of those got from its boosts in that period,
    /// ms (the floor's split: by weight, see `water_fill()` in server.rs)
    pub min_share_ms: f64,
    /// steps that left starving tasks for a later period because all the
    /// CPU's boost slots were taken (`ServerStats::slots_full`)
    pub slots_full: u64,
    /// waiters of the CPU the full BPF waiters map refused
    /// (`nr_waiters_dropped`)
    pub waiters_dropped: u64,
    /// the most boosted run time in one period since start, ms: the
    /// runtime plus how far its boosts ran past their ends
    pub period_boosted_max_ms: f64,
}

/// The server table of `--stats`: one line per served CPU.
pub fn format_server_table(rows: &[ServerRow]) -> String {
    let mut s = String::from(
        "server: cpu periods delivered_ms boosted_ms boosts_dl boosts_fifo failed handed_over \
         overrun_p99_us overrun_max_us overruns steps step_mean_us step_max_us debt_us by lost_found tasks min_share_ms slots_full waiters_dropped period_boosted_max_ms boosts_remote\n",
    );
    for r in rows {
        s += &format!(
            "        {:>3} {:>7} {:>12.1} {:>10.1} {:>9} {:>11} {:>6} {:>11} {:>14} {:>14.1} {:>8} {:>5} {:>12.1} {:>11.1} {:>7.1} {:>4} {:>10} {:>5} {:>12.2} {:>10} {:>15} {:>21.3} {:>13}\n",
            r.cpu,
            r.periods,
            r.delivered_ms,
            r.boosted_ms,
            r.boosts_deadline,
            r.boosts_fifo,
            r.boosts_failed,
            r.handed_over,
            opt(r.overrun_p99_us),
            r.overrun_max_us,
            r.overrun_count,
            r.steps,
            r.step_mean_us,
            r.step_max_us,
            r.debt_us,
            r.by,
            r.lost_found,
            r.tasks,
            r.min_share_ms,
            r.slots_full,
            r.waiters_dropped,
            r.period_boosted_max_ms,
            r.boosts_remote
        );
    }
    s
}
