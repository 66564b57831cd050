//! A local HTTP server playing the Google APIs GCP zones' cloud resources call (no emulator
//! of Compute or IAM exists), for the real google-cloud-rust clients: Compute's global
//! health checks, backend services, URL maps, security policies and their operations, zonal
//! NEGs; IAM's service accounts and their policies; Resource Manager's project policy.
//!
//! It keeps what the real APIs enforce and the code under test must respect: a change is a
//! Compute operation that stays `RUNNING` for [`Google::running_for`] before its effect
//! lands (and the resource refuses other changes meanwhile, `resourceNotReady`);
//! patches carry the fingerprint read (412 when stale); IAM policy writes carry the etag
//! (409 `ABORTED` when stale); a patch leaves what it omits as it is (the clients omit empty
//! lists); a resource still referenced cannot be deleted
//! (`resourceInUseByAnotherResource`); a reference must name something that exists; deleting
//! what is gone is 404. Faults: [`Google::down`] answers 503 to everything, and
//! `stale_writes` moves a fingerprint or etag just before the next writes (a concurrent
//! writer).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use parking_lot::Mutex;
use ramen_config::ClusterConfig;
use serde_json::{Value, json};

use crate::PlacementRef;
use crate::gcp::{GcpCloud, GcpCloudSettings};

pub const PROJECT: &str = "acme";
pub const URL_MAP: &str = "mcp";
pub const PATH_MATCHER: &str = "mcp-host";
const COMPUTE: &str = "https://www.googleapis.com/compute/v1";

/// A change waiting on its operation: (key, new value or `None` to delete).
type Change = (String, Option<Value>);

#[derive(Debug, Default)]
pub struct Google {
    /// Compute resources by `global/<collection>/<name>` or
    /// `zones/<zone>/networkEndpointGroups/<name>`.
    pub compute: BTreeMap<String, Value>,
    /// IAM service accounts by email.
    pub accounts: BTreeMap<String, Value>,
    /// IAM policies by resource (`projects/<p>`, `projects/<p>/serviceAccounts/<email>`).
    pub policies: BTreeMap<String, Value>,
    /// Operations not done yet: name → (when they finish, the changes they make).
    pub running: BTreeMap<String, (Instant, Vec<Change>)>,
    /// How long a new operation stays `RUNNING`.
    pub running_for: Duration,
    /// Answer 503 to every request.
    pub down: bool,
    /// Writes (patches, policy writes) that find their fingerprint or etag moved just before.
    pub stale_writes: u32,
    /// `METHOD path` of every request answered.
    pub log: Vec<String>,
    counter: u64,
}

impl Google {
    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    fn tag(&mut self) -> String {
        let n = self.next();
        base64::engine::general_purpose::STANDARD.encode(n.to_be_bytes())
    }

    /// Lands the operations whose time has come.
    fn settle(&mut self) {
        let now = Instant::now();
        let due: Vec<String> =
            self.running.iter().filter(|(_, (at, _))| *at <= now).map(|(n, _)| n.clone()).collect();
        for name in due {
            let (_, changes) = self.running.remove(&name).expect("listed");
            self.land(changes);
        }
    }

    fn land(&mut self, changes: Vec<Change>) {
        for (key, value) in changes {
            match value {
                Some(v) => self.compute.insert(key, v),
                None => self.compute.remove(&key),
            };
        }
    }

    /// Every running operation finishes now.
    pub fn finish_running(&mut self) {
        self.running_for = Duration::ZERO;
        let names: Vec<String> = self.running.keys().cloned().collect();
        for name in names {
            let (_, changes) = self.running.remove(&name).expect("listed");
            self.land(changes);
        }
    }

    /// Keys with a change still running.
    fn busy(&self, key: &str) -> bool {
        self.running.values().any(|(_, changes)| changes.iter().any(|(k, _)| k == key))
    }
}

pub struct GoogleStandIn {
    pub url: String,
    pub state: Arc<Mutex<Google>>,
}

type Answer = Response;

fn answer(code: StatusCode, body: Value) -> Answer {
    (code, axum::Json(body)).into_response()
}

/// Compute's error shape.
fn compute_error(code: StatusCode, reason: &str, message: &str) -> Answer {
    answer(
        code,
        json!({"error": {"code": code.as_u16(), "message": message,
            "errors": [{"domain": "global", "reason": reason, "message": message}]}}),
    )
}

/// IAM's and Resource Manager's error shape.
fn google_error(code: StatusCode, status: &str, message: &str) -> Answer {
    answer(code, json!({"error": {"code": code.as_u16(), "message": message, "status": status}}))
}

fn self_link(key: &str) -> String {
    format!("{COMPUTE}/projects/{PROJECT}/{key}")
}

/// The `collection/name` a resource URL (full or partial) points at.
fn key_of(url: &str) -> Option<String> {
    let rest = url.split("/projects/").nth(1)?;
    let (_, key) = rest.split_once('/')?;
    Some(key.to_owned())
}

fn references(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &Value| {
        if let Some(s) = v.as_str().and_then(key_of) {
            out.push(s);
        }
    };
    for field in ["defaultService", "service", "securityPolicy", "group"] {
        push(&value[field]);
    }
    for list in ["healthChecks"] {
        for v in value[list].as_array().into_iter().flatten() {
            push(v);
        }
    }
    for backend in value["backends"].as_array().into_iter().flatten() {
        push(&backend["group"]);
    }
    for matcher in value["pathMatchers"].as_array().into_iter().flatten() {
        push(&matcher["defaultService"]);
        for rule in matcher["routeRules"].as_array().into_iter().flatten() {
            push(&rule["service"]);
        }
        for rule in matcher["pathRules"].as_array().into_iter().flatten() {
            push(&rule["service"]);
        }
    }
    out
}

impl Google {
    /// Starts an operation making `changes`; done at once when `running_for` is zero.
    fn operate(&mut self, target: &str, kind: &str, changes: Vec<Change>) -> Answer {
        let name = format!("operation-{}", self.next());
        let status = if self.running_for.is_zero() {
            self.land(changes);
            "DONE"
        } else {
            self.running.insert(name.clone(), (Instant::now() + self.running_for, changes));
            "RUNNING"
        };
        answer(StatusCode::OK, operation(&name, target, kind, status))
    }

    fn read_operation(&mut self, name: &str) -> Answer {
        let status = if self.running.contains_key(name) { "RUNNING" } else { "DONE" };
        answer(StatusCode::OK, operation(name, "", "", status))
    }

    /// A new or changed resource may only name resources that exist.
    fn dangling(&self, value: &Value) -> Option<String> {
        references(value).into_iter().find(|key| !self.compute.contains_key(key))
    }

    fn in_use(&self, key: &str) -> Option<String> {
        self.compute
            .iter()
            .find(|(other, value)| {
                other.as_str() != key && references(value).iter().any(|r| r == key)
            })
            .map(|(other, _)| other.clone())
    }

    fn fingerprint_fresh(&mut self, key: &str, body: &Value) -> bool {
        if self.stale_writes > 0 {
            self.stale_writes -= 1;
            let tag = self.tag();
            if let Some(current) = self.compute.get_mut(key) {
                current["fingerprint"] = json!(tag);
            }
            return false;
        }
        body["fingerprint"] == self.compute[key]["fingerprint"]
    }

    fn compute(&mut self, method: &Method, path: &str, query: &str, body: Value) -> Answer {
        let Some(rest) = path.strip_prefix(&format!("/compute/v1/projects/{PROJECT}/")) else {
            return compute_error(
                StatusCode::NOT_FOUND,
                "notFound",
                &format!("no project in {path}"),
            );
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match (method.as_str(), parts.as_slice()) {
            ("GET", ["global", "operations", name]) => self.read_operation(name),
            ("GET", ["global", collection]) => {
                let prefix = format!("global/{collection}/");
                let items: Vec<&Value> = self
                    .compute
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .map(|(_, v)| v)
                    .collect();
                answer(
                    StatusCode::OK,
                    json!({"kind": format!("compute#{collection}List"), "items": items}),
                )
            }
            ("POST", ["global", collection]) => self.insert(collection, body),
            ("GET", [..]) => match self.compute.get(rest) {
                Some(value) => answer(StatusCode::OK, value.clone()),
                None => compute_error(
                    StatusCode::NOT_FOUND,
                    "notFound",
                    &format!("The resource '{rest}' was not found"),
                ),
            },
            ("PATCH", ["global", _, _]) => self.patch(rest, body, false),
            ("PUT", ["global", _, _]) => self.patch(rest, body, true),
            ("DELETE", ["global", _, _]) => self.delete(rest),
            ("POST", ["global", "backendServices", name, "setSecurityPolicy"]) => {
                let key = format!("global/backendServices/{name}");
                let Some(mut service) = self.compute.get(&key).cloned() else {
                    return compute_error(
                        StatusCode::NOT_FOUND,
                        "notFound",
                        &format!("{key} was not found"),
                    );
                };
                if self.busy(&key) {
                    return compute_error(
                        StatusCode::BAD_REQUEST,
                        "resourceNotReady",
                        &format!("{key} is not ready"),
                    );
                }
                match body["securityPolicy"].as_str().filter(|s| !s.is_empty()) {
                    Some(policy) => {
                        let Some(policy_key) =
                            key_of(policy).filter(|k| self.compute.contains_key(k))
                        else {
                            return compute_error(
                                StatusCode::BAD_REQUEST,
                                "invalid",
                                &format!("security policy {policy} does not exist"),
                            );
                        };
                        service["securityPolicy"] = json!(self_link(&policy_key));
                    }
                    None => {
                        service.as_object_mut().unwrap().remove("securityPolicy");
                    }
                }
                service["fingerprint"] = json!(self.tag());
                self.operate(&self_link(&key), "setSecurityPolicy", vec![(key, Some(service))])
            }
            ("POST", ["global", "securityPolicies", name, verb]) => {
                self.rule(name, verb, query, body)
            }
            _ => compute_error(
                StatusCode::NOT_FOUND,
                "notFound",
                &format!("{method} {path} is not played here"),
            ),
        }
    }

    fn insert(&mut self, collection: &str, mut body: Value) -> Answer {
        let Some(name) = body["name"].as_str().map(str::to_owned) else {
            return compute_error(StatusCode::BAD_REQUEST, "required", "name: required");
        };
        let key = format!("global/{collection}/{name}");
        if self.compute.contains_key(&key) {
            return compute_error(
                StatusCode::CONFLICT,
                "alreadyExists",
                &format!("The resource '{key}' already exists"),
            );
        }
        if self.busy(&key) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "resourceNotReady",
                &format!("{key} is not ready"),
            );
        }
        if let Some(missing) = self.dangling(&body) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "invalid",
                &format!("The resource '{missing}' was not found"),
            );
        }
        let check = &body["httpHealthCheck"];
        if check["portSpecification"] == "USE_SERVING_PORT" && !check["port"].is_null() {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "invalid",
                "port must not be set with USE_SERVING_PORT",
            );
        }
        if collection == "securityPolicies" {
            let rules = body["rules"].as_array().cloned().unwrap_or_default();
            if !rules.iter().any(|r| r["priority"] == json!(i32::MAX)) {
                let mut rules = rules;
                rules.push(
                    json!({"priority": i32::MAX, "action": "allow", "description": "default rule",
                    "match": {"versionedExpr": "SRC_IPS_V1", "config": {"srcIpRanges": ["*"]}}}),
                );
                body["rules"] = json!(rules);
            }
        }
        body["kind"] = json!(format!("compute#{}", collection.trim_end_matches('s')));
        body["id"] = json!(self.next().to_string());
        body["selfLink"] = json!(self_link(&key));
        body["fingerprint"] = json!(self.tag());
        let link = self_link(&key);
        self.operate(&link, "insert", vec![(key, Some(body))])
    }

    /// A patch changes the fields given (an absent or empty list is left as it is, as JSON
    /// merge patch does); an update (`replace`) puts the whole resource.
    fn patch(&mut self, key: &str, body: Value, replace: bool) -> Answer {
        let Some(current) = self.compute.get(key).cloned() else {
            return compute_error(
                StatusCode::NOT_FOUND,
                "notFound",
                &format!("The resource '{key}' was not found"),
            );
        };
        if self.busy(key) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "resourceNotReady",
                &format!("The resource '{key}' is not ready"),
            );
        }
        if key.starts_with("global/securityPolicies/") && body.get("rules").is_some() {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "invalid",
                "rules cannot be changed by patch; use addRule, patchRule or removeRule",
            );
        }
        if !self.fingerprint_fresh(key, &body) {
            return compute_error(
                StatusCode::PRECONDITION_FAILED,
                "conditionNotMet",
                "Supplied fingerprint does not match current fingerprint.",
            );
        }
        let mut merged = if replace {
            let mut whole = body.clone();
            for kept in ["name", "selfLink", "id", "kind"] {
                whole[kept] = current[kept].clone();
            }
            whole
        } else {
            current
        };
        for (field, value) in body.as_object().into_iter().flatten() {
            if field != "fingerprint" {
                merged[field] = value.clone();
            }
        }
        if let Some(missing) = self.dangling(&merged) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "invalid",
                &format!("The resource '{missing}' was not found"),
            );
        }
        merged["fingerprint"] = json!(self.tag());
        self.operate(&self_link(key), "patch", vec![(key.to_owned(), Some(merged))])
    }

    fn delete(&mut self, key: &str) -> Answer {
        if !self.compute.contains_key(key) {
            return compute_error(
                StatusCode::NOT_FOUND,
                "notFound",
                &format!("The resource '{key}' was not found"),
            );
        }
        if self.busy(key) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "resourceNotReady",
                &format!("The resource '{key}' is not ready"),
            );
        }
        if let Some(user) = self.in_use(key) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "resourceInUseByAnotherResource",
                &format!("The {key} resource is already being used by '{user}'"),
            );
        }
        self.operate(&self_link(key), "delete", vec![(key.to_owned(), None)])
    }

    fn rule(&mut self, name: &str, verb: &str, query: &str, body: Value) -> Answer {
        let key = format!("global/securityPolicies/{name}");
        let Some(mut policy) = self.compute.get(&key).cloned() else {
            return compute_error(
                StatusCode::NOT_FOUND,
                "notFound",
                &format!("The resource '{key}' was not found"),
            );
        };
        if self.busy(&key) {
            return compute_error(
                StatusCode::BAD_REQUEST,
                "resourceNotReady",
                &format!("The resource '{key}' is not ready"),
            );
        }
        let priority = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("priority="))
            .and_then(|p| p.parse::<i64>().ok())
            .or_else(|| body["priority"].as_i64());
        let mut rules = policy["rules"].as_array().cloned().unwrap_or_default();
        let at = |rules: &[Value], p: Option<i64>| {
            rules.iter().position(|r| r["priority"].as_i64() == p)
        };
        match verb {
            "addRule" => {
                if at(&rules, body["priority"].as_i64()).is_some() {
                    return compute_error(
                        StatusCode::BAD_REQUEST,
                        "invalid",
                        "A rule with this priority already exists",
                    );
                }
                rules.push(body);
            }
            "patchRule" => {
                let Some(i) = at(&rules, priority) else {
                    return compute_error(
                        StatusCode::BAD_REQUEST,
                        "invalid",
                        "The rule to patch does not exist",
                    );
                };
                rules[i] = body;
            }
            "removeRule" => {
                let Some(i) = at(&rules, priority) else {
                    return compute_error(
                        StatusCode::BAD_REQUEST,
                        "invalid",
                        "The rule to remove does not exist",
                    );
                };
                rules.remove(i);
            }
            _ => return compute_error(StatusCode::NOT_FOUND, "notFound", verb),
        }
        rules.sort_by_key(|r| r["priority"].as_i64());
        policy["rules"] = json!(rules);
        policy["fingerprint"] = json!(self.tag());
        self.operate(&self_link(&key), verb, vec![(key, Some(policy))])
    }

    fn iam(&mut self, method: &Method, path: &str, body: Value) -> Answer {
        let accounts = format!("/v1/projects/{PROJECT}/serviceAccounts");
        if let Some(resource) =
            path.strip_suffix(":getIamPolicy").or_else(|| path.strip_suffix(":setIamPolicy"))
        {
            let resource =
                resource.trim_start_matches("/v1/").trim_start_matches("/v3/").to_owned();
            let exists = resource == format!("projects/{PROJECT}")
                || resource
                    .rsplit('/')
                    .next()
                    .is_some_and(|email| self.accounts.contains_key(email));
            if !exists {
                return google_error(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    &format!("{resource} does not exist"),
                );
            }
            if path.ends_with(":getIamPolicy") {
                let tag = self.tag();
                let policy = self
                    .policies
                    .entry(resource)
                    .or_insert_with(|| json!({"version": 1, "etag": tag, "bindings": []}))
                    .clone();
                return answer(StatusCode::OK, policy);
            }
            return self.set_policy(resource, body);
        }
        if path == accounts && method == Method::POST {
            let id = body["accountId"].as_str().unwrap_or_default().to_owned();
            if !(6..=30).contains(&id.len()) {
                return google_error(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    &format!("accountId {id:?} must be 6 to 30 characters"),
                );
            }
            let email = format!("{id}@{PROJECT}.iam.gserviceaccount.com");
            if self.accounts.contains_key(&email) {
                return google_error(
                    StatusCode::CONFLICT,
                    "ALREADY_EXISTS",
                    &format!(
                        "Service account {id} already exists within project projects/{PROJECT}."
                    ),
                );
            }
            let account = json!({
                "name": format!("projects/{PROJECT}/serviceAccounts/{email}"),
                "projectId": PROJECT,
                "uniqueId": self.next().to_string(),
                "email": email,
                "displayName": body["serviceAccount"]["displayName"],
                "description": body["serviceAccount"]["description"],
                "etag": self.tag(),
            });
            self.accounts.insert(email, account.clone());
            return answer(StatusCode::OK, account);
        }
        let Some(email) = path.strip_prefix(&format!("{accounts}/")) else {
            return google_error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("{method} {path} is not played here"),
            );
        };
        match *method {
            Method::GET => match self.accounts.get(email) {
                Some(account) => answer(StatusCode::OK, account.clone()),
                None => google_error(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    &format!("Unknown service account {email}"),
                ),
            },
            Method::DELETE => match self.accounts.remove(email) {
                Some(_) => {
                    self.policies.remove(&format!("projects/{PROJECT}/serviceAccounts/{email}"));
                    answer(StatusCode::OK, json!({}))
                }
                None => google_error(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    &format!("Unknown service account {email}"),
                ),
            },
            _ => google_error(StatusCode::NOT_FOUND, "NOT_FOUND", "not played here"),
        }
    }

    fn set_policy(&mut self, resource: String, body: Value) -> Answer {
        let mut policy = body["policy"].clone();
        let current =
            self.policies.get(&resource).map(|p| p["etag"].clone()).unwrap_or(Value::Null);
        let stale = if self.stale_writes > 0 {
            self.stale_writes -= 1;
            let tag = self.tag();
            if let Some(p) = self.policies.get_mut(&resource) {
                p["etag"] = json!(tag);
            }
            true
        } else {
            policy["etag"] != current
        };
        if stale {
            return google_error(
                StatusCode::CONFLICT,
                "ABORTED",
                "There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.",
            );
        }
        for binding in policy["bindings"].as_array().into_iter().flatten() {
            for member in binding["members"].as_array().into_iter().flatten() {
                let email = member.as_str().and_then(|m| m.strip_prefix("serviceAccount:"));
                let ours =
                    email.filter(|e| e.ends_with(&format!("@{PROJECT}.iam.gserviceaccount.com")));
                if let Some(email) = ours
                    && !self.accounts.contains_key(email)
                {
                    return google_error(
                        StatusCode::BAD_REQUEST,
                        "INVALID_ARGUMENT",
                        &format!("Service account {email} does not exist."),
                    );
                }
            }
            if binding.get("condition").is_some() && policy["version"].as_i64() != Some(3) {
                return google_error(
                    StatusCode::BAD_REQUEST,
                    "INVALID_ARGUMENT",
                    "a policy with conditions must be version 3",
                );
            }
        }
        policy["etag"] = json!(self.tag());
        self.policies.insert(resource, policy.clone());
        answer(StatusCode::OK, policy)
    }
}

fn operation(name: &str, target: &str, kind: &str, status: &str) -> Value {
    json!({"kind": "compute#operation", "id": "1", "name": name, "operationType": kind,
        "status": status, "targetLink": target, "selfLink": format!("{COMPUTE}/projects/{PROJECT}/global/operations/{name}")})
}

async fn handle(
    axum::extract::State(state): axum::extract::State<Arc<Mutex<Google>>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Answer {
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&body).unwrap_or(json!({}))
    };
    let mut google = state.lock();
    let path = percent_decode(uri.path());
    google.log.push(format!("{method} {path}"));
    google.settle();
    if google.down {
        return google_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            "The service is currently unavailable.",
        );
    }
    if path.starts_with("/compute/") {
        google.compute(&method, &path, uri.query().unwrap_or_default(), body)
    } else {
        google.iam(&method, &path, body)
    }
}

fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(v) = path.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl GoogleStandIn {
    /// A project with what an operator provides: the URL map of the MCP hostname (its path
    /// matcher with one route rule of the operator's own, and a default backend service), and
    /// an owner on the project's policy.
    pub async fn start() -> Self {
        let mut google = Google::default();
        let fallback = "global/backendServices/fallback";
        google.compute.insert(
            fallback.into(),
            json!({"name": "fallback", "selfLink": self_link(fallback), "fingerprint": "AA==", "description": "the operator's"}),
        );
        let map = format!("global/urlMaps/{URL_MAP}");
        google.compute.insert(
            map.clone(),
            json!({
                "name": URL_MAP, "selfLink": self_link(&map), "fingerprint": "AQ==",
                "defaultService": self_link(fallback),
                "hostRules": [{"hosts": ["mcp.acme.dev"], "pathMatcher": PATH_MATCHER}],
                "pathMatchers": [{"name": PATH_MATCHER, "defaultService": self_link(fallback),
                    "routeRules": [{"priority": 1, "description": "the operator's health page",
                        "matchRules": [{"fullPathMatch": "/health"}], "service": self_link(fallback)}]}],
            }),
        );
        google.policies.insert(
            format!("projects/{PROJECT}"),
            json!({"version": 1, "etag": "BwY=", "bindings": [{"role": "roles/owner", "members": ["user:ops@acme.dev"]}]}),
        );
        let state = Arc::new(Mutex::new(google));
        let router = axum::Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds loopback");
        let url = format!("http://{}", listener.local_addr().expect("bound"));
        // Lives as long as the test's runtime.
        tokio::spawn(async move { axum::serve(listener, router).await.expect("serves") });
        Self { url, state }
    }

    /// A GKE cluster in us-central1 of [`PROJECT`] reached through [`URL_MAP`].
    pub fn cluster(&self) -> ClusterConfig {
        ClusterConfig {
            provider: "gcp".into(),
            region: "us-central1".into(),
            project: PROJECT.into(),
            url_map: URL_MAP.into(),
            ..Default::default()
        }
    }

    /// The adapter at this stand-in, with short limits (the fault tests wait them out).
    pub fn cloud(&self) -> GcpCloud {
        GcpCloud::new(self.settings())
    }

    pub fn settings(&self) -> GcpCloudSettings {
        GcpCloudSettings {
            endpoint: self.url.clone(),
            anonymous: true,
            call_timeout: std::time::Duration::from_secs(3),
            operation_wait: std::time::Duration::from_secs(3),
        }
    }

    pub fn placement<'a>(
        &self,
        cluster: &'a ClusterConfig,
        group: &'a str,
        zone: &'a str,
        namespace: &'a str,
        location: &'a str,
    ) -> PlacementRef<'a> {
        PlacementRef {
            group,
            zone,
            namespace,
            location,
            service_account: "ramen-worker",
            cluster,
            port: 8000,
        }
    }

    /// What GKE's NEG controller does for an annotated Service: the zonal NEG exists.
    pub fn add_neg(&self, location: &str, name: &str) {
        let key = format!("zones/{location}/networkEndpointGroups/{name}");
        let neg = json!({"name": name, "selfLink": self_link(&key), "networkEndpointType": "GCE_VM_IP_PORT",
            "zone": format!("{COMPUTE}/projects/{PROJECT}/zones/{location}"), "size": 1});
        self.state.lock().compute.insert(key, neg);
    }

    pub fn resource(&self, key: &str) -> Option<Value> {
        self.state.lock().compute.get(key).cloned()
    }

    /// Keys of the Compute resources whose description carries ramen's marker, and the
    /// service accounts ramen made.
    pub fn ramens(&self) -> Vec<String> {
        let google = self.state.lock();
        let marked = |v: &Value| {
            v["description"].as_str().is_some_and(|d| d.contains("ramen.io/managed-by=ramen"))
        };
        google
            .compute
            .iter()
            .filter(|(_, v)| marked(v))
            .map(|(k, _)| k.clone())
            .chain(google.accounts.iter().filter(|(_, v)| marked(v)).map(|(k, _)| k.clone()))
            .collect()
    }

    /// The route rules of the URL map's path matcher: (priority, description, service name).
    pub fn route_rules(&self) -> Vec<(i64, String, String)> {
        let map = self.resource(&format!("global/urlMaps/{URL_MAP}")).unwrap_or_default();
        map["pathMatchers"][0]["routeRules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r["priority"].as_i64().unwrap_or_default(),
                    r["description"].as_str().unwrap_or_default().to_owned(),
                    r["service"]
                        .as_str()
                        .unwrap_or_default()
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect()
    }

    /// The NEG names behind a backend service, with their capacity scalers.
    pub fn backends(&self, service: &str) -> Vec<(String, f64)> {
        let found = self.resource(&format!("global/backendServices/{service}")).unwrap_or_default();
        found["backends"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                let group = b["group"].as_str().unwrap_or_default();
                (
                    group.rsplit('/').next().unwrap_or_default().to_owned(),
                    b["capacityScaler"].as_f64().unwrap_or(1.0),
                )
            })
            .collect()
    }

    /// The security policy's rules: (priority, action, source ranges).
    pub fn policy_rules(&self, name: &str) -> Vec<(i64, String, Vec<String>)> {
        let found = self.resource(&format!("global/securityPolicies/{name}")).unwrap_or_default();
        found["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let ranges = r["match"]["config"]["srcIpRanges"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                (
                    r["priority"].as_i64().unwrap_or_default(),
                    r["action"].as_str().unwrap_or_default().to_owned(),
                    ranges,
                )
            })
            .collect()
    }

    /// The roles `member` holds in a policy, with each binding's condition expression.
    pub fn roles_of(&self, resource: &str, member: &str) -> Vec<(String, Option<String>)> {
        let google = self.state.lock();
        let policy = google.policies.get(resource).cloned().unwrap_or_default();
        policy["bindings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["members"].as_array().into_iter().flatten().any(|m| m == member))
            .map(|b| {
                (
                    b["role"].as_str().unwrap_or_default().to_owned(),
                    b["condition"]["expression"].as_str().map(str::to_owned),
                )
            })
            .collect()
    }

    pub fn operation_reads(&self) -> usize {
        self.state
            .lock()
            .log
            .iter()
            .filter(|l| l.starts_with("GET") && l.contains("/operations/"))
            .count()
    }
}
