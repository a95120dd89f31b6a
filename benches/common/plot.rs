//! The scale benchmarks' pictures: panels side by side, each a set of lines against
//! the count of objects (a log scale), drawn as one SVG by the benchmark itself.

use std::fmt::Write;

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const GAP: f64 = 90.0;
pub const BARE: &str = "#888888";
pub const OPERATOR: &str = "#1f5fbf";
pub const TARGET: &str = "#c0392b";

/// One line: its colour, its dash pattern ("" for solid) and its points (count, value).
pub struct Line {
    pub colour: &'static str,
    pub dash: &'static str,
    pub points: Vec<(usize, f64)>,
}

/// One panel: its title, whether its y axis is a log scale, and its lines.
pub struct Panel {
    pub title: &'static str,
    pub log_y: bool,
    pub lines: Vec<Line>,
}

/// What the picture says, for screen readers; what the x axis counts; and the legend
/// (colour, dash, label).
pub struct Picture<'a> {
    pub label: &'a str,
    pub x_label: &'a str,
    pub counts: &'a [usize],
    pub panels: Vec<Panel>,
    pub legend: &'a [(&'static str, &'static str, &'static str)],
}

/// A panel's mapping from values to pixels: x by the log of the count, y linear or log.
struct Axes {
    left: f64,
    x_range: (f64, f64),
    y_range: (f64, f64),
    log_y: bool,
}

impl Axes {
    fn x(&self, count: usize) -> f64 {
        let (lo, hi) = self.x_range;
        let t = if hi > lo {
            ((count as f64).ln() - lo.ln()) / (hi.ln() - lo.ln())
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

fn line(out: &mut String, axes: &Axes, line: &Line) {
    let path: Vec<String> = line
        .points
        .iter()
        .map(|&(n, v)| format!("{:.1},{:.1}", axes.x(n), axes.y(v)))
        .collect();
    let (colour, dash) = (line.colour, line.dash);
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="{}"/>"#,
        path.join(" ")
    );
    for &(n, v) in &line.points {
        let _ = writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
            axes.x(n),
            axes.y(v)
        );
    }
}

fn frame(out: &mut String, axes: &Axes, picture: &Picture, title: &str, ticks: &[f64]) {
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
    for &count in picture.counts {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{count}</text>"#,
            axes.x(count),
            bottom + 18.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        left + PANEL_W / 2.0,
        bottom + 38.0,
        picture.x_label
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

/// The y range of a panel: from 0 (linear) or just under its least value (log) to just
/// over its greatest.
fn y_range(panel: &Panel) -> (f64, f64) {
    let values = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1));
    let (lo, hi) = values.fold((f64::MAX, 1e-3f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if panel.log_y {
        ((lo * 0.8).max(0.1), hi * 1.25)
    } else {
        (0.0, hi * 1.1)
    }
}

pub fn svg(picture: &Picture) -> String {
    let x_range = (
        picture.counts.first().copied().unwrap_or(1) as f64,
        picture.counts.last().copied().unwrap_or(1) as f64,
    );
    let panels = picture.panels.len() as f64;
    let width = LEFT + panels * PANEL_W + (panels - 1.0) * GAP + 30.0;
    let height = TOP + PANEL_H + 90.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12" role="img" aria-label="{}">"#,
        picture.label
    );
    let _ = writeln!(
        out,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    for (i, panel) in picture.panels.iter().enumerate() {
        let axes = Axes {
            left: LEFT + i as f64 * (PANEL_W + GAP),
            x_range,
            y_range: y_range(panel),
            log_y: panel.log_y,
        };
        let ticks = ticks(axes.y_range.0, axes.y_range.1, panel.log_y);
        frame(&mut out, &axes, picture, panel.title, &ticks);
        for l in &panel.lines {
            line(&mut out, &axes, l);
        }
    }
    legend(&mut out, height, picture.legend);
    out.push_str("</svg>\n");
    out
}

fn legend(out: &mut String, height: f64, entries: &[(&str, &str, &str)]) {
    let y = height - 16.0;
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
