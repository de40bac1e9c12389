// SPDX-License-Identifier: GPL-2.0-only
//! The PNG plots (plotters, bitmap backend, text through ab_glyph with a TTF
//! font from the system: Debian's fonts-dejavu-core).

use std::path::Path;

use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;

/// TTF fonts tried in order for the plots' text.
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

fn ensure_font() -> Result<()> {
    static DONE: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        for f in FONTS {
            if let Ok(bytes) = std::fs::read(f) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err(format!(
            "no usable TTF font for the plots (tried {}): install fonts-dejavu-core",
            FONTS.join(", ")
        ))
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

/// One line of a plot: a label and its (x, y) points.
pub struct Series {
    /// legend text (the configuration)
    pub label: String,
    /// the points
    pub points: Vec<(f64, f64)>,
}

/// A line plot of several series, written to `path` as PNG.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<()> {
    ensure_font()?;
    if series.iter().all(|s| s.points.is_empty()) {
        bail!("nothing to plot for {}", path.display());
    }
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..y1)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?
            .label(s.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png() {
        if ensure_font().is_err() {
            eprintln!("no font here: skipped");
            return;
        }
        let dir = std::env::temp_dir().join(format!("scx_floor-ab-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.png");
        let s = [Series {
            label: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
        }];
        lines(&p, "t", "x", "y", &s).unwrap();
        let b = std::fs::read(&p).unwrap();
        assert_eq!(&b[1..4], b"PNG");
        assert!(lines(&dir.join("e.png"), "t", "x", "y", &[]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
