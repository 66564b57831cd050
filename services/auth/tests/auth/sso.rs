//! People signing in with the organisation's OpenID provider: the real one (npm oidc-provider,
//! users alice — email verified, groups payments and staff — and bob — email not verified),
//! through auth's gRPC as the api-gateway drives it.

use ramen_config::{Config, Secret};
use ramen_oidc_login::{challenge, random_token};
use ramen_proto::auth::v1::*;
use ramen_store::Collection;
use ramen_testkit::{OidcOptions, OidcProvider, RAMEN_CLIENT};
use tonic::Code;

use crate::support::{DEPLOYER, PASSWORD, World, as_actor};

const PUBLIC: &str = "http://ramen.test";
const CALLBACK: &str = "http://ramen.test/api/auth/sso/callback";

async fn provider() -> OidcProvider {
    let options =
        OidcOptions { sso_redirect_uris: vec![CALLBACK.into()], ..OidcOptions::default() };
    OidcProvider::start(options).await.expect("oidc-provider starts")
}

fn sso(config: &mut Config, provider: &OidcProvider) {
    config.sso.issuer = provider.issuer();
    config.sso.client_id = RAMEN_CLIENT.0.into();
    config.sso.client_secret = Secret::new(RAMEN_CLIENT.1);
    config.sso.scopes = "openid,email,profile,groups".into();
    config.sso.public_url = PUBLIC.into();
    config.sso.display_name = "Example IdP".into();
    // `ops` is never registered: an entry naming a group that does not exist gives nothing.
    config.sso.memberships =
        "payments=payments:admin,staff=payments:member,staff=ops:member".into();
    config.sso.super_admin_groups = "platform-admins".into();
}

fn param(url: &str, name: &str) -> String {
    let query = url.split_once('?').expect("a query").1;
    query
        .split('&')
        .find_map(|pair| {
            pair.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v.to_owned())
        })
        .unwrap_or_else(|| panic!("no {name} in {url}"))
}

/// A whole console sign-in of `user`: start, the provider's pages, the callback.
async fn sign_in(
    world: &World,
    provider: &OidcProvider,
    user: &str,
    next: &str,
) -> FinishSsoResponse {
    let start = StartSsoRequest { next: next.into(), ..Default::default() };
    let started = world.client().start_sso(start).await.expect("sso starts").into_inner();
    let back = provider.sign_in(user, &started.authorization_url, CALLBACK).await.unwrap();
    assert_eq!(param(&back, "state"), started.state);
    let finish =
        FinishSsoRequest { state: started.state, code: param(&back, "code"), ..Default::default() };
    world.client().finish_sso(finish).await.expect("the callback is taken").into_inner()
}

async fn memberships(world: &World, access_token: &str) -> Vec<(String, i32)> {
    let claims = world
        .client()
        .verify_access_token(VerifyAccessTokenRequest { access_token: access_token.into() })
        .await
        .unwrap()
        .into_inner()
        .claims
        .unwrap();
    claims.memberships.into_iter().map(|m| (m.group, m.role)).collect()
}

#[tokio::test]
async fn a_person_signs_in_with_the_provider_and_holds_the_mapped_roles() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    world.group("payments").await;
    let options =
        world.client().get_sign_in_options(GetSignInOptionsRequest {}).await.unwrap().into_inner();
    assert!(options.sso_enabled && options.password_sign_in);
    assert_eq!(options.sso_button, "Sign in with Example IdP");

    let finished = sign_in(&world, &provider, "alice", "/groups/payments").await;
    assert_eq!(finished.redirect, "/groups/payments", "lands where the console asked");
    let session = finished.session.expect("a session");
    let user = session.user.unwrap();
    assert_eq!(user.email, "alice@example.com");
    assert!(!user.super_admin && !session.must_change_password);
    // payments → admin and staff → member name one group: the higher role holds.
    let tokens = session.tokens.unwrap();
    assert_eq!(
        memberships(&world, &tokens.access_token).await,
        vec![("payments".to_owned(), Role::Admin as i32)]
    );
    // No password: this account signs in through the provider only.
    let refused = world.login("alice@example.com", "").await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);

    // The next sign-in is the same account.
    let again = sign_in(&world, &provider, "alice", "//evil.example").await;
    assert_eq!(again.redirect, "/", "never another origin");
    assert_eq!(again.session.unwrap().user.unwrap().id, user.id);

    let audit = QueryAuditRequest { action_prefix: "session.sso".into(), ..Default::default() };
    let entries =
        world.client().query_audit(as_actor(DEPLOYER, audit)).await.unwrap().into_inner().entries;
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries.iter().all(|e| e.actor == user.id && e.target == "user/alice@example.com"));
    assert!(
        entries
            .iter()
            .any(|e| e.details.get("member:payments").map(String::as_str) == Some("admin")),
        "{entries:?}"
    );
}

#[tokio::test]
async fn a_flow_serves_once_and_only_its_own_callback() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    let started = world.client().start_sso(StartSsoRequest::default()).await.unwrap().into_inner();
    let back = provider.sign_in("alice", &started.authorization_url, CALLBACK).await.unwrap();
    let finish = FinishSsoRequest {
        state: started.state.clone(),
        code: param(&back, "code"),
        ..Default::default()
    };
    world
        .client()
        .finish_sso(finish.clone())
        .await
        .unwrap()
        .into_inner()
        .session
        .expect("signed in");
    let replayed = world.client().finish_sso(finish.clone()).await.unwrap_err();
    assert_eq!(replayed.code(), Code::InvalidArgument);
    assert!(replayed.message().contains("already used"), "{}", replayed.message());
    let made_up = FinishSsoRequest { state: random_token(), ..finish };
    assert_eq!(world.client().finish_sso(made_up).await.unwrap_err().code(), Code::InvalidArgument);

    // The provider's refusal (the person said no) reaches the sign-in page, named.
    let started = world.client().start_sso(StartSsoRequest::default()).await.unwrap().into_inner();
    let denied = FinishSsoRequest {
        state: started.state,
        error: "access_denied".into(),
        error_description: "the person declined".into(),
        ..Default::default()
    };
    let finished = world.client().finish_sso(denied).await.unwrap().into_inner();
    assert!(finished.session.is_none());
    assert!(
        finished.error.contains("access_denied") && finished.error.contains("declined"),
        "{}",
        finished.error
    );
}

#[tokio::test]
async fn an_existing_account_is_linked_only_by_an_email_the_provider_vouches_for() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    let alice = world.user("alice@example.com", false).await;
    world.user("bob@example.com", false).await;

    let linked = sign_in(&world, &provider, "alice", "/").await;
    assert_eq!(
        linked.session.unwrap().user.unwrap().id,
        alice,
        "alice's verified email links her account"
    );
    world.login("alice@example.com", PASSWORD).await.expect("her password still works");

    // bob's provider does not say his email is verified: whoever controls that profile could
    // otherwise take over the account of the same email.
    let refused = sign_in(&world, &provider, "bob", "/").await;
    assert!(refused.session.is_none());
    assert!(
        refused.error.contains("bob@example.com") && refused.error.contains("email_verified"),
        "{}",
        refused.error
    );
}

#[tokio::test]
async fn single_sign_on_takes_back_what_it_gave_and_leaves_hand_made_roles() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    for group in ["payments", "billing", "archive"] {
        world.group(group).await;
    }
    let first = sign_in(&world, &provider, "alice", "/").await.session.unwrap();
    let alice = first.user.unwrap().id;
    // Memberships an earlier mapping gave (billing) and one a group admin made (archive).
    world.member("archive", &alice, Role::Member).await;
    let store: Collection<serde_json::Value> =
        Collection::new(world.platform.store.clone(), "auth_memberships");
    let given = serde_json::json!({
        "group": "billing", "user_id": alice, "role": "admin", "created_at_ms": 1, "from_sso": true,
    });
    store.put(&format!("billing/{alice}"), &given).await.unwrap();

    let again = sign_in(&world, &provider, "alice", "/").await.session.unwrap();
    let held = memberships(&world, &again.tokens.unwrap().access_token).await;
    assert_eq!(
        held,
        vec![
            ("archive".to_owned(), Role::Member as i32),
            ("payments".to_owned(), Role::Admin as i32)
        ],
        "billing (given by a mapping that no longer matches) is taken back; archive (by hand) stays"
    );
}

/// Entra ID leaves the groups claim out past 200 groups: no claim is not "in no group", so
/// what the mapping gave stays rather than everything being taken back at once.
#[tokio::test]
async fn without_a_groups_claim_the_mapping_leaves_roles_as_they_were() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    world.group("billing").await;
    let first = sign_in(&world, &provider, "carol", "/").await.session.unwrap();
    let carol = first.user.unwrap().id;
    let store: Collection<serde_json::Value> =
        Collection::new(world.platform.store.clone(), "auth_memberships");
    let given = serde_json::json!({
        "group": "billing", "user_id": carol, "role": "member", "created_at_ms": 1, "from_sso": true,
    });
    store.put(&format!("billing/{carol}"), &given).await.unwrap();
    let again = sign_in(&world, &provider, "carol", "/").await.session.unwrap();
    let held = memberships(&world, &again.tokens.unwrap().access_token).await;
    assert_eq!(held, vec![("billing".to_owned(), Role::Member as i32)]);
}

#[tokio::test]
async fn the_cli_redeems_its_code_once_and_only_with_its_own_verifier() {
    let provider = provider().await;
    let world = World::start_with(|c| sso(c, &provider)).await;
    let cli_flow = |verifier: &str| StartSsoRequest {
        cli_port: 45_678,
        cli_code_challenge: challenge(verifier),
        ..Default::default()
    };
    let loopback = |world: &World, verifier: String| {
        let client = world.client();
        let request = cli_flow(&verifier);
        let provider = &provider;
        async move {
            let mut client = client;
            let started = client.start_sso(request).await.unwrap().into_inner();
            let back =
                provider.sign_in("alice", &started.authorization_url, CALLBACK).await.unwrap();
            let finish = FinishSsoRequest {
                state: started.state,
                code: param(&back, "code"),
                ..Default::default()
            };
            let finished = client.finish_sso(finish).await.unwrap().into_inner();
            assert!(finished.session.is_none(), "the browser gets no session in a CLI flow");
            assert!(
                finished.redirect.starts_with("http://127.0.0.1:45678/callback?code="),
                "{}",
                finished.redirect
            );
            param(&finished.redirect, "code")
        }
    };

    // Another local process read the code off the loopback, but has not the CLI's verifier.
    let verifier = random_token();
    let code = loopback(&world, verifier.clone()).await;
    let stolen = RedeemSsoCodeRequest {
        code: code.clone(),
        code_verifier: random_token(),
        ..Default::default()
    };
    let refused = world.client().redeem_sso_code(stolen).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(refused.message().contains("verifier"), "{}", refused.message());
    // ...and the code is spent for the CLI too: it signs in again rather than racing.
    let late = RedeemSsoCodeRequest { code, code_verifier: verifier, ..Default::default() };
    assert_eq!(
        world.client().redeem_sso_code(late).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let verifier = random_token();
    let code = loopback(&world, verifier.clone()).await;
    let redeem = RedeemSsoCodeRequest { code, code_verifier: verifier, ..Default::default() };
    let session = world.client().redeem_sso_code(redeem.clone()).await.unwrap().into_inner();
    assert_eq!(session.user.unwrap().email, "alice@example.com");
    assert!(!session.tokens.unwrap().access_token.is_empty());
    assert_eq!(
        world.client().redeem_sso_code(redeem).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let half = StartSsoRequest { cli_port: 45_678, ..Default::default() };
    let refused = world.client().start_sso(half).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("code_challenge"), "{}", refused.message());
}

#[tokio::test]
async fn with_passwords_off_only_the_provider_signs_people_in() {
    let provider = provider().await;
    let world = World::start_with(|c| {
        sso(c, &provider);
        c.sso.password_sign_in = false;
    })
    .await;
    assert!(world.started.bootstrap.is_none(), "no one-time password nobody could use");
    world.user("carol@example.com", false).await;
    let refused = world.login("carol@example.com", PASSWORD).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(refused.message().contains("password sign-in is turned off"), "{}", refused.message());
    let options =
        world.client().get_sign_in_options(GetSignInOptionsRequest {}).await.unwrap().into_inner();
    assert!(options.sso_enabled && !options.password_sign_in);
    sign_in(&world, &provider, "alice", "/").await.session.expect("single sign-on still works");
}

#[tokio::test]
async fn without_a_provider_single_sign_on_is_not_found() {
    let world = World::start().await;
    let options =
        world.client().get_sign_in_options(GetSignInOptionsRequest {}).await.unwrap().into_inner();
    assert!(!options.sso_enabled && options.password_sign_in);
    let refused = world.client().start_sso(StartSsoRequest::default()).await.unwrap_err();
    assert_eq!(refused.code(), Code::NotFound);
    assert!(refused.message().contains("not configured"), "{}", refused.message());
}
