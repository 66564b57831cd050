//! End to end with the official Python MCP client over streamable HTTP.

use serde_json::{Value, json};

use crate::pyclient;
use crate::support;

fn names(items: &Value, key: &str) -> Vec<String> {
    items.as_array().unwrap().iter().map(|i| i[key].as_str().unwrap().to_owned()).collect()
}

fn text(content: &Value) -> &str {
    content["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn official_client_uses_every_method() {
    // One item per page: every list takes several pages the client must follow by cursor.
    let node = support::start("examples/hello-repo", |config| config.page_size = 1).await;
    let out = pyclient::run("e2e", &node.url).await;

    assert_eq!(out["protocol_version"], "2025-11-25");
    assert_eq!(out["capabilities"]["tools"]["listChanged"], true, "{}", out["capabilities"]);
    assert_eq!(out["ping"], json!({}));

    let tools = names(&out["tools"], "name");
    let expected = [
        "notes.add",
        "notes.divide",
        "notes.shout",
        "notes.search",
        "weather.forecast",
        "weather.convert",
        "weather.survey",
    ];
    assert_eq!(tools, expected, "every tool, namespaced by package, across pages");
    let pages = &out["pages"];
    assert_eq!(
        (&pages["tools"], &pages["resources"], &pages["templates"], &pages["prompts"]),
        (&json!(7), &json!(2), &json!(2), &json!(2))
    );
    for tool in out["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let add = &out["tools"][0];
    assert_eq!(add["outputSchema"]["properties"]["result"]["type"], "integer", "{add}");
    assert!(out["tools"][2].get("outputSchema").is_none(), "shout has plain text output");

    assert_eq!(out["add"]["structuredContent"]["result"], 42, "{}", out["add"]);
    assert_eq!(out["add"]["isError"], false);
    let forecast = &out["forecast"]["structuredContent"];
    assert_eq!(forecast["city"], "oslo", "{forecast}");
    assert_eq!(forecast["days"].as_array().unwrap().len(), 2);
    assert_eq!(
        out["divide_by_zero"]["isError"], true,
        "a tool error is a result, not a JSON-RPC error"
    );
    assert!(text(&out["divide_by_zero"]["content"][0]).contains("cannot divide by zero"));
    assert_eq!(out["unknown_tool"]["code"], -32602, "{}", out["unknown_tool"]);

    assert_eq!(names(&out["resources"], "uri"), ["notes://index", "weather://cities"]);
    assert_eq!(
        names(&out["templates"], "uriTemplate"),
        ["notes://note/{name}", "weather://forecast/{city}"]
    );
    assert_eq!(text(&out["index"]["contents"][0]), "broth\nnoodles\nwelcome\n");
    assert_eq!(text(&out["note"]["contents"][0]), "Simmer bones for twelve hours; skim often.");
    let paris: Value = serde_json::from_str(text(&out["city_forecast"]["contents"][0])).unwrap();
    assert_eq!(paris["city"], "paris");

    assert_eq!(names(&out["prompts"], "name"), ["notes.summarize", "weather.plan_trip"]);
    assert!(
        text(&out["summarize"]["messages"][0]["content"]).contains("notes://note/broth"),
        "{}",
        out["summarize"]
    );
    assert!(
        text(&out["plan_trip"]["messages"][0]["content"]).contains("visiting Lima for 2 days"),
        "{}",
        out["plan_trip"]
    );
    assert_progress_and_logs(&out);
    node.stop().await;
}

/// `weather.survey` reports progress per station and logs twice; the client asked for
/// progress (a callback, so a progress token) and for `info` logs.
fn assert_progress_and_logs(out: &Value) {
    assert_eq!(text(&out["survey"]["content"][0]), "surveyed 4 stations in lima");
    let progress = out["progress"].as_array().unwrap();
    let values: Vec<f64> = progress.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 4.0], "every progress step, in order: {progress:?}");
    assert!(progress.iter().all(|p| p["total"] == 4.0));
    assert_eq!(progress[4]["message"], "done");
    let logs: Vec<&str> =
        out["logs"].as_array().unwrap().iter().map(|l| l["data"].as_str().unwrap()).collect();
    assert_eq!(logs, ["surveying Lima (4 stations)", "survey of Lima complete"]);
}

#[tokio::test]
async fn cancelling_a_call_stops_the_tool() {
    let node = support::start("services/runner/tests/fixtures/slow-repo", |_| {}).await;
    let out = pyclient::run("cancel", &node.url).await;
    assert_eq!(out["while_running"]["running"], 1, "{out}");
    assert_eq!(out["after_cancel"], json!({"running": 0, "finished": 0, "cancelled": 1}));
    assert!(out["completed"].is_null(), "the cancelled call must not complete: {out}");
    let posted = names_of(&out["posted"]);
    assert!(posted.contains(&"notifications/cancelled".to_owned()), "{posted:?}");
    assert!(out["seconds"].as_f64().unwrap() < 20.0, "a 30 s sleep stopped early: {out}");
    assert_eq!(node.node().in_flight(), 0);
    node.stop().await;
}

fn names_of(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn each_client_gets_its_own_session_and_delete_ends_it() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let out = pyclient::run("sessions", &node.url).await;
    let (first, second) = (names_of(&out["first"]), names_of(&out["second"]));
    assert_eq!((first.len(), second.len()), (1, 1), "{out}");
    assert_ne!(first[0], second[0], "a second client must get its own session");
    assert!(out["tools_equal"].as_bool().unwrap());
    assert!(names_of(&out["first_sent"]).contains(&"DELETE".to_owned()), "{out}");
    assert_eq!(out["stale_status"], 404, "a request on a deleted session is 404");
    assert_eq!(out["second_ping_after"], json!({}), "the other session lives on");
    assert!(node.node().sessions.is_empty(), "both clients left with DELETE");
    node.stop().await;
}

/// The official client in each of its modes on the same endpoint: `legacy` opens a
/// 2025-11-25 session, `auto` finds 2026-07-28 through `server/discover` and stays there,
/// `2026-07-28` speaks it from the first request. Every mode reaches every method.
#[tokio::test]
async fn official_client_in_each_mode() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let (legacy, auto, stateless) = tokio::join!(
        pyclient::run("legacy", &node.url),
        pyclient::run("auto", &node.url),
        pyclient::run("stateless", &node.url),
    );
    let posted = |out: &Value| names_of(&out["posted"]);
    assert_eq!(posted(&legacy)[0], "initialize", "{legacy}");
    assert_eq!(legacy["protocol_version"], "2025-11-25");
    assert_eq!(names_of(&legacy["session_ids"]).len(), 1, "legacy mode holds a session");
    assert_eq!(posted(&auto)[0], "server/discover", "{auto}");
    assert!(!posted(&auto).contains(&"initialize".to_owned()), "auto stays on 2026-07-28: {auto}");
    assert_eq!(auto["protocol_version"], "2026-07-28");
    assert!(!posted(&stateless).contains(&"initialize".to_owned()), "{stateless}");
    assert_eq!(stateless["protocol_version"], "2026-07-28");
    for out in [&legacy, &auto, &stateless] {
        assert_eq!(out["tools"].as_array().unwrap().len(), 7, "{out}");
        assert_eq!(out["add"]["structuredContent"]["result"], 2, "{out}");
        assert!(text(&out["survey"]["content"][0]).contains("oslo"), "{out}");
        assert_eq!(
            out["progress"],
            json!([0.0, 1.0, 2.0, 3.0]),
            "progress reaches every mode: {out}"
        );
        assert!(text(&out["read"]["contents"][0]).contains("paris"), "{out}");
        assert!(text(&out["prompt"]["messages"][0]["content"]).contains("broth"), "{out}");
        assert_eq!(out["unknown_tool"]["code"], -32602, "{out}");
    }
    for out in [&auto, &stateless] {
        assert!(names_of(&out["session_ids"]).is_empty(), "no session id is ever minted: {out}");
    }
    assert!(node.node().sessions.is_empty(), "legacy mode ended its session with DELETE");
    node.stop().await;
}
