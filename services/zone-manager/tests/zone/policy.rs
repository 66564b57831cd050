//! What the nodes enforce, changed through the zone-manager: IP rules (rolled and enforced),
//! packages disabled and enabled live, key hashes re-pushed when a key changes.

use std::time::Duration;

use ramen_bus::PublishOptions;
use ramen_proto::common::v1 as common;
use ramen_proto::events::v1 as ev;
use ramen_proto::zone::v1 as pb;
use ramen_testkit::eventually;
use ramen_zone_manager::store;

use crate::mcp::{Mcp, add_once};
use crate::support::{Harness, KEY, key_hash};

const MINUTE: Duration = Duration::from_secs(60);

fn rules(cidrs: &[&str]) -> pb::SetIpRulesRequest {
    pb::SetIpRulesRequest {
        group: "team".into(),
        zone: "local-a".into(),
        cidrs: cidrs.iter().map(|c| c.to_string()).collect(),
    }
}

/// What a node says it serves on: `ramen_mcp_threads` from its admin port's `/metrics`.
async fn node_threads(admin: std::net::SocketAddr) -> String {
    let url = format!("http://{admin}/metrics");
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    let line = text.lines().find(|l| l.starts_with("ramen_mcp_threads{"));
    line.and_then(|l| l.rsplit(' ').next()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn ip_rules_roll_the_workers_and_are_enforced() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    let started = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    assert_eq!(add_once(&started.workers[0].mcp_address, KEY, 1, 1).await.unwrap(), 2);
    let pid = h.worker_pid("team", "local-a", "worker-0").unwrap();
    let ports = h.worker_ports("team", "local-a", "worker-0").expect("the node wrote its ports");
    let threads = node_threads(ports.admin).await;
    assert_eq!(threads, "1", "a node serves on the one thread its config's `threads` gives");

    let excluded = h.client.set_ip_rules(rules(&["10.0.0.0/8"])).await.unwrap().into_inner();
    assert!(excluded.rolled);
    assert_eq!(excluded.placement.unwrap().ip_rules, vec!["10.0.0.0/8"]);
    assert_ne!(h.worker_pid("team", "local-a", "worker-0"), Some(pid), "the worker was rolled");
    let worker = h.workers("team", "local-a").await.remove(0);
    assert_eq!((worker.state, worker.restarts), (common::WorkerState::Ready as i32, 1));
    let refused = add_once(&worker.mcp_address, KEY, 1, 1).await.unwrap_err();
    assert_eq!(refused.status, 403, "a call from 127.0.0.1 is outside 10.0.0.0/8: {refused:?}");
    assert!(refused.body.contains("source address 127.0.0.1 is not allowed"), "{}", refused.body);
    let endpoints = h
        .client
        .list_endpoints(pb::ListEndpointsRequest { group: "team".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(endpoints.zones[0].ip_rules, vec!["10.0.0.0/8"], "the edge gets the rules too");

    let included =
        h.client.set_ip_rules(rules(&["10.0.0.0/8", "127.0.0.1"])).await.unwrap().into_inner();
    assert_eq!(included.normalized, vec!["10.0.0.0/8", "127.0.0.1/32"]);
    let worker = h.workers("team", "local-a").await.remove(0);
    assert_eq!(add_once(&worker.mcp_address, KEY, 1, 1).await.unwrap(), 2);
    let same =
        h.client.set_ip_rules(rules(&["10.0.0.0/8", "127.0.0.1/32"])).await.unwrap().into_inner();
    assert!(!same.rolled, "unchanged rules roll nothing");

    // A new size rolls the workers onto its limits.
    let size = pb::SetSizeRequest {
        group: "team".into(),
        zone: "local-a".into(),
        size: common::Size::M as i32,
    };
    assert_eq!(h.client.set_size(size).await.unwrap().into_inner().size, common::Size::M as i32);
    let worker = h.workers("team", "local-a").await.remove(0);
    assert_eq!(
        (worker.state, worker.restarts),
        (common::WorkerState::Ready as i32, 3),
        "{worker:?}"
    );
    let record = eventually("the record shows the new limits", MINUTE, || async {
        let doc =
            h.platform.store.get(store::WORKERS, "team/local-a/worker-0").await.unwrap().unwrap();
        let limits = doc.doc["limits"].as_str().unwrap_or_default().to_owned();
        if limits.contains("memory 1024Mi") { Ok(limits) } else { Err(limits) }
    })
    .await;
    assert!(record.contains("cpu 500m"), "{record}");
    h.stop().await;
}

fn package_request(package: &str) -> pb::SetPackageEnabledRequest {
    pb::SetPackageEnabledRequest {
        group: "team".into(),
        zone: "local-a".into(),
        package: package.into(),
    }
}

#[tokio::test]
async fn packages_are_disabled_and_enabled_live_and_keys_follow_auth() {
    let mut h = Harness::start().await;
    h.configured("team", "local-a", "c1").await;
    let started = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    let address = started.workers[0].mcp_address.clone();
    let pid = h.worker_pid("team", "local-a", "worker-0").unwrap();
    let report = |name: &str| common::PackageReport { name: name.into(), ..Default::default() };
    let store = pb::StorePackageReportRequest {
        group: "team".into(),
        zone: "local-a".into(),
        environment: "prod".into(),
        commit: "c1".into(),
        packages: vec![report("notes"), report("weather")],
    };
    h.client.store_package_report(store).await.unwrap();

    let session = Mcp::connect(&address, KEY).await.unwrap();
    assert!(session.tool_names().await.unwrap().contains(&"notes.add".to_owned()));
    h.client.disable_package(package_request("notes")).await.unwrap();
    let tools = session.tool_names().await.unwrap();
    assert!(
        tools.iter().all(|t| !t.starts_with("notes."))
            && tools.iter().any(|t| t.starts_with("weather.")),
        "{tools:?}"
    );
    let call = session.add(1, 2).await.unwrap();
    assert_eq!(call["error"]["code"], -32601, "{call}");
    let listed = h
        .client
        .list_packages(pb::ListPackagesRequest { group: "team".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let disabled: Vec<(String, bool)> = listed
        .packages
        .iter()
        .map(|p| (p.report.as_ref().unwrap().name.clone(), p.disabled))
        .collect();
    assert_eq!(disabled, vec![("notes".to_owned(), true), ("weather".to_owned(), false)]);

    h.client.enable_package(package_request("notes")).await.unwrap();
    assert_eq!(session.add(1, 2).await.unwrap()["result"]["structuredContent"]["result"], 3);
    assert_eq!(h.worker_pid("team", "local-a", "worker-0"), Some(pid), "applied live, no restart");

    // A key revoked in auth: McpKeyChanged → the zone-manager re-pushes what auth now lists.
    let new_key = "rk_zone_test_rotated_key";
    *h.auth.keys.lock() = vec![key_hash(new_key)];
    let event = ev::McpKeyChanged {
        meta: Some(ev::EventMeta {
            event_id: "key-event-1".into(),
            actor: "u1".into(),
            ..Default::default()
        }),
        group: "team".into(),
        key_id: "k1".into(),
        change: ev::McpKeyChange::Revoked as i32,
        ..Default::default()
    };
    let subject = ramen_service::subject::<ev::McpKeyChanged>();
    h.platform
        .bus
        .publish(&subject, &event, PublishOptions::with_msg_id("key-event-1"))
        .await
        .unwrap();
    eventually("the old key refused", MINUTE, || async {
        match add_once(&address, KEY, 1, 1).await {
            Err(refused) if refused.status == 401 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(add_once(&address, new_key, 2, 2).await.unwrap(), 4);

    let audit = crate::support::details(&h.auth.audit.lock());
    assert_eq!(
        (audit.get("package.disable"), audit.get("package.enable")),
        (Some(&1), Some(&1)),
        "{audit:?}"
    );
    h.stop().await;
}
