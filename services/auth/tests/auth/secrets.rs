use base64::Engine;
use ramen_auth::{Auth, Caller};
use ramen_config::Secret;
use ramen_proto::auth::v1::*;
use tonic::Code;

use crate::support::{DEPLOYER, KEY_A, World, as_actor, config};

const VALUE: &str = "ghp_do-not-leak-0123456789";

fn set(name: &str, environment: &str, zone: &str, value: &str) -> SetSecretRequest {
    SetSecretRequest {
        group: "alpha".into(),
        name: name.into(),
        scope: Some(SecretScope { environment: environment.into(), zone: zone.into() }),
        value: value.into(),
    }
}

fn resolve(environment: &str, zone: &str) -> ResolveSecretsRequest {
    ResolveSecretsRequest {
        group: "alpha".into(),
        environment: environment.into(),
        zone: zone.into(),
    }
}

async fn admin_of_alpha(world: &World) -> String {
    world.group("alpha").await;
    let admin = world.user("admin@alpha.dev", false).await;
    world.member("alpha", &admin, Role::Admin).await;
    admin
}

#[tokio::test]
async fn values_go_in_sealed_and_come_out_only_to_the_deployer_most_specific_first() {
    let world = World::start().await;
    let admin = admin_of_alpha(&world).await;
    for (env, zone, value) in
        [("", "", "group"), ("prod", "", "env"), ("", "z1", "zone"), ("prod", "z1", VALUE)]
    {
        world.client().set_secret(as_actor(&admin, set("TOKEN", env, zone, value))).await.unwrap();
    }
    world.client().set_secret(as_actor(&admin, set("OTHER", "", "", "plain"))).await.unwrap();

    let listed = world
        .client()
        .list_secrets(as_actor(&admin, ListSecretsRequest { group: "alpha".into(), page: None }))
        .await;
    let listed = listed.unwrap().into_inner();
    assert_eq!(listed.secrets.len(), 5);
    assert!(!format!("{listed:?}").contains(VALUE));

    let pick = |response: ResolveSecretsResponse, name: &str| {
        response.secrets.into_iter().find(|s| s.name == name).map(|s| s.value).unwrap_or_default()
    };
    let exact = world
        .client()
        .resolve_secrets(as_actor(DEPLOYER, resolve("prod", "z1")))
        .await
        .unwrap()
        .into_inner();
    assert!(!format!("{exact:?}").contains(VALUE), "Debug redacts resolved values");
    assert_eq!(exact.secrets.len(), 2);
    assert_eq!(pick(exact, "TOKEN"), VALUE);
    let env_only =
        world.client().resolve_secrets(as_actor(DEPLOYER, resolve("prod", "z2"))).await.unwrap();
    assert_eq!(pick(env_only.into_inner(), "TOKEN"), "env");
    let zone_only =
        world.client().resolve_secrets(as_actor(DEPLOYER, resolve("dev", "z1"))).await.unwrap();
    assert_eq!(pick(zone_only.into_inner(), "TOKEN"), "zone");
    let repo_sync =
        world.client().resolve_secrets(as_actor(DEPLOYER, resolve("", ""))).await.unwrap();
    assert_eq!(pick(repo_sync.into_inner(), "TOKEN"), "group");

    for actor in [admin.as_str(), "zone-manager", "scheduler"] {
        let err = world
            .client()
            .resolve_secrets(as_actor(actor, resolve("prod", "z1")))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{actor}");
    }
    let delete = DeleteSecretRequest {
        group: "alpha".into(),
        name: "TOKEN".into(),
        scope: Some(SecretScope { environment: "prod".into(), zone: "z1".into() }),
    };
    world.client().delete_secret(as_actor(&admin, delete.clone())).await.unwrap();
    world.client().delete_secret(as_actor(&admin, delete)).await.expect("idempotent");
    let after =
        world.client().resolve_secrets(as_actor(DEPLOYER, resolve("prod", "z1"))).await.unwrap();
    assert_eq!(pick(after.into_inner(), "TOKEN"), "env");
}

#[tokio::test]
async fn bad_input_is_named_without_echoing_the_value() {
    let world = World::start().await;
    let admin = admin_of_alpha(&world).await;
    let bad_name = world
        .client()
        .set_secret(as_actor(&admin, set("NOT-A-NAME", "", "", VALUE)))
        .await
        .unwrap_err();
    assert_eq!(bad_name.code(), Code::InvalidArgument);
    assert!(bad_name.message().starts_with("name:") && !bad_name.message().contains(VALUE));
    let big = VALUE.repeat(5000);
    let too_big =
        world.client().set_secret(as_actor(&admin, set("BIG", "", "", &big))).await.unwrap_err();
    assert!(too_big.message().starts_with("value:") && !too_big.message().contains(VALUE));
    let bad_scope =
        world.client().set_secret(as_actor(&admin, set("X", "Prod", "", VALUE))).await.unwrap_err();
    assert!(bad_scope.message().starts_with("scope.environment"), "{}", bad_scope.message());
}

#[tokio::test]
async fn rotation_keeps_values_readable_reseal_moves_them_and_a_wrong_key_fails_closed() {
    let world = World::start().await;
    let admin = admin_of_alpha(&world).await;
    world.client().set_secret(as_actor(&admin, set("TOKEN", "", "", VALUE))).await.unwrap();
    let key_before = key_of(&world, &admin).await;
    let deployer = Caller::new(DEPLOYER, "req");
    let (store, bus) = (world.platform.store.clone(), world.platform.bus.clone());
    let b64 = |key: &[u8; 32]| Secret::new(base64::engine::general_purpose::STANDARD.encode(key));
    let key_b = [22u8; 32];

    // Rotated: B is current, A previous. Old values still open; reseal moves them to B.
    let mut rotated = config(world.dir.path(), &key_b);
    rotated.auth.secrets_previous_key = b64(&KEY_A);
    let during = Auth::open(store.clone(), bus.clone(), &rotated).await.unwrap();
    assert_eq!(
        during.resolve_secrets(&deployer, "alpha", "", "").await.unwrap()[0].value.expose(),
        VALUE
    );
    let report = during.reseal_all().await.unwrap();
    assert_eq!((report.resealed, report.current), (1, 0));
    assert_eq!(during.reseal_all().await.unwrap().resealed, 0, "idempotent");

    // A dropped: resealed values still open under B alone.
    let after =
        Auth::open(store.clone(), bus.clone(), &config(world.dir.path(), &key_b)).await.unwrap();
    assert_eq!(
        after.resolve_secrets(&deployer, "alpha", "", "").await.unwrap()[0].value.expose(),
        VALUE
    );

    // Any other key: refused, and the error says nothing about the value.
    let wrong = Auth::open(store, bus, &config(world.dir.path(), &[33u8; 32])).await.unwrap();
    let err = wrong.resolve_secrets(&deployer, "alpha", "", "").await.unwrap_err();
    assert!(matches!(err, ramen_auth::AuthError::Sealing(_)), "{err:?}");
    let status = tonic::Status::from(err);
    assert_eq!(status.code(), Code::Internal);
    assert!(!status.message().contains(VALUE) && !format!("{status:?}").contains(VALUE));
    let key_now = key_of(&world, &admin).await;
    assert_ne!(key_now, key_before, "the listed key id moved to the new key");
}

async fn key_of(world: &World, admin: &str) -> String {
    let list = ListSecretsRequest { group: "alpha".into(), page: None };
    world.client().list_secrets(as_actor(admin, list)).await.unwrap().into_inner().secrets[0]
        .key_id
        .clone()
}
