//! Charts drawn by the console itself as inline SVG, rendered with the page: no script, no
//! third-party code, nothing the Content-Security-Policy has to allow (colours come from
//! classes in the stylesheet, never from `style` attributes, so the light and dark schemes
//! apply). The SVG stretches to its box (`preserveAspectRatio="none"`, strokes kept thin with
//! `non-scaling-stroke`) and all text is HTML around it, so it reads the same at 390 px and
//! at 1280 px. Each bucket carries a `<title>` with its figures for pointer and screen readers.

use maud::{Markup, html};

/// The drawing's coordinate box; the SVG scales to the width of its container.
const W: f64 = 1000.0;
const H: f64 = 200.0;

/// One series: its legend label, its colour class and a value per bucket.
pub struct Series {
    pub label: String,
    pub class: &'static str,
    pub values: Vec<f64>,
}

/// What a chart is about: its accessible name, each bucket's label, how values read.
pub struct Frame<'a> {
    pub name: &'a str,
    pub buckets: &'a [String],
    pub format: fn(f64) -> String,
}

/// The least of 1, 2 or 5 × 10ⁿ at or above `max`: axis tops people can read.
pub fn nice_max(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|top| *top >= max).unwrap_or(max)
}

/// Bars per bucket, the series stacked in order (bottom first).
pub fn stacked_bars(frame: &Frame<'_>, series: &[Series], top: Option<f64>) -> Markup {
    let n = frame.buckets.len().max(1);
    let totals: Vec<f64> = (0..n).map(|i| series.iter().map(|s| value(s, i)).sum()).collect();
    let top = top.unwrap_or_else(|| nice_max(totals.iter().copied().fold(0.0, f64::max)));
    let slot = W / n as f64;
    let body = html! {
        @for i in 0..n {
            g {
                title { (bucket_title(frame, i, totals[i], series)) }
                // A transparent full-height target, so an empty bucket still has its title.
                rect.hit x=(num(i as f64 * slot)) y="0" width=(num(slot)) height=(num(H)) {}
                @for (s, (y, h)) in series.iter().zip(stack(series, i, top)) {
                    @if h > 0.0 {
                        rect class=(s.class) x=(num(i as f64 * slot + slot * 0.1)) y=(num(y)) width=(num(slot * 0.8)) height=(num(h)) {}
                    }
                }
            }
        }
    };
    figure(frame, &legend(series.iter()), top, body)
}

/// A line per series; a bucket that is not `present` (no calls) breaks every line.
pub fn lines(frame: &Frame<'_>, series: &[Series], present: &[bool]) -> Markup {
    let n = frame.buckets.len().max(1);
    let max = series.iter().flat_map(|s| s.values.iter().copied()).fold(0.0, f64::max);
    let top = nice_max(max);
    let slot = W / n as f64;
    let x = |i: usize| i as f64 * slot + slot / 2.0;
    let y = |s: &Series, i: usize| num(H - (value(s, i) / top).min(1.0) * H);
    let body = html! {
        @for s in series {
            @for run in runs(present) {
                @let points = match run.as_slice() {
                    // One bucket alone: a short dash, since a point has no length to stroke.
                    [i] => format!("{},{} {},{}", num(x(*i) - slot * 0.3), y(s, *i), num(x(*i) + slot * 0.3), y(s, *i)),
                    _ => run.iter().map(|&i| format!("{},{}", num(x(i)), y(s, i))).collect::<Vec<_>>().join(" "),
                };
                polyline class=(s.class) points=(points) vector-effect="non-scaling-stroke" {}
            }
        }
        @for i in 0..n {
            g {
                title { (line_title(frame, i, series, present.get(i).copied().unwrap_or(false))) }
                rect.hit x=(num(i as f64 * slot)) y="0" width=(num(slot)) height=(num(H)) {}
            }
        }
    };
    figure(frame, &legend(series.iter()), top, body)
}

fn legend<'a>(series: impl Iterator<Item = &'a Series>) -> Vec<(String, &'static str)> {
    series.filter(|s| !s.label.is_empty()).map(|s| (s.label.clone(), s.class)).collect()
}

/// Horizontal share bar (a fraction of the widest), for table rows.
pub fn share(fraction: f64, class: &'static str) -> Markup {
    let width = (fraction.clamp(0.0, 1.0) * 100.0).max(0.5);
    html! {
        svg.bar viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" focusable="false" {
            rect.track x="0" y="0" width="100" height="8" {}
            rect class=(class) x="0" y="0" width=(num(width)) height="8" {}
        }
    }
}

fn figure(frame: &Frame<'_>, legend: &[(String, &'static str)], top: f64, body: Markup) -> Markup {
    let first = frame.buckets.first().cloned().unwrap_or_default();
    let last = frame.buckets.last().cloned().unwrap_or_default();
    html! {
        figure.chart {
            div.chart-axis { span { "↑ " ((frame.format)(top)) } }
            svg viewBox=(format!("0 0 {W} {H}")) preserveAspectRatio="none" role="img" aria-label=(frame.name) focusable="false" {
                @for q in [0.25, 0.5, 0.75] {
                    line.grid x1="0" x2=(num(W)) y1=(num(H * q)) y2=(num(H * q)) vector-effect="non-scaling-stroke" {}
                }
                line.axis x1="0" x2=(num(W)) y1=(num(H)) y2=(num(H)) vector-effect="non-scaling-stroke" {}
                (body)
            }
            div.chart-axis { span { (first) } span { (last) } }
            @if !legend.is_empty() {
                figcaption { ul.legend {
                    @for (label, class) in legend { li { span class={ "key " (class) } {} (label) } }
                } }
            }
        }
    }
}

fn value(s: &Series, i: usize) -> f64 {
    s.values.get(i).copied().unwrap_or(0.0)
}

/// `(y, height)` of each series' part of bucket `i`, stacked from the bottom.
fn stack(series: &[Series], i: usize, top: f64) -> Vec<(f64, f64)> {
    let mut base = 0.0;
    series
        .iter()
        .map(|s| {
            let h = value(s, i) / top * H;
            base += h;
            (H - base.min(H), h.min(H))
        })
        .collect()
}

/// Runs of consecutive buckets that have a value.
fn runs(present: &[bool]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    for (i, here) in present.iter().enumerate() {
        if *here {
            current.push(i);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn bucket_title(frame: &Frame<'_>, i: usize, total: f64, series: &[Series]) -> String {
    let label = frame.buckets.get(i).map(String::as_str).unwrap_or_default();
    let parts: Vec<String> = series
        .iter()
        .filter(|s| value(s, i) > 0.0)
        .map(|s| format!("{} {}", s.label, (frame.format)(value(s, i))))
        .collect();
    if parts.len() > 1 {
        format!("{label}: {} ({})", (frame.format)(total), parts.join(", "))
    } else {
        format!("{label}: {}", (frame.format)(total))
    }
}

fn line_title(frame: &Frame<'_>, i: usize, series: &[Series], present: bool) -> String {
    let label = frame.buckets.get(i).map(String::as_str).unwrap_or_default();
    if !present {
        return format!("{label}: no calls");
    }
    let parts: Vec<String> =
        series.iter().map(|s| format!("{} {}", s.label, (frame.format)(value(s, i)))).collect();
    format!("{label}: {}", parts.join(", "))
}

/// Coordinates with at most one decimal: small pages, same drawing.
fn num(v: f64) -> String {
    let rounded = (v * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 { format!("{rounded:.0}") } else { format!("{rounded:.1}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_tops_are_round_and_cover_the_largest_value() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.0), 5.0);
        assert_eq!(nice_max(42.0), 50.0);
        assert_eq!(nice_max(100.0), 100.0);
        assert_eq!(nice_max(101.0), 200.0);
        assert_eq!(runs(&[true, true, false, true, false]), vec![vec![0, 1], vec![3]]);
    }

    #[test]
    fn stacked_bars_draw_each_part_in_its_class_and_title_each_bucket() {
        let buckets = vec!["10:00".to_owned(), "10:01".to_owned()];
        let frame = Frame { name: "Calls", buckets: &buckets, format: |v| format!("{v}") };
        let series = vec![
            Series { label: "a".into(), class: "s0", values: vec![3.0, 0.0] },
            Series { label: "b".into(), class: "s1", values: vec![2.0, 0.0] },
        ];
        let svg = stacked_bars(&frame, &series, None).into_string();
        assert!(svg.contains(r#"class="s0" x="50" y="80" width="400" height="120""#), "{svg}");
        assert!(svg.contains(r#"class="s1" x="50" y="0" width="400" height="80""#), "{svg}");
        assert!(svg.contains("<title>10:00: 5 (a 3, b 2)</title>"), "{svg}");
        assert!(svg.contains("<title>10:01: 0</title>"), "{svg}");
        assert!(!svg.contains("style="), "the CSP allows no inline style");
    }
}
