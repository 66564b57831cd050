//! A group's Usage page, for the whole group or one environment, over the last hour, day or
//! week: calls per bucket stacked by tool (the busiest few, the rest as "other"), p50 and p99
//! latency and the error rate per bucket, then each tool's figures and the busiest callers.
//! The charts are the console's own SVG ([`crate::console::chart`]).

use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::console::Console;
use crate::console::api::enc;
use crate::console::chart::{self, Frame, Series};
use crate::console::layout::{Nav, empty, failure_page, render, section_failed};
use crate::console::model::{Figures, Usage};
use crate::console::viewer::Viewer;

/// Tools drawn on their own in the calls chart; the rest are summed as "other".
const TOP_TARGETS: usize = 5;
const WINDOWS: [(&str, &str); 3] =
    [("hour", "last hour"), ("day", "last day"), ("week", "last week")];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Filter {
    environment: String,
    window: String,
}

pub async fn page(
    State(console): State<Console>,
    viewer: Viewer,
    Path(group): Path<String>,
    Query(filter): Query<Filter>,
) -> Response {
    let window = if filter.window.is_empty() { "hour" } else { filter.window.as_str() };
    let mut usage_path = format!("/api/groups/{}/usage?window={}", enc(&group), enc(window));
    if !filter.environment.is_empty() {
        usage_path.push_str(&format!("&environment={}", enc(&filter.environment)));
    }
    let (read, usage) = tokio::join!(
        super::group_and_environments(&console, &viewer, &group),
        console.api.get::<Usage>(&viewer.ctx, usage_path),
    );
    let envs = match read {
        Ok(envs) => envs,
        Err(f) => return failure_page(&viewer, Nav::Groups, &format!("Usage of {group}"), &f),
    };
    let body = html! {
        (super::views_header(&group, "usage"))
        p.lead { "The group's MCP calls summed up: how many, how fast, how many failed, and who made them." }
        (filters(&group, &filter, window, &envs))
        @match &usage {
            Err(f) => (section_failed("the usage", f)),
            Ok(u) => (sections(u)),
        }
    };
    render(&viewer, Nav::Groups, &format!("Usage · {group}"), body)
}

fn filters(group: &str, filter: &Filter, window: &str, envs: &[String]) -> Markup {
    let action = format!("/groups/{}/usage", enc(group));
    html! {
        form.filters method="get" action=(action) {
            (super::environment_select(&filter.environment, envs))
            label { "Window"
                select name="window" {
                    @for (w, label) in WINDOWS { option value=(w) selected[window == w] { (label) } }
                }
            }
            div.actions { button.primary type="submit" { "Show" } }
        }
    }
}

fn sections(u: &Usage) -> Markup {
    let buckets: Vec<String> =
        u.buckets.iter().map(|b| label(b.start.as_deref(), &u.window)).collect();
    html! {
        section.block #usage-summary aria-labelledby="usage-summary-title" {
            h2 #usage-summary-title { "Summary" }
            (facts(&u.total))
            @if u.truncated {
                p.notice.warn role="status" { "More calls than one summary reads: these figures are those of the newest." }
            }
        }
        @if u.total.calls == 0 {
            (empty("No calls in this window.", html! { "Calls appear a few seconds after an MCP client makes them; try a longer window." }))
        } @else {
            section.block #usage-calls aria-labelledby="usage-calls-title" {
                h2 #usage-calls-title { "Calls by tool" }
                (chart::stacked_bars(&Frame { name: "Calls per bucket by tool", buckets: &buckets, format: count }, &by_target(u), None))
            }
            section.block #usage-latency aria-labelledby="usage-latency-title" {
                h2 #usage-latency-title { "Latency" }
                (latency(u, &buckets))
            }
            section.block #usage-errors aria-labelledby="usage-errors-title" {
                h2 #usage-errors-title { "Error rate" }
                (error_rate(u, &buckets))
            }
            section.block #usage-targets aria-labelledby="usage-targets-title" {
                h2 #usage-targets-title { "Tools, resources and prompts" }
                (targets(u))
            }
            section.block #usage-callers aria-labelledby="usage-callers-title" {
                h2 #usage-callers-title { "Busiest callers" }
                (callers(u))
            }
        }
    }
}

fn facts(total: &Figures) -> Markup {
    html! {
        dl.facts.compact #usage-total {
            div { dt { "Calls" } dd data-calls=(total.calls) { (total.calls) } }
            div { dt { "Errors" } dd { (total.errors) " " span.muted { "(" (percent(rate(total))) ")" } } }
            div { dt { "p50" } dd { (micros(total.p50_us)) } }
            div { dt { "p99" } dd { (micros(total.p99_us)) } }
        }
    }
}

/// The busiest targets' calls per bucket, then everything else as one series.
fn by_target(u: &Usage) -> Vec<Series> {
    let n = u.buckets.len();
    let mut series: Vec<Series> = u
        .targets
        .iter()
        .take(TOP_TARGETS)
        .enumerate()
        .map(|(i, t)| Series {
            label: t.target.clone(),
            class: ["s0", "s1", "s2", "s3", "s4"][i],
            values: t.calls_per_bucket.iter().map(|c| *c as f64).collect(),
        })
        .collect();
    if u.targets.len() > TOP_TARGETS {
        let mut other = vec![0.0; n];
        for t in &u.targets[TOP_TARGETS..] {
            for (slot, c) in other.iter_mut().zip(&t.calls_per_bucket) {
                *slot += *c as f64;
            }
        }
        series.push(Series { label: "other".into(), class: "s5", values: other });
    }
    series
}

fn latency(u: &Usage, buckets: &[String]) -> Markup {
    let present: Vec<bool> = u.buckets.iter().map(|b| b.figures.calls > 0).collect();
    let of = |f: fn(&Figures) -> u64| u.buckets.iter().map(|b| f(&b.figures) as f64).collect();
    let series = [
        Series { label: "p50".into(), class: "s0", values: of(|f| f.p50_us) },
        Series { label: "p99".into(), class: "s1", values: of(|f| f.p99_us) },
    ];
    let frame =
        Frame { name: "p50 and p99 latency per bucket", buckets, format: |v| micros(v as u64) };
    chart::lines(&frame, &series, &present)
}

fn error_rate(u: &Usage, buckets: &[String]) -> Markup {
    let rates = u.buckets.iter().map(|b| rate(&b.figures)).collect();
    let series = [Series { label: String::new(), class: "s-bad", values: rates }];
    let frame = Frame { name: "Share of calls that failed per bucket", buckets, format: percent };
    let top = u.buckets.iter().map(|b| rate(&b.figures)).fold(0.0, f64::max);
    chart::stacked_bars(
        &frame,
        &series,
        Some(if top > 0.0 { chart::nice_max(top * 100.0) / 100.0 } else { 1.0 }),
    )
}

fn targets(u: &Usage) -> Markup {
    html! {
        div.table-wrap { table #usage-targets-table {
            thead { tr { th scope="col" { "Target" } th scope="col" { "Method" } th.num scope="col" { "Calls" } th.num scope="col" { "Errors" } th.num scope="col" { "p50" } th.num scope="col" { "p99" } } }
            tbody { @for t in &u.targets {
                tr { th.wrap scope="row" { code { (t.target) } } td { code { (t.method) } } td.num { (t.figures.calls) } td.num { (t.figures.errors) } td.num { (micros(t.figures.p50_us)) } td.num { (micros(t.figures.p99_us)) } }
            } }
        } }
    }
}

fn callers(u: &Usage) -> Markup {
    let most = u.callers.first().map_or(1, |c| c.figures.calls.max(1)) as f64;
    html! {
        div.table-wrap { table #usage-callers-table {
            thead { tr { th scope="col" { "Caller" } th.num scope="col" { "Calls" } th scope="col" { span.sr { "Share" } } th.num scope="col" { "Errors" } th.num scope="col" { "p99" } } }
            tbody { @for c in &u.callers {
                tr {
                    th.wrap scope="row" {
                        @match (c.caller_name.as_str(), c.caller_id.as_str()) {
                            ("", "") => span.muted { "anonymous" },
                            ("", id) => code { (id) },
                            (name, id) => span title=(id) { (name) },
                        }
                    }
                    td.num { (c.figures.calls) }
                    td.share { (chart::share(c.figures.calls as f64 / most, "s0")) }
                    td.num { (c.figures.errors) }
                    td.num { (micros(c.figures.p99_us)) }
                }
            } }
        } }
    }
}

fn rate(f: &Figures) -> f64 {
    if f.calls == 0 { 0.0 } else { f.errors as f64 / f.calls as f64 }
}

fn count(v: f64) -> String {
    format!("{}", v.round() as u64)
}

fn percent(v: f64) -> String {
    let p = v * 100.0;
    if p == 0.0 || p >= 10.0 { format!("{p:.0}%") } else { format!("{p:.1}%") }
}

/// Microseconds as people read them: `850 µs`, `12.3 ms`, `2.50 s`.
pub fn micros(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} µs"),
        1_000..1_000_000 => format!("{:.1} ms", us as f64 / 1e3),
        _ => format!("{:.2} s", us as f64 / 1e6),
    }
}

/// A bucket's start as its window reads it: `14:05` within a day, `12-03 18:00` over a week.
fn label(start: Option<&str>, window: &str) -> String {
    let Some(at) = start.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok()) else {
        return String::new();
    };
    let time = format!("{:02}:{:02}", at.hour(), at.minute());
    if window == "week" {
        format!("{:02}-{:02} {time}", u8::from(at.month()), at.day())
    } else {
        time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::model::TargetUsage;

    #[test]
    fn the_busiest_tools_get_a_series_each_and_the_rest_one() {
        let target = |name: &str, per: Vec<u64>| TargetUsage {
            target: name.into(),
            calls_per_bucket: per,
            ..TargetUsage::default()
        };
        let u = Usage {
            buckets: vec![Default::default(), Default::default()],
            targets: (0..7).map(|i| target(&format!("t{i}"), vec![i, 1])).collect(),
            ..Usage::default()
        };
        let series = by_target(&u);
        assert_eq!(series.len(), TOP_TARGETS + 1);
        assert_eq!((series[5].label.as_str(), series[5].class), ("other", "s5"));
        assert_eq!(series[5].values, vec![11.0, 2.0], "t5 and t6 summed");
    }

    #[test]
    fn figures_read_as_people_say_them() {
        assert_eq!(
            (micros(850), micros(12_345), micros(2_500_000)),
            ("850 µs".into(), "12.3 ms".into(), "2.50 s".into())
        );
        assert_eq!(
            (percent(0.0), percent(0.025), percent(0.5)),
            ("0%".into(), "2.5%".into(), "50%".into())
        );
        assert_eq!(label(Some("2026-12-04T19:05:00Z"), "hour"), "19:05");
        assert_eq!(label(Some("2026-12-04T18:00:00Z"), "week"), "12-04 18:00");
    }
}
