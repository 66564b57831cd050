//! The API around deploys: who may do what, environments listed across the caller's groups,
//! live blocked-list edits, and the Config settings.

use ramen_proto::auth::v1 as apb;
use ramen_proto::common::v1::{CallRule, McpAuth, McpAuthMode, StringList};
use ramen_proto::deployer::v1 as pb;
use ramen_proto::events::v1::SettingsChanged;

use crate::repo::Repo;
use crate::setup::group_env;
use crate::support::{MINUTE, World, as_actor, client};

#[tokio::test]
async fn roles_listing_and_settings() {
    let world = World::start().await;
    let node = world.deployer().await;
    let client = client(&node).await;
    let repo = Repo::hello();
    group_env(&world, &client, "alpha", &repo.url(), &["local-a"]).await;
    let create =
        pb::CreateGroupRequest { name: "beta".into(), repo_url: repo.url(), ..Default::default() };
    let beta =
        client.clone().create_group(as_actor(&world.admin, create)).await.unwrap().into_inner();
    assert_eq!((beta.bucket_prefix.as_str(), beta.default_ref.as_str()), ("groups/beta/", "main"));
    let env = pb::CreateEnvironmentRequest {
        group: "beta".into(),
        name: "dev".into(),
        zones: vec!["local-a".into()],
        ..Default::default()
    };
    client.clone().create_environment(as_actor(&world.admin, env)).await.unwrap();

    // A member of alpha only: sees alpha, not beta (not even that it exists), cannot create.
    let dev = world.user("dev@example.com", false).await;
    let add = apb::AddMemberRequest {
        group: "alpha".into(),
        user_id: dev.clone(),
        email: String::new(),
        role: apb::Role::Member as i32,
    };
    world.auth.clone().add_member(as_actor(&world.admin, add)).await.unwrap();
    let groups = client
        .clone()
        .list_groups(as_actor(&dev, pb::ListGroupsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(groups.groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["alpha"]);
    let envs = client
        .clone()
        .list_environments(as_actor(&dev, pb::ListEnvironmentsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        envs.environments.iter().map(|e| (e.group.as_str(), e.name.as_str())).collect::<Vec<_>>(),
        [("alpha", "prod")]
    );
    let all = client
        .clone()
        .list_environments(as_actor(&world.admin, pb::ListEnvironmentsRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(all.environments.len(), 2);
    let hidden = client
        .clone()
        .get_group(as_actor(&dev, pb::GetGroupRequest { name: "beta".into() }))
        .await
        .unwrap_err();
    assert_eq!(hidden.code(), tonic::Code::NotFound);
    let deploy = pb::StartDeployRequest {
        group: "alpha".into(),
        environment: "prod".into(),
        ..Default::default()
    };
    let denied = client.clone().start_deploy(as_actor(&dev, deploy)).await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");
    let create =
        pb::CreateGroupRequest { name: "gamma".into(), repo_url: repo.url(), ..Default::default() };
    assert_eq!(
        client.clone().create_group(as_actor(&dev, create.clone())).await.unwrap_err().code(),
        tonic::Code::PermissionDenied
    );
    assert_eq!(
        client.clone().create_group(tonic::Request::new(create)).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );
    let twice =
        pb::CreateGroupRequest { name: "beta".into(), repo_url: repo.url(), ..Default::default() };
    assert_eq!(
        client.clone().create_group(as_actor(&world.admin, twice)).await.unwrap_err().code(),
        tonic::Code::AlreadyExists
    );

    // Blocked list and zones edited; a bad entry refused and nothing stored lost.
    let update = pb::UpdateEnvironmentRequest {
        group: "alpha".into(),
        name: "prod".into(),
        blocked: Some(StringList { values: vec!["weather".into(), "notes.add".into()] }),
        verbose: Some(true),
        ..Default::default()
    };
    let env = client
        .clone()
        .update_environment(as_actor(&world.admin, update))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (env.blocked.clone(), env.verbose),
        (vec!["weather".to_owned(), "notes.add".to_owned()], true)
    );
    let bad = pb::UpdateEnvironmentRequest {
        group: "alpha".into(),
        name: "prod".into(),
        blocked: Some(StringList { values: vec!["not a name".into()] }),
        ..Default::default()
    };
    let err = client.clone().update_environment(as_actor(&world.admin, bad)).await.unwrap_err();
    assert!(err.message().contains("blocked"), "{}", err.message());
    let get = pb::GetEnvironmentRequest { group: "alpha".into(), name: "prod".into() };
    assert_eq!(
        client
            .clone()
            .get_environment(as_actor(&world.admin, get))
            .await
            .unwrap()
            .into_inner()
            .blocked,
        env.blocked
    );

    // MCP authentication: the platform default until set; checked (each refusal naming the
    // field, nothing stored lost); kept and answered resolved, with the resource URL.
    let get = || pb::GetEnvironmentRequest { group: "alpha".into(), name: "prod".into() };
    let env =
        client.clone().get_environment(as_actor(&world.admin, get())).await.unwrap().into_inner();
    let auth = env.auth.clone().unwrap();
    assert!(env.auth_inherited, "no mode of its own yet");
    assert_eq!(auth.mode(), McpAuthMode::Keys, "the platform default");
    assert!(auth.resource.ends_with("/mcp/alpha/prod"), "{}", auth.resource);
    let set = |auth: McpAuth| pb::UpdateEnvironmentRequest {
        group: "alpha".into(),
        name: "prod".into(),
        auth: Some(auth),
        ..Default::default()
    };
    let no_issuer = McpAuth { mode: McpAuthMode::Oauth as i32, ..Default::default() };
    let err = client
        .clone()
        .update_environment(as_actor(&world.admin, set(no_issuer)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("auth.issuers"), "{}", err.message());
    let oauth = McpAuth {
        mode: McpAuthMode::Both as i32,
        issuers: vec!["https://idp.example.com/".into()],
        scopes: vec!["mcp:tools".into()],
        rules: vec![CallRule {
            groups: vec![" payments ".into()],
            allow: vec!["payments".into()],
            ..Default::default()
        }],
        calls_per_second: 20,
        resource: "https://evil.example.com/ignored".into(),
    };
    let env = client
        .clone()
        .update_environment(as_actor(&world.admin, set(oauth)))
        .await
        .unwrap()
        .into_inner();
    let auth = env.auth.clone().unwrap();
    assert!(!env.auth_inherited);
    assert_eq!(auth.mode(), McpAuthMode::Both);
    assert_eq!(auth.issuers, ["https://idp.example.com"], "the trailing slash dropped");
    assert_eq!(auth.rules[0].groups, ["payments"], "values trimmed");
    assert_eq!(auth.calls_per_second, 20);
    assert!(
        auth.resource.ends_with("/mcp/alpha/prod"),
        "the resource is the deployer's: {}",
        auth.resource
    );
    assert_eq!(env.blocked, ["weather", "notes.add"], "the blocked list kept");
    let bad_rule = McpAuth {
        rules: vec![CallRule {
            keys: vec!["ci".into()],
            groups: vec!["g".into()],
            allow: vec!["*".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let err =
        client.clone().update_environment(as_actor(&world.admin, set(bad_rule))).await.unwrap_err();
    assert!(err.message().contains("rule 0"), "{}", err.message());
    let kept =
        client.clone().get_environment(as_actor(&world.admin, get())).await.unwrap().into_inner();
    assert_eq!(kept.auth, env.auth, "a refused change leaves the setting as it was");
    let denied = client
        .clone()
        .update_environment(as_actor(&dev, set(McpAuth::default())))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "a member cannot change it");
    let back = McpAuth { mode: McpAuthMode::Unspecified as i32, ..Default::default() };
    let env = client
        .clone()
        .update_environment(as_actor(&world.admin, set(back)))
        .await
        .unwrap()
        .into_inner();
    assert!(
        env.auth_inherited && env.auth.unwrap().mode() == McpAuthMode::Keys,
        "back to the default"
    );

    // Settings: super admins only; the private key is sealed, never returned. (The
    // auto-rebalance settings are the rebalancer's: its tests cover them.)
    let mut changes =
        world.observer.subscribe(&ramen_service::subject::<SettingsChanged>()).await.unwrap();
    let update = pb::UpdateSettingsRequest {
        github_app_id: Some(42),
        github_app_private_key: Some("-----BEGIN RSA PRIVATE KEY-----\nMIIsecretkeymaterial\n-----END RSA PRIVATE KEY-----\n".into()),
        ..Default::default()
    };
    assert_eq!(
        client.clone().update_settings(as_actor(&dev, update.clone())).await.unwrap_err().code(),
        tonic::Code::PermissionDenied
    );
    let settings =
        client.clone().update_settings(as_actor(&world.admin, update)).await.unwrap().into_inner();
    assert!(settings.github_app_private_key_set);
    assert_eq!(settings.github_app_id, 42);
    let event = tokio::time::timeout(MINUTE, changes.next()).await.unwrap().unwrap().payload;
    assert!(event.github_app_configured);
    let stored =
        world.base.store.get("deployer_settings", "global").await.unwrap().unwrap().doc.to_string();
    assert!(!stored.contains("secretkeymaterial"), "the key is stored sealed");
    let read = client
        .clone()
        .get_settings(as_actor(&world.admin, pb::GetSettingsRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(!format!("{read:?}").contains("secretkeymaterial"));
    let moved = pb::UpdateSettingsRequest {
        auto_rebalance_interval_seconds: Some(60),
        ..Default::default()
    };
    let refused = client.clone().update_settings(as_actor(&world.admin, moved)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("auto_rebalance_interval_seconds")
            && refused.message().contains("UpdateSchedulerSettings"),
        "{}",
        refused.message()
    );
}
