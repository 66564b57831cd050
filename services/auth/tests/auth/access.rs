use ramen_proto::auth::v1::*;
use tonic::Code;

use crate::support::{DEPLOYER, World, as_actor};

struct People {
    member: String,
    admin: String,
    other_admin: String,
    root: String,
}

async fn people(world: &World) -> People {
    world.group("alpha").await;
    world.group("beta").await;
    let p = People {
        member: world.user("member@alpha.dev", false).await,
        admin: world.user("admin@alpha.dev", false).await,
        other_admin: world.user("admin@beta.dev", false).await,
        root: world.user("root@example.com", true).await,
    };
    world.member("alpha", &p.member, Role::Member).await;
    world.member("alpha", &p.admin, Role::Admin).await;
    world.member("beta", &p.other_admin, Role::Admin).await;
    p
}

async fn decision(world: &World, user: &str, group: &str, action: Action) -> Decision {
    let request = AuthorizeRequest {
        user_id: user.into(),
        group: group.into(),
        action: action as i32,
        ..Default::default()
    };
    world.client().authorize(request).await.unwrap().into_inner().decision()
}

#[tokio::test]
async fn authorize_answers_by_role_and_hides_other_groups() {
    let world = World::start().await;
    let p = people(&world).await;
    use Decision::{Allow, Deny, NotFound};
    let cases = [
        (Action::ReadGroup, [Allow, Allow, NotFound, Allow]),
        (Action::ManageSecrets, [Deny, Allow, NotFound, Allow]),
        (Action::ManageGroup, [Deny, Deny, NotFound, Allow]),
        (Action::ManageZones, [Deny, Deny, Deny, Allow]),
    ];
    for (action, expected) in cases {
        let mut got = Vec::new();
        for user in [&p.member, &p.admin, &p.other_admin, &p.root] {
            got.push(decision(&world, user, "alpha", action).await);
        }
        assert_eq!(got, expected, "{action:?}");
    }
    assert_eq!(
        decision(&world, &p.root, "gamma", Action::ReadGroup).await,
        NotFound,
        "unregistered"
    );
    assert_eq!(decision(&world, DEPLOYER, "alpha", Action::Deploy).await, Allow);
    let unknown = AuthorizeRequest {
        user_id: "no-such-user".into(),
        group: "alpha".into(),
        action: Action::ReadGroup as i32,
        ..Default::default()
    };
    assert_eq!(world.client().authorize(unknown).await.unwrap_err().code(), Code::Unauthenticated);
    let unspecified = AuthorizeRequest {
        user_id: p.root.clone(),
        group: "alpha".into(),
        action: 0,
        ..Default::default()
    };
    assert_eq!(
        world.client().authorize(unspecified).await.unwrap_err().code(),
        Code::InvalidArgument
    );
}

#[tokio::test]
async fn every_rpc_checks_its_caller() {
    let world = World::start().await;
    let p = people(&world).await;
    let add = |group: &str| AddMemberRequest {
        group: group.into(),
        user_id: String::new(),
        email: "member@alpha.dev".into(),
        role: Role::Admin as i32,
    };
    let promote = world.client().add_member(as_actor(&p.member, add("alpha"))).await.unwrap_err();
    assert_eq!(promote.code(), Code::PermissionDenied, "members cannot make themselves admins");
    let reach =
        world.client().add_member(as_actor(&p.other_admin, add("alpha"))).await.unwrap_err();
    assert_eq!(reach.code(), Code::NotFound, "an admin of beta learns nothing about alpha");
    assert_eq!(
        reach.message().replace("alpha", "gamma"),
        world.client().add_member(as_actor(&p.root, add("gamma"))).await.unwrap_err().message()
    );
    let anonymous = world.client().add_member(add("alpha")).await.unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated);
    let list_users = ListUsersRequest { page: None, email_prefix: String::new() };
    assert_eq!(
        world.client().list_users(as_actor(&p.admin, list_users.clone())).await.unwrap_err().code(),
        Code::PermissionDenied
    );
    let users =
        world.client().list_users(as_actor(&p.root, list_users)).await.unwrap().into_inner().users;
    assert!(users.len() >= 5, "the bootstrap admin and four people");
    let me = world
        .client()
        .get_user(as_actor(&p.member, GetUserRequest { user_id: p.member.clone() }))
        .await
        .unwrap();
    assert_eq!(me.into_inner().memberships.len(), 1, "users read themselves");
    let other = world
        .client()
        .get_user(as_actor(&p.member, GetUserRequest { user_id: p.admin.clone() }))
        .await;
    assert_eq!(other.unwrap_err().code(), Code::PermissionDenied);

    let added =
        world.client().add_member(as_actor(&p.admin, add("alpha"))).await.unwrap().into_inner();
    assert_eq!((added.role(), added.email.as_str()), (Role::Admin, "member@alpha.dev"));
    let members = world
        .client()
        .list_members(as_actor(&p.member, ListMembersRequest { group: "alpha".into(), page: None }))
        .await;
    assert_eq!(members.unwrap().into_inner().members.len(), 2);
}

#[tokio::test]
async fn the_last_super_admin_stays_and_purge_clears_a_group() {
    let world = World::start().await;
    let p = people(&world).await;
    // The bootstrap admin and root are super admins: one may go, not both.
    let users = world
        .client()
        .list_users(as_actor(
            &p.root,
            ListUsersRequest { page: None, email_prefix: "admin@ramen".into() },
        ))
        .await;
    let bootstrap = users.unwrap().into_inner().users.remove(0).id;
    world
        .client()
        .delete_user(as_actor(&p.root, DeleteUserRequest { user_id: bootstrap }))
        .await
        .unwrap();
    let demote = SetSuperAdminRequest { user_id: p.root.clone(), super_admin: false };
    let err = world.client().set_super_admin(as_actor(&p.root, demote)).await.unwrap_err();
    assert_eq!(err.code(), Code::Aborted);
    let delete = world
        .client()
        .delete_user(as_actor(&p.root, DeleteUserRequest { user_id: p.root.clone() }))
        .await;
    assert_eq!(delete.unwrap_err().code(), Code::Aborted);

    let key = CreateMcpKeyRequest {
        group: "alpha".into(),
        name: "k".into(),
        environments: vec![],
        zones: vec![],
        expires_at: None,
    };
    world.client().create_mcp_key(as_actor(&p.admin, key)).await.unwrap();
    let secret = SetSecretRequest {
        group: "alpha".into(),
        name: "A".into(),
        scope: None,
        value: "v".into(),
    };
    world.client().set_secret(as_actor(&p.admin, secret)).await.unwrap();
    let purge = || PurgeGroupRequest { group: "alpha".into() };
    assert_eq!(
        world.client().purge_group(as_actor(&p.admin, purge())).await.unwrap_err().code(),
        Code::PermissionDenied
    );
    let purged =
        world.client().purge_group(as_actor(DEPLOYER, purge())).await.unwrap().into_inner();
    assert_eq!(
        (purged.keys_deleted, purged.secrets_deleted, purged.memberships_deleted),
        (1, 1, 2)
    );
    let again = world.client().purge_group(as_actor(DEPLOYER, purge())).await.unwrap().into_inner();
    assert_eq!(
        again.keys_deleted + again.secrets_deleted + again.memberships_deleted,
        0,
        "idempotent"
    );
    assert_eq!(
        decision(&world, &p.root, "alpha", Action::ReadGroup).await,
        Decision::NotFound,
        "registration gone"
    );
    let register = world
        .client()
        .register_group(as_actor(&p.admin, RegisterGroupRequest { group: "delta".into() }))
        .await;
    assert_eq!(register.unwrap_err().code(), Code::PermissionDenied);
}

/// The one trust model: a call must carry a caller ticket signed with the control plane's key.
/// A bare `x-ramen-actor` (how services once named their caller) or a ticket signed with
/// another key gets UNAUTHENTICATED before any handler runs.
#[tokio::test]
async fn calls_without_a_valid_caller_ticket_are_refused() {
    use ramen_access::{Caller, TicketKeys};
    use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
    let world = World::start().await;
    let url = format!("http://{}", world.started.running.addr);
    let request = || ListUsersRequest::default();

    let plain = tonic::transport::Endpoint::from_shared(url.clone()).unwrap().connect_lazy();
    let mut unsigned = AuthServiceClient::new(plain);
    let mut spoofed = tonic::Request::new(request());
    spoofed.metadata_mut().insert("x-ramen-actor", DEPLOYER.parse().unwrap());
    let refused = unsigned.list_users(spoofed).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(refused.message().contains("x-ramen-caller"), "{}", refused.message());

    let other_key = std::sync::Arc::new(TicketKeys::new(b"not-the-control-plane-key-at-all", None));
    let forged = ramen_clients::connect_lazy(&url, None, other_key, "auth").unwrap();
    let mut forged = AuthServiceClient::new(forged);
    let refused =
        forged.list_users(Caller::acting_as(DEPLOYER).request(request())).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    assert!(refused.message().contains("signature"), "{}", refused.message());

    let allowed = world.client().list_users(as_actor(DEPLOYER, request())).await;
    assert!(allowed.is_ok(), "{allowed:?}");
}

/// Tickets carry an audience: one signed with the control plane's own key but for another
/// service — or lifted from a worker node, whose tickets are for its placement — is refused by
/// auth, which names whom it was meant for.
#[tokio::test]
async fn a_ticket_meant_for_another_audience_is_refused() {
    use ramen_access::{Caller, audience};
    use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
    let world = World::start().await;
    let url = format!("http://{}", world.started.running.addr);
    let keys = world.platform.tickets.clone();
    let node = audience::runner("team", "local-a");
    for meant_for in [audience::DEPLOYER, audience::ZONE_MANAGER, audience::REBALANCER, &node] {
        let channel = ramen_clients::connect_lazy(&url, None, keys.clone(), meant_for).unwrap();
        let mut client = AuthServiceClient::new(channel);
        let request = Caller::acting_as(DEPLOYER).request(ListUsersRequest::default());
        let refused = client.list_users(request).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{meant_for}: {refused:?}");
        let says = format!("the caller ticket is meant for {meant_for:?}, not \"auth\"");
        assert_eq!(refused.message(), says);
    }
    let channel = ramen_clients::connect_lazy(&url, None, keys, audience::AUTH).unwrap();
    let request = Caller::acting_as(DEPLOYER).request(ListUsersRequest::default());
    let allowed = AuthServiceClient::new(channel).list_users(request).await;
    assert!(allowed.is_ok(), "the same caller, signed for auth: {allowed:?}");
}
