//! The suite's pictures, as SVG: grouped bars per kernel and scheduler
//! (speedup, heterogeneous efficiency), time against problem size, and a
//! Gantt chart of one run's packages.

use crate::{DeviceKind, Report};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Okabe-Ito colours (distinguishable with colour-blindness), one per
/// scheduler or series in order.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(240, 228, 66),
];

/// The colour of a device kind in timelines and scaling plots.
pub fn device_colour(kind: DeviceKind) -> RGBColor {
    match kind {
        DeviceKind::Cpu => RGBColor(0, 114, 178),
        DeviceKind::Gpu => RGBColor(213, 94, 0),
    }
}

/// Colour of the co-executed series in scaling plots.
pub const COEXEC_COLOUR: RGBColor = RGBColor(0, 158, 115);

/// The colours of uploads and downloads in timelines.
const UPLOAD_COLOUR: RGBColor = RGBColor(204, 121, 167);
const DOWNLOAD_COLOUR: RGBColor = RGBColor(86, 180, 233);

const FONT: &str = "sans-serif";
const GREY: RGBColor = RGBColor(110, 110, 110);

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("plot: {e}")
}

/// One bar: its value (`None`: the run failed, no bar) and whether the run's
/// output was verified (an unverified bar is marked with a red cross).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Bar height.
    pub value: Option<f64>,
    /// Output verified.
    pub ok: bool,
}

/// A grouped bar chart: one group per kernel, one bar per series.
#[derive(Debug, Clone)]
pub struct BarChart<'a> {
    /// Chart title.
    pub title: &'a str,
    /// Y axis description (with unit).
    pub y_desc: &'a str,
    /// The groups (kernels), left to right.
    pub groups: &'a [String],
    /// `(legend label, one bar per group)`, in bar order within a group.
    pub series: &'a [(String, Vec<Bar>)],
    /// A dashed reference line at this value, with its legend label.
    pub reference: Option<(f64, &'a str)>,
    /// A marker across each group at this value (`None`: no marker), with
    /// its legend label.
    pub markers: Option<(&'a [Option<f64>], &'a str)>,
}

/// Draws a legend of `(colour, label, kind)` entries into `area` from the
/// top; `kind` 0 = filled box, 1 = solid line, 2 = dashed line.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    heading: &str,
    entries: &[(RGBColor, String, u8)],
) -> Result<(), String> {
    let mut y = 30;
    area.draw(&Text::new(
        heading.to_string(),
        (8, y - 16),
        (FONT, 15).into_font().style(FontStyle::Bold),
    ))
    .map_err(err)?;
    for (c, label, kind) in entries {
        match kind {
            0 => area
                .draw(&Rectangle::new([(8, y), (26, y + 14)], c.filled()))
                .map_err(err)?,
            1 => area
                .draw(&PathElement::new(
                    vec![(6, y + 7), (28, y + 7)],
                    c.stroke_width(3),
                ))
                .map_err(err)?,
            _ => {
                for x in [6, 16] {
                    area.draw(&PathElement::new(
                        vec![(x, y + 7), (x + 7, y + 7)],
                        c.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
            }
        }
        area.draw(&Text::new(label.clone(), (34, y), (FONT, 14)))
            .map_err(err)?;
        y += 24;
    }
    Ok(())
}

/// Writes a grouped bar chart to `path`.
pub fn bar_chart(path: &Path, c: &BarChart<'_>) -> Result<(), String> {
    let groups = c.groups.len().max(1);
    let width = (220 + 110 * groups as u32).max(900);
    let root = SVGBackend::new(path, (width + 280, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (plot, side) = root.split_horizontally(width);
    let mut top = c.reference.map(|r| r.0).unwrap_or(0.0);
    for (_, bars) in c.series {
        for b in bars {
            top = top.max(b.value.unwrap_or(0.0));
        }
    }
    if let Some((m, _)) = c.markers {
        top = top.max(m.iter().flatten().cloned().fold(0.0, f64::max));
    }
    let top = if top > 0.0 { top * 1.12 } else { 1.0 };
    let names = c.groups.to_vec();
    let label = move |x: &f64| -> String {
        let g = x.floor();
        if g >= 0.0 && (x - g - 0.5).abs() < 1e-9 {
            names.get(g as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(&plot)
        .caption(c.title, (FONT, 20))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..groups as f64, 0f64..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        // Key points every 0.5: group centres get names, borders ticks.
        .x_labels(2 * groups + 1)
        .x_label_formatter(&label)
        .x_label_style((FONT, 15))
        .y_label_style((FONT, 13))
        .x_desc("kernel")
        .y_desc(c.y_desc)
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(err)?;
    let n = c.series.len().max(1) as f64;
    let slot = 0.8 / n;
    let mut entries = Vec::new();
    for (s, (name, bars)) in c.series.iter().enumerate() {
        let colour = PALETTE[s % PALETTE.len()];
        entries.push((colour, name.clone(), 0u8));
        for (g, b) in bars.iter().enumerate() {
            let Some(v) = b.value else { continue };
            let x0 = g as f64 + 0.1 + s as f64 * slot;
            let x1 = x0 + slot * 0.92;
            chart
                .draw_series([Rectangle::new([(x0, 0.0), (x1, v)], colour.filled())])
                .map_err(err)?;
            if !b.ok {
                chart
                    .draw_series([Text::new(
                        "\u{2717}",
                        ((x0 + x1) / 2.0 - slot * 0.2, v + top * 0.05),
                        (FONT, 16).into_font().color(&RED),
                    )])
                    .map_err(err)?;
            }
        }
    }
    if let Some((y, name)) = c.reference {
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, y), (groups as f64, y)],
                8,
                5,
                GREY.stroke_width(2),
            ))
            .map_err(err)?;
        entries.push((GREY, name.to_string(), 2));
    }
    if let Some((marks, name)) = c.markers {
        for (g, m) in marks.iter().enumerate() {
            if let Some(m) = m {
                let (x0, x1) = (g as f64 + 0.06, g as f64 + 0.94);
                chart
                    .draw_series([PathElement::new(
                        vec![(x0, *m), (x1, *m)],
                        BLACK.stroke_width(3),
                    )])
                    .map_err(err)?;
            }
        }
        entries.push((BLACK, name.to_string(), 1));
    }
    let any_failed = c.series.iter().any(|(_, b)| b.iter().any(|b| !b.ok));
    if any_failed {
        entries.push((RED, "\u{2717} output not verified".into(), 1));
    }
    legend(&side.margin(40, 0, 0, 0), "scheduler", &entries)?;
    root.present().map_err(err)?;
    Ok(())
}

/// One series of a scaling plot: `(legend label, colour, (work-items, seconds)
/// points)`.
pub type ScalingSeries = (String, RGBColor, Vec<(f64, f64)>);

/// `v` with at most 3 significant digits and no trailing zeros.
fn sig(v: f64) -> String {
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let t = format!("{v:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// Seconds with a unit that keeps the figure short: `2.5 s`, `12.5 ms`.
pub fn seconds_label(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", sig(s))
    } else if s >= 1e-3 {
        format!("{} ms", sig(s * 1e3))
    } else {
        format!("{} \u{b5}s", sig(s * 1e6))
    }
}

/// Writes a log-log plot of time against work-items to `path`.
pub fn scaling_chart(path: &Path, title: &str, series: &[ScalingSeries]) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    // Plotted in log space with our own ticks: x = log2(work-items) with a
    // tick per power of two, y = log10(seconds) with a tick per decade.
    let logged: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.2.iter()
                .filter(|(x, y)| *x > 0.0 && *y > 0.0)
                .map(|(x, y)| (x.log2(), y.log10()))
                .collect()
        })
        .collect();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in logged.iter().flatten() {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (10.0, 16.0, -3.0, 0.0);
    }
    let (x0, x1) = (x0.floor() - 0.5, x1.ceil() + 0.5);
    let (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    let on_integer = |v: f64| (v - v.round()).abs() < 1e-6;
    let x_label = |x: &f64| {
        if on_integer(*x) {
            format!("2^{}", x.round() as i64)
        } else {
            String::new()
        }
    };
    let y_label = |y: &f64| {
        if on_integer(*y) {
            seconds_label(10f64.powi(y.round() as i32))
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 20))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_labels((x1 - x0) as usize + 1)
        .y_labels((y1 - y0) as usize + 1)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .light_line_style(TRANSPARENT)
        .x_desc("problem size (work-items, log scale)")
        .y_desc("time per run (log scale)")
        .axis_desc_style((FONT, 15))
        .x_label_style((FONT, 13))
        .y_label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    for ((name, colour, _), points) in series.iter().zip(&logged) {
        let colour = *colour;
        chart
            .draw_series(LineSeries::new(
                points.iter().cloned(),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Writes a Gantt chart of `report`'s packages to `path`: one row per CPU
/// worker or GPU queue, one rectangle per package, coloured by device.
pub fn timeline_chart(path: &Path, title: &str, report: &Report) -> Result<(), String> {
    // Rows top to bottom in device order, lanes within a device in order.
    // With several GPUs, each GPU's rows carry its number among the
    // report's GPUs (the report's order: engine order).
    let mut rows: Vec<(usize, usize, String)> = Vec::new();
    let several = report
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Gpu)
        .count()
        > 1;
    let mut gpu = 0;
    for (d, dev) in report.devices.iter().enumerate() {
        let which = if several {
            format!("GPU {gpu}")
        } else {
            "GPU".to_string()
        };
        for lane in 0..dev.claimants.max(1) {
            let name = match dev.kind {
                DeviceKind::Cpu => format!("CPU worker {lane}"),
                DeviceKind::Gpu if dev.claimants > 1 => format!("{which} queue {lane}"),
                DeviceKind::Gpu => format!("{which} queue"),
            };
            rows.push((d, lane, name));
        }
        // A staged GPU's transfers: one more row, lane `claimants`.
        if report.packages.transfers().iter().any(|t| t.device == d) {
            rows.push((d, dev.claimants.max(1), format!("{which} transfers")));
        }
        gpu += usize::from(dev.kind == DeviceKind::Gpu);
    }
    let n = rows.len().max(1);
    let height = (140 + 34 * n as u32).max(300);
    let root = SVGBackend::new(path, (1180, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (plot, side) = root.split_horizontally(900);
    let end = report
        .packages
        .iter()
        .map(|p| p.end_s)
        .fold(report.time_s, f64::max)
        .max(1e-9);
    let (scale, unit) = if end >= 1.0 {
        (1.0, "s")
    } else if end >= 1e-3 {
        (1e3, "ms")
    } else {
        (1e6, "\u{b5}s")
    };
    let names: Vec<String> = rows.iter().map(|r| r.2.clone()).collect();
    let row_label = move |y: &f64| -> String {
        // Row 0 is drawn at the top.
        let r = y.floor();
        if r >= 0.0 && (y - r - 0.5).abs() < 1e-9 {
            names
                .get(names.len().saturating_sub(1 + r as usize))
                .cloned()
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, (FONT, 17))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(110)
        .build_cartesian_2d(0f64..end * scale * 1.02, 0f64..n as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        // Key points every 0.5: row centres get names, borders ticks.
        .y_labels(2 * n + 1)
        .y_label_formatter(&row_label)
        .y_desc("device / lane")
        .x_desc(format!("time since the run started ({unit})"))
        .axis_desc_style((FONT, 15))
        .x_label_style((FONT, 13))
        .y_label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    let y_of = |device: usize, lane: usize| -> f64 {
        let idx = rows
            .iter()
            .position(|r| r.0 == device && r.1 == lane)
            .unwrap_or(0);
        (n - 1 - idx) as f64
    };
    for p in &report.packages {
        let Some(dev) = report.devices.get(p.device) else {
            continue;
        };
        let colour = device_colour(dev.kind);
        let y = y_of(p.device, p.lane);
        let corners = [
            (p.start_s * scale, y + 0.12),
            (p.end_s.max(p.start_s) * scale, y + 0.88),
        ];
        chart
            .draw_series([
                Rectangle::new(corners, colour.mix(0.85).filled()),
                Rectangle::new(corners, WHITE.stroke_width(1)),
            ])
            .map_err(err)?;
    }
    for t in report.packages.transfers() {
        let Some(dev) = report.devices.get(t.device) else {
            continue;
        };
        let colour = if t.upload {
            UPLOAD_COLOUR
        } else {
            DOWNLOAD_COLOUR
        };
        let y = y_of(t.device, dev.claimants.max(1));
        let corners = [
            (t.start_s * scale, y + 0.2),
            (t.end_s.max(t.start_s) * scale, y + 0.8),
        ];
        chart
            .draw_series([Rectangle::new(corners, colour.mix(0.6).filled())])
            .map_err(err)?;
    }
    // Each device's last finish, as a dashed vertical line.
    let mut entries = Vec::new();
    for dev in &report.devices {
        let colour = device_colour(dev.kind);
        let share = if report.items > 0 {
            100.0 * dev.items as f64 / report.items as f64
        } else {
            0.0
        };
        entries.push((
            colour,
            format!(
                "{}: {} packages, {share:.0}% of items",
                dev.kind.to_string().to_uppercase(),
                dev.packages
            ),
            0u8,
        ));
        if dev.packages > 0 {
            let x = dev.finish_s * scale;
            chart
                .draw_series(DashedLineSeries::new(
                    [(x, 0.0), (x, n as f64)],
                    6,
                    4,
                    colour.stroke_width(2),
                ))
                .map_err(err)?;
        }
    }
    let moved = |up: bool| -> u64 {
        let spans = report.packages.transfers().iter();
        spans.filter(|t| t.upload == up).map(|t| t.bytes).sum()
    };
    if !report.packages.transfers().is_empty() {
        let mb = |b: u64| b as f64 / 1e6;
        entries.push((
            UPLOAD_COLOUR,
            format!("upload: {:.2} MB", mb(moved(true))),
            0,
        ));
        entries.push((
            DOWNLOAD_COLOUR,
            format!("download: {:.2} MB", mb(moved(false))),
            0,
        ));
    }
    entries.push((GREY, "dashed: each device's last finish".into(), 2));
    legend(&side.margin(40, 0, 0, 0), "one box = one package", &entries)?;
    for (i, dev) in report.devices.iter().enumerate() {
        side.draw(&Text::new(
            short(&dev.name, 34),
            (8, 40 + 24 * (entries.len() as i32 + 1) + 20 * i as i32),
            (FONT, 12).into_font().color(&device_colour(dev.kind)),
        ))
        .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('\u{2026}');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(seconds_label(0.0125), "12.5 ms");
        assert_eq!(seconds_label(2.5), "2.5 s");
        assert_eq!(seconds_label(100e-6), "100 \u{b5}s");
        assert_eq!(short("abcdef", 4), "abc\u{2026}");
    }
}
