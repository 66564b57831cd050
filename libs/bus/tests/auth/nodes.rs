//! A node's credentials: its own load subject, nothing else.

use std::time::Duration;

use futures::StreamExt;
use ramen_bus::auth::{Role, node_load_subject};
use ramen_bus::testing::OperatorNats;
use ramen_bus::{Bus, BusError, EventStreamSpec, KvSpec, WorkStreamSpec};

use crate::support::{assert_refused, refused_publish};

#[tokio::test]
async fn a_connection_without_credentials_is_refused() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let err = Bus::connect(&nats.url(), "anonymous").await.unwrap_err();
    assert!(matches!(err, BusError::Rejected { .. }), "{err:?}");
    assert!(err.to_string().contains("authorization violation"), "{err}");
    Ok(())
}

/// The streams and bucket an attacker would go after, created as the services create them.
async fn platform(nats: &OperatorNats) -> anyhow::Result<Bus> {
    let deployer = nats.connect(Role::Deployer).await?;
    deployer
        .ensure_work_stream(&WorkStreamSpec {
            name: "RAMEN_JOBS".into(),
            subjects: vec!["ramen.jobs.v1.deploy".into()],
            dlq_name: "RAMEN_JOBS_DLQ".into(),
            ..WorkStreamSpec::default()
        })
        .await?;
    deployer.kv(&KvSpec { bucket: "ramen-job-locks".into(), ..KvSpec::default() }).await?;
    let events = EventStreamSpec {
        name: "RAMEN_EVENTS".into(),
        subjects: vec!["ramen.events.v1.>".into()],
        ..EventStreamSpec::default()
    };
    deployer.ensure_event_stream(&events).await?;
    Ok(deployer)
}

#[tokio::test]
async fn a_node_publishes_its_own_load_and_nothing_else() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    platform(&nats).await?;
    let watcher = nats.connect_unrestricted().await?;
    let mut everything = watcher.client().subscribe(">").await?;
    watcher.client().flush().await?;

    let credentials = nats.node_minter().mint("victim", "z1")?;
    let node = Bus::connect_as(&nats.url(), "runner-1", Some(&credentials)).await?;
    let own = node_load_subject("victim", "z1");
    node.client().publish(own.clone(), "{}".into()).await?;
    node.client().flush().await?;
    let first = tokio::time::timeout(Duration::from_secs(5), everything.next()).await?;
    assert_eq!(first.map(|m| m.subject.to_string()), Some(own));

    // Each reach beyond its own subject is refused by the server.
    for subject in [
        "ramen.events.v1.zone.deleted".to_owned(),
        node_load_subject("other", "z1"),
        node_load_subject("victim", "z2"),
        "ramen.jobs.v1.deploy".to_owned(),
        "$JS.API.STREAM.DELETE.RAMEN_JOBS".to_owned(),
        "$JS.API.STREAM.PURGE.RAMEN_EVENTS".to_owned(),
        "$JS.API.STREAM.INFO.RAMEN_JOBS".to_owned(),
        "$KV.ramen-job-locks.job.j-1".to_owned(),
    ] {
        refused_publish(&node, &subject).await;
    }
    let _reader = node.client().subscribe("ramen.>").await?;
    node.client().flush().await?;
    assert_refused(&node, "subscription", "ramen.>").await;

    // Nothing the node sent after its own report reached anyone, and the streams are intact.
    let leaked = tokio::time::timeout(Duration::from_millis(500), everything.next()).await;
    assert!(
        leaked.is_err(),
        "a refused message was delivered: {:?}",
        leaked.map(|m| m.map(|m| m.subject))
    );
    for name in ["RAMEN_JOBS", "RAMEN_EVENTS", "KV_ramen-job-locks"] {
        let mut stream = watcher.jetstream().get_stream(name).await?;
        assert_eq!(stream.info().await?.state.messages, 0, "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn node_credentials_are_stable_per_placement() -> anyhow::Result<()> {
    let nats = OperatorNats::start().await?;
    let minter = nats.node_minter();
    let once = minter.mint("docs", "eu-1")?;
    assert_eq!(once, minter.mint("docs", "eu-1")?, "a config rendered twice must not change");
    assert_ne!(once, minter.mint("docs", "eu-2")?);
    assert_ne!(once, minter.mint("other", "eu-1")?);
    let err = minter.mint("docs", "eu.*").unwrap_err().to_string();
    assert!(err.contains("eu.*"), "{err}");
    // A node connects with them even though its key was never registered anywhere.
    Bus::connect_as(&nats.url(), "runner", Some(&once)).await?;
    Ok(())
}

#[tokio::test]
async fn the_node_signing_key_mints_nothing_but_load_reporters() -> anyhow::Result<()> {
    // Whoever holds the zone-manager's signing key could sign a user that claims more
    // permissions; the account's scope for that key overrides them.
    use ramen_bus::auth::jwt::{self, Permissions, Rule};
    let nats = OperatorNats::start().await?;
    platform(&nats).await?;
    let keys = nkeys::KeyPair::from_seed(&nats.keys.node_signing_seed()?)?;
    let user = nkeys::KeyPair::new_user();
    let greedy = Permissions { publish: Rule::default(), subscribe: Rule::default() };
    let mut claims =
        serde_json::json!({"sub": user.public_key(), "name": "greedy", "nats": greedy});
    claims["nats"]["issuer_account"] = nats.keys.account().into();
    claims["nats"]["tags"] = serde_json::json!(["group:g", "zone:z"]);
    claims["nats"]["type"] = "user".into();
    claims["nats"]["version"] = 2.into();
    let token = jwt::sign(claims, &keys)?;
    let credentials = ramen_bus::auth::Credentials::new(token, user.seed()?)?;
    // The server lets it in with the scope's permissions, not the ones it claims.
    let bus = Bus::connect_as(&nats.url(), "greedy", Some(&credentials)).await?;
    refused_publish(&bus, "ramen.events.v1.zone.deleted").await;
    refused_publish(&bus, &node_load_subject("victim", "z1")).await;
    Ok(())
}

/// Call records: a node's batches land in the calls stream with JetStream's ack (which needs
/// the node's own inbox), a batch for another placement is refused, and so is reading another
/// placement's inbox, where its acks and anything else addressed to it arrive.
#[tokio::test]
async fn a_node_stores_its_own_call_records_and_reads_only_its_own_inbox() -> anyhow::Result<()> {
    use ramen_bus::auth::{CALLS_DLQ, CALLS_STREAM, NODE_CALLS_FILTER, node_calls_subject};
    let nats = OperatorNats::start().await?;
    platform(&nats).await?;
    let auth = nats.connect(Role::Auth).await?;
    auth.ensure_work_stream(&WorkStreamSpec {
        name: CALLS_STREAM.into(),
        subjects: vec![NODE_CALLS_FILTER.into()],
        dlq_name: CALLS_DLQ.into(),
        ..WorkStreamSpec::default()
    })
    .await?;

    let credentials = nats.node_minter().mint("victim", "z1")?;
    let node = Bus::connect_as(&nats.url(), "runner-1", Some(&credentials)).await?;
    let ack = node
        .jetstream()
        .publish(node_calls_subject("victim", "z1"), "{\"records\":[]}".into())
        .await?
        .await?;
    assert_eq!(ack.stream, CALLS_STREAM, "stored, and the ack reached the node");

    refused_publish(&node, &node_calls_subject("other", "z1")).await;
    let _spy = node.client().subscribe("_INBOX_node.other.z1.>").await?;
    node.client().flush().await?;
    assert_refused(&node, "subscription", "_INBOX_node.other.z1.>").await;

    let mut stream = auth.jetstream().get_stream(CALLS_STREAM).await?;
    assert_eq!(stream.info().await?.state.messages, 1, "only the node's own batch");
    Ok(())
}
