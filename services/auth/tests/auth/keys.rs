use std::time::Duration;

use ramen_proto::auth::v1::*;
use ramen_proto::events::v1::{McpKeyChange, McpKeyChanged};
use tonic::Code;

use crate::support::{World, as_actor};

async fn next_change(subscription: &mut ramen_bus::Subscription<McpKeyChanged>) -> McpKeyChanged {
    tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("an event in time")
        .expect("subscription open")
        .payload
}

#[tokio::test]
async fn keys_show_their_plaintext_once_list_by_prefix_and_revocation_is_published() {
    let world = World::start().await;
    world.group("alpha").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    let mut events =
        world.platform.bus.subscribe(&ramen_service::subject::<McpKeyChanged>()).await.unwrap();

    let create = CreateMcpKeyRequest {
        group: "alpha".into(),
        name: "ci".into(),
        environments: vec!["prod".into()],
        zones: vec![],
        expires_at: None,
    };
    let created =
        world.client().create_mcp_key(as_actor(&admin, create)).await.unwrap().into_inner();
    let key = created.key.clone().unwrap();
    let plaintext = created.plaintext.clone();
    assert!(plaintext.starts_with("rk_") && plaintext.len() > 40);
    assert!(plaintext.starts_with(&key.prefix) && key.prefix.len() == 11);
    assert!(!format!("{created:?}").contains(&plaintext), "Debug redacts the plaintext");
    let event = next_change(&mut events).await;
    assert_eq!((event.key_id.as_str(), event.change()), (key.id.as_str(), McpKeyChange::Created));
    assert_eq!(event.meta.unwrap().actor, admin);

    let list = ListMcpKeysRequest { group: "alpha".into(), page: None, include_revoked: false };
    let listed =
        world.client().list_mcp_keys(as_actor(&admin, list.clone())).await.unwrap().into_inner();
    assert_eq!(listed.keys.len(), 1);
    let shown = format!("{listed:?}");
    assert!(
        shown.contains(&key.prefix) && !shown.contains(&plaintext[PREFIX..]),
        "lists show the prefix only"
    );

    // The node's view: the SHA-256 of the plaintext, for the scope the key was made for.
    let hashes = |environment: &str| ListMcpKeyHashesRequest {
        group: "alpha".into(),
        environment: environment.into(),
        zone: "z1".into(),
        page: None,
    };
    let for_prod = world
        .client()
        .list_mcp_key_hashes(as_actor("zone-manager", hashes("prod")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(for_prod.keys.len(), 1);
    assert_eq!(for_prod.keys[0].sha256_hex, ramen_auth::key_hash(&plaintext));
    let for_dev = world
        .client()
        .list_mcp_key_hashes(as_actor("zone-manager", hashes("dev")))
        .await
        .unwrap()
        .into_inner();
    assert!(for_dev.keys.is_empty(), "scoped to prod");
    let denied =
        world.client().list_mcp_key_hashes(as_actor(&admin, hashes("prod"))).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied);

    let revoke = RevokeMcpKeyRequest { group: "alpha".into(), key_id: key.id.clone() };
    let revoked =
        world.client().revoke_mcp_key(as_actor(&admin, revoke.clone())).await.unwrap().into_inner();
    assert!(revoked.revoked_at.is_some());
    let event = next_change(&mut events).await;
    assert_eq!((event.key_id.as_str(), event.change()), (key.id.as_str(), McpKeyChange::Revoked));
    assert_eq!(event.environments, vec!["prod".to_owned()]);
    let again = world.client().revoke_mcp_key(as_actor(&admin, revoke)).await.unwrap().into_inner();
    assert_eq!(again.revoked_at, revoked.revoked_at, "idempotent");
    assert_eq!(
        next_change(&mut events).await.change(),
        McpKeyChange::Revoked,
        "and published again"
    );

    let live = world
        .client()
        .list_mcp_key_hashes(as_actor("zone-manager", hashes("prod")))
        .await
        .unwrap()
        .into_inner();
    assert!(live.keys.is_empty(), "revoked keys leave the node config");
    assert!(
        world
            .client()
            .list_mcp_keys(as_actor(&admin, list))
            .await
            .unwrap()
            .into_inner()
            .keys
            .is_empty()
    );
    let all = ListMcpKeysRequest { group: "alpha".into(), page: None, include_revoked: true };
    assert_eq!(
        world.client().list_mcp_keys(as_actor(&admin, all)).await.unwrap().into_inner().keys.len(),
        1
    );
}

const PREFIX: usize = 11;

#[tokio::test]
async fn keys_are_checked_and_scoped_to_their_group() {
    let world = World::start().await;
    world.group("alpha").await;
    world.group("beta").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    let create = |group: &str, name: &str| CreateMcpKeyRequest {
        group: group.into(),
        name: name.into(),
        environments: vec![],
        zones: vec![],
        expires_at: None,
    };
    let other_group =
        world.client().create_mcp_key(as_actor(&admin, create("beta", "x"))).await.unwrap_err();
    assert_eq!(other_group.code(), Code::NotFound, "another group's existence is not revealed");
    let blank =
        world.client().create_mcp_key(as_actor(&admin, create("alpha", " "))).await.unwrap_err();
    assert_eq!(blank.code(), Code::InvalidArgument);
    let past = CreateMcpKeyRequest {
        expires_at: Some(prost_types::Timestamp { seconds: 1, nanos: 0 }),
        ..create("alpha", "old")
    };
    assert_eq!(
        world.client().create_mcp_key(as_actor(&admin, past)).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    let key = world
        .client()
        .create_mcp_key(as_actor(&admin, create("alpha", "k")))
        .await
        .unwrap()
        .into_inner()
        .key
        .unwrap();
    let wrong_group = RevokeMcpKeyRequest { group: "beta".into(), key_id: key.id.clone() };
    let super_admin = world.user("root@example.com", true).await;
    let err = world.client().revoke_mcp_key(as_actor(&super_admin, wrong_group)).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "a key is revoked through its own group");
}

/// Service-account rules (with the keys here: both are what the zone-manager pushes to a
/// group's zones when auth says they changed).
#[tokio::test]
async fn setting_service_account_rules_is_versioned_and_published() {
    use ramen_proto::common::v1::Provider;
    use ramen_proto::events::v1::ServiceAccountRulesChanged;

    let world = World::start().await;
    world.group("alpha").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    let subject = ramen_service::subject::<ServiceAccountRulesChanged>();
    let mut events =
        world.platform.bus.subscribe::<ServiceAccountRulesChanged>(&subject).await.unwrap();
    let rule = ServiceAccountRule {
        provider: Provider::Aws as i32,
        permissions: vec!["s3:GetObject".into()],
        resources: vec!["arn:aws:s3:::alpha/*".into()],
        description: "read".into(),
    };
    let set = SetServiceAccountRulesRequest {
        group: "alpha".into(),
        rules: vec![rule],
        expected_version: 0,
    };
    let written =
        world.client().set_service_account_rules(as_actor(&admin, set)).await.unwrap().into_inner();
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("subscription open")
        .payload;
    assert_eq!((event.group.as_str(), event.version), ("alpha", written.version));
    assert_eq!(event.meta.unwrap().actor, admin);

    // A stale version is refused, naming the current one, and publishes nothing.
    let stale = SetServiceAccountRulesRequest {
        group: "alpha".into(),
        rules: vec![],
        expected_version: written.version + 5,
    };
    let err = world.client().set_service_account_rules(as_actor(&admin, stale)).await.unwrap_err();
    assert_eq!(err.code(), Code::Aborted, "{err:?}");
    assert!(err.message().contains(&format!("version {}", written.version)), "{}", err.message());
    let none = tokio::time::timeout(Duration::from_millis(300), events.next()).await;
    assert!(none.is_err(), "nothing published for a refused change: {none:?}");
}

/// "Last used", as the edge reports it: kept to the minute (one write a minute for a busy
/// key), for the key's own group only, and from the control plane only.
#[tokio::test]
async fn key_use_is_recorded_to_the_minute_by_the_control_plane_only() {
    let as_service = |request| as_actor(ramen_proto::metadata::ACTOR_EDGE, request);
    let world = World::start().await;
    world.group("alpha").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    let create =
        CreateMcpKeyRequest { group: "alpha".into(), name: "ci".into(), ..Default::default() };
    let key = world
        .client()
        .create_mcp_key(as_actor(&admin, create))
        .await
        .unwrap()
        .into_inner()
        .key
        .unwrap();
    assert_eq!(key.last_used_at, None, "never used");
    let at = |seconds: i64| Some(prost_types::Timestamp { seconds, nanos: 0 });
    let report = |group: &str, seconds: i64| RecordMcpKeyUseRequest {
        uses: vec![McpKeyUse { group: group.into(), key_id: key.id.clone(), at: at(seconds) }],
    };
    let t = 1_900_000_000; // 40 s past a whole minute
    let recorded = world.client().record_mcp_key_use(as_service(report("alpha", t))).await.unwrap();
    assert_eq!(recorded.into_inner().recorded, 1);
    // Within the minute: nothing written. Another group naming the key: ignored.
    let again =
        world.client().record_mcp_key_use(as_service(report("alpha", t + 15))).await.unwrap();
    assert_eq!(again.into_inner().recorded, 0);
    let other =
        world.client().record_mcp_key_use(as_service(report("beta", t + 600))).await.unwrap();
    assert_eq!(other.into_inner().recorded, 0);
    // A user may not report use.
    let err = world
        .client()
        .record_mcp_key_use(as_actor(&admin, report("alpha", t + 600)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    let listed = ListMcpKeysRequest { group: "alpha".into(), ..Default::default() };
    let listed = world.client().list_mcp_keys(as_actor(&admin, listed)).await.unwrap().into_inner();
    assert_eq!(listed.keys[0].last_used_at, at(t - t % 60), "kept to the minute");
}
