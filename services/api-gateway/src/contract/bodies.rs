//! The rules request bodies are checked by, written into the document's component schemas from
//! the same definitions the services check with ([`ramen_rules`] and
//! `ramen_service::validate`): a client generated from the document sends what the API takes,
//! and what the document refuses the API refuses.
//!
//! Where no JSON Schema keyword can say a rule (a git remote, a git ref, an egress entry, a CIDR)
//! the property names a `format` of ours, described in its `description`; tools that do not know
//! the format treat it as any string, as JSON Schema says they must.

use ramen_service::rules::{
    AWS_RESOURCE_PATTERN, AWS_ZONE, BOUNDS_MAX_PATTERNS, CLOUD_PATTERN, DISPLAY_NAME, EMAIL,
    GCP_ZONE, IDEMPOTENCY_KEY, IMAGE_REFERENCE, ISSUER, PASSWORD, PEM_PRIVATE_KEY,
    REBALANCE_INTERVAL_SECONDS, REVIEW_REASON, SCOPE, SECRET_VALUE, TOOL_NAME, TextRule,
};

/// zone-manager's `MAX_IP_RULES`.
const IP_RULES_MAX: usize = 256;
use ramen_service::validate::DNS_LABEL_RULE;
use serde_json::{Map, Value, json};

/// A rule's keywords: `pattern` (when it has one), `minLength`, `maxLength`.
pub fn text(rule: &TextRule) -> Value {
    let mut keywords = json!({ "minLength": rule.min_chars, "maxLength": rule.max_chars });
    if !rule.pattern.is_empty() {
        keywords["pattern"] = json!(rule.pattern);
    }
    keywords
}

/// One of our formats, with the longest value the service takes.
fn format(name: &str, max_chars: usize) -> Value {
    json!({ "format": name, "maxLength": max_chars })
}

fn label() -> Value {
    text(&DNS_LABEL_RULE)
}

/// What the platform's configuration bounds, for the document to say.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `zone.max_worker_count`: the most stable workers a placement may ask for.
    pub max_worker_count: u32,
}

/// Writes every body rule into `doc`; returns the schema paths it expected and did not find
/// (a renamed field: the test fails on any).
pub fn apply(doc: &mut Value, limits: Limits) -> Vec<String> {
    let mut edit = Edit { doc, missing: Vec::new() };
    let git_remote = format("git-remote", 2048);
    let git_ref = format("git-ref", 255);

    edit.property("NewGroupBody", "name", label());
    edit.property("NewGroupBody", "repo_url", merge(git_remote.clone(), json!({ "minLength": 1 })));
    edit.property("NewGroupBody", "default_ref", git_ref.clone());
    edit.property("NewGroupBody", "worker_image", text(&IMAGE_REFERENCE));
    edit.property("NewGroupBody", "github_app_installation_id", json!({ "minimum": 0 }));
    edit.property("GroupPatchBody", "repo_url", merge(git_remote, json!({ "minLength": 1 })));
    edit.property(
        "GroupPatchBody",
        "default_ref",
        merge(git_ref.clone(), json!({ "minLength": 1 })),
    );
    edit.property("GroupPatchBody", "worker_image", text(&IMAGE_REFERENCE));
    edit.property("GroupPatchBody", "github_app_installation_id", json!({ "minimum": 0 }));
    edit.items("RestrictionsView", "allowed_zones", label());
    edit.items("RestrictionsView", "egress_allow", format("egress-rule", 512));

    edit.property("NewUserBody", "email", text(&EMAIL));
    edit.property("PasswordBody", "new_password", text(&PASSWORD));
    edit.property(
        "NewUserBody",
        "password",
        json!({ "anyOf": [{ "maxLength": 0 }, text(&PASSWORD)] }),
    );
    // Exactly one of the two names the user.
    edit.schema(
        "MemberBody",
        json!({ "oneOf": [
            { "required": ["user_id"], "properties": {
                "user_id": { "minLength": 1 }, "email": { "maxLength": 0 } } },
            { "required": ["email"], "properties": {
                "email": text(&EMAIL), "user_id": { "maxLength": 0 } } },
        ] }),
    );
    edit.property("MemberBody", "user_id", json!({ "maxLength": 64 }));
    edit.property("MemberBody", "email", json!({ "maxLength": EMAIL.max_chars }));

    edit.property("NewZoneBody", "name", label());
    edit.property("NewZoneBody", "provider", json!({ "enum": ["local", "gcp", "aws"] }));
    edit.items("NewZoneBody", "allowed_sizes", json!({ "enum": ["s", "m", "l"] }));
    // The region's shape depends on the provider.
    edit.schema(
        "NewZoneBody",
        json!({ "oneOf": [
            { "properties": { "provider": { "const": "local" }, "region": { "maxLength": 0 } } },
            { "required": ["region"],
              "properties": { "provider": { "const": "gcp" }, "region": text(&GCP_ZONE) } },
            { "required": ["region"],
              "properties": { "provider": { "const": "aws" }, "region": text(&AWS_ZONE) } },
        ] }),
    );
    edit.property("SizeBody", "size", json!({ "enum": ["s", "m", "l"] }));

    for list in ["permissions", "denied", "resources"] {
        edit.items("ProviderBoundsView", list, text(&CLOUD_PATTERN));
        edit.property("ProviderBoundsView", list, json!({ "maxItems": BOUNDS_MAX_PATTERNS }));
    }
    // AWS resources are narrower (what IAM takes as a boundary's `Resource`): beside the
    // `$ref`, which JSON Schema 2020-12 applies together with it.
    edit.property(
        "BoundsBody",
        "aws",
        json!({ "properties": { "resources": { "items": text(&AWS_RESOURCE_PATTERN) } } }),
    );

    // auth's service_account.rs (MAX_RULES, MAX_DESCRIPTION_CHARS).
    edit.property("RulesBody", "rules", json!({ "maxItems": 100 }));
    edit.property("RuleView", "permissions", json!({ "minItems": 1 }));
    edit.items("RuleView", "permissions", text(&CLOUD_PATTERN));
    edit.items("RuleView", "resources", text(&CLOUD_PATTERN));
    edit.property("RuleView", "description", json!({ "maxLength": 1024 }));

    let (low, high) = REBALANCE_INTERVAL_SECONDS;
    edit.property(
        "SettingsBody",
        "auto_rebalance_interval_seconds",
        json!({ "minimum": low, "maximum": high }),
    );
    edit.property("SettingsBody", "github_app_id", json!({ "minimum": 0 }));
    edit.property("SettingsBody", "github_app_private_key", text(&PEM_PRIVATE_KEY));

    edit.property("NewKeyBody", "name", text(&DISPLAY_NAME));
    edit.items("NewKeyBody", "environments", label());
    edit.items("NewKeyBody", "zones", label());
    edit.property("SecretBody", "value", text(&SECRET_VALUE));
    edit.property("SecretBody", "environment", json!({ "anyOf": [{ "maxLength": 0 }, label()] }));
    edit.property("SecretBody", "zone", json!({ "anyOf": [{ "maxLength": 0 }, label()] }));
    edit.items("IpRulesBody", "ip_rules", format("ip-network", 64));
    edit.property("IpRulesBody", "ip_rules", json!({ "maxItems": IP_RULES_MAX }));

    edit.property("NewEnvironmentBody", "name", label());
    // Empty = the group's default ref (a deploy's: the environment's); a change names one.
    edit.property("NewEnvironmentBody", "git_ref", git_ref.clone());
    edit.items("NewEnvironmentBody", "zones", label());
    edit.property(
        "EnvironmentPatchBody",
        "git_ref",
        merge(git_ref.clone(), json!({ "minLength": 1 })),
    );
    edit.items("EnvironmentPatchBody", "zones", label());
    edit.items("NewEnvironmentBody", "blocked", text(&TOOL_NAME));
    edit.items("EnvironmentPatchBody", "blocked", text(&TOOL_NAME));
    edit.property("DeployBody", "git_ref", git_ref);
    edit.property("DeployBody", "idempotency_key", text(&IDEMPOTENCY_KEY));
    edit.property("ReviewBody", "reason", text(&REVIEW_REASON));
    edit.property(
        "CountBody",
        "count",
        json!({ "minimum": 1, "maximum": limits.max_worker_count }),
    );
    edit.property("NewKeyBody", "expires_at", json!({ "format": "date-time" }));
    edit.items("McpAuthBody", "issuers", text(&ISSUER));
    edit.items("McpAuthBody", "scopes", text(&SCOPE));
    edit.u32_ranges();
    edit.optional_filters();
    edit.cli_sign_in();
    edit.job_events();
    edit.session_routes();
    edit.missing
}

fn merge(mut base: Value, more: Value) -> Value {
    if let (Some(base), Value::Object(more)) = (base.as_object_mut(), more) {
        for (key, value) in more {
            base.insert(key, value);
        }
    }
    base
}

struct Edit<'a> {
    doc: &'a mut Value,
    missing: Vec<String>,
}

impl Edit<'_> {
    fn component(&mut self, name: &str) -> Option<&mut Map<String, Value>> {
        let found = self.doc.pointer_mut(&format!("/components/schemas/{name}"));
        let found = found.and_then(Value::as_object_mut);
        if found.is_none() {
            self.missing.push(name.to_owned());
        }
        found
    }

    /// Merges `keywords` into the component's own keywords (`oneOf` and the like).
    fn schema(&mut self, name: &str, keywords: Value) {
        if let Some(schema) = self.component(name)
            && let Value::Object(keywords) = keywords
        {
            for (key, value) in keywords {
                schema.insert(key, value);
            }
        }
    }

    /// Merges `keywords` into a property's schema, beside its type and description: for a
    /// nullable property (`["string", "null"]`) a string keyword leaves `null` allowed.
    fn property(&mut self, name: &str, property: &str, keywords: Value) {
        let path = format!("{name}.{property}");
        let Some(schema) = self.component(name) else { return };
        match schema.get_mut("properties").and_then(|p| p.get_mut(property)) {
            Some(target) => *target = merge(target.take(), keywords),
            None => self.missing.push(path),
        }
    }

    /// The optional name filters of queries (`group`, `environment`, `zone`): absent or empty
    /// is no filter, anything else a DNS label (`views::filter_label` and auth's `scope`).
    fn optional_filters(&mut self) {
        let schema = json!({ "type": "string", "anyOf": [{ "maxLength": 0 }, label()] });
        let Some(paths) = self.doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for operation in item.values_mut() {
                for parameter in operation
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    let filter = parameter["in"] == "query"
                        && matches!(
                            parameter["name"].as_str(),
                            Some("group" | "environment" | "zone")
                        );
                    if filter {
                        parameter["schema"] = schema.clone();
                    }
                }
            }
        }
    }

    /// The routes behind the sign-in rate limiter (`rate_limit.rs`) answer 429; refresh and
    /// logout take their token from the body or from the session cookie, so their body is
    /// optional.
    fn session_routes(&mut self) {
        let limited = ["login", "refresh", "password", "sso~1start", "sso~1token"];
        for route in limited {
            let method = if route == "sso~1start" { "get" } else { "post" };
            let pointer = format!("/paths/~1api~1auth~1{route}/{method}/responses");
            let Some(responses) = self.doc.pointer_mut(&pointer).and_then(Value::as_object_mut)
            else {
                self.missing.push(pointer);
                continue;
            };
            responses.entry("429").or_insert_with(|| {
                json!({
                    "description": "Too many attempts from this account or address; `details.retry_after_ms` says when to try again",
                    "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } },
                })
            });
        }
        for route in ["refresh", "logout"] {
            let pointer = format!("/paths/~1api~1auth~1{route}/post/requestBody");
            match self.doc.pointer_mut(&pointer) {
                Some(body) => body["required"] = json!(false),
                None => self.missing.push(pointer),
            }
        }
    }

    /// A job's progress stream: each server-sent event is `event: job` with the whole job as
    /// JSON in `data`, or `event: error` with the error body. The stream's schema describes the
    /// event (OpenAPI 3.2's `itemSchema`, which 3.1 tools read from `schema`).
    fn job_events(&mut self) {
        let pointer = "/paths/~1api~1groups~1{group}~1jobs~1{job}~1events/get/responses/200/content/text~1event-stream";
        let Some(content) = self.doc.pointer_mut(pointer) else {
            self.missing.push("GET /api/groups/{group}/jobs/{job}/events 200".into());
            return;
        };
        content["schema"] = json!({
            "type": "object",
            "properties": {
                "event": { "enum": ["job", "error"] },
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": { "anyOf": [
                        { "$ref": "#/components/schemas/JobView" },
                        { "$ref": "#/components/schemas/ErrorBody" },
                    ] },
                },
                "id": { "type": "string" },
                "retry": { "type": "integer", "minimum": 0 },
            },
        });
    }

    /// `ramen login --sso` gives `cli_port` and `code_challenge` together or not at all: one
    /// optional object parameter, its two members exploded into the query (`style: form`), says
    /// so where two independent parameters could not.
    fn cli_sign_in(&mut self) {
        let Some(parameters) = self
            .doc
            .pointer_mut("/paths/~1api~1auth~1sso~1start/get/parameters")
            .and_then(Value::as_array_mut)
        else {
            self.missing.push("GET /api/auth/sso/start".into());
            return;
        };
        if parameters.iter().any(|p| p["name"] == "cli") {
            return;
        }
        let mut members = Map::new();
        parameters.retain(|p| match p["name"].as_str() {
            Some(name @ ("cli_port" | "code_challenge")) => {
                members.insert(name.to_owned(), p["schema"].clone());
                false
            }
            _ => true,
        });
        if members.len() != 2 {
            self.missing.push("GET /api/auth/sso/start: cli_port, code_challenge".into());
            return;
        }
        parameters.push(json!({
            "name": "cli",
            "in": "query",
            "required": false,
            "style": "form",
            "explode": true,
            "description": "`ramen login --sso`: the CLI's loopback port and the S256 challenge of the verifier it will redeem the code with, both or neither.",
            "schema": {
                "type": "object",
                "required": ["cli_port", "code_challenge"],
                "properties": members,
                "additionalProperties": false,
            },
        }));
    }

    /// utoipa writes a `u32` as `int32` from 0, which reads as at most 2³¹−1 while the API takes
    /// up to 2³²−1: every such field says its real range, unless a rule above set a maximum.
    fn u32_ranges(&mut self) {
        fn walk(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    let unsigned = map.get("format") == Some(&json!("int32"))
                        && map.get("minimum") == Some(&json!(0));
                    if unsigned && !map.contains_key("maximum") {
                        map.insert("format".into(), json!("int64"));
                        map.insert("maximum".into(), json!(u32::MAX));
                    }
                    map.values_mut().for_each(walk);
                }
                Value::Array(items) => items.iter_mut().for_each(walk),
                _ => {}
            }
        }
        walk(self.doc);
    }

    /// Merges `keywords` into the schema of an array property's items.
    fn items(&mut self, name: &str, property: &str, keywords: Value) {
        let path = format!("{name}.{property}[]");
        let Some(schema) = self.component(name) else { return };
        match schema
            .get_mut("properties")
            .and_then(|p| p.get_mut(property))
            .and_then(|p| p.get_mut("items"))
        {
            Some(target) => *target = merge(target.take(), keywords),
            None => self.missing.push(path),
        }
    }
}
