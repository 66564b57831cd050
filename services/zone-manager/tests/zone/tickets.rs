//! Node control is the control plane's: the zone-manager writes into each worker's config the
//! ticket key of its placement (`runner:<group>/<zone>`) and nothing of its own, signs every
//! call to a node for that placement, and a worker takes no other ticket — not one minted with
//! the key a neighbouring group's node holds (its code can read its own config).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use ramen_access::{AudienceKeys, Caller, TicketKeys, audience};
use ramen_node_contract::{NodeConfig, TicketKey};
use ramen_proto::common::v1 as common;
use ramen_proto::runner::v1::StatusRequest;
use ramen_proto::runner::v1::runner_service_client::RunnerServiceClient;

use crate::support::{Harness, JWT_SECRET};

const MINUTE: Duration = Duration::from_secs(60);

/// `Status` on the node at `address`, carrying `ticket`.
async fn status(address: &str, ticket: &str) -> Result<String, tonic::Status> {
    let mut client = RunnerServiceClient::connect(format!("http://{address}")).await.unwrap();
    let mut request = tonic::Request::new(StatusRequest {});
    request.metadata_mut().insert(ramen_access::TICKET_HEADER, ticket.parse().unwrap());
    client.status(request).await.map(|s| s.into_inner().group)
}

#[tokio::test]
async fn each_placement_holds_its_own_key_and_its_nodes_take_only_its_tickets() {
    let mut h = Harness::start().await;
    for group in ["team-a", "team-b"] {
        h.configured(group, "local-a", "c1").await;
        assert!(h.restart(group, "local-a", common::Track::Worker, MINUTE).await.ready, "{group}");
    }
    let master = TicketKeys::from_secrets(JWT_SECRET, "");
    let config_of =
        |group: &str| h.placement_dir(group, "local-a").join("workers/worker-0/node.toml");
    let expected = |group: &str| -> Vec<TicketKey> {
        let keys = master.audience(&audience::runner(group, "local-a"));
        keys.keys().map(|k| TicketKey::new(*k)).collect()
    };
    for group in ["team-a", "team-b"] {
        let path = config_of(group);
        let config = NodeConfig::load(&path).unwrap();
        assert_eq!(config.ticket_keys, expected(group), "{group}: its placement's key");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(JWT_SECRET), "{group}: the control plane's secret is not there");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{group}: the config is the worker's alone");
    }
    assert_ne!(expected("team-a"), expected("team-b"));

    // team-b's code reads team-b's config and signs with the key in it.
    let stolen = *NodeConfig::load(&config_of("team-b")).unwrap().ticket_keys[0].expose();
    let worker_a = h.workers("team-a", "local-a").await.remove(0);
    let worker_b = h.workers("team-b", "local-a").await.remove(0);
    let attacker = Caller::acting_as(ramen_proto::metadata::ACTOR_ZONE_MANAGER);
    let now = ramen_access::ticket::now_ms();
    let own_audience =
        AudienceKeys::from_keys(&audience::runner("team-b", "local-a"), stolen, None);
    let claiming_a = AudienceKeys::from_keys(&audience::runner("team-a", "local-a"), stolen, None);
    for (what, ticket) in [
        ("a ticket for team-b's placement", own_audience.sign(&attacker, now)),
        ("team-b's key claiming team-a's placement", claiming_a.sign(&attacker, now)),
        (
            "the control plane's ticket for team-b",
            master.sign(&attacker, &audience::runner("team-b", "local-a"), now),
        ),
    ] {
        let refused = status(&worker_a.admin_address, &ticket).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{what}: {refused:?}");
    }
    // What that key is good for: team-b's own nodes, for a minute.
    assert_eq!(
        status(&worker_b.admin_address, &own_audience.sign(&attacker, now)).await.unwrap(),
        "team-b"
    );
    // The zone-manager's own calls still reach team-a's node: its probe read the loaded commit
    // through `/status` with a ticket for team-a (live policy pushes: `policy.rs`).
    assert_eq!(worker_a.loaded_commit, "c1");
    h.stop().await;
}
