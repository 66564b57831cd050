//! `ramen up`'s supervised server in operator mode: it refuses connections without
//! credentials, and a data dir from before authentication keeps its streams.

use std::time::Duration;

use ramen_bus::auth::{BusNames, Role, SERVER_CONFIG_FILE, write_bundle};
use ramen_bus::{
    Bus, BusError, KvSpec, NatsSupervisor, PublishOptions, Schema, ServerAuth, Subject,
    SupervisorConfig,
};
use ramen_testkit::Nats;
use serde_json::{Value, json};

fn supervisor(
    data: &std::path::Path,
    auth: Option<ServerAuth>,
) -> anyhow::Result<SupervisorConfig> {
    Ok(SupervisorConfig {
        data_dir: data.to_owned(),
        binary: Some(Nats::binary()?),
        port: None,
        auth,
    })
}

#[tokio::test]
async fn a_store_from_before_authentication_keeps_its_streams() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let names = BusNames::default();
    let work = Subject::<Value>::new("ramen.jobs.v1.deploy", Schema::new("ramen.test.v1.Any", 1));

    // An installation from before: no authentication, a queued job and a held lease.
    let open = NatsSupervisor::start(supervisor(data.path(), None)?).await?;
    let bus = Bus::connect(&open.url(), "before").await?;
    bus.ensure_work_stream(&ramen_bus::WorkStreamSpec {
        name: names.jobs_stream.clone(),
        subjects: vec!["ramen.jobs.v1.deploy".into()],
        dlq_name: names.dlq_stream.clone(),
        ..Default::default()
    })
    .await?;
    bus.publish(&work, &json!({"job": "j-1"}), PublishOptions::with_msg_id("j-1")).await?;
    let locks = KvSpec { bucket: names.job_locks_bucket.clone(), ..KvSpec::default() };
    bus.kv(&locks).await?.put("job.j-1", "deployer-a".into()).await?;
    drop(bus);
    open.shutdown().await;

    // The upgrade: the same data dir, now in operator mode.
    let keys_dir = data.path().join("keys/nats");
    let keys = write_bundle(&keys_dir, &names)?;
    let auth =
        ServerAuth { config_file: keys_dir.join(SERVER_CONFIG_FILE), account: keys.account() };
    let closed = NatsSupervisor::start(supervisor(data.path(), Some(auth))?).await?;
    let refused = Bus::connect(&closed.url(), "anonymous").await.unwrap_err();
    assert!(matches!(refused, BusError::Rejected { .. }), "{refused:?}");

    let credentials = keys.credentials(Role::ControlPlane, &names)?;
    let bus = Bus::connect_as(&closed.url(), "ramen", Some(&credentials)).await?;
    let mut jobs = bus.jetstream().get_stream(&names.jobs_stream).await?;
    assert_eq!(jobs.info().await?.state.messages, 1, "the queued job survived the upgrade");
    let lease = bus.kv(&locks).await?.get("job.j-1").await?;
    assert_eq!(lease.map(|e| e.value), Some("deployer-a".into()));
    bus.publish(&work, &json!({"job": "j-2"}), PublishOptions::with_msg_id("j-2")).await?;
    bus.ping(Duration::from_secs(5)).await?;
    assert!(bus.permission_denials().is_empty(), "{:?}", bus.permission_denials());
    closed.shutdown().await;
    Ok(())
}
