use ramen_proto::auth::v1::*;
use tonic::Code;

use crate::support::{PASSWORD, World, as_actor};

fn refresh_request(token: &str) -> RefreshRequest {
    RefreshRequest { refresh_token: token.into(), client_addr: "127.0.0.1".into() }
}

#[tokio::test]
async fn refresh_rotates_and_reusing_a_rotated_token_revokes_the_family() {
    let world = World::start().await;
    world.user("ana@example.com", false).await;
    let first = world.login("ana@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let other_session = world.login("ana@example.com", PASSWORD).await.unwrap().tokens.unwrap();

    let second =
        world.client().refresh(refresh_request(&first.refresh_token)).await.unwrap().into_inner();
    let second = second.tokens.unwrap();
    assert_ne!(second.refresh_token, first.refresh_token, "rotated on use");
    assert!(!second.access_token.is_empty());

    // The rotated token comes back: someone else holds the family.
    let reuse = world.client().refresh(refresh_request(&first.refresh_token)).await.unwrap_err();
    assert_eq!(reuse.code(), Code::Unauthenticated);
    assert!(reuse.message().contains("already used"), "{}", reuse.message());
    // ...so the legitimate holder's newer token is revoked too.
    let revoked = world.client().refresh(refresh_request(&second.refresh_token)).await.unwrap_err();
    assert_eq!(revoked.code(), Code::Unauthenticated);
    assert!(revoked.message().contains("revoked"), "{}", revoked.message());
    // Another login of the same user is another family: untouched.
    world
        .client()
        .refresh(refresh_request(&other_session.refresh_token))
        .await
        .expect("other family lives");
}

#[tokio::test]
async fn logout_revokes_the_family_and_is_idempotent() {
    let world = World::start().await;
    world.user("bo@example.com", false).await;
    let tokens = world.login("bo@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let logout = || LogoutRequest { refresh_token: tokens.refresh_token.clone() };
    world.client().logout(logout()).await.unwrap();
    world.client().logout(logout()).await.expect("again: fine");
    world
        .client()
        .logout(LogoutRequest { refresh_token: "rt_unknown".into() })
        .await
        .expect("unknown: fine");
    let err = world.client().refresh(refresh_request(&tokens.refresh_token)).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
}

#[tokio::test]
async fn bad_credentials_do_not_say_which_part_was_wrong() {
    let world = World::start().await;
    world.user("cy@example.com", false).await;
    let wrong_password = world.login("cy@example.com", "not the passphrase").await.unwrap_err();
    let unknown_user = world.login("nobody@example.com", PASSWORD).await.unwrap_err();
    assert_eq!(wrong_password.code(), Code::Unauthenticated);
    assert_eq!(wrong_password.message(), unknown_user.message());
    let ok = world.login(" CY@Example.com ", PASSWORD).await.expect("emails are case-insensitive");
    assert!(!ok.must_change_password);
    assert!(ok.user.unwrap().last_login_at.is_some());
}

#[tokio::test]
async fn changing_the_password_revokes_other_sessions_and_retires_the_old_one() {
    let world = World::start().await;
    let id = world.user("di@example.com", false).await;
    let old = world.login("di@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let change = |current: &str, new: &str, actor: &str| {
        let request = ChangePasswordRequest {
            user_id: id.clone(),
            current_password: current.into(),
            new_password: new.into(),
        };
        as_actor(actor, request)
    };
    let short = world.client().change_password(change(PASSWORD, "short", &id)).await.unwrap_err();
    assert_eq!(short.code(), Code::InvalidArgument);
    assert!(short.message().starts_with("new_password"), "{}", short.message());
    let someone_else = world
        .client()
        .change_password(change(PASSWORD, "another long passphrase", "u-other"))
        .await;
    assert_eq!(someone_else.unwrap_err().code(), Code::PermissionDenied);

    let fresh = world
        .client()
        .change_password(change(PASSWORD, "another long passphrase", &id))
        .await
        .unwrap();
    assert!(fresh.into_inner().tokens.is_some());
    let err = world.client().refresh(refresh_request(&old.refresh_token)).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "older sessions are revoked");
    assert_eq!(
        world.login("di@example.com", PASSWORD).await.unwrap_err().code(),
        Code::Unauthenticated
    );
    world.login("di@example.com", "another long passphrase").await.expect("new password works");
}

#[tokio::test]
async fn access_tokens_verify_and_tampered_ones_do_not() {
    let world = World::start().await;
    let id = world.user("ed@example.com", true).await;
    let tokens = world.login("ed@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let verify = |token: String| VerifyAccessTokenRequest { access_token: token };
    let claims =
        world.client().verify_access_token(verify(tokens.access_token.clone())).await.unwrap();
    let claims = claims.into_inner().claims.unwrap();
    assert_eq!(claims.user_id, id);
    assert!(claims.super_admin && !claims.key_id.is_empty());
    let mut tampered = tokens.access_token.clone();
    tampered.insert(tampered.find('.').unwrap() + 2, 'x');
    let err = world.client().verify_access_token(verify(tampered)).await.unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
}

#[tokio::test]
async fn an_ended_session_voids_its_access_tokens() {
    let world = World::start().await;
    world.user("fay@example.com", false).await;
    let verify = |token: &str| VerifyAccessTokenRequest { access_token: token.into() };
    let out = world.login("fay@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let stolen = world.login("fay@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    let kept = world.login("fay@example.com", PASSWORD).await.unwrap().tokens.unwrap();
    for session in [&out, &stolen, &kept] {
        world.client().verify_access_token(verify(&session.access_token)).await.expect("live");
    }
    let logout = LogoutRequest { refresh_token: out.refresh_token.clone() };
    world.client().logout(logout).await.unwrap();
    // A refresh token used twice: the family ends, with the access tokens it handed out.
    let next = world.client().refresh(refresh_request(&stolen.refresh_token)).await.unwrap();
    let next = next.into_inner().tokens.unwrap();
    world.client().refresh(refresh_request(&stolen.refresh_token)).await.unwrap_err();
    for token in [&out.access_token, &stolen.access_token, &next.access_token] {
        let err = world.client().verify_access_token(verify(token)).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
        assert!(err.message().contains("signed out"), "{}", err.message());
    }
    world.client().verify_access_token(verify(&kept.access_token)).await.expect("untouched");
}
