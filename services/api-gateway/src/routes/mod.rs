//! THE ROUTE TABLE. Every REST route is declared once here: its handler carries the method and
//! path (`#[utoipa::path]`, which also documents it), and its entry says who may call it. The
//! router, the OpenAPI document and the authorization-matrix test are all generated from
//! [`table`], so a route cannot be served without an access rule, documented without being
//! served, or added without the matrix testing it.
//!
//! Adding a REST domain: a module with handlers and a `routes()` list of [`Route`]s, appended
//! in [`table`]. Routes outside the REST API (the MCP edge under `/mcp/`, health) are merged in
//! `lib.rs` and do not belong here.

mod audit;
mod auth;
mod bounds;
mod call_views;
mod calls;
mod config;
mod dead_letters;
mod deploy_views;
mod environment_auth;
mod environments;
mod groups;
mod info;
mod job_events;
mod job_views;
pub(crate) mod jobs;
mod keys;
mod load;
mod members;
mod packages;
pub(crate) mod placements;
mod secrets;
mod service_account;
mod sso;
mod users;
pub mod views;
mod visible;
mod zone_views;
mod zones;

use axum::http::Method;
use axum::middleware::from_fn_with_state;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::SecurityRequirement;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};

use crate::access::{Access, Policy, enforce};
use crate::state::Gateway;

/// One REST route: its handler (method, path, docs) and its access rules.
pub struct Route {
    pub policy: Policy,
    router: UtoipaMethodRouter<Gateway>,
}

/// `router` (from `utoipa_axum::routes!` with ONE handler) open to `access`.
pub fn route(access: Access, router: UtoipaMethodRouter<Gateway>) -> Route {
    Route {
        policy: Policy { access, streaming: false, pending_ok: false, takes_body: true },
        router,
    }
}

impl Route {
    /// Accepts the access token as `?t=` (SSE / WebSocket routes).
    pub fn streaming(mut self) -> Self {
        self.policy.streaming = true;
        self
    }

    /// Callable by a session that must still change its one-time password.
    pub fn pending_ok(mut self) -> Self {
        self.policy.pending_ok = true;
        self
    }

    /// Method and path, from the handler's `#[utoipa::path]`.
    pub fn spec(&self) -> RouteSpec {
        let (path, item) = self.router.1.paths.iter().next().expect("a route has a path");
        let (method, operation) =
            operations(item).into_iter().next().expect("a route has an operation");
        RouteSpec {
            method,
            path: path.clone(),
            operation_id: operation.operation_id.clone().unwrap_or_default(),
            access: self.policy.access,
            streaming: self.policy.streaming,
            pending_ok: self.policy.pending_ok,
        }
    }
}

/// A route as the tests and docs see it.
#[derive(Clone, Debug)]
pub struct RouteSpec {
    pub method: Method,
    /// axum / OpenAPI syntax: `/api/groups/{group}/keys`.
    pub path: String,
    pub operation_id: String,
    pub access: Access,
    pub streaming: bool,
    pub pending_ok: bool,
}

/// Every REST route.
pub fn table() -> Vec<Route> {
    let mut routes = Vec::new();
    routes.extend(info::routes());
    routes.extend(auth::routes());
    routes.extend(sso::routes());
    routes.extend(users::routes());
    routes.extend(members::routes());
    routes.extend(keys::routes());
    routes.extend(secrets::routes());
    routes.extend(service_account::routes());
    routes.extend(bounds::routes());
    routes.extend(audit::routes());
    routes.extend(calls::routes());
    routes.extend(zones::routes());
    routes.extend(groups::routes());
    routes.extend(environments::routes());
    routes.extend(environment_auth::routes());
    routes.extend(jobs::routes());
    routes.extend(job_events::routes());
    routes.extend(placements::routes());
    routes.extend(packages::routes());
    routes.extend(load::routes());
    routes.extend(config::routes());
    routes.extend(dead_letters::routes());
    routes
}

pub fn specs() -> Vec<RouteSpec> {
    table().iter().map(Route::spec).collect()
}

fn operations(item: &PathItem) -> Vec<(Method, &Operation)> {
    let all = [
        (Method::GET, &item.get),
        (Method::POST, &item.post),
        (Method::PUT, &item.put),
        (Method::PATCH, &item.patch),
        (Method::DELETE, &item.delete),
        (Method::HEAD, &item.head),
        (Method::OPTIONS, &item.options),
        (Method::TRACE, &item.trace),
    ];
    all.into_iter().filter_map(|(method, op)| op.as_ref().map(|op| (method, op))).collect()
}

pub(crate) fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.patch,
        &mut item.delete,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}

/// Writes the access rule into the document: security requirements and `x-ramen-access`.
fn document(policy: Policy, item: &mut PathItem) {
    for operation in operations_mut(item) {
        operation.security = Some(if policy.access == Access::Public {
            Vec::new()
        } else {
            vec![
                SecurityRequirement::new("bearer", Vec::<String>::new()),
                SecurityRequirement::new("cookie", Vec::<String>::new()),
            ]
        });
        let mut extensions =
            ExtensionsBuilder::new().add("x-ramen-access", policy.access.describe());
        if policy.streaming {
            extensions = extensions.add("x-ramen-streaming", true);
        }
        operation.extensions.get_or_insert_default().merge(extensions.build());
    }
}

/// The REST router (each route behind its access layer) and the OpenAPI document.
pub fn build(gateway: &Gateway) -> (axum::Router<Gateway>, utoipa::openapi::OpenApi) {
    let mut router = OpenApiRouter::with_openapi(crate::openapi::base());
    for route in table() {
        let mut policy = route.policy;
        let (schemas, mut paths, method_router) = route.router;
        policy.takes_body = paths
            .paths
            .values()
            .any(|item| operations(item).iter().any(|(_, op)| op.request_body.is_some()));
        for (path, item) in paths.paths.iter_mut() {
            document(policy, item);
            crate::contract::complete(path, policy.access == Access::Public, item);
        }
        let layer = from_fn_with_state((gateway.clone(), policy), enforce);
        router = router.routes((schemas, paths, method_router.route_layer(layer)));
    }
    router.split_for_parts()
}
