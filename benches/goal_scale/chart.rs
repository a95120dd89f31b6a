//! The goal benchmark's figures against the count of goals, as a Markdown table and an
//! SVG picture (two panels: transitions/s, and p50/p99/max latency on a log scale),
//! for the bare controller and the operator side by side.

use std::fmt::Write;

/// What one run of one controller measured.
pub struct Summary {
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One count of concurrent goals: both controllers' runs.
pub struct Row {
    pub goals: usize,
    pub bare: Summary,
    pub operator: Summary,
}

pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| goals | bare transitions/s | operator transitions/s | ratio | bare p50 / p99 / max ms | operator p50 / p99 / max ms |\n|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let (b, o) = (&r.bare, &r.operator);
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.2}x | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} / {:.0} |",
            r.goals,
            b.per_second,
            o.per_second,
            o.per_second / b.per_second,
            b.p50_ms,
            b.p99_ms,
            b.max_ms,
            o.p50_ms,
            o.p99_ms,
            o.max_ms
        );
    }
    out
}

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const GAP: f64 = 90.0;
const BARE: &str = "#888888";
const OPERATOR: &str = "#1f5fbf";

/// A panel's mapping from values to pixels: x by the log of the count, y linear or log.
struct Axes {
    left: f64,
    x_range: (f64, f64),
    y_range: (f64, f64),
    log_y: bool,
}

impl Axes {
    fn x(&self, goals: usize) -> f64 {
        let (lo, hi) = self.x_range;
        let t = if hi > lo {
            ((goals as f64).ln() - lo.ln()) / (hi.ln() - lo.ln())
        } else {
            0.5
        };
        self.left + t * PANEL_W
    }

    fn y(&self, value: f64) -> f64 {
        let (lo, hi) = self.y_range;
        let t = if self.log_y {
            (value.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())
        } else {
            (value - lo) / (hi - lo)
        };
        TOP + PANEL_H - t.clamp(0.0, 1.0) * PANEL_H
    }
}

fn line(out: &mut String, axes: &Axes, points: &[(usize, f64)], colour: &str, dash: &str) {
    let path: Vec<String> = points
        .iter()
        .map(|&(g, v)| format!("{:.1},{:.1}", axes.x(g), axes.y(v)))
        .collect();
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="{}"/>"#,
        path.join(" ")
    );
    for &(g, v) in points {
        let _ = writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
            axes.x(g),
            axes.y(v)
        );
    }
}

fn frame(out: &mut String, axes: &Axes, rows: &[Row], title: &str, ticks: &[f64]) {
    let (left, bottom) = (axes.left, TOP + PANEL_H);
    let _ = writeln!(
        out,
        r##"<rect x="{left}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#ccc"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-weight="bold">{title}</text>"#,
        left + PANEL_W / 2.0,
        TOP - 14.0
    );
    for r in rows {
        let x = axes.x(r.goals);
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            bottom + 18.0,
            r.goals
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">concurrent goals (3 steps each)</text>"#,
        left + PANEL_W / 2.0,
        bottom + 38.0
    );
    for &tick in ticks {
        let y = axes.y(tick);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{tick}</text>"##,
            left + PANEL_W,
            left - 6.0,
            y + 4.0
        );
    }
}

/// Round tick values (1, 2, 5 times a power of ten) from `lo` to `hi`: every one on a
/// log axis, evenly spaced from 0 on a linear one.
fn ticks(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    if !log {
        let rough = hi / 5.0;
        let decade = 10f64.powf(rough.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * decade)
            .find(|&step| step >= rough)
            .unwrap_or(decade * 10.0);
        return (0..)
            .map(|i| i as f64 * step)
            .take_while(|&t| t <= hi)
            .collect();
    }
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let t = m * decade;
            if t >= lo && t <= hi {
                out.push(t);
            }
        }
        decade *= 10.0;
    }
    out
}

pub fn svg(rows: &[Row]) -> String {
    let x_range = (
        rows.first().map_or(1, |r| r.goals) as f64,
        rows.last().map_or(1, |r| r.goals) as f64,
    );
    let width = LEFT + 2.0 * PANEL_W + GAP + 30.0;
    let height = TOP + PANEL_H + 90.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12" role="img" aria-label="Goal step advance against the count of goals: operator and bare controller">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    // Throughput, linear.
    let top_rate = rows
        .iter()
        .flat_map(|r| [r.bare.per_second, r.operator.per_second])
        .fold(1.0, f64::max)
        * 1.1;
    let rate = Axes {
        left: LEFT,
        x_range,
        y_range: (0.0, top_rate),
        log_y: false,
    };
    frame(
        &mut out,
        &rate,
        rows,
        "step transitions per second",
        &ticks(0.0, top_rate, false),
    );
    line(
        &mut out,
        &rate,
        &points(rows, |r| r.bare.per_second),
        BARE,
        "",
    );
    line(
        &mut out,
        &rate,
        &points(rows, |r| r.operator.per_second),
        OPERATOR,
        "",
    );
    // Latency, log.
    let all = rows.iter().flat_map(|r| {
        [
            r.bare.p50_ms,
            r.bare.max_ms,
            r.operator.p50_ms,
            r.operator.max_ms,
        ]
    });
    let (lo, hi) = all.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let latency = Axes {
        left: LEFT + PANEL_W + GAP,
        x_range,
        y_range: ((lo * 0.8).max(0.1), hi * 1.25),
        log_y: true,
    };
    frame(
        &mut out,
        &latency,
        rows,
        "step advance latency, ms (log)",
        &ticks(latency.y_range.0, latency.y_range.1, true),
    );
    for (pick, dash) in [(0usize, "2 3"), (1, "6 4"), (2, "")] {
        let value = move |s: &Summary| [s.p50_ms, s.p99_ms, s.max_ms][pick];
        line(
            &mut out,
            &latency,
            &points(rows, |r| value(&r.bare)),
            BARE,
            dash,
        );
        line(
            &mut out,
            &latency,
            &points(rows, |r| value(&r.operator)),
            OPERATOR,
            dash,
        );
    }
    legend(&mut out, height);
    out.push_str("</svg>\n");
    out
}

fn points(rows: &[Row], value: impl Fn(&Row) -> f64) -> Vec<(usize, f64)> {
    rows.iter().map(|r| (r.goals, value(r))).collect()
}

fn legend(out: &mut String, height: f64) {
    let y = height - 16.0;
    let entries = [
        (OPERATOR, "", "operator"),
        (BARE, "", "bare watch→create controller"),
        ("#444", "2 3", "p50"),
        ("#444", "6 4", "p99"),
        ("#444", "", "max"),
    ];
    let mut x = LEFT;
    for (colour, dash, label) in entries {
        let _ = writeln!(
            out,
            r#"<line x1="{x}" x2="{}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/><text x="{}" y="{}">{label}</text>"#,
            x + 24.0,
            x + 30.0,
            y + 4.0
        );
        x += 40.0 + 7.0 * label.len() as f64;
    }
}
