//! Call records: each `tools/call`, `resources/read` and `prompts/get` the node answers (from
//! the official client) reaches the calls stream as one record saying who, what, how it ended
//! and the sizes, published as the placement's own NATS user; arguments only where the
//! environment records them, and then redacted; and what the stream does not take is counted.

use std::time::Duration;

use futures::StreamExt;
use ramen_bus::auth::{CALLS_DLQ, CALLS_STREAM, NODE_CALLS_FILTER, Role};
use ramen_bus::testing::OperatorNats;
use ramen_bus::{Bus, WorkStreamSpec};
use ramen_call_records::{CallBatch, CallRecord, Outcome, REDACTED};
use serde_json::{Value, json};

use crate::pyclient::Driver;
use crate::support::{self, KEY};

const SECRET: &str = "tok-very-secret-42";

/// The calls stream, as auth creates it.
async fn calls_stream(nats: &OperatorNats) -> Bus {
    let auth = nats.connect(Role::Auth).await.unwrap();
    auth.ensure_work_stream(&WorkStreamSpec {
        name: CALLS_STREAM.into(),
        subjects: vec![NODE_CALLS_FILTER.into()],
        dlq_name: CALLS_DLQ.into(),
        ..WorkStreamSpec::default()
    })
    .await
    .unwrap();
    auth
}

/// Every record in the stream once `count` have arrived (fails after a deadline).
async fn records(nats: &OperatorNats, count: usize) -> Vec<(String, CallRecord)> {
    let watcher = nats.connect_unrestricted().await.unwrap();
    let stream = watcher.jetstream().get_stream(CALLS_STREAM).await.unwrap();
    let consumer: async_nats::jetstream::consumer::PullConsumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::Config::default())
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let mut found = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while found.len() < count {
        let next = tokio::time::timeout_at(deadline, messages.next()).await;
        let message = next
            .unwrap_or_else(|_| {
                panic!("only {} of {count} records arrived: {found:?}", found.len())
            })
            .unwrap()
            .unwrap();
        let batch: CallBatch = serde_json::from_slice(&message.payload).unwrap();
        let subject = message.subject.to_string();
        // As auth reads it: the batch says group, zone and worker once for its records.
        found.extend(batch.into_records().into_iter().map(|r| (subject.clone(), r)));
    }
    found
}

fn find<'a>(records: &'a [(String, CallRecord)], target: &str) -> &'a CallRecord {
    &records
        .iter()
        .find(|(_, r)| r.target == target)
        .unwrap_or_else(|| panic!("{target}: {records:?}"))
        .1
}

#[tokio::test]
async fn every_call_is_recorded_with_who_what_and_how_it_ended() {
    let nats = OperatorNats::start().await.unwrap();
    calls_stream(&nats).await;
    let credentials = nats.node_minter().mint(support::GROUP, support::ZONE).unwrap();
    let node = support::start("examples/hello-repo", |c| {
        c.nats_url = nats.url();
        c.nats_credentials = ramen_node_contract::NodeCredentials(credentials.to_text());
        c.policy.environment = "prod".into();
        c.policy.record_arguments = true;
        c.policy.blocked = vec!["weather".into()];
        c.policy.key_hashes[0].id = "key-ci".into();
        c.policy.key_hashes[0].name = "ci".into();
        c.env.insert("API_TOKEN".into(), SECRET.into());
    })
    .await;
    let (mut client, _) = Driver::connect(&node.url).await;
    client.call("notes.add", json!({"a": 1, "b": 2})).await;
    let text = format!("{SECRET} in a sentence");
    client.call("notes.shout", json!({"text": text, "api_token": "hunter2"})).await;
    client.call("notes.divide", json!({"a": 1, "b": 0})).await;
    client.call("weather.forecast", json!({"city": "oslo"})).await;
    client.call("notes.nope", json!({})).await;
    client.send(json!({"op": "read", "uri": "notes://index"})).await;
    client.quit().await;

    let records = records(&nats, 6).await;
    assert_eq!(records.len(), 6, "one record per call: {records:?}");
    for (subject, record) in &records {
        assert_eq!(subject, "ramen.calls.v1.node.test.local-a");
        assert_eq!((record.group.as_str(), record.zone.as_str()), ("test", "local-a"));
        assert_eq!((record.environment.as_str(), record.worker.as_str()), ("prod", "node-1"));
        assert_eq!((record.caller_id.as_str(), record.caller_name.as_str()), ("key-ci", "ci"));
        assert!(record.at_ms > 1_700_000_000_000, "{record:?}");
        assert!(!record.to_string_lossy().contains(KEY), "never the key");
    }
    let add = find(&records, "notes.add");
    assert_eq!((add.method.as_str(), add.outcome), ("tools/call", Outcome::Ok));
    assert!(add.duration_us > 0 && add.response_bytes > 0 && add.request_bytes > 0, "{add:?}");
    assert_eq!(add.arguments, Some(json!({"a": 1, "b": 2})));

    let shout = find(&records, "notes.shout");
    let arguments = shout.arguments.as_ref().unwrap();
    assert_eq!(arguments["api_token"], REDACTED, "a secret-named field");
    assert_eq!(arguments["text"], REDACTED, "a string holding the environment's secret");

    assert_eq!(find(&records, "notes.divide").outcome, Outcome::ToolError);
    let blocked = find(&records, "weather.forecast");
    assert_eq!(blocked.outcome, Outcome::Blocked);
    let unknown = find(&records, "notes.nope");
    assert_eq!(unknown.outcome, Outcome::Error, "{unknown:?}");
    assert_ne!(unknown.error_code, 0);
    let read = find(&records, "notes://index");
    assert_eq!((read.method.as_str(), read.outcome), ("resources/read", Outcome::Ok));
    assert_eq!(node.metric("ramen_call_records_lost_total").await, Some(0.0));
    node.stop().await;
}

#[tokio::test]
async fn arguments_stay_out_unless_the_environment_records_them() {
    let nats = OperatorNats::start().await.unwrap();
    calls_stream(&nats).await;
    let credentials = nats.node_minter().mint(support::GROUP, support::ZONE).unwrap();
    let node = support::start("examples/hello-repo", |c| {
        c.nats_url = nats.url();
        c.nats_credentials = ramen_node_contract::NodeCredentials(credentials.to_text());
    })
    .await;
    let (mut client, _) = Driver::connect(&node.url).await;
    client.call("notes.shout", json!({"text": "private words"})).await;
    client.quit().await;
    let records = records(&nats, 1).await;
    let shout = find(&records, "notes.shout");
    assert_eq!(shout.arguments, None);
    assert!(shout.request_bytes >= "private words".len() as u64, "the size is kept: {shout:?}");
    let stored = serde_json::to_string(&shout).unwrap();
    assert!(!stored.contains("private words"), "{stored}");
    node.stop().await;
}

#[tokio::test]
async fn records_the_stream_does_not_take_are_counted_as_lost() {
    // No calls stream: nothing takes the node's batches.
    let nats = OperatorNats::start().await.unwrap();
    let credentials = nats.node_minter().mint(support::GROUP, support::ZONE).unwrap();
    let node = support::start("examples/hello-repo", |c| {
        c.nats_url = nats.url();
        c.nats_credentials = ramen_node_contract::NodeCredentials(credentials.to_text());
    })
    .await;
    let (mut client, _) = Driver::connect(&node.url).await;
    let answer = client.call("notes.add", json!({"a": 2, "b": 2})).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"],
        Value::from(4),
        "the call is answered: {answer}"
    );
    client.quit().await;
    ramen_testkit::eventually("the lost record is counted", Duration::from_secs(20), || {
        let node = &node;
        async move {
            match node.metric("ramen_call_records_lost_total").await {
                Some(lost) if lost >= 1.0 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    node.stop().await;
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for CallRecord {
    fn to_string_lossy(&self) -> String {
        serde_json::to_string(self).unwrap()
    }
}

/// Load reports and call records go out on one NATS connection: a fleet of nodes costs the
/// server one client per node, not one per thing a node publishes.
#[tokio::test]
async fn load_reports_and_call_records_share_one_connection() {
    let nats = OperatorNats::start().await.unwrap();
    calls_stream(&nats).await;
    let watcher = nats.connect_unrestricted().await.unwrap();
    let load_subject = ramen_bus::auth::node_load_subject(support::GROUP, support::ZONE);
    let mut reports = watcher.client().subscribe(load_subject).await.unwrap();
    let credentials = nats.node_minter().mint(support::GROUP, support::ZONE).unwrap();
    let node = support::start("examples/hello-repo", |c| {
        c.nats_url = nats.url();
        c.nats_credentials = ramen_node_contract::NodeCredentials(credentials.to_text());
        c.load_report_interval = Duration::from_millis(200);
    })
    .await;
    let (mut client, _) = Driver::connect(&node.url).await;
    client.call("notes.add", json!({"a": 1, "b": 2})).await;
    client.quit().await;
    assert_eq!(records(&nats, 1).await.len(), 1);
    let report = tokio::time::timeout(Duration::from_secs(20), reports.next()).await;
    assert!(report.expect("a load report within 20 s").is_some());

    let connz = format!("http://127.0.0.1:{}/connz", nats.nats.monitor_port);
    let connz: Value = reqwest::get(connz).await.unwrap().json().await.unwrap();
    let names: Vec<&str> = connz["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .filter(|name| name.starts_with("runner-"))
        .collect();
    assert_eq!(names, ["runner-node-1"], "one connection for both: {connz}");
    node.stop().await;
}
