use ramen_proto::auth::v1::*;
use tonic::Code;

use crate::support::{World, as_actor};

#[tokio::test]
async fn the_one_time_password_works_until_it_is_changed_and_then_never_again() {
    let world = World::start().await;
    let admin = world.started.bootstrap.clone().expect("local mode bootstraps an admin");
    assert_eq!(admin.email, ramen_auth::LOCAL_DEFAULT_EMAIL);
    assert!(!format!("{admin:?}").contains(admin.one_time_password()), "Debug hides it");
    let otp = admin.one_time_password().to_owned();
    let status = world
        .client()
        .get_bootstrap_status(GetBootstrapStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(status.has_users && status.bootstrap_password_pending);

    let login = world.login(&admin.email, &otp).await.expect("the one-time password logs in");
    assert!(login.must_change_password);
    let user = login.user.unwrap();
    assert!(user.super_admin && user.must_change_password);

    // Until it is changed, nothing but ChangePassword works.
    let create = CreateUserRequest {
        email: "x@example.com".into(),
        password: String::new(),
        super_admin: false,
    };
    let refused = world.client().create_user(as_actor(&user.id, create)).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(
        ramen_proto::metadata::ErrorReason::of(&refused),
        Some(ramen_proto::metadata::ErrorReason::PasswordChangeRequired),
        "{refused:?}"
    );
    let authorize = AuthorizeRequest {
        user_id: user.id.clone(),
        group: String::new(),
        action: Action::Admin as i32,
        ..Default::default()
    };
    let decision = world.client().authorize(authorize.clone()).await.unwrap().into_inner();
    assert_eq!(decision.decision(), Decision::Deny);

    let change = ChangePasswordRequest {
        user_id: user.id.clone(),
        current_password: otp.clone(),
        new_password: "the operator's own passphrase".into(),
    };
    let changed = world
        .client()
        .change_password(as_actor(&user.id, change.clone()))
        .await
        .unwrap()
        .into_inner();
    assert!(!changed.must_change_password);
    let status = world
        .client()
        .get_bootstrap_status(GetBootstrapStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(status.has_users && !status.bootstrap_password_pending);
    assert_eq!(
        world.client().authorize(authorize).await.unwrap().into_inner().decision(),
        Decision::Allow
    );

    // The one-time password is spent: neither login nor another change accepts it.
    assert_eq!(world.login(&admin.email, &otp).await.unwrap_err().code(), Code::Unauthenticated);
    let again = world.client().change_password(as_actor(&user.id, change)).await.unwrap_err();
    assert_eq!(again.code(), Code::Unauthenticated);
    world
        .login(&admin.email, "the operator's own passphrase")
        .await
        .expect("the new password works");

    // A later boot finds users and creates nobody.
    let rerun = world.started.auth.bootstrap(Some("other@example.com".into())).await.unwrap();
    assert!(rerun.is_none());
}

#[tokio::test]
async fn admin_created_users_without_a_password_get_a_one_time_password() {
    let world = World::start().await;
    let request = CreateUserRequest {
        email: "fi@example.com".into(),
        password: String::new(),
        super_admin: false,
    };
    let created = world
        .client()
        .create_user(as_actor(crate::support::DEPLOYER, request))
        .await
        .unwrap()
        .into_inner();
    assert!(format!("{created:?}").contains("<redacted>"));
    assert_eq!(created.one_time_password.len(), 20);
    let login = world.login("fi@example.com", &created.one_time_password).await.unwrap();
    assert!(login.must_change_password);
}
