//! What the handlers' own annotations leave out of the OpenAPI document, added the same way to
//! every route so that the document states every status a route can answer and the rules its
//! inputs are checked by — a client generated from it handles what it will meet:
//!
//! - path parameters carry the rule that checks them ([`path_rule`]: DNS labels for groups,
//!   environments and zones, ids, package and secret names; an unsigned integer for
//!   dead-letter sequences);
//! - 400 wherever a route takes input, 401 and 403 behind sign-in (no or a bad token; a role
//!   short of the route's, a cookie request without its CSRF header, a one-time password not
//!   yet changed), 404 where the path names something, 413 and 415 with a JSON body, and 503
//!   (a service behind the gateway unreachable) everywhere.

pub mod bodies;

use ramen_service::paging::MAX_SIZE;
use ramen_service::rules::{self, TextRule};
use ramen_service::validate::DNS_LABEL_RULE;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, Schema};

/// The rule a path parameter's value keeps, by the parameter's name: the document states it
/// ([`constrain_parameters`]) and [`check_path`] holds requests to it, from this one table.
fn path_rule(name: &str) -> Option<&'static TextRule> {
    match name {
        "group" | "env" | "zone" => Some(&DNS_LABEL_RULE),
        "job" | "key_id" | "user_id" => Some(&rules::ID),
        "package" => Some(&rules::PACKAGE_NAME),
        // Only secrets are named `{name}` in a path.
        "name" => Some(&rules::SECRET_NAME),
        _ => None,
    }
}

/// A string schema stating `rule`: its pattern and its lengths.
fn rule_schema(rule: &TextRule) -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(rule.pattern))
            .min_length(Some(rule.min_chars))
            .max_length(Some(rule.max_chars))
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
            (ParameterIn::Path, "seq") => sequence(),
            (ParameterIn::Path, _) => match path_rule(name) {
                Some(rule) => rule_schema(rule),
                None => continue,
            },
            (ParameterIn::Query, "page_size") => page_size(),
            (ParameterIn::Query, "page_token") => {
                page_token(path.ends_with("/audit") || path.ends_with("/calls"))
            }
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
        if let Some(rule) = path_rule(name)
            && !rule.accepts(value)
        {
            let shown = ramen_service::validate::quoted(value);
            return Err(crate::error::ApiError::not_found(format!(
                "no {name} {shown}: not {}",
                rule.what
            )));
        }
    }
    Ok(())
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

/// A page token is the offset of the next page (`ramen_service::paging`); the audit log's and
/// the call records' also pin the time of their first page (`<offset>.<until_ms>`). Opaque to
/// clients, but these are the only shapes a server issues.
fn page_token(pinned: bool) -> Schema {
    let pattern = if pinned { r"^[0-9]{0,19}(\.-?[0-9]{1,18})?$" } else { "^[0-9]{0,19}$" };
    Schema::Object(ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern)).build())
}
