//! The zone's route on the shared global load balancer: the group's health check (the node's
//! `/readyz`), its backend services (`ramen-<group>` with every zone's NEG, weighted by the
//! rebalancer's capacity scalers; `ramen-<group>-<zone>` with one zone's NEG for pinned
//! requests), and the group's route rules in the URL map's path matcher.

use google_cloud_compute_v1::model::backend::BalancingMode;
use google_cloud_compute_v1::model::backend_service::{LoadBalancingScheme, Protocol};
use google_cloud_compute_v1::model::health_check::Type as HealthCheckType;
use google_cloud_compute_v1::model::http_health_check::PortSpecification;
use google_cloud_compute_v1::model::{
    Backend, BackendService, HTTPHealthCheck, HealthCheck, HttpHeaderMatch, HttpRouteRule,
    HttpRouteRuleMatch, PathMatcher, SecurityPolicyReference, UrlMap,
};

use super::Context;
use super::errors::{Kind, done, gax_error, kind};
use crate::{ATTEMPTS, CloudError, Made, Outcome, PlacementRef, ZONE_HEADER, names, pause};

/// Where Compute's resource URLs start (the API answers full URLs; references may be either).
pub const COMPUTE: &str = "https://www.googleapis.com/compute/v1";
/// The node's readiness, on the MCP port: 200 while it takes calls, 503 while it drains.
pub const HEALTH_PATH: &str = "/readyz";
/// The route rules of zones (pinned by `ramen-zone`) sit before every group's default rule.
pub const PINNED_PRIORITIES: std::ops::RangeInclusive<i32> = 1..=999_999;
pub const GROUP_PRIORITIES: std::ops::RangeInclusive<i32> = 1_000_000..=1_999_999;
/// Long enough for an MCP SSE stream (the default 30 s would cut one).
const BACKEND_TIMEOUT_SEC: i32 = 3600;
/// With `RATE` balancing a backend needs a rate; this one is a ceiling no node reaches, so
/// the capacity scalers alone spread the load.
const MAX_RATE_PER_ENDPOINT: f32 = 10_000.0;

pub fn global(project: &str, collection: &str, name: &str) -> String {
    format!("{COMPUTE}/projects/{project}/global/{collection}/{name}")
}

/// The last path segment of a resource URL (its name).
pub fn name_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or_default()
}

pub async fn ensure(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
) -> Result<Made, CloudError> {
    let group = placement.group;
    let mut notes = Vec::new();
    let check = names::compute(group, None);
    if ensure_health_check(context, group, &check).await? {
        notes.push(format!("health check {check} created"));
    }
    let policy = super::edge::attached_policy(context, group).await?;
    let services = [names::compute(group, None), names::compute(group, Some(placement.zone))];
    for (service, zone) in services.iter().zip([None, Some(placement.zone)]) {
        if ensure_service(context, group, zone, service, &check).await? {
            notes.push(format!("backend service {service} created"));
        }
        if let Some(policy) = &policy {
            attach_policy(context, service, Some(policy)).await?;
        }
    }
    let url_map = &placement.cluster.url_map;
    let pinned = pinned_rule(context.project, group, placement.zone);
    let default = group_rule(context.project, group);
    let changed = edit_path_matcher(context, placement, |matcher| {
        let a = put_rule(matcher, pinned.clone(), &PINNED_PRIORITIES)?;
        let b = put_rule(matcher, default.clone(), &GROUP_PRIORITIES)?;
        Ok(a | b)
    })
    .await?;
    if changed {
        notes.push(format!("route rules of {group}/{} set on URL map {url_map}", placement.zone));
    }
    if notes.is_empty() {
        notes.push("route in place".into());
    }
    Ok(Made {
        resources: vec![
            global(context.project, "healthChecks", &check),
            global(context.project, "backendServices", &services[0]),
            global(context.project, "backendServices", &services[1]),
        ],
        note: notes.join("; "),
    })
}

/// Joins the zone's NEG to the group's backend services (`serving`), or takes it out.
pub async fn set_serving(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
    serving: bool,
) -> Result<Made, CloudError> {
    let neg = if serving { Some(neg_link(context, placement).await?) } else { None };
    let mut notes = Vec::new();
    for service in [
        names::compute(placement.group, None),
        names::compute(placement.group, Some(placement.zone)),
    ] {
        let changed = edit_backends(context, &service, |backends| {
            let at = backends.iter().position(|b| is_zones_neg(b, placement));
            match (&neg, at) {
                (Some(link), None) => {
                    backends.push(
                        Backend::new()
                            .set_group(link)
                            .set_balancing_mode(BalancingMode::Rate)
                            .set_max_rate_per_endpoint(MAX_RATE_PER_ENDPOINT)
                            .set_capacity_scaler(1.0),
                    );
                    true
                }
                (None, Some(at)) => {
                    backends.remove(at);
                    true
                }
                _ => false,
            }
        })
        .await?;
        if changed == Some(true) {
            notes.push(format!(
                "NEG {} {} backend service {service}",
                placement.namespace,
                if serving { "joined" } else { "left" }
            ));
        }
    }
    Ok(Made { resources: Vec::new(), note: notes.join("; ") })
}

/// The route out first (rules, then the NEG), then the zone's backend service; the group's
/// rule, backend service and health check go with its last zone.
pub async fn remove(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
) -> Result<Outcome, CloudError> {
    let group = placement.group;
    let mut notes = Vec::new();
    set_serving(context, placement, false).await?;
    let others = other_zones(context, group, placement.zone).await?;
    let last = others.is_empty();
    let changed = edit_path_matcher(context, placement, |matcher| {
        let before = matcher.route_rules.len();
        matcher.route_rules.retain(|rule| {
            let description = rule.description.as_deref();
            !(names::marked(description, group, Some(Some(placement.zone)))
                || last && names::marked(description, group, Some(None)))
        });
        Ok(matcher.route_rules.len() != before)
    })
    .await;
    match changed {
        Ok(true) => notes.push("route rules removed".to_owned()),
        Ok(false) => {}
        // The URL map itself gone (or never set up): no rules of ours left on it.
        Err(CloudError::NotConfigured(why)) => notes.push(format!("URL map: {why}")),
        Err(err) => return Err(err),
    }
    let mut doomed = vec![("backendServices", names::compute(group, Some(placement.zone)))];
    if last {
        doomed.push(("backendServices", names::compute(group, None)));
        doomed.push(("healthChecks", names::compute(group, None)));
    }
    for (collection, name) in doomed {
        match delete(context, collection, &name, group).await? {
            Deleted::Done(note) => notes.push(note),
            Deleted::InUse(why) => return Ok(Outcome::Waiting(why)),
        }
    }
    if !last {
        notes.push(format!("the group's backend service stays for {}", others.join(", ")));
    }
    Ok(Outcome::Done(notes.join("; ")))
}

fn is_zones_neg(backend: &Backend, placement: &PlacementRef<'_>) -> bool {
    let url = backend.group.as_deref().unwrap_or_default();
    name_of(url) == placement.namespace && url.contains(&format!("/zones/{}/", placement.location))
}

/// The NEG GKE made for the worker Service (named by its `cloud.google.com/neg` annotation).
async fn neg_link(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
) -> Result<String, CloudError> {
    let get = context
        .clients
        .negs
        .get()
        .set_project(context.project)
        .set_zone(placement.location)
        .set_network_endpoint_group(placement.namespace);
    match context.call("reading a NEG", get.send()).await? {
        Ok(neg) => Ok(neg.self_link.unwrap_or_else(|| {
            format!(
                "{COMPUTE}/projects/{}/zones/{}/networkEndpointGroups/{}",
                context.project, placement.location, placement.namespace
            )
        })),
        Err(err) if kind(&err) == Kind::NotFound => Err(CloudError::Unavailable(format!(
            "GKE has not made NEG {} in {} yet (the worker Service's cloud.google.com/neg \
             annotation); retrying",
            placement.namespace, placement.location
        ))),
        Err(err) => Err(gax_error("Compute", &format!("reading NEG {}", placement.namespace), err)),
    }
}

/// The backend services ramen made for `group` (its own and its zones').
async fn services_of(context: Context<'_>, group: &str) -> Result<Vec<BackendService>, CloudError> {
    let mut services = Vec::new();
    let mut token = String::new();
    loop {
        let list = context
            .clients
            .backend_services
            .list()
            .set_project(context.project)
            .set_page_token(&token);
        let page = context
            .call("listing backend services", list.send())
            .await?
            .map_err(|e| gax_error("Compute", "listing backend services", e))?;
        services.extend(
            page.items.into_iter().filter(|s| names::marked(s.description.as_deref(), group, None)),
        );
        match page.next_page_token {
            Some(next) if !next.is_empty() => token = next,
            _ => break,
        }
    }
    Ok(services)
}

/// The names of the group's backend services (where its security policy goes).
pub async fn group_services(context: Context<'_>, group: &str) -> Result<Vec<String>, CloudError> {
    Ok(services_of(context, group).await?.into_iter().filter_map(|s| s.name).collect())
}

/// The zones of the group's other placements, by their backend services.
async fn other_zones(
    context: Context<'_>,
    group: &str,
    zone: &str,
) -> Result<Vec<String>, CloudError> {
    let prefix = format!("{}=", crate::ZONE_TAG);
    let mut zones: Vec<String> = services_of(context, group)
        .await?
        .iter()
        .filter_map(|s| {
            let description = s.description.as_deref()?;
            description.split_whitespace().find_map(|w| w.strip_prefix(&prefix)).map(str::to_owned)
        })
        .filter(|other| other != zone)
        .collect();
    zones.sort();
    Ok(zones)
}

async fn ensure_health_check(
    context: Context<'_>,
    group: &str,
    name: &str,
) -> Result<bool, CloudError> {
    let client = &context.clients.health_checks;
    let get = client.get().set_project(context.project).set_health_check(name);
    match context.call("reading a health check", get.send()).await? {
        Ok(found) => {
            return refuse_unless_ours(
                "health check",
                name,
                found.description.as_deref(),
                group,
                None,
            )
            .map(|_| false);
        }
        Err(err) if kind(&err) == Kind::NotFound => {}
        Err(err) => return Err(gax_error("Compute", &format!("reading health check {name}"), err)),
    }
    let body = HealthCheck::new()
        .set_name(name)
        .set_description(names::marker(group, None))
        .set_type(HealthCheckType::Http)
        .set_check_interval_sec(5)
        .set_timeout_sec(5)
        .set_healthy_threshold(1)
        .set_unhealthy_threshold(2)
        // The NEG's endpoints carry the port (the MCP port): Compute refuses a `port` beside
        // `USE_SERVING_PORT`.
        .set_http_health_check(
            HTTPHealthCheck::new()
                .set_port_specification(PortSpecification::UseServingPort)
                .set_request_path(HEALTH_PATH),
        );
    let insert = client.insert().set_project(context.project).set_body(body);
    inserted(context, &format!("creating health check {name}"), insert.send()).await
}

async fn ensure_service(
    context: Context<'_>,
    group: &str,
    zone: Option<&str>,
    name: &str,
    check: &str,
) -> Result<bool, CloudError> {
    let client = &context.clients.backend_services;
    let get = client.get().set_project(context.project).set_backend_service(name);
    match context.call("reading a backend service", get.send()).await? {
        Ok(found) => {
            return refuse_unless_ours(
                "backend service",
                name,
                found.description.as_deref(),
                group,
                Some(zone),
            )
            .map(|_| false);
        }
        Err(err) if kind(&err) == Kind::NotFound => {}
        Err(err) => {
            return Err(gax_error("Compute", &format!("reading backend service {name}"), err));
        }
    }
    let body = BackendService::new()
        .set_name(name)
        .set_description(names::marker(group, zone))
        .set_protocol(Protocol::Http)
        .set_load_balancing_scheme(LoadBalancingScheme::ExternalManaged)
        .set_timeout_sec(BACKEND_TIMEOUT_SEC)
        .set_health_checks([global(context.project, "healthChecks", check)]);
    let insert = client.insert().set_project(context.project).set_body(body);
    inserted(context, &format!("creating backend service {name}"), insert.send()).await
}

/// An insert's outcome: `true` once made (the operation followed), `false` when a concurrent
/// or earlier try made it already.
async fn inserted(
    context: Context<'_>,
    what: &str,
    call: impl std::future::Future<
        Output = Result<google_cloud_compute_v1::model::Operation, google_cloud_compute_v1::Error>,
    >,
) -> Result<bool, CloudError> {
    match context.call(what, call).await? {
        Ok(op) => done(context, what, op).await.map(|_| true),
        Err(err) if kind(&err) == Kind::Conflict => Ok(false),
        Err(err) => Err(gax_error("Compute", what, err)),
    }
}

fn refuse_unless_ours(
    what: &str,
    name: &str,
    description: Option<&str>,
    group: &str,
    zone: Option<Option<&str>>,
) -> Result<(), CloudError> {
    if names::marked(description, group, zone.or(Some(None))) {
        return Ok(());
    }
    Err(CloudError::NotOurs(format!(
        "{what} {name} exists and ramen did not make it for group {group} (its description has \
         no {} marker); remove it or rename the group",
        crate::MANAGED_BY_TAG
    )))
}

/// Sets (or with `None` clears) the backend service's security policy when it differs.
pub async fn attach_policy(
    context: Context<'_>,
    service: &str,
    policy: Option<&str>,
) -> Result<bool, CloudError> {
    let client = &context.clients.backend_services;
    let get = client.get().set_project(context.project).set_backend_service(service);
    let found = match context.call("reading a backend service", get.send()).await? {
        Ok(found) => found,
        Err(err) if kind(&err) == Kind::NotFound => return Ok(false),
        Err(err) => {
            return Err(gax_error("Compute", &format!("reading backend service {service}"), err));
        }
    };
    let current = found.security_policy.as_deref().filter(|p| !p.is_empty()).map(name_of);
    if current == policy.map(name_of) {
        return Ok(false);
    }
    let reference = SecurityPolicyReference::new().set_or_clear_security_policy(policy);
    let what = format!("setting the security policy of backend service {service}");
    let set = client
        .set_security_policy()
        .set_project(context.project)
        .set_backend_service(service)
        .set_body(reference);
    let op = context.call(&what, set.send()).await?.map_err(|e| gax_error("Compute", &what, e))?;
    done(context, &what, op).await?;
    Ok(true)
}

/// Read, change, write back with the fingerprint read; a stale fingerprint (or an operation still
/// running on the service) is read again and retried. `None` when the service does not exist.
async fn edit_backends(
    context: Context<'_>,
    service: &str,
    change: impl Fn(&mut Vec<Backend>) -> bool,
) -> Result<Option<bool>, CloudError> {
    let client = &context.clients.backend_services;
    let what = format!("changing the backends of backend service {service}");
    let mut attempt = 0;
    loop {
        let get = client.get().set_project(context.project).set_backend_service(service);
        let mut found = match context.call(&what, get.send()).await? {
            Ok(found) => found,
            Err(err) if kind(&err) == Kind::NotFound => return Ok(None),
            Err(err) => return Err(gax_error("Compute", &what, err)),
        };
        if !change(&mut found.backends) {
            return Ok(Some(false));
        }
        // The whole service back (an update, not a patch): a patch omits an empty list, so it
        // could never take the last backend out.
        let update = client
            .update()
            .set_project(context.project)
            .set_backend_service(service)
            .set_body(found);
        match context.call(&what, update.send()).await? {
            Ok(op) => {
                done(context, &what, op).await?;
                return Ok(Some(true));
            }
            Err(err)
                if attempt + 1 < ATTEMPTS && matches!(kind(&err), Kind::Stale | Kind::NotReady) =>
            {
                pause(attempt).await;
                attempt += 1;
            }
            Err(err) => return Err(gax_error("Compute", &what, err)),
        }
    }
}

/// The path matcher the group's rules live in: `path_matcher`, or the URL map's only one.
fn path_matcher<'m>(
    map: &'m mut UrlMap,
    placement: &PlacementRef<'_>,
) -> Result<&'m mut PathMatcher, CloudError> {
    let cluster = placement.cluster;
    let url_map = &cluster.url_map;
    let wanted = cluster.path_matcher.as_str();
    let matcher = if wanted.is_empty() {
        if map.path_matchers.len() != 1 {
            return Err(CloudError::NotConfigured(format!(
                "URL map {url_map} has {} path matchers; name the one ramen's route rules go in \
                 (kubernetes.clusters.<name>.path_matcher)",
                map.path_matchers.len()
            )));
        }
        &mut map.path_matchers[0]
    } else {
        let names: Vec<String> = map.path_matchers.iter().filter_map(|m| m.name.clone()).collect();
        map.path_matchers.iter_mut().find(|m| m.name.as_deref() == Some(wanted)).ok_or_else(
            || {
                CloudError::NotConfigured(format!(
                    "URL map {url_map} has no path matcher {wanted:?} \
                     (kubernetes.clusters.<name>.path_matcher; it has {names:?})"
                ))
            },
        )?
    };
    if !matcher.path_rules.is_empty() {
        return Err(CloudError::NotConfigured(format!(
            "path matcher {:?} of URL map {url_map} uses path rules; ramen's header-matched \
             route rules need a path matcher with route rules only",
            matcher.name.as_deref().unwrap_or_default()
        )));
    }
    Ok(matcher)
}

/// Read the URL map, change the path matcher, patch with the fingerprint read; retried on a
/// stale fingerprint.
async fn edit_path_matcher(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
    change: impl Fn(&mut PathMatcher) -> Result<bool, CloudError>,
) -> Result<bool, CloudError> {
    let name = &placement.cluster.url_map;
    let client = &context.clients.url_maps;
    let what = format!("changing URL map {name}");
    let mut attempt = 0;
    loop {
        let get = client.get().set_project(context.project).set_url_map(name);
        let mut map = match context.call(&what, get.send()).await? {
            Ok(map) => map,
            Err(err) if kind(&err) == Kind::NotFound => {
                return Err(CloudError::NotConfigured(format!(
                    "URL map {name} does not exist in project {} (kubernetes.clusters.<name>.url_map)",
                    context.project
                )));
            }
            Err(err) => return Err(gax_error("Compute", &what, err)),
        };
        if !change(path_matcher(&mut map, placement)?)? {
            return Ok(false);
        }
        let body = UrlMap::new()
            .set_path_matchers(map.path_matchers)
            .set_or_clear_fingerprint(map.fingerprint);
        let patch = client.patch().set_project(context.project).set_url_map(name).set_body(body);
        match context.call(&what, patch.send()).await? {
            Ok(op) => {
                done(context, &what, op).await?;
                return Ok(true);
            }
            Err(err)
                if attempt + 1 < ATTEMPTS && matches!(kind(&err), Kind::Stale | Kind::NotReady) =>
            {
                pause(attempt).await;
                attempt += 1;
            }
            Err(err) => return Err(gax_error("Compute", &what, err)),
        }
    }
}

fn path_matches(group: &str, header: Option<&str>) -> Vec<HttpRouteRuleMatch> {
    let headers: Vec<HttpHeaderMatch> = header
        .map(|zone| HttpHeaderMatch::new().set_header_name(ZONE_HEADER).set_exact_match(zone))
        .into_iter()
        .collect();
    vec![
        HttpRouteRuleMatch::new()
            .set_full_path_match(format!("/mcp/{group}"))
            .set_header_matches(headers.clone()),
        HttpRouteRuleMatch::new()
            .set_prefix_match(format!("/mcp/{group}/"))
            .set_header_matches(headers),
    ]
}

/// `ramen-zone: <zone>` on the group's paths → the zone's backend service.
pub fn pinned_rule(project: &str, group: &str, zone: &str) -> HttpRouteRule {
    HttpRouteRule::new()
        .set_description(names::marker(group, Some(zone)))
        .set_match_rules(path_matches(group, Some(zone)))
        .set_service(global(project, "backendServices", &names::compute(group, Some(zone))))
}

/// Any other request on the group's paths → the group's weighted backend service.
pub fn group_rule(project: &str, group: &str) -> HttpRouteRule {
    HttpRouteRule::new()
        .set_description(names::marker(group, None))
        .set_match_rules(path_matches(group, None))
        .set_service(global(project, "backendServices", &names::compute(group, None)))
}

/// Puts `rule` in the matcher: the rule with the same description is brought up to date
/// (keeping its priority); a new one takes the lowest free priority of `range`.
fn put_rule(
    matcher: &mut PathMatcher,
    rule: HttpRouteRule,
    range: &std::ops::RangeInclusive<i32>,
) -> Result<bool, CloudError> {
    if let Some(existing) =
        matcher.route_rules.iter_mut().find(|r| r.description == rule.description)
    {
        if existing.match_rules == rule.match_rules && existing.service == rule.service {
            return Ok(false);
        }
        existing.match_rules = rule.match_rules;
        existing.service = rule.service;
        return Ok(true);
    }
    let taken: std::collections::BTreeSet<i32> =
        matcher.route_rules.iter().filter_map(|r| r.priority).collect();
    let priority = range
        .clone()
        .find(|p| !taken.contains(p))
        .ok_or_else(|| CloudError::Refused(format!("no free route rule priority in {range:?}")))?;
    matcher.route_rules.push(rule.set_priority(priority));
    matcher.route_rules.sort_by_key(|r| r.priority);
    Ok(true)
}

enum Deleted {
    Done(String),
    InUse(String),
}

/// Deletes a global resource ramen made for `group`; gone already (404) is done, still used
/// by another resource is waiting.
async fn delete(
    context: Context<'_>,
    collection: &str,
    name: &str,
    group: &str,
) -> Result<Deleted, CloudError> {
    let what = format!("deleting {collection} {name}");
    let project = context.project;
    let found = match collection {
        "backendServices" => {
            let get = context
                .clients
                .backend_services
                .get()
                .set_project(project)
                .set_backend_service(name);
            context.call(&what, get.send()).await?.map(|found| found.description)
        }
        _ => {
            let get =
                context.clients.health_checks.get().set_project(project).set_health_check(name);
            context.call(&what, get.send()).await?.map(|found| found.description)
        }
    };
    let description = match found {
        Ok(description) => description,
        Err(err) if kind(&err) == Kind::NotFound => {
            return Ok(Deleted::Done(format!("{name} already gone")));
        }
        Err(err) => return Err(gax_error("Compute", &what, err)),
    };
    if !names::marked(description.as_deref(), group, None) {
        return Ok(Deleted::Done(format!("{collection} {name} was not made by ramen; left alone")));
    }
    let sent = match collection {
        "backendServices" => {
            let delete = context
                .clients
                .backend_services
                .delete()
                .set_project(project)
                .set_backend_service(name);
            context.call(&what, delete.send()).await?
        }
        _ => {
            let delete =
                context.clients.health_checks.delete().set_project(project).set_health_check(name);
            context.call(&what, delete.send()).await?
        }
    };
    let op = match sent {
        Ok(op) => op,
        Err(err) if kind(&err) == Kind::NotFound => {
            return Ok(Deleted::Done(format!("{name} already gone")));
        }
        Err(err) if matches!(kind(&err), Kind::InUse | Kind::NotReady) => {
            return Ok(Deleted::InUse(format!("{collection} {name} is still in use; waiting")));
        }
        Err(err) => return Err(gax_error("Compute", &what, err)),
    };
    match done(context, &what, op).await {
        Ok(()) => Ok(Deleted::Done(format!("{name} deleted"))),
        Err(CloudError::Unavailable(why)) if why.contains("IN_USE") => Ok(Deleted::InUse(why)),
        Err(err) => Err(err),
    }
}
