//! The console's server side over real HTTP, every service running in process: pages need a
//! session, show only what the viewer's role may see (a member of A never sees B), offer only
//! the forms the one rule allows, and change nothing themselves — every form is a call to a
//! route of the REST table, where the cookie session's CSRF check applies.

use std::collections::BTreeSet;

use ramen_api_gateway::routes::specs;
use ramen_proto::auth::v1::Role;
use reqwest::Method;
use serde_json::json;

use crate::support::{Answer, PASSWORD, Stack};

/// A browser's session: the cookie jar and the CSRF token.
pub struct Browser {
    jar: String,
    csrf: String,
}

pub async fn sign_in(stack: &Stack, email: &str) -> Browser {
    let session = stack.login(email, PASSWORD).await;
    assert_eq!(session.status, 200, "{}", session.body);
    let jar = session
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    Browser { jar, csrf: session.body["csrf_token"].as_str().unwrap().to_owned() }
}

pub async fn get(stack: &Stack, browser: Option<&Browser>, path: &str) -> Answer {
    let mut request = stack.http.get(stack.url(path));
    if let Some(b) = browser {
        request = request.header("cookie", &b.jar);
    }
    stack.send(request).await
}

pub fn html(answer: &Answer) -> &str {
    answer.body.as_str().unwrap_or_default()
}

/// The world: zones z1, z2; groups alpha and beta with an environment each; Ana a member of
/// alpha, Ada its admin, Bo admin of beta, and a super admin.
pub async fn world() -> (Stack, [Browser; 4]) {
    let stack = Stack::start_full().await;
    let ana = stack.user("ana@example.com", false).await;
    let ada = stack.user("ada@example.com", false).await;
    let bo = stack.user("bo@example.com", false).await;
    stack.user("root@example.com", true).await;
    let root = stack.token("root@example.com").await;
    let ok =
        |what: &str, a: Answer| assert!(a.status.is_success(), "{what}: {} {}", a.status, a.body);
    for zone in ["z1", "z2"] {
        let body = json!({ "name": zone, "provider": "local" });
        ok(zone, stack.call(Method::POST, "/api/zones", Some(&root), Some(body)).await);
    }
    for (group, env) in [("alpha", "alpha-prod"), ("beta", "beta-secret-env")] {
        let body = json!({ "name": group, "repo_url": "/nonexistent/console-repo", "default_ref": "main" });
        ok(group, stack.call(Method::POST, "/api/groups", Some(&root), Some(body)).await);
        let body = json!({ "name": env, "zones": ["z1"] });
        let path = format!("/api/groups/{group}/environments");
        ok(env, stack.call(Method::POST, &path, Some(&root), Some(body)).await);
    }
    stack.member("alpha", &ana, Role::Member).await;
    stack.member("alpha", &ada, Role::Admin).await;
    stack.member("beta", &bo, Role::Admin).await;
    let browsers = [
        sign_in(&stack, "ana@example.com").await,
        sign_in(&stack, "ada@example.com").await,
        sign_in(&stack, "bo@example.com").await,
        sign_in(&stack, "root@example.com").await,
    ];
    (stack, browsers)
}

#[tokio::test]
async fn pages_need_a_session_and_carry_a_tight_csp() {
    let stack = Stack::start().await;
    let answer = get(&stack, None, "/groups/alpha?tab=1").await;
    assert_eq!(answer.status, 303);
    assert_eq!(answer.headers["location"], "/sign-in?next=%2Fgroups%2Falpha%3Ftab%3D1");
    let fragment = stack
        .send(stack.http.get(stack.url("/dashboard/cells")).header("x-console-fragment", "1"))
        .await;
    assert_eq!(fragment.status, 401, "fragments answer 401 for the script to renew the session");
    let sign_in = get(&stack, None, "/sign-in?next=//evil.example/x").await;
    assert_eq!(sign_in.status, 200);
    let csp = sign_in.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(sign_in.headers["cache-control"], "no-store");
    let page = html(&sign_in);
    assert!(
        page.contains(r#"data-api="/api/auth/login""#) && page.contains(r#"data-next="/""#),
        "{page}"
    );
    assert!(!page.contains("<script>") && !page.contains(" style="), "no inline script or style");
    let script = page.split("src=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let asset = stack.send(stack.http.get(stack.url(&script))).await;
    assert_eq!(asset.status, 200);
    assert!(asset.headers["content-type"].to_str().unwrap().starts_with("text/javascript"));
    assert!(asset.headers["cache-control"].to_str().unwrap().contains("immutable"));
    assert_eq!(get(&stack, None, "/assets/nope.js").await.status, 404);
    // The API keeps its JSON answers for unknown routes.
    assert_eq!(get(&stack, None, "/api/nope").await.code(), "not_found");
}

#[tokio::test]
async fn a_one_time_password_leads_to_the_password_page_first() {
    let stack = Stack::start().await;
    stack.user("root@example.com", true).await;
    let root = stack.token("root@example.com").await;
    let created = stack
        .call(Method::POST, "/api/users", Some(&root), Some(json!({ "email": "new@example.com" })))
        .await;
    let otp = created.body["one_time_password"].as_str().unwrap().to_owned();
    let session = stack.login("new@example.com", &otp).await;
    let jar = session
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("; ");
    let browser = Browser { jar, csrf: String::new() };
    let answer = get(&stack, Some(&browser), "/zones").await;
    assert_eq!(answer.status, 303);
    assert_eq!(answer.headers["location"], "/password?next=%2Fzones");
    let page = get(&stack, Some(&browser), "/password").await;
    assert_eq!(page.status, 200);
    assert!(
        html(&page).contains("Choose your password") && html(&page).contains("new@example.com")
    );
}

#[tokio::test]
async fn each_role_sees_only_what_it_may_and_a_member_of_a_never_sees_b() {
    let (stack, [ana, ada, bo, root]) = world().await;

    // Ana, member of alpha: alpha's pages without admin forms; nothing of beta anywhere.
    let groups = get(&stack, Some(&ana), "/groups").await;
    assert!(html(&groups).contains(r#"data-group="alpha""#));
    assert!(!html(&groups).contains("beta") && !html(&groups).contains("Create group"));
    let alpha = get(&stack, Some(&ana), "/groups/alpha").await;
    assert_eq!(alpha.status, 200, "{}", html(&alpha));
    let page = html(&alpha);
    assert!(page.contains(r#"data-env="alpha-prod""#));
    let admin_only = [
        r#"id="add-environment""#,
        "/environments/alpha-prod/deploys",
        r#"id="create-key""#,
        r#"id="add-member""#,
        r#"id="set-secret""#,
        "/zones/z1/count",
        r#"class="danger-zone""#,
    ];
    for form in admin_only {
        assert!(!page.contains(form), "a member is not offered {form}");
    }
    for path in ["/groups/beta", "/groups/beta/jobs/x", "/groups/nope"] {
        let hidden = get(&stack, Some(&ana), path).await;
        assert_eq!(hidden.status, 404, "{path}");
        assert!(html(&hidden).contains("Not found") && !html(&hidden).contains("beta-secret-env"));
    }
    for path in ["/environments", "/zones", "/dashboard", "/audit", "/audit?group=beta"] {
        let answer = get(&stack, Some(&ana), path).await;
        assert_eq!(answer.status, 200, "{path}: {}", html(&answer));
        assert!(!html(&answer).contains("beta-secret-env"), "{path} shows beta");
        assert!(!html(&answer).contains(r#"value="beta""#), "{path} offers beta");
    }
    assert!(html(&get(&stack, Some(&ana), "/environments").await).contains("alpha-prod"));
    assert!(!html(&get(&stack, Some(&ana), "/zones").await).contains("Add zone"));
    assert_eq!(get(&stack, Some(&ana), "/config").await.status, 403);
    assert_eq!(get(&stack, Some(&ana), "/users").await.status, 403);
    assert!(!html(&get(&stack, Some(&ana), "/dashboard").await).contains(r#"href="/config""#));

    // Ada, admin of alpha: runs it, but no super-admin forms (size, delete, settings).
    let page = get(&stack, Some(&ada), "/groups/alpha").await;
    let page = html(&page);
    for offered in &admin_only[..5] {
        assert!(page.contains(offered), "an admin is offered {offered}");
    }
    assert!(!page.contains(r#"class="danger-zone""#) && !page.contains("Change repository"));
    assert_eq!(get(&stack, Some(&ada), "/groups/beta").await.status, 404);

    // Bo, admin of beta: nothing of alpha.
    assert_eq!(get(&stack, Some(&bo), "/groups/alpha").await.status, 404);
    assert!(!html(&get(&stack, Some(&bo), "/environments").await).contains("alpha-prod"));

    // The super admin: every group, the Config and Users pages, zones and group deletion.
    let page = get(&stack, Some(&root), "/groups/beta").await;
    assert!(html(&page).contains("Delete group") && html(&page).contains("beta-secret-env"));
    let envs = get(&stack, Some(&root), "/environments").await;
    assert!(html(&envs).contains("alpha-prod") && html(&envs).contains("beta-secret-env"));
    assert!(html(&get(&stack, Some(&root), "/zones").await).contains("Add zone"));
    let config = get(&stack, Some(&root), "/config").await;
    assert_eq!(config.status, 200);
    // The bounds, as the form that changes them: the defaults, owner and editor denied.
    let config = html(&config);
    assert!(config.contains(r#"data-api="/api/service-account-bounds""#), "the bounds form");
    assert!(config.contains("roles/owner") && config.contains("iam:*"), "the defaults shown");
    assert!(html(&get(&stack, Some(&root), "/users").await).contains("ana@example.com"));

    // A removed member loses the page at once (auth is asked on every read).
    let ana_id = stack.user_id("ana@example.com").await;
    let removed = stack
        .send(
            stack
                .http
                .delete(stack.url(&format!("/api/groups/alpha/members/{ana_id}")))
                .header("cookie", &root.jar)
                .header("x-csrf-token", &root.csrf),
        )
        .await;
    assert!(removed.status.is_success(), "{}", removed.body);
    assert_eq!(get(&stack, Some(&ana), "/groups/alpha").await.status, 404);
}

/// `data-api="PATH" data-method="M"` of every form of a page.
fn forms(page: &str) -> Vec<(String, String)> {
    page.split("<form")
        .skip(1)
        .filter_map(|form| {
            let head = form.split('>').next()?;
            let attr = |name: &str| {
                head.split(&format!(" {name}=\""))
                    .nth(1)
                    .and_then(|v| v.split('"').next())
                    .map(str::to_owned)
            };
            Some((attr("data-method").unwrap_or_else(|| "POST".into()), attr("data-api")?))
        })
        .collect()
}

/// Whether `path` (a concrete path, maybe with a query or `{field}` placeholders) is an
/// instance of the table's `template`.
fn matches(template: &str, path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default().replace("&amp;", "&");
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter().zip(&p).all(|(t, p)| t == p || (t.starts_with('{') && !p.is_empty()))
}

#[tokio::test]
async fn every_form_calls_a_rest_route_whose_cookie_path_needs_the_csrf_header() {
    let (stack, [_, _, _, root]) = world().await;
    let table = specs();
    let mut seen = BTreeSet::new();
    for path in ["/groups/alpha", "/zones", "/groups", "/config", "/users", "/dashboard"] {
        let page = get(&stack, Some(&root), path).await;
        for (method, api) in forms(html(&page)) {
            let known = table.iter().any(|r| r.method.as_str() == method && matches(&r.path, &api));
            assert!(known, "{path}: a form calls {method} {api}, which is not in the route table");
            seen.insert(format!("{method} {}", api.split('?').next().unwrap()));
        }
    }
    assert!(seen.len() > 15, "the forms of the pages: {seen:?}");

    // The console itself takes no state-changing request: only GETs are routed.
    for path in ["/groups", "/zones", "/groups/alpha", "/config", "/sign-in"] {
        let post = stack.send(stack.http.post(stack.url(path)).header("cookie", &root.jar)).await;
        assert_eq!(post.status, 405, "POST {path}");
    }
    // What the forms call: with the cookie alone, refused; with the echoed CSRF token, done.
    let zone = json!({ "name": "z3", "provider": "local" });
    let bare = stack
        .send(stack.http.post(stack.url("/api/zones")).header("cookie", &root.jar).json(&zone))
        .await;
    assert_eq!((bare.status.as_u16(), bare.code()), (403, "csrf"));
    let forged = stack
        .send(
            stack
                .http
                .post(stack.url("/api/zones"))
                .header("cookie", &root.jar)
                .header("x-csrf-token", "guessed")
                .json(&zone),
        )
        .await;
    assert_eq!((forged.status.as_u16(), forged.code()), (403, "csrf"));
    let done = stack
        .send(
            stack
                .http
                .post(stack.url("/api/zones"))
                .header("cookie", &root.jar)
                .header("x-csrf-token", &root.csrf)
                .json(&zone),
        )
        .await;
    assert_eq!(done.status, 201, "{}", done.body);
    assert!(html(&get(&stack, Some(&root), "/zones").await).contains(r#"data-zone="z3""#));
}
