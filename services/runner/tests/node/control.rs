//! Who may drive a node: `RunnerService` (gRPC) and the admin port's `/status` take only a
//! caller ticket signed for this node's placement (`runner:<group>/<zone>`); `/healthz`,
//! `/readyz` and `/metrics` stay open to whoever reaches the admin port. Group code runs beside
//! the node and reaches these ports, so without the gate it could freeze the node's policy
//! (`UpdatePolicy` with `version = u64::MAX`), drain it, or load another snapshot.

use ramen_proto::common::v1::{NodePolicy, Snapshot};
use ramen_proto::runner::v1::runner_service_client::RunnerServiceClient;
use ramen_proto::runner::v1::{DrainRequest, ReloadRequest, StatusRequest, UpdatePolicyRequest};
use tonic::transport::Channel;

use crate::support::{self, TestNode};

/// `message` carrying `ticket` in `x-ramen-caller`, as the control plane's client sends it.
fn with<T>(message: T, ticket: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(ticket) = ticket {
        request.metadata_mut().insert(ramen_access::TICKET_HEADER, ticket.parse().unwrap());
    }
    request
}

async fn client(node: &TestNode) -> RunnerServiceClient<Channel> {
    RunnerServiceClient::connect(format!("http://{}", node.worker().grpc_addr)).await.unwrap()
}

fn snapshot(node: &TestNode) -> Snapshot {
    let configured = node.worker().config.snapshot.clone().unwrap();
    Snapshot {
        commit: configured.commit,
        location: configured.key,
        digest: format!("sha256:{}", configured.digest),
        ..Default::default()
    }
}

/// Every `RunnerService` call with `ticket`, each answer's code and message.
async fn every_call(node: &TestNode, ticket: Option<&str>) -> Vec<(&'static str, tonic::Status)> {
    let mut client = client(node).await;
    let freeze = NodePolicy { version: u64::MAX, ..Default::default() };
    let mut refused = Vec::new();
    let mut note = |call: &'static str, answer: Result<(), tonic::Status>| {
        if let Err(status) = answer {
            refused.push((call, status));
        }
    };
    let update = UpdatePolicyRequest { policy: Some(freeze) };
    note("UpdatePolicy", client.update_policy(with(update, ticket)).await.map(|_| ()));
    let reload = ReloadRequest { snapshot: Some(snapshot(node)) };
    note("Reload", client.reload(with(reload, ticket)).await.map(|_| ()));
    note("Status", client.status(with(StatusRequest {}, ticket)).await.map(|_| ()));
    note("Drain", client.drain(with(DrainRequest::default(), ticket)).await.map(|_| ()));
    refused
}

#[tokio::test]
async fn runner_service_takes_only_tickets_for_its_placement() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let policy_before = node.node().policy().source.version;
    let other_placement = ramen_access::audience::runner("other", support::ZONE);
    let other_zone = ramen_access::audience::runner(support::GROUP, "local-b");
    let service = support::ticket_for(ramen_access::audience::ZONE_MANAGER);
    let elsewhere = support::ticket_for(&other_placement);
    let other_zone_ticket = support::ticket_for(&other_zone);
    let stranger = ramen_access::TicketKeys::new(b"not-the-control-plane-at-all-000000", None)
        .sign(
            &ramen_access::Caller::acting_as("zone-manager"),
            &ramen_access::audience::runner(support::GROUP, support::ZONE),
            ramen_access::ticket::now_ms(),
        );
    for (what, ticket, says) in [
        ("no ticket", None, "carries no caller ticket".to_owned()),
        ("a ticket for a service", Some(service.as_str()), "meant for \"zone-manager\"".to_owned()),
        ("another placement's ticket", Some(elsewhere.as_str()), format!("{other_placement:?}")),
        ("another zone's ticket", Some(other_zone_ticket.as_str()), format!("{other_zone:?}")),
        ("a ticket under another key", Some(stranger.as_str()), "does not verify".to_owned()),
    ] {
        let refused = every_call(&node, ticket).await;
        let calls: Vec<&str> = refused.iter().map(|(call, _)| *call).collect();
        assert_eq!(calls, ["UpdatePolicy", "Reload", "Status", "Drain"], "{what}: all refused");
        for (call, status) in &refused {
            assert_eq!(status.code(), tonic::Code::Unauthenticated, "{what}: {call}: {status:?}");
            assert!(status.message().contains(&says), "{what}: {call}: {}", status.message());
        }
        assert_eq!(node.node().policy().source.version, policy_before, "{what}: policy unchanged");
        assert!(!node.node().is_draining(), "{what}: not drained");
        assert!(node.node().is_ready(), "{what}: still serving");
    }

    // The control plane's ticket for this placement: every call goes through.
    let ticket = support::ticket();
    let mut client = client(&node).await;
    let status = client.status(with(StatusRequest {}, Some(&ticket))).await.unwrap().into_inner();
    assert_eq!((status.group.as_str(), status.zone.as_str()), (support::GROUP, support::ZONE));
    let update = UpdatePolicyRequest {
        policy: Some(NodePolicy {
            version: policy_before + 1,
            key_hashes: vec![ramen_proto::common::v1::KeyHash {
                sha256_hex: ramen_node_contract::key_hash(support::KEY),
                ..Default::default()
            }],
            ..Default::default()
        }),
    };
    let applied = client.update_policy(with(update, Some(&ticket))).await.unwrap().into_inner();
    assert!(applied.applied);
    assert_eq!(node.node().policy().source.version, policy_before + 1);
    let reload = ReloadRequest { snapshot: Some(snapshot(&node)) };
    let reloaded = client.reload(with(reload, Some(&ticket))).await.unwrap().into_inner();
    assert_eq!(reloaded.loaded_commit, "c0ffee1");
    client.drain(with(DrainRequest::default(), Some(&ticket))).await.unwrap();
    assert!(node.node().is_draining());
    node.stop().await;
}

#[tokio::test]
async fn the_admin_port_keeps_probes_open_and_status_closed() {
    let node = support::start("examples/hello-repo", |_| {}).await;
    let http = reqwest::Client::new();
    for open in ["/healthz", "/readyz", "/metrics"] {
        let status = http.get(node.admin_url(open)).send().await.unwrap().status();
        assert_eq!(status, 200, "{open} without a ticket");
    }
    let elsewhere = support::ticket_for(&ramen_access::audience::runner("other", support::ZONE));
    for (what, ticket, says) in [
        ("no ticket", None, "carries no caller ticket (x-ramen-caller)"),
        ("another placement's ticket", Some(elsewhere), "meant for \"runner:other/local-a\""),
    ] {
        let mut request = http.get(node.admin_url("/status"));
        if let Some(ticket) = ticket {
            request = request.header(ramen_access::TICKET_HEADER, ticket);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{what}");
        let body: serde_json::Value = response.json().await.unwrap();
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{what}: {body}");
    }
    let response = http
        .get(node.admin_url("/status"))
        .header(ramen_access::TICKET_HEADER, support::ticket())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let status: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status["loaded_commit"], "c0ffee1");
    node.stop().await;
}

#[tokio::test]
async fn a_node_without_a_ticket_key_takes_no_admin_calls() {
    let node = support::start("examples/hello-repo", |config| config.ticket_keys.clear()).await;
    let ticket = support::ticket();
    let refused = every_call(&node, Some(&ticket)).await;
    assert_eq!(refused.len(), 4, "every call refused");
    for (call, status) in refused {
        assert_eq!(status.code(), tonic::Code::Unauthenticated, "{call}");
        assert!(status.message().contains("no ticket key configured"), "{call}: {status:?}");
    }
    assert!(!node.node().is_draining());
    let response = reqwest::Client::new()
        .get(node.admin_url("/status"))
        .header(ramen_access::TICKET_HEADER, ticket)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.text().await.unwrap().contains("ticket_keys"));
    assert_eq!(node.readyz().await, 200, "probes still answer");
    node.stop().await;
}
