//! The real path through `auth`: a key revoked there stops working on running workers (auth
//! publishes `McpKeyChanged`, the zone-manager asks `ListMcpKeyHashes` and pushes), and the
//! zone-manager's actions land in auth's audit log.

use std::sync::Arc;
use std::time::Duration;

use ramen_access::Caller;
use ramen_clients::{AuthClient, GrpcAuth};
use ramen_config::{Config, Secret};
use ramen_lifecycle::Shutdown;
use ramen_proto::auth::v1 as auth;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::common::v1 as common;
use ramen_proto::metadata;
use ramen_service::Platform;
use ramen_testkit::{Nats, eventually};

use crate::mcp::add_once;
use crate::support::{FakeAuth, Harness};

const MINUTE: Duration = Duration::from_secs(60);

fn as_deployer<T>(message: T) -> tonic::Request<T> {
    Caller::acting_as(metadata::ACTOR_DEPLOYER).request(message)
}

async fn start_auth(nats: &Nats, dir: &std::path::Path) -> (Platform, String) {
    let mut config = Config { data_dir: dir.to_owned(), ..Config::default() };
    let any = "127.0.0.1:0".parse().unwrap();
    (config.listen.auth, config.listen.admin) = (any, any);
    config.nats.url = nats.url();
    // The zone-manager's own: both sides of a call sign and verify with one control-plane key.
    config.auth.jwt_secret = Secret::new(crate::support::JWT_SECRET);
    config.auth.secrets_key = Secret::new("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let platform =
        Platform::open(config, &nats.url(), Shutdown::new()).await.expect("auth platform");
    let started = ramen_auth::launch(platform.clone()).await.expect("auth starts");
    (platform, format!("http://{}", started.running.addr))
}

#[tokio::test]
async fn a_key_revoked_in_auth_stops_working_on_running_workers() {
    let nats = Nats::start().await.unwrap();
    let auth_dir = tempfile::tempdir().unwrap();
    let (auth_platform, auth_url) = start_auth(&nats, auth_dir.path()).await;
    let keys = auth_platform.tickets.clone();
    let channel = ramen_clients::connect_lazy(&auth_url, None, keys.clone(), "auth").unwrap();
    let mut auth_client = AuthServiceClient::new(channel);
    auth_client
        .register_group(as_deployer(auth::RegisterGroupRequest { group: "team".into() }))
        .await
        .unwrap();
    let create =
        auth::CreateMcpKeyRequest { group: "team".into(), name: "ci".into(), ..Default::default() };
    let created = auth_client.create_mcp_key(as_deployer(create)).await.unwrap().into_inner();
    let (key_id, plaintext) = (created.key.unwrap().id, created.plaintext);

    let port = Arc::new(GrpcAuth::connect_lazy(&auth_url, keys.clone()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut h =
        Harness::start_with_auth(nats, dir, |_| {}, port, Arc::new(FakeAuth::default())).await;
    h.configured("team", "local-a", "c1").await;
    // The deploy writes the hashes auth lists for the placement.
    let port: Arc<dyn AuthClient> = Arc::new(GrpcAuth::connect_lazy(&auth_url, keys).unwrap());
    let deployer = Caller::acting_as(metadata::ACTOR_DEPLOYER);
    let hashes = port.key_hashes(&deployer, "team", "prod", "local-a").await.unwrap();
    assert_eq!(hashes.iter().map(|k| k.key_id.as_str()).collect::<Vec<_>>(), vec![key_id.as_str()]);
    let live = ramen_proto::zone::v1::UpdateLivePolicyRequest {
        group: "team".into(),
        zone: "local-a".into(),
        key_hashes: Some(ramen_proto::zone::v1::KeyHashList { keys: hashes }),
        ..Default::default()
    };
    h.client.update_live_policy(live).await.unwrap();
    let started = h.restart("team", "local-a", common::Track::Worker, MINUTE).await;
    let address = started.workers[0].mcp_address.clone();
    assert_eq!(add_once(&address, &plaintext, 20, 22).await.unwrap(), 42);

    let revoke = auth::RevokeMcpKeyRequest { group: "team".into(), key_id };
    auth_client.revoke_mcp_key(as_deployer(revoke)).await.unwrap();
    eventually("the revoked key refused", MINUTE, || async {
        match add_once(&address, &plaintext, 1, 1).await {
            Err(refused) if refused.status == 401 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    let query = auth::QueryAuditRequest {
        group: "team".into(),
        action_prefix: "placement.".into(),
        ..Default::default()
    };
    let entries = auth_client.query_audit(as_deployer(query)).await.unwrap().into_inner().entries;
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    for action in ["placement.ensure", "placement.write_config", "placement.restart_track"] {
        assert!(actions.contains(&action), "{action} audited in auth: {actions:?}");
    }
    h.stop().await;
    auth_platform.shutdown.trigger();
}
