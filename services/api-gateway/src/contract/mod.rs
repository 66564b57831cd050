//! What the handlers' own annotations leave out of the OpenAPI document, added the same way to
//! every route so that the document states every status a route can answer and the rules its
//! inputs are checked by — a client generated from it handles what it will meet:
//!
//! - path parameters carry the rule that checks them (`ramen_service::validate`'s DNS label
//!   for groups, environments and zones; an unsigned integer for dead-letter sequences);
//! - 400 wherever a route takes input, 401 and 403 behind sign-in (no or a bad token; a role
//!   short of the route's, a cookie request without its CSRF header, a one-time password not
//!   yet changed), 404 where the path names something, 413 and 415 with a JSON body, and 503
//!   (a service behind the gateway unreachable) everywhere.

pub mod bodies;

use ramen_service::paging::MAX_SIZE;
use ramen_service::rules;
use ramen_service::validate::{DNS_LABEL_MAX_LEN, DNS_LABEL_PATTERN};
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, Schema};

/// Path parameters whose values are DNS labels.
const LABELS: [&str; 3] = ["group", "env", "zone"];

fn label() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(DNS_LABEL_PATTERN))
            .min_length(Some(1))
            .max_length(Some(DNS_LABEL_MAX_LEN))
            .build(),
    )
}

fn sequence() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .build(),
    )
}

fn error(description: &str) -> RefOr<utoipa::openapi::Response> {
    let content = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content("application/json", content)
            .build(),
    )
}

/// Completes every operation of `item` (at `path`; `public` = callable without signing in).
pub fn complete(path: &str, public: bool, item: &mut PathItem) {
    let names_something = path.contains('{');
    for operation in crate::routes::operations_mut(item) {
        constrain_parameters(path, operation);
        let takes_input = names_something
            || operation.request_body.is_some()
            || operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
        let mut add = Vec::new();
        if takes_input {
            add.push(("400", "The input breaks a rule; the message names the field"));
        }
        if !public {
            add.push(("401", "No access token, or one that is not valid (any more)"));
            add.push((
                "403",
                "Not allowed: a role short of the route's, a cookie request without `x-csrf-token`, or a one-time password not yet changed",
            ));
        }
        if names_something {
            add.push(("404", "Nothing of that name, or nothing the caller may see"));
        }
        if operation.request_body.is_some() {
            add.push(("413", "The body is larger than the gateway takes"));
            add.push(("415", "The body is not declared `application/json`"));
        }
        add.push(("503", "A service behind the gateway is unreachable; retry"));
        let responses = &mut operation.responses.responses;
        for (status, description) in add {
            responses.entry(status.to_owned()).or_insert_with(|| error(description));
        }
    }
}

fn constrain_parameters(path: &str, operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        let name = parameter.name.as_str();
        let schema = match (&parameter.parameter_in, name) {
            (ParameterIn::Path, _) if LABELS.contains(&name) => label(),
            (ParameterIn::Path, "seq") => sequence(),
            (ParameterIn::Path, "job" | "key_id" | "user_id") => text(rules::ID.pattern),
            (ParameterIn::Path, "package") => text(rules::PACKAGE_NAME.pattern),
            (ParameterIn::Path, "name") if path.contains("/secrets/") => {
                json_schema(bodies::secret_name())
            }
            (ParameterIn::Query, "page_size") => page_size(),
            (ParameterIn::Query, "page_token") => page_token(path.ends_with("/audit")),
            // The optional name filters (`group`, `environment`, `zone`) are set on the JSON
            // document: see `bodies::optional_filters`.
            (ParameterIn::Query, "track") => json_schema(serde_json::json!({
                "type": "string", "enum": crate::routes::placements::TRACKS,
            })),
            (ParameterIn::Query, "state") if path.ends_with("/jobs") => {
                text(&crate::routes::jobs::states_pattern())
            }
            _ => continue,
        };
        parameter.schema = Some(RefOr::T(schema));
    }
}

/// The path's names held to the rules the document states for them ([`constrain_parameters`]):
/// one that breaks its rule names nothing, 404, before any service is asked (some services
/// would answer an empty list for a name that cannot exist).
pub async fn check_path(
    parts: &mut axum::http::request::Parts,
) -> Result<(), crate::error::ApiError> {
    use axum::extract::{FromRequestParts, RawPathParams};
    let Ok(params) = RawPathParams::from_request_parts(parts, &()).await else { return Ok(()) };
    for (name, value) in params.iter() {
        let kept = match name {
            _ if LABELS.contains(&name) => ramen_service::validate::DNS_LABEL_RULE.accepts(value),
            "job" | "key_id" | "user_id" => rules::ID.accepts(value),
            "package" => rules::PACKAGE_NAME.accepts(value),
            // Only secrets are named `{name}` in a path.
            "name" => rules::SECRET_NAME.accepts(value),
            _ => true,
        };
        if !kept {
            let shown = ramen_service::validate::quoted(value);
            return Err(crate::error::ApiError::not_found(format!(
                "no {name} {shown}: {}",
                what(name)
            )));
        }
    }
    Ok(())
}

fn what(name: &str) -> &'static str {
    match name {
        "job" | "key_id" | "user_id" => "ids are UUIDs",
        "package" => "not a Python package name",
        "name" => "not an environment-variable name",
        _ => "not a DNS label",
    }
}

fn text(pattern: &str) -> Schema {
    Schema::Object(ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern)).build())
}

/// A schema written as JSON. (utoipa's `Schema` keeps no `anyOf` beside `type`: such schemas
/// are set on the JSON document, in `bodies`.)
fn json_schema(value: serde_json::Value) -> Schema {
    serde_json::from_value(value).expect("a schema written here is a valid schema")
}

/// `ramen_service::paging`: 0 asks for the default, at most [`MAX_SIZE`].
fn page_size() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(0))
            .maximum(Some(MAX_SIZE as i64))
            .build(),
    )
}

/// A page token is the offset of the next page (`ramen_service::paging`); the audit log's also
/// pins the time of its first page (`<offset>.<until_ms>`). Opaque to clients, but these are
/// the only shapes a server issues.
fn page_token(audit: bool) -> Schema {
    let pattern = if audit { r"^[0-9]{0,19}(\.-?[0-9]{1,18})?$" } else { "^[0-9]{0,19}$" };
    Schema::Object(ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern)).build())
}
