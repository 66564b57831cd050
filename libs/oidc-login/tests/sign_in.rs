//! The relying party against a real OpenID provider (npm oidc-provider, from libs/testkit):
//! the whole code flow as a browser makes it, and what each check refuses.

use ramen_oidc_login::{Client, ClientConfig, OidcError};
use ramen_testkit::{OidcOptions, OidcProvider, RAMEN_CLIENT};

const REDIRECT: &str = "http://127.0.0.1:9/api/auth/sso/callback";

async fn provider() -> OidcProvider {
    let options =
        OidcOptions { sso_redirect_uris: vec![REDIRECT.into()], ..OidcOptions::default() };
    OidcProvider::start(options).await.expect("oidc-provider starts")
}

fn client(provider: &OidcProvider, secret: Option<&str>) -> Client {
    Client::new(ClientConfig {
        issuer: provider.issuer(),
        client_id: RAMEN_CLIENT.0.into(),
        client_secret: secret.map(str::to_owned),
        scopes: vec!["email".into(), "profile".into(), "groups".into()],
        redirect_uri: REDIRECT.into(),
        groups_claim: "groups".into(),
    })
}

fn param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.replace("%2F", "/").replace("%3A", ":"))
    })
}

/// Signs `user` in at the provider; answers (code, state) from the callback URL.
async fn callback(provider: &OidcProvider, user: &str, url: &str) -> (String, String) {
    let back =
        provider.sign_in(user, url, REDIRECT).await.expect("the provider sends the browser back");
    (param(&back, "code").expect("a code"), param(&back, "state").expect("a state"))
}

#[tokio::test]
async fn a_person_signs_in_and_is_who_the_provider_says() {
    let provider = provider().await;
    let client = client(&provider, Some(RAMEN_CLIENT.1));
    let begun = client.begin().await.unwrap();
    assert!(
        begun.authorization_url.contains("code_challenge_method=S256"),
        "{}",
        begun.authorization_url
    );
    let (code, state) = callback(&provider, "alice", &begun.authorization_url).await;
    assert_eq!(state, begun.state, "the provider hands the state back");
    let alice = client.finish(&code, &begun.verifier, &begun.nonce).await.unwrap();
    assert_eq!(alice.subject, "alice");
    assert_eq!(alice.issuer, provider.issuer());
    assert_eq!(alice.email.as_deref(), Some("alice@example.com"));
    assert!(alice.email_verified);
    assert_eq!(alice.name.as_deref(), Some("Alice Example"));
    // Not in the ID token of a code flow: read from userinfo.
    assert_eq!(alice.groups, Some(vec!["payments".to_owned(), "staff".to_owned()]));

    let begun = client.begin().await.unwrap();
    let (code, _) = callback(&provider, "bob", &begun.authorization_url).await;
    let bob = client.finish(&code, &begun.verifier, &begun.nonce).await.unwrap();
    assert_eq!(bob.email.as_deref(), Some("bob@example.com"));
    assert!(!bob.email_verified, "bob's provider does not vouch for his email");

    let begun = client.begin().await.unwrap();
    let (code, _) = callback(&provider, "carol", &begun.authorization_url).await;
    let carol = client.finish(&code, &begun.verifier, &begun.nonce).await.unwrap();
    assert_eq!(carol.groups, None, "no groups claim is not an empty one");
}

#[tokio::test]
async fn a_code_is_worth_nothing_without_its_verifier_its_nonce_or_twice() {
    let provider = provider().await;
    let client = client(&provider, Some(RAMEN_CLIENT.1));

    // Someone who intercepted the code but not the flow's PKCE verifier.
    let begun = client.begin().await.unwrap();
    let (code, _) = callback(&provider, "alice", &begun.authorization_url).await;
    let other = client.begin().await.unwrap();
    let refused = client.finish(&code, &other.verifier, &begun.nonce).await.unwrap_err();
    assert!(
        matches!(&refused, OidcError::Refused { error, .. } if error == "invalid_grant"),
        "{refused}"
    );

    // An ID token of another flow (its nonce is not this one's).
    let begun = client.begin().await.unwrap();
    let (code, _) = callback(&provider, "alice", &begun.authorization_url).await;
    let refused = client.finish(&code, &begun.verifier, &other.nonce).await.unwrap_err();
    assert!(matches!(&refused, OidcError::IdToken(why) if why.contains("nonce")), "{refused}");

    // Redeemed once, then again.
    let begun = client.begin().await.unwrap();
    let (code, _) = callback(&provider, "alice", &begun.authorization_url).await;
    client.finish(&code, &begun.verifier, &begun.nonce).await.unwrap();
    let refused = client.finish(&code, &begun.verifier, &begun.nonce).await.unwrap_err();
    assert!(
        matches!(&refused, OidcError::Refused { error, .. } if error == "invalid_grant"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_wrong_secret_or_another_issuer_is_refused() {
    let provider = provider().await;
    let wrong = client(&provider, Some("not-the-secret"));
    let begun = wrong.begin().await.unwrap();
    let (code, _) = callback(&provider, "alice", &begun.authorization_url).await;
    let refused = wrong.finish(&code, &begun.verifier, &begun.nonce).await.unwrap_err();
    assert!(
        matches!(&refused, OidcError::Refused { error, .. } if error == "invalid_client"),
        "{refused}"
    );

    let right = client(&provider, Some(RAMEN_CLIENT.1));
    right.check_callback_issuer(Some(&provider.issuer())).await.unwrap();
    right.check_callback_issuer(None).await.unwrap();
    let refused = right.check_callback_issuer(Some("https://evil.example")).await.unwrap_err();
    assert!(refused.to_string().contains("evil.example"), "{refused}");

    let nowhere =
        Client::new(ClientConfig { issuer: "http://127.0.0.1:9".into(), ..right.config().clone() });
    let refused = nowhere.begin().await.unwrap_err();
    assert!(
        refused.to_string().contains("127.0.0.1:9"),
        "names the provider it could not reach: {refused}"
    );
}
