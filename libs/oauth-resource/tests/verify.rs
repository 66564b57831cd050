//! Access tokens from a real OpenID provider (npm `oidc-provider`, started by testkit) through
//! the verifier: the one this resource should accept, and each kind it must refuse.

use std::time::Duration;

use base64::Engine as _;
use ramen_oauth_resource::{Expect, Issuers, Rejection, Verifier, metadata, metadata_url};
use ramen_testkit::{OidcOptions, OidcProvider, eventually};

const RESOURCE: &str = "http://127.0.0.1:9/mcp/team/prod";

fn verifier(provider: &OidcProvider, scopes: &[&str]) -> Verifier {
    let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
    Verifier::new(Issuers::default(), Expect::new(RESOURCE, &[provider.issuer()], &scopes))
}

fn invalid(result: Result<ramen_oauth_resource::Caller, Rejection>) -> String {
    match result {
        Err(Rejection::Invalid(why)) => why,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

/// The token with its payload rewritten by `edit` (the signature left as it was).
fn tampered(token: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: serde_json::Value =
        serde_json::from_slice(&engine.decode(parts[1]).unwrap()).unwrap();
    edit(&mut payload);
    format!("{}.{}.{}", parts[0], engine.encode(payload.to_string()), parts[2])
}

#[tokio::test]
async fn a_token_for_this_resource_is_accepted_and_names_its_caller() {
    let provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let token = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    let caller = verifier(&provider, &["mcp:tools"]).verify(&token).await.unwrap();
    assert_eq!(caller.subject, "machine");
    assert_eq!(caller.issuer, provider.issuer());
    assert_eq!(caller.scopes, ["mcp:tools"]);
    assert_eq!(caller.client_id.as_deref(), Some("machine"));
    let header = format!("Bearer {token}");
    verifier(&provider, &["mcp:tools"]).verify_header(Some(&header)).await.unwrap();
}

#[tokio::test]
async fn tokens_for_another_audience_issuer_or_key_and_forged_ones_are_refused() {
    let provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let other = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let check = verifier(&provider, &[]);

    // Minted for another MCP server: its audience is not this resource.
    let elsewhere = provider.machine_token("http://127.0.0.1:9/mcp/other/prod", "mcp:tools").await;
    let why = invalid(check.verify(&elsewhere.unwrap()).await);
    assert!(why.to_lowercase().contains("audience"), "{why}");

    // From another authorization server: refused before any request to it.
    let foreign = other.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    let why = invalid(check.verify(&foreign).await);
    assert!(why.contains("is not accepted"), "{why}");
    // The same token claiming to come from the accepted issuer: its key is unknown there.
    let claimed = tampered(&foreign, |p| p["iss"] = provider.issuer().into());
    let why = invalid(check.verify(&claimed).await);
    assert!(why.contains("has no key"), "{why}");

    // A real token with a scope or subject of the caller's choosing: the signature breaks.
    let token = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    let widened = tampered(&token, |p| p["scope"] = "mcp:tools mcp:admin".into());
    assert!(!invalid(check.verify(&widened).await).is_empty());
    let someone = tampered(&token, |p| p["sub"] = "alice".into());
    assert!(!invalid(check.verify(&someone).await).is_empty());

    // Unsigned, and a symmetric algorithm: refused by algorithm.
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = token.split('.').nth(1).unwrap();
    for alg in ["none", "HS256"] {
        let head = engine.encode(format!(r#"{{"alg":"{alg}","typ":"at+jwt","kid":"x"}}"#));
        let forged = format!("{head}.{payload}.");
        assert!(!invalid(check.verify(&forged).await).is_empty(), "{alg}");
    }
    assert_eq!(check.verify_header(None).await, Err(Rejection::Missing));
    assert_eq!(check.verify_header(Some("Basic YTpi")).await, Err(Rejection::Missing));
    assert!(!invalid(check.verify("not-a-jwt").await).is_empty());
}

#[tokio::test]
async fn an_expired_token_is_refused_from_its_expiry() {
    let options = OidcOptions { token_ttl: Duration::from_secs(1), ..OidcOptions::default() };
    let provider = OidcProvider::start(options).await.unwrap();
    let mut expect = Expect::new(RESOURCE, &[provider.issuer()], &[]);
    expect.leeway_seconds = 0;
    let check = Verifier::new(Issuers::default(), expect);
    let token = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    eventually("the token expires", Duration::from_secs(10), || {
        let (check, token) = (check.clone(), token.clone());
        async move {
            match check.verify(&token).await {
                Err(Rejection::Invalid(why)) if why.to_lowercase().contains("expired") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_token_without_the_scope_needed_is_a_403_challenge_naming_it() {
    let provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let token = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    let refused = verifier(&provider, &["mcp:admin"]).verify(&token).await.unwrap_err();
    assert_eq!(refused, Rejection::InsufficientScope(vec!["mcp:admin".into()]));
    assert_eq!(refused.status(), 403);
    let url = metadata_url(RESOURCE);
    assert_eq!(url, "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp/team/prod");
    assert_eq!(
        refused.challenge(&url, &["mcp:tools".into()]),
        format!(
            r#"Bearer resource_metadata="{url}", scope="mcp:admin", error="insufficient_scope""#
        )
    );
    let missing = Rejection::Missing.challenge(&url, &["mcp:tools".into()]);
    assert_eq!(missing, format!(r#"Bearer resource_metadata="{url}", scope="mcp:tools""#));
    let bad = Rejection::Invalid("x".into()).challenge(&url, &[]);
    assert!(bad.contains(r#"error="invalid_token""#) && !bad.contains("scope="), "{bad}");
    let doc = metadata(RESOURCE, &[provider.issuer()], &["mcp:tools".into()]);
    assert_eq!(doc["resource"], RESOURCE);
    assert_eq!(doc["authorization_servers"][0], provider.issuer().as_str());
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_first_seen_but_not_more_often_than_the_floor() {
    let mut provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let expect = Expect::new(RESOURCE, &[provider.issuer()], &[]);
    let eager =
        Verifier::new(Issuers::default().with_refresh_floor(Duration::ZERO), expect.clone());
    let patient =
        Verifier::new(Issuers::default().with_refresh_floor(Duration::from_secs(3600)), expect);
    let before = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    eager.verify(&before).await.unwrap();
    patient.verify(&before).await.unwrap();

    // The provider comes back with a new signing key.
    provider.restart().await.unwrap();
    let after = provider.machine_token(RESOURCE, "mcp:tools").await.unwrap();
    eager.verify(&after).await.expect("the new key fetched on first sight");
    // Within the floor an unknown key is not fetched again: refused, nothing asked.
    let why = invalid(patient.verify(&after).await);
    assert!(why.contains("has no key"), "{why}");
}

#[tokio::test]
async fn an_opaque_token_is_introspected_for_this_resource_only() {
    let provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let resource = "http://127.0.0.1:9/mcp/opaque/prod";
    let client = Some((
        ramen_testkit::MACHINE_CLIENT.0.to_owned(),
        ramen_testkit::MACHINE_CLIENT.1.to_owned(),
    ));
    let mut expect = Expect::new(resource, &[provider.issuer()], &["mcp:tools".into()]);
    expect.introspection_client = client.clone();
    let check = Verifier::new(Issuers::default(), expect);
    let token = provider.machine_token(resource, "mcp:tools").await.unwrap();
    assert_ne!(token.split('.').count(), 3, "the provider issued an opaque token: {token}");
    let caller = check.verify(&token).await.unwrap();
    assert_eq!(
        (caller.subject.as_str(), caller.scopes.as_slice()),
        ("machine", &["mcp:tools".to_owned()][..])
    );

    // Another resource's opaque token, and a made-up one, are refused.
    let other =
        provider.machine_token("http://127.0.0.1:9/mcp/opaque/other", "mcp:tools").await.unwrap();
    assert!(invalid(check.verify(&other).await).contains("not this resource"));
    assert!(!invalid(check.verify("made-up-opaque-token").await).is_empty());
    // Without an introspection client, opaque tokens are not taken at all.
    let jwt_only =
        Verifier::new(Issuers::default(), Expect::new(resource, &[provider.issuer()], &[]));
    assert!(invalid(jwt_only.verify(&token).await).contains("not a JWT"));
}
