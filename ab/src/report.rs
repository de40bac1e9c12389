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
    /// every raw figure of the run
    pub raw: serde_json::Value,
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

/// Fill in every row's ratio to the row of `stock` for the same scenario.
pub fn fill_ratios(rows: &mut [Row], stock: &str) {
    let base: Vec<(String, Option<f64>)> = rows
        .iter()
        .filter(|r| r.config == stock)
        .map(|r| (r.scenario.clone(), r.value))
        .collect();
    for r in rows.iter_mut() {
        let b = base
            .iter()
            .find(|(s, _)| *s == r.scenario)
            .and_then(|(_, v)| *v);
        r.ratio = ratio(r.value, b, r.ratio_kind);
    }
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
        let ratio = r
            .ratio
            .map(|x| format!("{x:.2}"))
            .unwrap_or_else(|| "-".into());
        let mut details = r.details.clone();
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
