//! An environment that takes OAuth 2.1 access tokens, through the edge and at the node, against
//! a real OpenID provider (npm `oidc-provider`, `ramen_testkit::OidcProvider`): the protected
//! resource metadata, the challenges, tokens verified at both, the rules of who may call what,
//! the caller reaching the tool without its token, and the per-caller rate limit.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ramen_call_rules::{AuthMode, Rule};
use ramen_edge::{
    Edge, EdgeAuth, EdgeSettings, Route, SessionSealer, StaticDirectory, WorkerRoute, ZoneRoute,
    router,
};
use ramen_node_contract::NodeAuth;
use ramen_runner::{PolicyConfig, Worker};
use ramen_testkit::{OidcOptions, OidcProvider, ROBOT_CLIENT};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use serde_json::{Value, json};

const REPO: &str = "services/runner/runtime/tests/fixtures/mcp2-repo";
const SCOPE: &str = "mcp:tools";

/// The environment's setting: tokens of `issuer` for `resource`, the machine client may use
/// the `whohigh` package and `high.point`, nothing else.
fn auth(issuer: &str, resource: &str) -> NodeAuth {
    NodeAuth {
        mode: AuthMode::Oauth,
        resource: resource.into(),
        issuers: vec![issuer.into()],
        scopes: vec![SCOPE.into()],
        rules: vec![Rule {
            subjects: vec!["machine".into()],
            allow: vec!["whohigh".into(), "high.point".into()],
            ..Rule::default()
        }],
    }
}

async fn node(dir: &Path, auth: NodeAuth) -> Worker {
    node_with_keys(dir, auth, &[]).await
}

/// A node taking `auth` and the MCP keys `keys` (their hashes, each named as itself).
async fn node_with_keys(dir: &Path, auth: NodeAuth, keys: &[&str]) -> Worker {
    let policy = PolicyConfig {
        require_key: true,
        trusted_proxies: vec!["127.0.0.1/32".into()],
        key_hashes: keys
            .iter()
            .map(|k| {
                ramen_node_contract::NodeKey::new(ramen_node_contract::key_hash(k), 0).named(*k, *k)
            })
            .collect(),
        auth,
        ..Default::default()
    };
    support::start_node(dir, "a", REPO, policy).await
}

/// What every test starts from: the provider, and the edge's listener — bound first, because
/// its URL is the resource the tokens name.
struct Site {
    provider: OidcProvider,
    issuer: String,
    listener: tokio::net::TcpListener,
    base: String,
    resource: String,
}

async fn site() -> Site {
    let provider = OidcProvider::start(OidcOptions::default()).await.unwrap();
    let issuer = provider.issuer();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let resource = format!("{base}/mcp/g/prod");
    Site { provider, issuer, listener, base, resource }
}

/// An edge serving `g/prod` on `worker`, on a port the kernel picks: its base URL.
async fn edge(listener: tokio::net::TcpListener, worker: &Worker, auth: EdgeAuth) -> String {
    let directory = Arc::new(StaticDirectory::default());
    let zone = ZoneRoute {
        zone: "a".into(),
        workers: vec![WorkerRoute {
            id: "a-1".into(),
            address: worker.mcp_addr.to_string(),
            local: None,
            weight: 1,
        }],
        ..ZoneRoute::default()
    };
    directory.set("g", "prod", Route { zones: vec![zone] });
    directory.set_auth("g", "prod", auth);
    let edge = Arc::new(Edge::new(
        directory,
        SessionSealer::from_secret(b"test"),
        EdgeSettings {
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            ..Default::default()
        },
    ));
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router(edge).into_make_service_with_connect_info::<SocketAddr>())
            .await
            .unwrap();
    });
    format!("http://{addr}")
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oauth-test","version":"0"}}})
}

/// A POST of `body` to `url` with `token` (none when empty) and `session`.
async fn post(url: &str, token: &str, session: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if !token.is_empty() {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.unwrap()
}

/// A 2025-11-25 session through `url` with `token`: its id.
async fn open_session(url: &str, token: &str) -> String {
    let response = post(url, token, None, initialize()).await;
    assert_eq!(response.status(), 200, "initialize with a valid token");
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    post(url, token, Some(&session), initialized).await;
    session
}

async fn rpc(url: &str, token: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
    let response = post(url, token, Some(session), body).await;
    assert_eq!(response.status(), 200, "{method}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn tokens_are_challenged_verified_ruled_and_never_reach_the_tool() {
    let Site { provider, issuer, listener, base, resource } = site().await;
    let dir = tempfile::tempdir().unwrap();
    let worker = node(dir.path(), auth(&issuer, &resource)).await;
    edge(listener, &worker, EdgeAuth::new(auth(&issuer, &resource), 0)).await;
    let node_url = format!("http://{}/mcp", worker.mcp_addr);

    // The metadata names the resource, the provider and the scopes.
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp/g/prod");
    let metadata: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], resource);
    assert_eq!(metadata["authorization_servers"], json!([issuer]));
    assert_eq!(metadata["scopes_supported"], json!([SCOPE]));
    let unknown = reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp/g/other"));
    assert_eq!(unknown.await.unwrap().status(), 404, "no metadata for an unknown environment");

    // No token: 401 naming the metadata and the scope, from the edge and from the node alike.
    for url in [&resource, &node_url] {
        let refused = post(url, "", None, initialize()).await;
        assert_eq!(refused.status(), 401, "{url}");
        let challenge = refused.headers()[WWW_AUTHENTICATE].to_str().unwrap().to_owned();
        assert_eq!(
            challenge,
            format!(r#"Bearer resource_metadata="{metadata_url}", scope="{SCOPE}""#),
            "{url}"
        );
    }

    // A token for another resource is worth nothing here, at either.
    let elsewhere = provider.machine_token(&format!("{base}/mcp/g/dev"), SCOPE).await.unwrap();
    for url in [&resource, &node_url] {
        let refused = post(url, &elsewhere, None, initialize()).await;
        assert_eq!(refused.status(), 401, "{url}");
        let challenge = refused.headers()[WWW_AUTHENTICATE].to_str().unwrap().to_owned();
        assert!(challenge.contains(r#"error="invalid_token""#), "{challenge}");
    }
    // A token without the scope the environment requires: 403 insufficient_scope.
    let unscoped = provider.machine_token(&resource, "mcp:admin").await.unwrap();
    let refused = post(&resource, &unscoped, None, initialize()).await;
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()[WWW_AUTHENTICATE].to_str().unwrap().to_owned();
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");

    // The token for this resource: lists show what the rules allow, another tool is -32601.
    let token = provider.machine_token(&resource, SCOPE).await.unwrap();
    let session = open_session(&resource, &token).await;
    let tools = rpc(&resource, &token, &session, "tools/list", json!({})).await;
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["high.point", "whohigh.whoami"], "only what the rule allows");
    let refused = rpc(
        &resource,
        &token,
        &session,
        "tools/call",
        json!({"name":"high.refuse","arguments":{"reason":"x"}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");

    // The tool knows its caller through the SDK's accessor, and never sees the token.
    let answer = rpc(
        &resource,
        &token,
        &session,
        "tools/call",
        json!({"name":"whohigh.whoami","arguments":{}}),
    )
    .await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let seen: Value = serde_json::from_str(text).unwrap();
    assert_eq!(seen["sdk_class"], true, "{seen}");
    assert_eq!(seen["subject"], "machine", "{seen}");
    assert_eq!(seen["scopes"], json!([SCOPE]), "{seen}");
    assert_eq!(seen["token"], "", "{seen}");
    assert!(!text.contains(&token), "the token itself never reaches the package");

    // A 2026-07-28 list that depends on the caller is `private`: no cache may share it.
    let stateless_list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}});
    let response = reqwest::Client::new()
        .post(&resource)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(stateless_list.to_string())
        .send()
        .await
        .unwrap();
    let list: Value = response.json().await.unwrap();
    assert_eq!(
        list["result"]["cacheScope"], "private",
        "a list that depends on the caller: {list}"
    );
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 2, "{list}");
}

#[tokio::test]
async fn a_caller_past_its_rate_gets_429_and_others_go_on() {
    let Site { provider, issuer, listener, resource, .. } = site().await;
    let dir = tempfile::tempdir().unwrap();
    let open = NodeAuth { rules: Vec::new(), ..auth(&issuer, &resource) };
    let worker = node(dir.path(), open.clone()).await;
    edge(listener, &worker, EdgeAuth::new(open, 2)).await;

    let token = provider.machine_token(&resource, SCOPE).await.unwrap();
    let session = open_session(&resource, &token).await; // two requests: the allowance
    let ping = json!({"jsonrpc":"2.0","id":3,"method":"ping"});
    let limited = post(&resource, &token, Some(&session), ping.clone()).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()[RETRY_AFTER], "1");
    // The allowance comes back with time (a second holds two calls).
    ramen_testkit::eventually("the caller's allowance refills", Duration::from_secs(10), || {
        let (url, token, session, ping) =
            (resource.clone(), token.clone(), session.clone(), ping.clone());
        async move {
            let status = post(&url, &token, Some(&session), ping).await.status();
            if status == 200 { Ok(()) } else { Err(status) }
        }
    })
    .await;
}

/// A session id is worth nothing to anyone but the caller that opened it: another valid token
/// (another subject) or another valid key presenting it gets 404, as an unknown session would,
/// at the node behind the edge and at the node directly; the opener's own requests go on.
#[tokio::test]
async fn a_session_belongs_to_the_caller_that_opened_it() {
    let Site { provider, issuer, listener, resource, .. } = site().await;
    let dir = tempfile::tempdir().unwrap();
    let both = NodeAuth { mode: AuthMode::Both, rules: Vec::new(), ..auth(&issuer, &resource) };
    let (key_a, key_b) = ("rk_session_owner_a", "rk_session_other_b");
    let worker = node_with_keys(dir.path(), both.clone(), &[key_a, key_b]).await;
    edge(listener, &worker, EdgeAuth::new(both, 0)).await;
    let node_url = format!("http://{}/mcp", worker.mcp_addr);

    let machine = provider.machine_token(&resource, SCOPE).await.unwrap();
    let robot = provider.client_token(ROBOT_CLIENT, &resource, SCOPE).await.unwrap();
    let ping = json!({"jsonrpc":"2.0","id":9,"method":"ping"});
    // The node's own session id (the edge seals it), for the requests sent to the node directly.
    let direct = post(&node_url, &machine, None, initialize()).await;
    let node_session = direct.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    for (url, session) in
        [(&resource, open_session(&resource, &machine).await), (&node_url, node_session)]
    {
        let theirs = post(url, &robot, Some(&session), ping.clone()).await;
        assert_eq!(theirs.status(), 404, "{url}: another subject's token on the session");
        let key = post(url, key_a, Some(&session), ping.clone()).await;
        assert_eq!(key.status(), 404, "{url}: a key on a token's session");
        let own = post(url, &machine, Some(&session), ping.clone()).await;
        assert_eq!(own.status(), 200, "{url}: the opener goes on");
    }
    // Keys alike: a session opened with one key refuses the other.
    let opened = post(&node_url, key_a, None, initialize()).await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(post(&node_url, key_b, Some(&session), ping.clone()).await.status(), 404);
    assert_eq!(post(&node_url, key_a, Some(&session), ping).await.status(), 200);
}
