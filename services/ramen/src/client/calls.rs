//! `ramen calls` and `ramen usage`: a group's call records newest first, and the same calls
//! summed up over an hour, a day or a week (`/api/groups/{group}/calls` and `/usage`).

use std::time::{Duration, SystemTime};

use reqwest::{Method, Url};
use serde_json::{Value, json};

use super::api::{Api, Failure, Outcome};
use super::exit;
use super::output::{print, say};

/// The filters of `ramen calls`.
#[derive(Debug, Default)]
pub struct CallsFilter {
    pub environment: Option<String>,
    pub tool: Option<String>,
    pub caller: Option<String>,
    pub outcome: Option<String>,
    /// A duration back from now (`15m`, `2h`, `7d`) or an RFC 3339 time.
    pub since: Option<String>,
}

/// The largest page the API serves.
const MAX_PAGE: usize = 1000;

/// Prints up to `limit` calls, newest first, paging as far as needed.
pub async fn calls(
    api: &mut Api,
    group: &str,
    filter: CallsFilter,
    limit: usize,
    json: bool,
) -> Outcome<()> {
    let since = filter.since.as_deref().map(|s| since_time(s, SystemTime::now()));
    let mut pairs = vec![];
    for (name, value) in [
        ("environment", filter.environment),
        ("tool", filter.tool),
        ("caller", filter.caller),
        ("outcome", filter.outcome),
        ("since", since),
    ] {
        if let Some(value) = value {
            pairs.push((name, value));
        }
    }
    pairs.push(("page_size", limit.clamp(1, MAX_PAGE).to_string()));
    let mut found: Vec<Value> = Vec::new();
    let mut token = String::new();
    loop {
        let mut query = pairs.clone();
        if !token.is_empty() {
            query.push(("page_token", token.clone()));
        }
        let page = api
            .call(Method::GET, &path(&format!("/api/groups/{group}/calls"), &query)?, None)
            .await?;
        found.extend(page["items"].as_array().into_iter().flatten().cloned());
        token = page["next_page_token"].as_str().unwrap_or_default().to_owned();
        if token.is_empty() || found.len() >= limit {
            break;
        }
    }
    found.truncate(limit);
    if json {
        print(&Value::Array(found), true, &[]);
    } else {
        let rows: Vec<Value> = found.iter().map(row).collect();
        let columns = ["time", "environment", "caller", "method", "target", "outcome", "duration"];
        print(&Value::Array(rows), false, &columns);
    }
    Ok(())
}

/// Prints the window's totals, each tool's (resource's, prompt's) figures and the busiest
/// callers.
pub async fn usage(
    api: &mut Api,
    group: &str,
    environment: Option<String>,
    window: &str,
    json: bool,
) -> Outcome<()> {
    let mut query = vec![("window", window.to_owned())];
    if let Some(environment) = environment {
        query.push(("environment", environment));
    }
    let usage =
        api.call(Method::GET, &path(&format!("/api/groups/{group}/usage"), &query)?, None).await?;
    if json {
        print(&usage, true, &[]);
        return Ok(());
    }
    say(false, &summary(&usage));
    let targets: Vec<Value> = list(&usage["targets"])
        .map(|t| {
            let mut r = figures(&t["figures"]);
            r["method"] = t["method"].clone();
            r["target"] = t["target"].clone();
            r
        })
        .collect();
    print(&Value::Array(targets), false, &["method", "target", "calls", "errors", "p50", "p99"]);
    say(false, "");
    let callers: Vec<Value> = list(&usage["callers"])
        .map(|c| {
            let mut r = figures(&c["figures"]);
            r["caller"] = json!(caller(c));
            r
        })
        .collect();
    print(&Value::Array(callers), false, &["caller", "calls", "errors", "p50", "p99"]);
    Ok(())
}

fn list(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// `path?query`, each value encoded.
fn path(base: &str, query: &[(&str, String)]) -> Outcome<String> {
    let mut url = Url::parse("http://ramen.invalid")
        .and_then(|u| u.join(base))
        .map_err(|e| Failure::new(exit::USAGE, format!("{base}: {e}")))?;
    url.query_pairs_mut().extend_pairs(query);
    Ok(format!("{}?{}", url.path(), url.query().unwrap_or_default()))
}

/// `--since`: a duration back from `now`, else passed on as it is (an RFC 3339 time; the API
/// names the parameter when it is neither).
fn since_time(since: &str, now: SystemTime) -> String {
    match humantime::parse_duration(since) {
        Ok(back) => humantime::format_rfc3339_seconds(now - back).to_string(),
        Err(_) => since.to_owned(),
    }
}

/// A call as a table row.
fn row(call: &Value) -> Value {
    json!({
        "time": call["at"],
        "environment": call["environment"],
        "caller": caller(call),
        "method": call["method"],
        "target": call["target"],
        "outcome": call["outcome"],
        "duration": micros(call["duration_us"].as_u64().unwrap_or_default()),
    })
}

/// The caller's name, else its id, else `anonymous`.
fn caller(value: &Value) -> String {
    [&value["caller_name"], &value["caller_id"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|s| !s.is_empty())
        .unwrap_or("anonymous")
        .to_owned()
}

fn figures(f: &Value) -> Value {
    let us = |k: &str| micros(f[k].as_u64().unwrap_or_default());
    json!({ "calls": f["calls"], "errors": f["errors"], "p50": us("p50_us"), "p99": us("p99_us") })
}

fn summary(usage: &Value) -> String {
    let total = &usage["total"];
    let n = |k: &str| total[k].as_u64().unwrap_or_default();
    let bucket = Duration::from_secs(usage["bucket_seconds"].as_u64().unwrap_or_default());
    let mut line = format!(
        "last {} ({} buckets): {} calls, {} errors, p50 {}, p99 {}",
        usage["window"].as_str().unwrap_or("hour"),
        humantime::format_duration(bucket),
        n("calls"),
        n("errors"),
        micros(n("p50_us")),
        micros(n("p99_us")),
    );
    if usage["truncated"].as_bool() == Some(true) {
        line.push_str(" (more calls than one summary reads: figures of the newest)");
    }
    line
}

/// Microseconds as people read them: `850µs`, `12.3ms`, `2.50s`.
fn micros(us: u64) -> String {
    match us {
        0..1_000 => format!("{us}µs"),
        1_000..1_000_000 => format!("{:.1}ms", us as f64 / 1e3),
        _ => format!("{:.2}s", us as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_duration_back_from_now_or_a_time_as_it_is() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(since_time("15m", now), "2027-01-15T07:45:00Z");
        assert_eq!(since_time("2h", now), "2027-01-15T06:00:00Z");
        assert_eq!(since_time("1d", now), "2027-01-14T08:00:00Z");
        assert_eq!(since_time("2026-12-01T00:00:00Z", now), "2026-12-01T00:00:00Z");
        assert_eq!(since_time("yesterday", now), "yesterday", "the API names what it refuses");
    }

    #[test]
    fn rows_show_the_caller_and_a_readable_duration() {
        let call = json!({ "at": "t", "environment": "prod", "caller_id": "k1", "caller_name": "",
            "method": "tools/call", "target": "notes.add", "outcome": "ok", "duration_us": 12_345 });
        let r = row(&call);
        assert_eq!((r["caller"].as_str(), r["duration"].as_str()), (Some("k1"), Some("12.3ms")));
        assert_eq!(caller(&json!({ "caller_id": "", "caller_name": "" })), "anonymous");
        assert_eq!(caller(&json!({ "caller_id": "k", "caller_name": "ci" })), "ci");
        assert_eq!((micros(850), micros(2_500_000)), ("850µs".into(), "2.50s".into()));
    }

    #[test]
    fn query_values_are_encoded() {
        let query =
            [("tool", "file:///a b?c".to_owned()), ("since", "2026-01-01T00:00:00+01:00".into())];
        let p = path("/api/groups/g/calls", &query).unwrap();
        assert_eq!(
            p,
            "/api/groups/g/calls?tool=file%3A%2F%2F%2Fa+b%3Fc&since=2026-01-01T00%3A00%3A00%2B01%3A00"
        );
    }

    #[test]
    fn the_summary_says_the_window_and_when_it_is_truncated() {
        let usage = json!({ "window": "day", "bucket_seconds": 1800, "truncated": true,
            "total": { "calls": 4, "errors": 1, "p50_us": 1000, "p99_us": 2000 } });
        let line = summary(&usage);
        assert!(
            line.starts_with("last day (30m buckets): 4 calls, 1 errors, p50 1.0ms, p99 2.0ms"),
            "{line}"
        );
        assert!(line.contains("figures of the newest"), "{line}");
    }
}
