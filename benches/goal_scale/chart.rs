//! The goal benchmark's figures against the count of goals, as a Markdown table and an
//! SVG picture (two panels: transitions/s, and p50/p99/max latency on a log scale),
//! for the bare controller and the operator side by side.

use std::fmt::Write;

use crate::plot::{self, BARE, Line, OPERATOR, Panel, Picture, TARGET};

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

pub fn svg(rows: &[Row]) -> String {
    let counts: Vec<usize> = rows.iter().map(|r| r.goals).collect();
    let points = |value: &dyn Fn(&Row) -> f64| -> Vec<(usize, f64)> {
        rows.iter().map(|r| (r.goals, value(r))).collect()
    };
    let rate = Panel {
        title: "step transitions per second",
        log_y: false,
        lines: vec![
            Line {
                colour: BARE,
                dash: "",
                points: points(&|r| r.bare.per_second),
            },
            Line {
                colour: OPERATOR,
                dash: "",
                points: points(&|r| r.operator.per_second),
            },
            // Issue 37's targets: at least half the bare rate, p99 at most 3x the bare p99.
            Line {
                colour: TARGET,
                dash: "4 4",
                points: points(&|r| 0.5 * r.bare.per_second),
            },
        ],
    };
    let mut latency = Panel {
        title: "step advance latency, ms (log)",
        log_y: true,
        lines: Vec::new(),
    };
    for (pick, dash) in [(0usize, "2 3"), (1, "6 4"), (2, "")] {
        let value = move |s: &Summary| [s.p50_ms, s.p99_ms, s.max_ms][pick];
        for (colour, side) in [(BARE, false), (OPERATOR, true)] {
            let of = |r: &Row| value(if side { &r.operator } else { &r.bare });
            latency.lines.push(Line {
                colour,
                dash,
                points: points(&of),
            });
        }
    }
    latency.lines.push(Line {
        colour: TARGET,
        dash: "4 4",
        points: points(&|r| 3.0 * r.bare.p99_ms),
    });
    plot::svg(&Picture {
        label: "Goal step advance against the count of goals: operator and bare controller",
        x_label: "concurrent goals (3 steps each)",
        counts: &counts,
        panels: vec![rate, latency],
        legend: &[
            (OPERATOR, "", "operator"),
            (BARE, "", "bare watch→create controller"),
            ("#444", "2 3", "p50"),
            ("#444", "6 4", "p99"),
            ("#444", "", "max"),
            (TARGET, "4 4", "target: 0.5x bare rate, 3x bare p99"),
        ],
    })
}
