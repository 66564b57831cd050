use ramen_proto::auth::v1::*;
use ramen_proto::common::v1::{AuditOutcome, PageRequest};
use tonic::Code;

use crate::support::{DEPLOYER, World, as_actor};

fn query(group: &str, actor: &str, prefix: &str, page: Option<PageRequest>) -> QueryAuditRequest {
    QueryAuditRequest {
        group: group.into(),
        actor: actor.into(),
        since: None,
        until: None,
        action_prefix: prefix.into(),
        page,
    }
}

#[tokio::test]
async fn mutations_are_audited_and_queryable_by_group_actor_time_and_action() {
    let world = World::start().await;
    world.group("alpha").await;
    world.group("beta").await;
    let admin = world.user("admin@alpha.dev", false).await;
    let root = world.user("root@example.com", true).await;
    world.member("alpha", &admin, Role::Admin).await;
    let secret = |group: &str| SetSecretRequest {
        group: group.into(),
        name: "TOKEN".into(),
        scope: None,
        value: "hunter2-secret".into(),
    };
    world.client().set_secret(as_actor(&admin, secret("alpha"))).await.unwrap();
    world.client().set_secret(as_actor(&admin, secret("beta"))).await.unwrap_err();

    let entries = world
        .client()
        .query_audit(as_actor(&admin, query("alpha", &admin, "secret.", None)))
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(
        (entry.action.as_str(), entry.target.as_str(), entry.outcome()),
        ("secret.set", "secret/TOKEN", AuditOutcome::Success)
    );
    assert_eq!(entry.request_id, "req-test");
    assert!(!format!("{entries:?}").contains("hunter2"), "never a value");
    // The refused write to beta is on beta's log, as denied.
    let beta = world
        .client()
        .query_audit(as_actor(&root, query("beta", "", "secret.", None)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(beta.entries[0].outcome(), AuditOutcome::Denied);
    assert_eq!(beta.entries[0].actor, admin);
    // Outsiders learn nothing; the whole log is for super admins.
    assert_eq!(
        world
            .client()
            .query_audit(as_actor(&admin, query("beta", "", "", None)))
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    assert_eq!(
        world
            .client()
            .query_audit(as_actor(&admin, query("", "", "", None)))
            .await
            .unwrap_err()
            .code(),
        Code::PermissionDenied
    );

    // Newest first, paged, time-bounded.
    let all = world
        .client()
        .query_audit(as_actor(&root, query("", "", "", None)))
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert!(all.len() >= 6);
    let at = |e: &AuditEntry| e.at.map(|t| (t.seconds, t.nanos)).unwrap();
    assert!(all.windows(2).all(|w| at(&w[0]) >= at(&w[1])));
    let mut seen = Vec::new();
    let mut page = Some(PageRequest { page_size: 2, page_token: String::new() });
    while let Some(p) = page.take() {
        let response = world
            .client()
            .query_audit(as_actor(&root, query("", "", "", Some(p))))
            .await
            .unwrap()
            .into_inner();
        seen.extend(response.entries.into_iter().map(|e| e.id));
        let next = response.page.unwrap().next_page_token;
        if !next.is_empty() {
            page = Some(PageRequest { page_size: 2, page_token: next });
        }
    }
    assert_eq!(seen, all.iter().map(|e| e.id.clone()).collect::<Vec<_>>());
    let cut = all[all.len() / 2].at;
    let mut bounded = query("", "", "", None);
    bounded.since = cut;
    let newer =
        world.client().query_audit(as_actor(&root, bounded)).await.unwrap().into_inner().entries;
    assert!(
        !newer.is_empty()
            && newer.len() < all.len()
            && newer.iter().all(|e| at(e) >= at(&all[all.len() / 2]))
    );
}

#[tokio::test]
async fn appends_are_idempotent_by_id() {
    let world = World::start().await;
    let entry = AuditEntry {
        id: "0190f5a0-0000-7000-8000-000000000001".into(),
        actor: "scheduler".into(),
        action: "placement.rebalance".into(),
        group: "alpha".into(),
        target: "zone/a".into(),
        outcome: AuditOutcome::Success as i32,
        ..AuditEntry::default()
    };
    let first = world
        .client()
        .append_audit(as_actor(DEPLOYER, AppendAuditRequest { entry: Some(entry.clone()) }))
        .await
        .unwrap()
        .into_inner();
    assert!(first.at.is_some() && first.request_id == "req-test");
    let changed = AuditEntry { target: "zone/b".into(), ..entry };
    let second = world
        .client()
        .append_audit(as_actor(DEPLOYER, AppendAuditRequest { entry: Some(changed) }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.target, "zone/a", "the first write stands");
    let missing = AppendAuditRequest {
        entry: Some(AuditEntry { action: "x".into(), ..AuditEntry::default() }),
    };
    assert_eq!(
        world.client().append_audit(as_actor(DEPLOYER, missing)).await.unwrap_err().code(),
        Code::InvalidArgument
    );
}
