//! Call records: batches a node publishes on its placement's subject are stored once each,
//! read back newest first by members of the group with filters and pages, and summed up.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ramen_bus::{PublishOptions, Schema, Subject};
use ramen_call_records::{CallBatch, CallRecord, Outcome};
use ramen_proto::auth::v1::*;
use ramen_proto::common::v1::PageRequest;
use tonic::Code;

use crate::support::{World, as_actor};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn record(group: &str, at_ms: i64, target: &str, caller: &str, outcome: Outcome) -> CallRecord {
    CallRecord {
        at_ms,
        group: group.into(),
        environment: "prod".into(),
        zone: "z1".into(),
        worker: "node-1".into(),
        caller_id: caller.into(),
        caller_name: format!("{caller} name"),
        method: "tools/call".into(),
        target: target.into(),
        duration_us: 1000,
        outcome,
        error_code: 0,
        request_bytes: 10,
        response_bytes: 20,
        arguments: None,
    }
}

async fn publish(world: &World, subject: &str, batch: CallBatch) {
    let (name, version) = ramen_call_records::BATCH_SCHEMA;
    let subject: Subject<CallBatch> = Subject::new(subject, Schema::new(name, version));
    world.platform.bus.publish(&subject, &batch, PublishOptions::default()).await.unwrap();
}

async fn query(
    world: &World,
    actor: &str,
    request: QueryCallsRequest,
) -> Result<QueryCallsResponse, tonic::Status> {
    world.client().query_calls(as_actor(actor, request)).await.map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_nodes_batches_are_stored_and_read_back_by_members_only() {
    let world = World::start().await;
    world.group("alpha").await;
    world.group("beta").await;
    let member = world.user("dev@alpha.dev", false).await;
    let outsider = world.user("dev@beta.dev", false).await;
    world.member("alpha", &member, Role::Member).await;
    world.member("beta", &outsider, Role::Member).await;

    let now = now_ms();
    // Records naming their placement each, as a batch may carry them.
    let records = vec![
        record("alpha", now - 3000, "notes.add", "key-a", Outcome::Ok),
        // A record naming another placement than its subject: a node writing for others.
        record("beta", now - 1500, "notes.add", "key-a", Outcome::Ok),
    ];
    let subject = "ramen.calls.v1.node.alpha.z1";
    publish(&world, subject, CallBatch { records, ..CallBatch::default() }).await;
    // As a node sends them: the batch names group, zone and worker once.
    let bare = |mut r: CallRecord| {
        (r.group, r.zone, r.worker) = (String::new(), String::new(), String::new());
        r
    };
    let records = vec![
        bare(record("alpha", now - 2000, "notes.divide", "key-b", Outcome::ToolError)),
        bare(record("alpha", now - 1000, "notes.add", "key-b", Outcome::Refused)),
    ];
    let placement = |group: &str| CallBatch {
        group: group.into(),
        zone: "z1".into(),
        worker: "node-1".into(),
        records: records.clone(),
    };
    publish(&world, subject, placement("alpha")).await;
    // A batch saying another group than its subject is dropped whole.
    publish(&world, subject, placement("beta")).await;
    let all = QueryCallsRequest { group: "alpha".into(), ..Default::default() };
    let stored = ramen_testkit::eventually("the batch is stored", Duration::from_secs(20), || {
        let (world, member, all) = (&world, &member, all.clone());
        async move {
            let calls = query(world, member, all).await.map_err(|e| e.to_string())?.calls;
            if calls.len() == 3 { Ok(calls) } else { Err(format!("{} stored", calls.len())) }
        }
    })
    .await;
    let targets: Vec<&str> = stored.iter().map(|c| c.target.as_str()).collect();
    assert_eq!(targets, ["notes.add", "notes.divide", "notes.add"], "newest first");
    assert_eq!(stored[0].outcome(), CallOutcome::Refused);
    assert_eq!(
        (stored[1].caller_id.as_str(), stored[1].caller_name.as_str()),
        ("key-b", "key-b name")
    );
    assert_eq!((stored[2].duration_us, stored[2].response_bytes), (1000, 20));
    assert!(stored.iter().all(|c| c.group == "alpha" && c.arguments_json.is_empty()));
    assert!(stored.iter().all(|c| c.zone == "z1" && c.worker == "node-1"), "filled from the batch");
    let beta = QueryCallsRequest { group: "beta".into(), ..Default::default() };
    assert!(
        query(&world, &outsider, beta).await.unwrap().calls.is_empty(),
        "the foreign record was dropped"
    );

    // Filters.
    let by = |f: &dyn Fn(&mut QueryCallsRequest)| {
        let mut request = all.clone();
        f(&mut request);
        request
    };
    let only = |r: QueryCallsResponse| r.calls.len();
    assert_eq!(
        only(query(&world, &member, by(&|r| r.target = "notes.add".into())).await.unwrap()),
        2
    );
    assert_eq!(only(query(&world, &member, by(&|r| r.caller = "key-a".into())).await.unwrap()), 1);
    assert_eq!(
        only(
            query(&world, &member, by(&|r| r.outcome = CallOutcome::ToolError as i32))
                .await
                .unwrap()
        ),
        1
    );
    assert_eq!(
        only(query(&world, &member, by(&|r| r.environment = "dev".into())).await.unwrap()),
        0
    );
    let recent = prost_types::Timestamp {
        seconds: (now - 2500) / 1000,
        nanos: (((now - 2500) % 1000) * 1_000_000) as i32,
    };
    assert_eq!(
        only(query(&world, &member, by(&move |r| r.since = Some(recent))).await.unwrap()),
        2
    );

    // Pages do not overlap.
    let first = query(
        &world,
        &member,
        by(&|r| r.page = Some(PageRequest { page_size: 2, page_token: String::new() })),
    )
    .await
    .unwrap();
    assert_eq!(first.calls.len(), 2);
    let token = first.page.unwrap().next_page_token;
    assert!(!token.is_empty());
    let second = query(
        &world,
        &member,
        QueryCallsRequest {
            page: Some(PageRequest { page_size: 2, page_token: token }),
            ..all.clone()
        },
    )
    .await
    .unwrap();
    assert_eq!(second.calls.len(), 1);
    assert_ne!(second.calls[0].id, first.calls[0].id);

    // Outsiders and bad requests.
    let refused = query(&world, &outsider, all.clone()).await.unwrap_err();
    assert!(matches!(refused.code(), Code::NotFound | Code::PermissionDenied), "{refused:?}");
    let no_group = query(&world, &member, QueryCallsRequest::default()).await.unwrap_err();
    assert_eq!(no_group.code(), Code::InvalidArgument);
    assert!(no_group.message().contains("group"), "{}", no_group.message());
    let bad = query(&world, &member, by(&|r| r.outcome = 99)).await.unwrap_err();
    assert!(bad.message().contains("outcome"), "{}", bad.message());

    // The summary counts the same calls.
    let usage = world
        .client()
        .call_usage(as_actor(
            &member,
            CallUsageRequest { group: "alpha".into(), ..Default::default() },
        ))
        .await
        .unwrap()
        .into_inner();
    let total = usage.total.unwrap();
    assert_eq!((total.calls, total.errors), (3, 2));
    assert_eq!(usage.buckets.len(), 60);
    assert_eq!(usage.targets[0].target, "notes.add");
    assert_eq!(usage.callers.len(), 2);
}
