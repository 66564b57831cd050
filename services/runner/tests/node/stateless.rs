//! MCP 2026-07-28 on the node's one endpoint, beside the session revisions: requests without
//! initialize or session, the envelope and header rules, cache hints, `subscriptions/listen`
//! hearing about live blocked-list changes and runtime re-lists, capability checks.

use std::time::Duration;

use serde_json::{Value, json};

use crate::modern::{Modern, VERSION, with_meta};
use crate::support;

fn result(answer: &crate::modern::Answer) -> &Value {
    &answer.body["result"]
}

#[tokio::test]
async fn stateless_requests_are_served_without_a_session() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let client = Modern::new(&node.url);

    let discover = client.call("server/discover", json!({})).await;
    assert_eq!(discover.status, 200, "{}", discover.body);
    let found = result(&discover);
    assert_eq!(found["resultType"], "complete");
    assert_eq!(
        found["supportedVersions"],
        json!([VERSION, "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(found["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "ramen");
    assert!(found["ttlMs"].as_u64().is_some() && found["cacheScope"] == "public", "{found}");

    let tools = client.call("tools/list", json!({})).await;
    let listed = result(&tools);
    assert_eq!(listed["resultType"], "complete");
    assert_eq!(listed["tools"].as_array().unwrap().len(), 7, "{listed}");
    assert_eq!(listed["ttlMs"], 60_000);
    assert_eq!(listed["cacheScope"], "public", "nothing is blocked: the packages' own list");

    let add = client
        .call("tools/call", json!({"name": "notes.add", "arguments": {"a": 40, "b": 2}}))
        .await;
    assert_eq!(add.status, 200, "{}", add.body);
    assert_eq!(result(&add)["resultType"], "complete");
    assert_eq!(result(&add)["structuredContent"]["result"], 42, "{}", add.body);
    assert!(add.headers.get("mcp-session-id").is_none(), "no session is minted");

    let read = client.call("resources/read", json!({"uri": "weather://forecast/paris"})).await;
    let contents = result(&read);
    assert_eq!(
        (contents["ttlMs"].clone(), contents["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert!(contents["contents"][0]["text"].as_str().unwrap().contains("paris"), "{contents}");
    let missing = client.call("resources/read", json!({"uri": "notes://note/nothing-here"})).await;
    assert_eq!(missing.body["error"]["code"], -32602, "2026-07-28 has no -32002: {}", missing.body);

    let prompt = client
        .call("prompts/get", json!({"name": "notes.summarize", "arguments": {"name": "broth"}}))
        .await;
    assert_eq!(result(&prompt)["resultType"], "complete", "{}", prompt.body);
    let completion = client
        .call("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "notes.summarize"}, "argument": {"name": "name", "value": "b"}}))
        .await;
    assert_eq!(result(&completion)["resultType"], "complete", "{}", completion.body);
    assert_eq!(node.node().sessions.len(), 0, "stateless traffic opens no session");
}

#[tokio::test]
async fn envelope_and_header_rules() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let client = Modern::new(&node.url);
    let code = |a: &crate::modern::Answer| {
        (a.status, a.body["error"]["code"].as_i64(), a.body["id"].clone())
    };

    let bare = Modern::read(client.request(json!(7), "tools/list", &json!({}))).await;
    assert_eq!(code(&bare), (400, Some(-32602), json!(7)), "no _meta: {}", bare.body);
    let no_caps = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}});
    let answer = Modern::read(client.request(json!(8), "tools/list", &no_caps)).await;
    assert_eq!(code(&answer).1, Some(-32602), "no clientCapabilities: {}", answer.body);

    let future = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}});
    let answer = Modern::read(client.request_with(
        json!(9),
        "server/discover",
        &future,
        &[("mcp-protocol-version", "2099-01-01")],
    ))
    .await;
    assert_eq!(code(&answer), (400, Some(-32022), json!(9)), "{}", answer.body);
    assert_eq!(
        answer.body["error"]["data"],
        json!({"supported": [VERSION], "requested": "2099-01-01"})
    );
    let answer = Modern::read(client.request(json!(10), "server/discover", &future)).await;
    assert_eq!(
        code(&answer).1,
        Some(-32020),
        "header 2026-07-28, body 2099-01-01: {}",
        answer.body
    );

    let params = with_meta(json!({"name": "notes.add", "arguments": {"a": 1, "b": 2}}));
    let lying =
        client.request_with(json!(11), "tools/call", &params, &[("mcp-name", "weather.forecast")]);
    let answer = Modern::read(lying).await;
    assert_eq!(code(&answer), (400, Some(-32020), json!(11)), "{}", answer.body);
    let answer = Modern::read(client.request_with(
        json!(12),
        "tools/list",
        &with_meta(json!({})),
        &[("mcp-method", "TOOLS/LIST")],
    ))
    .await;
    assert_eq!(code(&answer).1, Some(-32020), "header values are case-sensitive");
    let padded =
        client.request_with(json!(13), "tools/call", &params, &[("mcp-name", "  notes.add ")]);
    let no_name = client.request_with(json!(14), "tools/call", &params, &[("mcp-name", "")]);
    assert_eq!(code(&Modern::read(no_name).await).1, Some(-32020), "Mcp-Name is required");
    assert_eq!(
        Modern::read(padded).await.status,
        200,
        "whitespace around a header value is not part of it"
    );

    for method in ["ping", "logging/setLevel", "resources/subscribe", "initialize", "no/such"] {
        let answer = client.call(method, json!({})).await;
        assert_eq!(code(&answer), (404, Some(-32601), json!(1)), "{method}: {}", answer.body);
    }
    let get = client
        .http
        .get(&client.url)
        .header("mcp-protocol-version", VERSION)
        .header("accept", "text/event-stream");
    let get = get.header("authorization", format!("Bearer {}", support::KEY)).send().await.unwrap();
    assert_eq!(get.status(), 405, "no GET stream in 2026-07-28");

    // The session revision still works on the same endpoint.
    let legacy = client
        .http
        .post(&client.url)
        .header("authorization", format!("Bearer {}", support::KEY))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(legacy.status(), 200);
    assert!(legacy.headers().get("mcp-session-id").is_some(), "initialize still opens a session");
}

#[tokio::test]
async fn blocking_changes_lists_hints_and_listeners_live() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let client = Modern::new(&node.url);
    let (mut tools_stream, ack) =
        client.listen(json!("sub-1"), json!({"toolsListChanged": true, "bogus": true})).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "only what is honored"
    );
    let (mut prompts_stream, _) =
        client.listen(json!(2), json!({"promptsListChanged": true})).await;
    assert_eq!(node.node().changes.open(), 2);

    node.set_policy(|p| p.blocked = vec!["notes.add".into()]);
    let changed = tools_stream.next(Duration::from_secs(10)).await.expect("a tools change");
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1");
    let leaked = prompts_stream.next(Duration::from_millis(500)).await;
    assert!(leaked.is_none(), "a prompts-only stream hears nothing of tools: {leaked:?}");

    let tools = client.call("tools/list", json!({})).await;
    let names: Vec<&str> = result(&tools)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"notes.add") && names.len() == 6, "{names:?}");
    assert_eq!(
        result(&tools)["cacheScope"],
        "private",
        "the list is now this environment's filtered view"
    );
    let prompts = client.call("prompts/list", json!({})).await;
    assert_eq!(result(&prompts)["cacheScope"], "public", "no prompt is hidden");
    let blocked = client
        .call("tools/call", json!({"name": "notes.add", "arguments": {"a": 1, "b": 1}}))
        .await;
    assert_eq!(blocked.body["error"]["code"], -32601, "{}", blocked.body);

    node.set_policy(|p| p.blocked = vec!["weather".into()]);
    let again = tools_stream.next(Duration::from_secs(10)).await.expect("another tools change");
    assert_eq!(again["method"], "notifications/tools/list_changed");
    let prompt_change =
        prompts_stream.next(Duration::from_secs(10)).await.expect("weather's prompt went");
    assert_eq!(prompt_change["method"], "notifications/prompts/list_changed");

    // Shutting down ends each stream with the listen request's result.
    node.node().start_draining();
    let closed = tools_stream.next(Duration::from_secs(10)).await.expect("the closing result");
    assert_eq!(closed["id"], "sub-1", "{closed}");
    assert_eq!(closed["result"]["resultType"], "complete");
    assert!(tools_stream.next(Duration::from_secs(5)).await.is_none(), "then the stream ends");
    let refused = client.call("tools/list", json!({})).await;
    assert_eq!(refused.status, 503, "a draining node sends stateless requests elsewhere");
}

#[tokio::test]
async fn logs_need_a_log_level_and_progress_a_token() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let client = Modern::new(&node.url);
    let survey = |meta: Value| json!({"name": "weather.survey", "arguments": {"city": "Lima", "steps": 3}, "_meta": meta});
    let quiet = client.call("tools/call", survey(json!({"progressToken": "p-1"}))).await;
    let methods: Vec<&str> = quiet.events.iter().filter_map(|e| e["method"].as_str()).collect();
    assert!(methods.contains(&"notifications/progress"), "{methods:?}");
    assert!(!methods.contains(&"notifications/message"), "no logLevel, no logs: {methods:?}");
    assert_eq!(quiet.events[0]["params"]["progressToken"], "p-1");
    assert_eq!(result(&quiet)["resultType"], "complete", "{}", quiet.body);

    let loud = client
        .call("tools/call", survey(json!({"io.modelcontextprotocol/logLevel": "info"})))
        .await;
    let methods: Vec<&str> = loud.events.iter().filter_map(|e| e["method"].as_str()).collect();
    assert!(!methods.is_empty(), "logs at info");
    assert!(
        methods.iter().all(|m| *m == "notifications/message"),
        "no progress without a token: {methods:?}"
    );
    let picky = client
        .call("tools/call", survey(json!({"io.modelcontextprotocol/logLevel": "error"})))
        .await;
    assert!(
        picky.events.is_empty() && result(&picky)["resultType"] == "complete",
        "{:?}",
        picky.events
    );
}

#[tokio::test]
async fn tools_needing_an_undeclared_capability_get_32021() {
    let node =
        support::start("services/runner/tests/fixtures/conformance-repo", |c| c.namespace = false)
            .await;
    let client = Modern::new(&node.url);
    let sample = json!({"name": "test_sampling", "arguments": {"prompt": "hi"}});
    let answer = client.call("tools/call", sample.clone()).await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.body["error"]["code"], -32021);
    assert_eq!(answer.body["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));

    let elicit = json!({"name": "test_elicitation", "arguments": {"message": "who?"}, "_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}});
    let answer = client.call("tools/call", elicit).await;
    assert_eq!(
        answer.body["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}}),
        "{}",
        answer.body
    );
    // The runtime was told: the tool stopped, the node holds no call.
    ramen_testkit::eventually("no call left in flight", Duration::from_secs(10), || {
        let node = node.node();
        async move { if node.runtime.in_flight() == 0 { Ok(()) } else { Err(node.runtime.in_flight()) } }
    })
    .await;
}

#[tokio::test]
async fn the_official_client_completes_multi_round_trips() {
    let node = support::start("services/runner/tests/fixtures/conformance-repo", |_| {}).await;
    let out = crate::pyclient::run("multi-round", &node.url).await;
    let text = |v: &Value| v["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(text(&out["greeting"]), "Hello, Ada!", "{out}");
    assert_eq!(text(&out["multi_round"]), "Ada likes teal", "two rounds, state carried: {out}");
    assert!(text(&out["sampled"]).contains("Paris"), "{out}");
    assert_eq!(out["prompt"]["messages"][0]["content"]["text"], "Prompt with context: teal");
    // A tool written the session way (ctx.elicit, create_message): the node keeps the call
    // waiting, asks with an InputRequiredResult, and resumes it with the client's answer.
    assert_eq!(
        text(&out["elicited"]),
        r#"User response: action=accept, content={"username":"Ada","email":"teal"}"#,
        "{out}"
    );
    assert_eq!(text(&out["sampled_mid_call"]), "LLM response: Paris", "{out}");
    let asked: Vec<&str> =
        out["asked"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(asked.len(), 7, "{asked:?}");
    assert!(asked.contains(&"Who are you?"), "{asked:?}");
    let calls = out["posted"].as_array().unwrap().iter().filter(|m| *m == "tools/call").count();
    assert_eq!(calls, 11, "each question is one more stateless request: {out}");
    assert!(node.node().parked.is_empty(), "no call left waiting");
}

#[tokio::test]
async fn a_call_asking_mid_call_waits_for_the_retry() {
    let node = support::start("services/runner/tests/fixtures/conformance-repo", |_| {}).await;
    let client = Modern::new(&node.url);
    let elicit = |extra: Value| {
        let mut params = json!({"name": "test_elicitation", "arguments": {"message": "Who?"},
            "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        params
    };
    let first = client.call("tools/call", elicit(json!({}))).await;
    let asked = result(&first);
    assert_eq!(asked["resultType"], "input_required", "{}", first.body);
    let (key, question) = asked["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "Who?");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("r1.") && state.ends_with(".node-1"), "{state}");
    assert_eq!(node.node().parked.len(), 1);
    assert_eq!(node.node().in_flight(), 0, "a waiting call holds no in-flight slot");

    // A retry must be the same request: another tool cannot pick the call up.
    let other = json!({"name": "test_simple_text", "arguments": {}, "requestState": state});
    let refused = client.call("tools/call", other).await;
    assert_eq!(refused.body["error"]["code"], -32602, "{}", refused.body);
    assert_eq!(node.node().parked.len(), 1, "still waiting");

    // Without the answer the call asks again, under a new state; the old one is spent.
    let again = client.call("tools/call", elicit(json!({"requestState": state}))).await;
    let state2 = result(&again)["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state2, state);
    assert!(
        result(&again)["inputRequests"].get(key).is_some(),
        "the same question: {}",
        again.body
    );
    let spent = client.call("tools/call", elicit(json!({"requestState": state}))).await;
    assert_eq!(spent.body["error"]["code"], -32602, "{}", spent.body);

    let answer =
        json!({"action": "accept", "content": {"username": "ada", "email": "a@example.com"}});
    let done = client
        .call(
            "tools/call",
            elicit(json!({"requestState": state2, "inputResponses": {key: answer}})),
        )
        .await;
    assert_eq!(result(&done)["resultType"], "complete", "{}", done.body);
    let text = result(&done)["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#""username":"ada""#), "{text}");
    assert!(node.node().parked.is_empty());
    let forged = format!("r1.{}.node-1", "0".repeat(32));
    let forged = client.call("tools/call", elicit(json!({"requestState": forged}))).await;
    assert_eq!(forged.body["error"]["code"], -32602, "{}", forged.body);
}
