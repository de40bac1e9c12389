// SPDX-License-Identifier: GPL-2.0-only
//! Rows of the A/B table, ratios to stock, and the Markdown table. Pure.

use scx_floor::stats::StatsDoc;
use serde::Serialize;

/// One measurement: a scenario under a configuration.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// scenario name (s0, s1, s2, throughput, latency)
    pub scenario: String,
    /// configuration name (stock, stock-noserver, scx-ext, scx-floor, ...)
    pub config: String,
    /// what the key figure is, with its unit
    pub figure: String,
    /// the key figure (None if the run failed)
    pub value: Option<f64>,
    /// how the ratio to stock is taken: "value / stock" or "stock / value"
    pub ratio_kind: RatioKind,
    /// the ratio to the stock row of the same scenario
    pub ratio: Option<f64>,
    /// other figures, short, for the table
    pub details: String,
    /// the goal, if the scenario has one for this configuration: (met, text)
    pub goal: Option<(bool, String)>,
    /// what went wrong (the run failed, scx_floor was ejected, ...)
    pub error: Option<String>,
    /// every raw figure of the run (of a folded row: an array, a run per
    /// round)
    pub raw: serde_json::Value,
    /// the round (0 first) of an interleaved run ([`fold_rounds`]); of a
    /// folded row, 0
    pub round: usize,
    /// how many rounds a folded row sums up (1: one run)
    pub rounds: usize,
    /// of a folded row, the least and greatest of the rounds' ratios to
    /// stock (each round's value against stock's in the same round)
    pub ratio_spread: Option<(f64, f64)>,
}

/// How a row's ratio to stock is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum RatioKind {
    /// value / stock value (e.g. ms/s, noise, latency)
    #[default]
    ValueOverStock,
    /// stock value / value: a time where shorter is better, shown as relative
    /// throughput (e.g. hackbench time: 0.95 = 5% slower than stock)
    StockOverValue,
}

/// Fill in every row's ratio to the row of `stock` for the same scenario
/// in the same round.
pub fn fill_ratios(rows: &mut [Row], stock: &str) {
    let base: Vec<(String, usize, Option<f64>)> = rows
        .iter()
        .filter(|r| r.config == stock)
        .map(|r| (r.scenario.clone(), r.round, r.value))
        .collect();
    for r in rows.iter_mut() {
        let b = base
            .iter()
            .find(|(s, k, _)| *s == r.scenario && *k == r.round)
            .and_then(|(_, _, v)| *v);
        r.ratio = ratio(r.value, b, r.ratio_kind);
    }
}

/// Folds the rows of one scenario and configuration measured in several
/// rounds (A B A B ... in one boot) into one row each, in the order of
/// their first round: the value is the median of the rounds' values, the
/// ratio the median of the rounds' ratios (call [`fill_ratios`] first),
/// with their least and greatest in `ratio_spread`. The details name the
/// rounds' values and keep the first round's text; a round that failed is
/// named in the error; `raw` holds every round's. A row of one round is
/// kept as it is. The rows of `stock` get no range: their ratio is 1.
pub fn fold_rounds(rows: Vec<Row>, stock: &str) -> Vec<Row> {
    let mut groups: Vec<Vec<Row>> = Vec::new();
    for r in rows {
        match groups
            .iter_mut()
            .find(|g| g[0].scenario == r.scenario && g[0].config == r.config)
        {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 {
                let mut r = g.remove(0);
                r.rounds = 1;
                return r;
            }
            let values: Vec<f64> = g.iter().filter_map(|r| r.value).collect();
            let ratios: Vec<f64> = g.iter().filter_map(|r| r.ratio).collect();
            let lo_hi = |v: &[f64]| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (!v.is_empty()).then_some((lo, hi))
            };
            let errors: Vec<String> = g
                .iter()
                .filter_map(|r| {
                    r.error
                        .as_ref()
                        .map(|e| format!("round {}: {e}", r.round + 1))
                })
                .collect();
            let shown: Vec<String> = g
                .iter()
                .map(|r| r.value.map_or_else(|| "-".into(), fmt_num))
                .collect();
            let mut f = g[0].clone();
            f.value = median(&values);
            f.ratio = median(&ratios);
            f.ratio_spread = lo_hi(&ratios).filter(|_| f.config != stock);
            f.round = 0;
            f.rounds = g.len();
            f.details = format!(
                "median of {} rounds ({}); round 1: {}",
                g.len(),
                shown.join(", "),
                g[0].details
            );
            f.error = (!errors.is_empty()).then(|| errors.join("; "));
            f.raw = serde_json::Value::Array(g.into_iter().map(|r| r.raw).collect());
            f
        })
        .collect()
}

/// Names, in each row of scenario `of`, the value of the `stock` row of
/// scenario `machine` (a figure of the same unit that the scheduler cannot
/// improve: `latency-rt` under stock is the machine's own wake-up latency
/// for `latency`), and how far the row's value lies beyond it. Call after
/// [`fold_rounds`]: the values are then medians of the same rounds.
pub fn note_machine_floor(rows: &mut [Row], of: &str, machine: &str, stock: &str) {
    let Some(m) = rows
        .iter()
        .find(|r| r.scenario == machine && r.config == stock)
        .and_then(|r| r.value)
    else {
        return;
    };
    for r in rows.iter_mut().filter(|r| r.scenario == of) {
        let beyond = match r.value {
            Some(v) if v > m => format!("{} beyond it", fmt_num(v - m)),
            Some(_) => "within it".into(),
            None => continue,
        };
        r.details.push_str(&format!(
            "; the machine's own ({machine} under {stock}): {}, {beyond}",
            fmt_num(m)
        ));
    }
}

/// Whether a folded row's ratios to stock fall on both sides of 1.0 (or
/// touch it): the rounds measured no difference from stock.
pub fn no_difference(r: &Row) -> bool {
    r.ratio_spread
        .is_some_and(|(lo, hi)| lo <= 1.0 && hi >= 1.0)
}

/// The ratio of `value` to `stock` (None if either is missing, or the divisor is 0).
pub fn ratio(value: Option<f64>, stock: Option<f64>, kind: RatioKind) -> Option<f64> {
    let (v, s) = (value?, stock?);
    let (num, den) = match kind {
        RatioKind::ValueOverStock => (v, s),
        RatioKind::StockOverValue => (s, v),
    };
    (den != 0.0 && num.is_finite() && den.is_finite()).then(|| num / den)
}

/// From scx_floor's `--stats-json` document, its own (BPF) run-length
/// summary of `cpu` as "p50 / p99 ms (count runs)", if there.
pub fn floor_runlen(stats: &StatsDoc, cpu: usize) -> Option<String> {
    let r = &stats.cpus.iter().find(|c| c.cpu == cpu)?.runlen;
    let ms = |v: Option<u64>| v.map(|v| fmt_num(v as f64 / 1e6));
    Some(format!(
        "scx_floor's BPF histogram: p50 {} / p99 {} ms ({} runs)",
        ms(r.p50_ns)?,
        ms(r.p99_ns)?,
        r.count
    ))
}

/// A number with about 3 significant digits.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The Markdown table: a row per scenario and configuration.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| scenario | configuration | figure | value | vs stock | details | goal |\n\
         |---|---|---|---:|---:|---|---|\n",
    );
    for r in rows {
        let value = match (r.value, &r.error) {
            (Some(v), _) => fmt_num(v),
            (None, Some(_)) => "failed".into(),
            (None, None) => "-".into(),
        };
        let ratio = match (r.ratio, r.ratio_spread) {
            (Some(x), Some((lo, hi))) if r.rounds > 1 => format!("{x:.2} ({lo:.2}-{hi:.2})"),
            (Some(x), _) => format!("{x:.2}"),
            (None, _) => "-".into(),
        };
        let mut details = r.details.clone();
        if no_difference(r) {
            details = format!("no difference measured (the rounds' ratios span 1.0); {details}");
        }
        if let Some(e) = &r.error {
            if !details.is_empty() {
                details.push_str("; ");
            }
            details.push_str("**");
            details.push_str(e);
            details.push_str("**");
        }
        let goal = match &r.goal {
            Some((true, g)) => format!("met ({g})"),
            Some((false, g)) => format!("**missed** ({g})"),
            None => String::new(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.scenario,
            r.config,
            r.figure,
            value,
            ratio,
            details.replace('|', "/"),
            goal
        ));
    }
    s
}

/// The median of some values (None if empty).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// UTC calendar date and time of a Unix time (s), "YYYY-MM-DD HH:MM:SS UTC".
pub fn utc_string(unix_s: u64) -> String {
    let fmt =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    time::OffsetDateTime::from_unix_timestamp(unix_s as i64)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| format!("{unix_s} s after the epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scx_floor::stats::{CpuDoc, HistSummary};

    fn row(sc: &str, cfg: &str, v: Option<f64>, k: RatioKind) -> Row {
        Row {
            scenario: sc.into(),
            config: cfg.into(),
            figure: "x".into(),
            value: v,
            ratio_kind: k,
            ..Default::default()
        }
    }

    #[test]
    fn ratios_to_stock() {
        let mut rows = vec![
            row("s1", "stock", Some(50.0), RatioKind::ValueOverStock),
            row("s1", "scx-floor", Some(48.0), RatioKind::ValueOverStock),
            row("throughput", "stock", Some(2.0), RatioKind::StockOverValue),
            row(
                "throughput",
                "scx-floor",
                Some(2.5),
                RatioKind::StockOverValue,
            ),
            row("s2", "scx-floor", Some(0.6), RatioKind::ValueOverStock),
            row("s0", "stock", Some(0.0), RatioKind::ValueOverStock),
            row("s0", "scx-floor", Some(3.0), RatioKind::ValueOverStock),
        ];
        fill_ratios(&mut rows, "stock");
        assert_eq!(rows[0].ratio, Some(1.0));
        assert!((rows[1].ratio.unwrap() - 0.96).abs() < 1e-12);
        assert!((rows[3].ratio.unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(rows[4].ratio, None, "no stock row for s2");
        assert_eq!(rows[6].ratio, None, "stock value 0");
    }

    #[test]
    fn rounds_pair_with_stock_of_the_same_round_and_fold_to_medians() {
        let k = RatioKind::StockOverValue;
        let mut rows = Vec::new();
        // hackbench times: stock 2.0, 3.0, 2.2; scx-floor 2.1, 2.9, 2.0
        for (round, (st, fl)) in [(2.0, 2.1), (3.0, 2.9), (2.2, 2.0)].into_iter().enumerate() {
            let mut a = row("throughput", "stock", Some(st), k);
            let mut b = row("throughput", "scx-floor", Some(fl), k);
            a.round = round;
            b.round = round;
            a.details = format!("stock {round}");
            rows.extend([a, b]);
        }
        let mut one = row("s1", "scx-floor", Some(50.0), RatioKind::ValueOverStock);
        one.rounds = 1;
        rows.insert(0, one);
        fill_ratios(&mut rows, "stock");
        // paired by round: 2.0 / 2.1, 3.0 / 2.9, 2.2 / 2.0
        assert!((rows[2].ratio.unwrap() - 2.0 / 2.1).abs() < 1e-12);
        assert!((rows[4].ratio.unwrap() - 3.0 / 2.9).abs() < 1e-12);
        let f = fold_rounds(rows, "stock");
        assert_eq!(f.len(), 3);
        assert_eq!((f[0].scenario.as_str(), f[0].rounds), ("s1", 1));
        let (st, fl) = (&f[1], &f[2]);
        assert_eq!((st.config.as_str(), st.rounds), ("stock", 3));
        assert_eq!(st.value, Some(2.2));
        assert_eq!(fl.value, Some(2.1));
        // ratios 0.952, 1.034, 1.1: median 1.034, spread across 1.0
        assert!((fl.ratio.unwrap() - 3.0 / 2.9).abs() < 1e-12);
        let (lo, hi) = fl.ratio_spread.unwrap();
        assert!((lo - 2.0 / 2.1).abs() < 1e-12 && (hi - 1.1).abs() < 1e-12);
        assert!(no_difference(fl));
        assert!(st
            .details
            .starts_with("median of 3 rounds (2.00, 3.00, 2.20); round 1: stock 0"));
        assert_eq!((st.ratio, st.ratio_spread), (Some(1.0), None));
        assert!(!no_difference(st));
        assert_eq!(fl.raw.as_array().map(|a| a.len()), Some(3));
        let t = markdown(&f);
        assert!(
            t.contains("| 2.10 | 1.03 (0.95-1.10) | no difference measured"),
            "{t}"
        );
        // all rounds faster: a difference
        let mut g = fl.clone();
        g.ratio_spread = Some((1.02, 1.1));
        assert!(!no_difference(&g));
    }

    #[test]
    fn a_failed_round_is_named_and_left_out_of_the_median() {
        let k = RatioKind::ValueOverStock;
        let mut a = row("latency", "scx-floor", Some(100.0), k);
        let mut b = row("latency", "scx-floor", None, k);
        b.round = 1;
        b.error = Some("ejected".into());
        let mut c = row("latency", "scx-floor", Some(300.0), k);
        c.round = 2;
        a.ratio = Some(1.0);
        c.ratio = Some(1.5);
        let f = fold_rounds(vec![a, b, c], "stock");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].value, Some(200.0));
        assert_eq!(f[0].error.as_deref(), Some("round 2: ejected"));
        assert_eq!(f[0].ratio_spread, Some((1.0, 1.5)));
        assert!(f[0].details.contains("(100, -, 300)"));
    }

    #[test]
    fn machine_floor_named_in_the_rows_it_bounds() {
        let mut rows = vec![
            row("latency", "stock", Some(3000.0), RatioKind::ValueOverStock),
            row(
                "latency",
                "scx-floor",
                Some(4500.0),
                RatioKind::ValueOverStock,
            ),
            row(
                "latency-rt",
                "stock",
                Some(4000.0),
                RatioKind::ValueOverStock,
            ),
            row(
                "latency-rt",
                "scx-floor",
                Some(4100.0),
                RatioKind::ValueOverStock,
            ),
        ];
        note_machine_floor(&mut rows, "latency", "latency-rt", "stock");
        assert!(
            rows[0]
                .details
                .ends_with("(latency-rt under stock): 4000, within it"),
            "{}",
            rows[0].details
        );
        assert!(
            rows[1].details.ends_with(": 4000, 500 beyond it"),
            "{}",
            rows[1].details
        );
        assert!(rows[2].details.is_empty() && rows[3].details.is_empty());
        // without the machine's row, nothing is added
        let mut rows = vec![row(
            "latency",
            "stock",
            Some(3000.0),
            RatioKind::ValueOverStock,
        )];
        note_machine_floor(&mut rows, "latency", "latency-rt", "stock");
        assert!(rows[0].details.is_empty());
    }

    #[test]
    fn table_rows() {
        let mut r = row("s1", "scx-floor", Some(48.04), RatioKind::ValueOverStock);
        r.ratio = Some(0.9608);
        r.details = "RT 941 ms/s | x".into();
        r.goal = Some((false, ">= 47.5 ms/s".into()));
        let mut bad = row("s2", "scx-ext", None, RatioKind::ValueOverStock);
        bad.error = Some("ejected".into());
        let t = markdown(&[r, bad]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[2].starts_with("| s1 | scx-floor | x | 48.0 | 0.96 | RT 941 ms/s / x | **missed** (>= 47.5 ms/s) |"), "{}", lines[2]);
        assert!(
            lines[3].contains("| failed | - |") && lines[3].contains("**ejected**"),
            "{}",
            lines[3]
        );
        // every line has the same number of cells
        assert!(lines.iter().all(|l| l.matches('|').count() == 8));
    }

    #[test]
    fn floor_runlen_from_stats_json() {
        let cpu = |cpu, count, p50, p99| CpuDoc {
            cpu,
            counters: Default::default(),
            runlen: HistSummary {
                count,
                p50_ns: Some(p50),
                p99_ns: Some(p99),
                ..Default::default()
            },
            overshoot: Default::default(),
        };
        let doc = StatsDoc {
            schema_version: scx_floor::stats::SCHEMA_VERSION,
            time_ns: 0,
            slice_mode: "fixed".into(),
            slice_ns: 500_000,
            min_slice_ns: 0,
            hist_bucket_lo_ns: Vec::new(),
            cpus: vec![
                cpu(0, 5, 1_000_000, 2_000_000),
                cpu(1, 9000, 524_288, 655_360),
            ],
            server: Vec::new(),
            ..Default::default()
        };
        assert_eq!(
            floor_runlen(&doc, 1).unwrap(),
            "scx_floor's BPF histogram: p50 0.524 / p99 0.655 ms (9000 runs)"
        );
        assert_eq!(floor_runlen(&doc, 2), None);
        let none = StatsDoc {
            cpus: Vec::new(),
            ..doc.clone()
        };
        assert_eq!(floor_runlen(&none, 1), None);
    }

    #[test]
    fn numbers_and_medians() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(0.6312), "0.631");
        assert_eq!(fmt_num(4.0814), "4.08");
        assert_eq!(fmt_num(47.96), "48.0");
        assert_eq!(fmt_num(4081.2), "4081");
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc_string(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_string(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_string(1_709_251_199), "2024-02-29 23:59:59 UTC");
        assert_eq!(utc_string(4_102_444_800), "2100-01-01 00:00:00 UTC");
    }
}
