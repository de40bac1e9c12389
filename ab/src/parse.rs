// SPDX-License-Identifier: GPL-2.0-only
//! Parsers for what the kernel and the workloads print: /proc/PID/schedstat,
//! hackbench's summary, cyclictest's histogram, `rtla osnoise top`'s summary,
//! CPU lists. Pure, unit-tested.

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// /proc/PID/schedstat: time on CPU, time waiting on a run queue, runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Schedstat {
    /// field 1: time on CPU, ns
    pub run_ns: u64,
    /// field 2: time runnable but waiting, ns
    pub wait_ns: u64,
    /// field 3: number of runs (timeslices) on a CPU
    pub timeslices: u64,
}

/// Parse the three fields of /proc/PID/schedstat.
pub fn schedstat(s: &str) -> Result<Schedstat> {
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|x| x.parse::<u64>())
        .collect::<std::result::Result<_, _>>()
        .with_context(|| format!("schedstat '{}' is not three numbers", s.trim()))?;
    if f.len() != 3 {
        bail!("schedstat '{}' does not have three fields", s.trim());
    }
    Ok(Schedstat {
        run_ns: f[0],
        wait_ns: f[1],
        timeslices: f[2],
    })
}

/// Mean run length (ns) of tasks over an interval: the sum of their field-1
/// deltas over the sum of their field-3 deltas (scenarios.md, S2).
pub fn mean_slice_ns(before: &[Schedstat], after: &[Schedstat]) -> Option<f64> {
    let run: u64 = before
        .iter()
        .zip(after)
        .map(|(b, a)| a.run_ns.saturating_sub(b.run_ns))
        .sum();
    let n: u64 = before
        .iter()
        .zip(after)
        .map(|(b, a)| a.timeslices.saturating_sub(b.timeslices))
        .sum();
    (n > 0).then(|| run as f64 / n as f64)
}

/// hackbench's "Time: 1.234" line, s.
pub fn hackbench_secs(out: &str) -> Result<f64> {
    for line in out.lines() {
        if let Some(v) = line.trim().strip_prefix("Time:") {
            return v
                .trim()
                .parse::<f64>()
                .with_context(|| format!("hackbench time '{}'", v.trim()));
        }
    }
    bail!("no 'Time:' line in hackbench's output")
}

/// cyclictest's latency figures, from its histogram output (`-q -h US`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// wake-ups measured (all threads)
    pub samples: u64,
    /// mean latency, us (cyclictest's per-thread averages weighted by samples)
    pub avg_us: f64,
    /// 50th percentile, us (from the histogram; None when it lies in the overflow)
    pub p50_us: Option<u64>,
    /// 99th percentile, us
    pub p99_us: Option<u64>,
    /// maximum, us
    pub max_us: u64,
    /// samples past the histogram's last bucket
    pub overflows: u64,
    /// the histogram summed over threads: (latency us, count), non-zero buckets only
    pub hist: Vec<(u64, u64)>,
}

fn summary_numbers(line: &str, key: &str) -> Option<Vec<u64>> {
    let rest = line.strip_prefix(key)?;
    rest.split_whitespace().map(|x| x.parse().ok()).collect()
}

/// Parse cyclictest's stdout with `-q -h US`: histogram rows "LAT C0 C1 ...",
/// then "# Total:", "# Avg Latencies:", "# Max Latencies:", "# Histogram Overflows:".
pub fn cyclictest(out: &str) -> Result<Latency> {
    let mut hist: Vec<(u64, u64)> = Vec::new();
    let (mut totals, mut avgs, mut maxs, mut ovf) = (None, None, None, None);
    for line in out.lines() {
        let line = line.trim();
        if let Some(v) = summary_numbers(line, "# Total:") {
            totals = Some(v);
        } else if let Some(v) = summary_numbers(line, "# Avg Latencies:") {
            avgs = Some(v);
        } else if let Some(v) = summary_numbers(line, "# Max Latencies:") {
            maxs = Some(v);
        } else if let Some(v) = summary_numbers(line, "# Histogram Overflows:") {
            ovf = Some(v);
        } else if !line.starts_with('#') && !line.is_empty() {
            let v: Option<Vec<u64>> = line.split_whitespace().map(|x| x.parse().ok()).collect();
            if let Some(v) = v {
                if v.len() >= 2 {
                    let c: u64 = v[1..].iter().sum();
                    if c > 0 {
                        hist.push((v[0], c));
                    }
                }
            }
        }
    }
    let totals = totals.context("no '# Total:' line in cyclictest's output (was -h given?)")?;
    let avgs = avgs.context("no '# Avg Latencies:' line in cyclictest's output")?;
    let maxs = maxs.context("no '# Max Latencies:' line in cyclictest's output")?;
    let overflows: u64 = ovf.unwrap_or_default().iter().sum();
    let samples: u64 = totals.iter().sum();
    if samples == 0 {
        bail!("cyclictest measured no wake-up");
    }
    let avg_us = totals
        .iter()
        .zip(&avgs)
        .map(|(&n, &a)| n as f64 * a as f64)
        .sum::<f64>()
        / samples as f64;
    let pct = |p: f64| -> Option<u64> {
        let rank = ((p / 100.0) * samples as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for &(lat, c) in &hist {
            seen += c;
            if seen >= rank {
                return Some(lat);
            }
        }
        None
    };
    Ok(Latency {
        samples,
        avg_us,
        p50_us: pct(50.0),
        p99_us: pct(99.0),
        max_us: maxs.iter().copied().max().unwrap_or(0),
        overflows,
        hist,
    })
}

/// Text without terminal escape sequences: ESC [ ... letter (colours), and
/// ESC followed by one character (ESC c, the reset rtla prints before each
/// refresh).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\x1b' {
            out.push(c);
        } else if it.peek() == Some(&'[') {
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            it.next();
        }
    }
    out
}

/// One CPU's line of `rtla osnoise top`'s summary (times in us).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OsnoiseTop {
    /// the CPU
    pub cpu: usize,
    /// osnoise periods (samples) summed
    pub periods: u64,
    /// the osnoise thread's run time over them, us ("Runtime")
    pub runtime_us: u64,
    /// total noise, us ("Noise")
    pub noise_us: u64,
    /// "% CPU Aval"
    pub cpu_avail_pct: Option<f64>,
    /// the most noise in one period, us ("Max Noise")
    pub max_noise_us: Option<u64>,
    /// the longest single noise, us ("Max Single")
    pub max_single_us: u64,
    /// interference counts: HW, NMI, IRQ, Softirq, Thread (those printed)
    pub counts: Vec<(String, u64)>,
}

/// Parse `rtla osnoise top`'s summary for `cpu`: the header line names the
/// columns ("CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI
/// IRQ Softirq Thread", the last three absent in hwnoise mode), each CPU's
/// line gives one number per column ("#" before the period count). Columns
/// are found by name, so more or fewer of them, colour codes and other lines
/// (the title, "duration:", messages) do not matter. When the summary is
/// printed more than once (without -q), the last one counts.
pub fn rtla_osnoise_top(out: &str, cpu: usize) -> Result<OsnoiseTop> {
    let text = strip_ansi(out);
    let mut cols: Option<Vec<String>> = None;
    let mut found: Option<OsnoiseTop> = None;
    for line in text.lines() {
        if line.contains("Max Single") && line.trim_start().starts_with("CPU") {
            let named = line
                .replace("% CPU Aval", "%CPU_Aval")
                .replace("Max Noise", "Max_Noise")
                .replace("Max Single", "Max_Single");
            cols = Some(named.split_whitespace().map(str::to_string).collect());
            continue;
        }
        let Some(cols) = &cols else { continue };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != cols.len() || f[0].parse::<usize>().ok() != Some(cpu) {
            continue;
        }
        let get = |name: &str| -> Option<&str> {
            cols.iter()
                .position(|c| c == name)
                .map(|i| f[i].trim_start_matches('#').trim_end_matches('%'))
        };
        let num = |name: &str| -> Result<u64> {
            let v = get(name).with_context(|| format!("rtla's summary has no '{name}' column"))?;
            v.parse()
                .with_context(|| format!("rtla's '{name}' for CPU {cpu} is '{v}', not a number"))
        };
        let mut counts = Vec::new();
        for k in ["HW", "NMI", "IRQ", "Softirq", "Thread"] {
            if get(k).is_some() {
                counts.push((k.to_string(), num(k)?));
            }
        }
        found = Some(OsnoiseTop {
            cpu,
            periods: num("Period")?,
            runtime_us: num("Runtime")?,
            noise_us: num("Noise")?,
            cpu_avail_pct: get("%CPU_Aval").and_then(|v| v.parse().ok()),
            max_noise_us: get("Max_Noise").and_then(|v| v.parse().ok()),
            max_single_us: num("Max_Single")?,
            counts,
        });
    }
    if cols.is_none() {
        bail!("no summary header ('CPU Period ... Max Single ...') in rtla's output");
    }
    found.with_context(|| {
        format!("no line for CPU {cpu} in rtla's summary (no osnoise period completed?)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_fields() {
        let s = schedstat("123456 789 42\n").unwrap();
        assert_eq!((s.run_ns, s.wait_ns, s.timeslices), (123456, 789, 42));
        assert!(schedstat("1 2").is_err());
        assert!(schedstat("1 x 3").is_err());
        assert!(schedstat("").is_err());
    }

    #[test]
    fn mean_slice() {
        let b = [schedstat("1000 0 10").unwrap(), schedstat("0 0 0").unwrap()];
        let a = [
            schedstat("5001000 0 20").unwrap(),
            schedstat("3000000 0 6").unwrap(),
        ];
        // (5 ms + 3 ms) over 16 runs
        assert_eq!(mean_slice_ns(&b, &a), Some(500_000.0));
        assert_eq!(mean_slice_ns(&b, &b), None);
    }

    #[test]
    fn hackbench_time() {
        let out =
            "Running in process mode with 4 groups using 40 file descriptors each (== 160 tasks)\n\
                   Each sender will pass 200 messages of 100 bytes\nTime: 3.224\n";
        assert_eq!(hackbench_secs(out).unwrap(), 3.224);
        assert!(hackbench_secs("Running...\n").is_err());
        assert!(hackbench_secs("Time: soon\n").is_err());
    }

    #[test]
    fn cyclictest_histogram() {
        let out = "# /dev/cpu_dma_latency set to 0us\n\
                   000000 000000\t000000\n\
                   000010 000050\t000040\n\
                   000020 000005\t000003\n\
                   000100 000000\t000001\n\
                   000101 000000\t000000\n\
                   # Total: 000000055 000000045\n\
                   # Min Latencies: 00010 00010\n\
                   # Avg Latencies: 00011 00012\n\
                   # Max Latencies: 00020 00150\n\
                   # Histogram Overflows: 00000 00001\n\
                   # Histogram Overflow at cycle number:\n\
                   # Thread 0:\n# Thread 1: 00017\n";
        let l = cyclictest(out).unwrap();
        assert_eq!(l.samples, 100);
        assert!((l.avg_us - (55.0 * 11.0 + 45.0 * 12.0) / 100.0).abs() < 1e-9);
        assert_eq!(l.p50_us, Some(10));
        // 90 at 10 us, 98 by 20 us, 99 by 100 us
        assert_eq!(l.p99_us, Some(100));
        assert_eq!(l.max_us, 150);
        assert_eq!(l.overflows, 1);
        assert_eq!(l.hist, vec![(10, 90), (20, 8), (100, 1)]);
        assert!(
            cyclictest("T: 0 ( 5559) P: 2 I:1000 C: 10 Min: 9 Act: 11 Avg: 21 Max: 108\n").is_err()
        );
    }

    #[test]
    fn p99_in_overflow_is_none() {
        let out = "000010 000001\n# Total: 000000010\n# Avg Latencies: 09000\n\
                   # Max Latencies: 20000\n# Histogram Overflows: 00009\n";
        let l = cyclictest(out).unwrap();
        assert_eq!(l.p50_us, None);
        assert_eq!(l.p99_us, None);
    }

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(
            strip_ansi("07:52 \x1b[0m\x1b[34m[INFO] \x1b[0mok"),
            "07:52 [INFO] ok"
        );
        assert_eq!(strip_ansi("\x1bcCPU \x1b[2;30;47mx\x1b[0;0;0m"), "CPU x");
        assert_eq!(strip_ansi("plain"), "plain");
    }

    /// Written by hand after rtla's documented format (rtla-osnoise-top(1),
    /// and osnoise_top.c's header and "%3d #%-6d %12llu ..." lines), with
    /// the colour codes rtla 6.1 prints even when its output is a pipe.
    const RTLA_TOP_BY_HAND: &str = "\x1b[2;37;40m                                          \
        Operating System Noise                                                                          \x1b[0;0;0m\n\
        duration:   0 00:00:10 | time is in us\n\
        \x1b[2;30;47mCPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\x1b[0;0;0m\n\
        \x20 1 #9          9000000       412345    95.41838       61234         5339           0            0         2251           17          310\n";

    #[test]
    fn rtla_top_summary() {
        let o = rtla_osnoise_top(RTLA_TOP_BY_HAND, 1).unwrap();
        assert_eq!(o.cpu, 1);
        assert_eq!(o.periods, 9);
        assert_eq!(o.runtime_us, 9_000_000);
        assert_eq!(o.noise_us, 412_345);
        assert_eq!(o.cpu_avail_pct, Some(95.41838));
        assert_eq!(o.max_noise_us, Some(61_234));
        assert_eq!(o.max_single_us, 5339);
        assert_eq!(o.counts.len(), 5);
        assert_eq!(o.counts[2], ("IRQ".to_string(), 2251));
        // no line for another CPU; no header at all
        let e = rtla_osnoise_top(RTLA_TOP_BY_HAND, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no line for CPU 0"), "{e}");
        let e = rtla_osnoise_top("rtla: could not enable osnoise tracer\n", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no summary header"), "{e}");
    }

    /// Captured: rtla 6.1 (Debian 12's) on 7.3.4+deb13-rt-amd64 in the VM,
    /// `rtla osnoise top -q -c 1 -P f:1 -p 1000000 -r 1000000 -T 10 -d 3s`
    /// under S0's hogs and the stock fair_server (20 us / 1 s), stdout a pipe.
    const RTLA_TOP_CAPTURED: &str = "\x1b[2;37;40m                                          Operating System Noise                                                                          \x1b[0;0;0m\nduration:   0 00:00:03 | time is in us\n\x1b[2;30;47mCPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\x1b[0;0;0m\n  1 #2           2001130        45769    97.71284       32704         2178         752            0          257            0            1\n";

    #[test]
    fn rtla_top_captured() {
        let o = rtla_osnoise_top(RTLA_TOP_CAPTURED, 1).unwrap();
        assert_eq!(
            (o.periods, o.runtime_us, o.noise_us),
            (2, 2_001_130, 45_769)
        );
        assert_eq!((o.max_noise_us, o.max_single_us), (Some(32_704), 2178));
        assert_eq!(o.cpu_avail_pct, Some(97.71284));
        let c: Vec<u64> = o.counts.iter().map(|(_, n)| *n).collect();
        assert_eq!(c, vec![752, 0, 257, 0, 1]);
    }

    #[test]
    fn rtla_top_variants() {
        // the documentation's layout (several CPUs, no colours), a refreshed
        // screen printed twice: the last summary counts
        let two = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\n\
                   \x20 0 #1          1000000          10    99.99900          10           10           0            0            1            0            0\n\
                   \x20 1 #1          1000000          20    99.99800          20           20           0            0            2            0            0\n\
                   \x1bcCPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\n\
                   \x20 0 #2          2000000          30    99.99850          20           10           0            0            2            0            0\n\
                   \x20 1 #2          2000000          45    99.99775          25           20           0            0            3            0            0\n\
                   osnoise hit stop tracing\n";
        let o = rtla_osnoise_top(two, 1).unwrap();
        assert_eq!((o.periods, o.noise_us, o.max_single_us), (2, 45, 20));
        // hwnoise's layout: no IRQ, Softirq, Thread columns
        let hw = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI\n\
                  \x20 1 #3          2250000           7    99.99968           4            3           2            0\n";
        let o = rtla_osnoise_top(hw, 1).unwrap();
        assert_eq!((o.noise_us, o.max_single_us, o.counts.len()), (7, 3, 2));
        // a number that is not one
        let bad = "CPU Period Runtime Noise % CPU Aval Max Noise Max Single\n  1 #3 x 7 99.9 4 3\n";
        assert!(rtla_osnoise_top(bad, 1)
            .unwrap_err()
            .to_string()
            .contains("'Runtime'"));
    }
}
