//! The agent benchmark's figures against the count of quiet agents, as a Markdown table
//! and an SVG picture (CPU, RSS, restart), the operator beside the bare controller and
//! issue 37's targets.

use std::fmt::Write;

use crate::plot::{self, BARE, Line, OPERATOR, Panel, Picture, TARGET};

/// One count of agents: what the operator and the bare controller measured.
pub struct Row {
    pub agents: usize,
    /// Share of a core, %, with the shim's heartbeat every 5 minutes.
    pub cpu: f64,
    pub bare_cpu: f64,
    pub rss_mib: f64,
    /// Start to the first reconcile of every agent.
    pub restart_s: f64,
    pub bare_restart_s: f64,
    pub restart_reads: f64,
    pub restart_writes: f64,
}

const CPU_TARGET: f64 = 3.0;
const RSS_TARGET: f64 = 100.0;
const RESTART_TARGET: f64 = 10.0;

pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| agents | operator CPU | bare CPU | operator RSS | operator restart | bare restart | reads / writes at restart |\n|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {:.1}% | {:.1}% | {:.0} MiB | {:.1} s | {:.1} s | {:.0} / {:.0} |",
            r.agents,
            r.cpu,
            r.bare_cpu,
            r.rss_mib,
            r.restart_s,
            r.bare_restart_s,
            r.restart_reads,
            r.restart_writes
        );
    }
    out
}

pub fn svg(rows: &[Row]) -> String {
    let counts: Vec<usize> = rows.iter().map(|r| r.agents).collect();
    let points = |value: &dyn Fn(&Row) -> f64| -> Vec<(usize, f64)> {
        rows.iter().map(|r| (r.agents, value(r))).collect()
    };
    let target = |value: f64| Line {
        colour: TARGET,
        dash: "4 4",
        points: counts.iter().map(|&n| (n, value)).collect(),
    };
    let solid = |colour, points| Line {
        colour,
        dash: "",
        points,
    };
    let panels = vec![
        Panel {
            title: "CPU, % of a core (heartbeat 5 min)",
            log_y: false,
            lines: vec![
                solid(BARE, points(&|r| r.bare_cpu)),
                solid(OPERATOR, points(&|r| r.cpu)),
                target(CPU_TARGET),
            ],
        },
        Panel {
            title: "operator RSS, MiB",
            log_y: false,
            lines: vec![solid(OPERATOR, points(&|r| r.rss_mib)), target(RSS_TARGET)],
        },
        Panel {
            title: "restart to every agent reconciled, s",
            log_y: false,
            lines: vec![
                solid(BARE, points(&|r| r.bare_restart_s)),
                solid(OPERATOR, points(&|r| r.restart_s)),
                target(RESTART_TARGET),
            ],
        },
    ];
    plot::svg(&Picture {
        label: "Quiet agents: operator CPU, RSS and restart time against the count of agents, beside a bare controller",
        x_label: "quiet in-loop agents",
        counts: &counts,
        panels,
        legend: &[
            (OPERATOR, "", "operator"),
            (BARE, "", "bare controller (reconcile does nothing)"),
            (TARGET, "4 4", "target at 10,000 (issue 37)"),
        ],
    })
}
