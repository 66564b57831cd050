//! THE AUTHORIZATION MATRIX: every route of the route table × {anonymous, member of A, admin
//! of A, admin of B, super admin}. The expected outcome comes from the route's declared access
//! alone (the table), by the rules written out below independently of auth's code; a route
//! added to the table is tested here without anyone editing this file.

use std::collections::HashMap;

use ramen_api_gateway::access::Access;
use ramen_api_gateway::routes::{RouteSpec, specs};
use ramen_proto::auth::v1::*;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Answer, PASSWORD, Stack, as_service};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Persona {
    Anonymous,
    MemberOfA,
    AdminOfB,
    AdminOfA,
    SuperAdmin,
}

/// Refusals first, so an allowed call that mutates cannot mask a refusal.
const PERSONAS: [Persona; 5] = [
    Persona::Anonymous,
    Persona::MemberOfA,
    Persona::AdminOfB,
    Persona::AdminOfA,
    Persona::SuperAdmin,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Not refused by access control (and no server error).
    Allowed,
    Unauthenticated,
    Forbidden,
    /// Not even told the group exists.
    Hidden,
    /// Public: the same answer whoever asks.
    SameForAll,
}

fn expected(access: Access, persona: Persona) -> Expect {
    use Expect::*;
    use Persona::*;
    if access == Access::Public {
        return SameForAll;
    }
    if persona == Anonymous {
        return Unauthenticated;
    }
    match (access, persona) {
        (_, SuperAdmin) | (Access::Authenticated, _) => Allowed,
        (Access::Member, MemberOfA | AdminOfA) => Allowed,
        (Access::GroupAdmin(_), AdminOfA) => Allowed,
        (Access::GroupAdmin(_) | Access::GroupSuperAdmin(_), MemberOfA) => Forbidden,
        (Access::GroupSuperAdmin(_), AdminOfA) => Forbidden,
        (Access::Member | Access::GroupAdmin(_) | Access::GroupSuperAdmin(_), AdminOfB) => Hidden,
        (Access::SuperAdmin, _) => Forbidden,
        other => panic!("no rule for {other:?}"),
    }
}

fn check(expect: Expect, answer: &Answer) -> Result<(), String> {
    let status = answer.status.as_u16();
    let ok = match expect {
        // Past access control, the backend may still answer 404 for a sub-resource the
        // fixture lacks (a dead letter, a package); never the gateway's "group not found".
        Expect::Allowed => {
            !matches!(status, 401 | 403)
                && status < 500
                && !(status == 404 && answer.body["error"]["message"] == "group `a` not found")
        }
        Expect::Unauthenticated => status == 401 && answer.code() == "unauthenticated",
        Expect::Forbidden => status == 403 && answer.code() == "forbidden",
        Expect::Hidden => status == 404 && answer.code() == "not_found",
        Expect::SameForAll => status < 500,
    };
    if ok { Ok(()) } else { Err(format!("expected {expect:?}, got {status} {}", answer.body)) }
}

struct World {
    stack: Stack,
    /// A persona's current access token: a password change ends its other sessions, so the
    /// session it answers replaces the token for the rows after it.
    tokens: std::sync::Mutex<HashMap<&'static str, String>>,
    params: HashMap<&'static str, String>,
    victim_email: String,
}

async fn world() -> World {
    let stack = Stack::start_full().await;
    let member = stack.user("member-a@example.com", false).await;
    let admin_a = stack.user("admin-a@example.com", false).await;
    let admin_b = stack.user("admin-b@example.com", false).await;
    stack.user("root@example.com", true).await;
    stack.user("login@example.com", false).await;
    let victim = stack.user("victim@example.com", false).await;
    let doomed = stack.user("doomed@example.com", false).await;
    let root = stack.token("root@example.com").await;
    // The domain's fixtures through the API itself, as a super admin would create them: a
    // zone, groups (the deployer registers each with auth), an environment and a deploy job
    // (its repo does not exist, so the job fails at once and stays listed).
    let created = |what: &str, answer: &crate::support::Answer| {
        assert!(answer.status.is_success(), "creating {what}: {} {}", answer.status, answer.body);
    };
    let zone = json!({ "name": "z1", "provider": "local" });
    created("zone", &stack.call(Method::POST, "/api/zones", Some(&root), Some(zone)).await);
    for group in ["a", "b", "doomed"] {
        let body =
            json!({ "name": group, "repo_url": "/nonexistent/matrix-repo", "default_ref": "main" });
        created(group, &stack.call(Method::POST, "/api/groups", Some(&root), Some(body)).await);
    }
    stack.member("a", &member, Role::Member).await;
    stack.member("a", &admin_a, Role::Admin).await;
    stack.member("b", &admin_b, Role::Admin).await;
    stack.member("a", &victim, Role::Member).await;
    stack.member("doomed", &member, Role::Member).await;
    stack.member("doomed", &admin_a, Role::Admin).await;
    let env = json!({ "name": "prod", "git_ref": "main", "zones": ["z1"] });
    let path = "/api/groups/a/environments";
    created("environment", &stack.call(Method::POST, path, Some(&root), Some(env)).await);
    let path = "/api/groups/a/environments/prod/deploys";
    let job = stack.call(Method::POST, path, Some(&root), Some(json!({}))).await;
    created("deploy job", &job);
    let job = job.body["id"].as_str().expect("a job id").to_owned();
    let key = CreateMcpKeyRequest {
        group: "a".into(),
        name: "fixture".into(),
        environments: vec![],
        zones: vec![],
        expires_at: None,
    };
    let key =
        stack.grpc().await.create_mcp_key(as_service(key)).await.unwrap().into_inner().key.unwrap();
    let secret = SetSecretRequest {
        group: "a".into(),
        name: "TOKEN".into(),
        scope: None,
        value: "fixture-value".into(),
    };
    stack.grpc().await.set_secret(as_service(secret)).await.unwrap();
    let mut tokens = HashMap::new();
    for (persona, email) in [
        ("member", "member-a@example.com"),
        ("admin_a", "admin-a@example.com"),
        ("admin_b", "admin-b@example.com"),
        ("root", "root@example.com"),
    ] {
        tokens.insert(persona, stack.token(email).await);
    }
    let params = HashMap::from([
        ("group", "a".to_owned()),
        ("user_id", victim),
        ("key_id", key.id),
        ("name", "TOKEN".to_owned()),
        ("doomed", doomed),
        ("zone", "z1".to_owned()),
        ("env", "prod".to_owned()),
        ("job", job),
        ("package", "notes".to_owned()),
        ("seq", "1".to_owned()),
    ]);
    World {
        stack,
        tokens: std::sync::Mutex::new(tokens),
        params,
        victim_email: "victim@example.com".into(),
    }
}

/// Bodies that make an allowed call succeed. Routes without one are called without a body:
/// an allowed caller then gets a validation error, which is still not an access refusal.
fn example(world: &World, spec: &RouteSpec) -> Option<Value> {
    Some(match spec.operation_id.as_str() {
        "login" => json!({ "email": "login@example.com", "password": PASSWORD }),
        "refresh" | "logout" => json!({ "refresh_token": "rt_not-a-real-token" }),
        "change_password" => {
            json!({ "current_password": PASSWORD, "new_password": "a brand new passphrase" })
        }
        "create_user" => json!({ "email": "created@example.com" }),
        "set_super_admin" => json!({ "super_admin": false }),
        "add_member" => json!({ "email": world.victim_email, "role": "member" }),
        "create_key" => json!({ "name": "matrix" }),
        "set_secret" => json!({ "value": "matrix-value" }),
        "set_rules" => {
            json!({ "rules": [{ "provider": "gcp", "permissions": ["roles/viewer"], "resources": ["projects/_/buckets/a"] }] })
        }
        _ => return None,
    })
}

/// The path with every `{param}` filled from the fixture; an unknown parameter fails loudly.
fn path(world: &World, spec: &RouteSpec) -> String {
    let mut path = spec.path.clone();
    while let Some(start) = path.find('{') {
        let end = start + path[start..].find('}').expect("closed parameter");
        let name = &path[start + 1..end];
        // Deleting the user other rows point at would turn their calls into real 404s.
        // Deleting the group would do the same to every later row; a group of its own goes.
        if spec.operation_id == "delete_group" && name == "group" {
            path.replace_range(start..=end, "doomed");
            continue;
        }
        let key =
            if spec.operation_id == "delete_user" && name == "user_id" { "doomed" } else { name };
        let value = world.params.get(key).unwrap_or_else(|| {
            panic!("{} {}: the matrix has no value for `{{{name}}}`", spec.method, spec.path)
        });
        path.replace_range(start..=end, value);
    }
    path
}

async fn call(world: &World, spec: &RouteSpec, persona: Persona) -> Answer {
    let name = match persona {
        Persona::Anonymous => None,
        Persona::MemberOfA => Some("member"),
        Persona::AdminOfA => Some("admin_a"),
        Persona::AdminOfB => Some("admin_b"),
        Persona::SuperAdmin => Some("root"),
    };
    let token = name.map(|name| world.tokens.lock().unwrap()[name].clone());
    let answer = send(world, spec, token.as_ref()).await;
    if let (Some(name), "change_password", true) =
        (name, spec.operation_id.as_str(), answer.status.is_success())
    {
        let fresh = answer.body["access_token"].as_str().expect("a new session").to_owned();
        world.tokens.lock().unwrap().insert(name, fresh);
    }
    answer
}

async fn send(world: &World, spec: &RouteSpec, token: Option<&String>) -> Answer {
    let method = Method::from_bytes(spec.method.as_str().as_bytes()).unwrap();
    if spec.streaming {
        // A stream that was let through stays open: its status and headers are the answer.
        let mut request = world.stack.http.request(method, world.stack.url(&path(world, spec)));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("the gateway answers");
        if response.status().is_success() {
            return Answer {
                status: response.status(),
                headers: response.headers().clone(),
                body: Value::Null,
            };
        }
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or(Value::Null);
        return Answer { status, headers, body };
    }
    world
        .stack
        .call(method, &path(world, spec), token.map(String::as_str), example(world, spec))
        .await
}

#[tokio::test]
async fn every_route_answers_every_persona_as_its_declared_access_says() {
    let world = world().await;
    let specs = specs();
    assert!(specs.len() >= 25, "the table lists the auth domain's routes");
    let mut failures = Vec::new();
    for spec in &specs {
        let mut statuses = Vec::new();
        for persona in PERSONAS {
            let answer = call(&world, spec, persona).await;
            statuses.push(answer.status);
            if let Err(why) = check(expected(spec.access, persona), &answer) {
                failures.push(format!("{} {} as {persona:?}: {why}", spec.method, spec.path));
            }
        }
        if spec.access == Access::Public && statuses.iter().any(|s| *s != statuses[0]) {
            failures.push(format!(
                "{} {} is public but answers differently by caller: {statuses:?}",
                spec.method, spec.path
            ));
        }
    }
    assert!(failures.is_empty(), "{} cells failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_table_is_well_formed() {
    let specs = specs();
    let mut seen = std::collections::HashSet::new();
    for spec in &specs {
        assert!(spec.path.starts_with("/api/"), "{}", spec.path);
        assert!(!spec.operation_id.is_empty(), "{} {} has no operation id", spec.method, spec.path);
        assert!(
            seen.insert((spec.method.clone(), spec.path.clone())),
            "{} {} declared twice",
            spec.method,
            spec.path
        );
        if spec.access.is_group_scoped() {
            assert!(
                spec.path.contains("{group}"),
                "{} {} is group-scoped without {{group}}",
                spec.method,
                spec.path
            );
        }
    }
    for (method, path) in [
        ("POST", "/api/auth/login"),
        ("POST", "/api/auth/refresh"),
        ("POST", "/api/auth/logout"),
        ("POST", "/api/auth/password"),
        ("GET", "/api/auth/bootstrap"),
        ("GET", "/api/auth/me"),
        ("GET", "/api/users"),
        ("GET", "/api/groups/{group}/members"),
        ("POST", "/api/groups/{group}/keys"),
        ("PUT", "/api/groups/{group}/secrets/{name}"),
        ("PUT", "/api/groups/{group}/service-account"),
        ("GET", "/api/audit"),
    ] {
        assert!(
            specs.iter().any(|s| s.method == method && s.path == path),
            "{method} {path} is missing from the table"
        );
    }
}
