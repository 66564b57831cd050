//! Request extractors whose refusals use the API's error shape. Body errors never quote a
//! value from the body (it may be a secret or a password): only field names and positions.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body.
pub struct Body<T>(pub T);

/// Keeps serde's message when it names only fields or positions.
pub fn body_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let quotes_a_value = ["invalid type", "invalid value", "unknown variant", "invalid length"]
        .iter()
        .any(|p| text.contains(p));
    if quotes_a_value {
        let at = text.rfind(" at line ").map(|i| &text[i..]).unwrap_or_default();
        format!("request body: a field has the wrong type or value{at}")
    } else {
        format!("request body: {text}")
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::invalid(format!("request body: {}", e.body_text())))?;
        if bytes.is_empty() {
            return Err(ApiError::invalid("request body: expected a JSON object"));
        }
        parse(&bytes).map(Body)
    }
}

/// Parses a JSON body as JSON Schema reads it: a number with no fractional part (`10.0`) is an
/// integer there, so an integer field takes it (serde alone would refuse it for a `u32`).
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(body_error(&e)))?;
    integral(&mut value);
    serde_json::from_value(value).map_err(|e| ApiError::invalid(body_error(&e)))
}

fn integral(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 {
                // In range: the cast is exact for every integral f64 below 2^63 (2^64).
                if f.abs() < 2f64.powi(63) {
                    *n = (f as i64).into();
                } else if (0.0..2f64.powi(64)).contains(&f) {
                    *n = (f as u64).into();
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral),
        Value::Object(map) => map.values_mut().for_each(integral),
        _ => {}
    }
}

/// Refuses a body not declared `application/json` (or `application/<x>+json`). Routes open to
/// anyone that act on the browser's session (login, refresh, logout) and the password change
/// need it: a page on another origin can make a browser post a `text/plain` form or a
/// `no-cors` fetch with any body, but only a same-origin script can declare JSON.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = declared.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let json = media == "application/json"
        || media.strip_prefix("application/").is_some_and(|sub| sub.ends_with("+json"));
    if json { Ok(()) } else { Err(ApiError::unsupported_media_type()) }
}

/// A JSON body whose request also declares it JSON ([`require_json`]).
pub struct JsonOnly<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonOnly<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json(request.headers())?;
        Body::from_request(request, state).await.map(|Body(body)| JsonOnly(body))
    }
}

/// A JSON body that may be left out: an empty body is `T::default()` (e.g. `POST .../deploys`
/// without a ref, from `curl -X POST`).
pub struct OptionalBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::invalid(format!("request body: {}", e.body_text())))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        parse(&bytes).map(OptionalBody)
    }
}

/// Query-string parameters.
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|e| ApiError::invalid(format!("query: {}", e.body_text())))
    }
}

#[cfg(test)]
mod tests {
    use super::{body_error, parse, require_json};

    #[test]
    fn only_declared_json_is_json() {
        let with = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert("content-type", value.parse().unwrap());
            require_json(&headers).is_ok()
        };
        for ok in
            ["application/json", "Application/JSON; charset=utf-8", "application/merge-patch+json"]
        {
            assert!(with(ok), "{ok}");
        }
        for refused in [
            "text/plain",
            "text/plain; a=application/json",
            "application/jsonx",
            "text/json+json",
            "",
        ] {
            assert!(!with(refused), "{refused}");
        }
        assert!(require_json(&axum::http::HeaderMap::new()).is_err(), "no Content-Type");
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Secretish {
        value: String,
        count: u32,
    }

    #[test]
    fn integral_numbers_are_integers() {
        #[derive(serde::Deserialize, Debug)]
        struct Counts {
            small: u32,
            signed: i64,
            list: Vec<u8>,
        }
        let counts: Counts =
            parse(br#"{"small": 10.0, "signed": -3.0, "list": [1.0, 2]}"#).unwrap();
        assert_eq!((counts.small, counts.signed, counts.list), (10, -3, vec![1, 2]));
        let fractional = parse::<Counts>(br#"{"small": 10.5, "signed": 0, "list": []}"#);
        assert!(fractional.is_err());
    }

    #[test]
    fn body_errors_name_fields_but_never_values() {
        let wrong =
            serde_json::from_str::<Secretish>(r#"{"value": "x", "count": "hunter2"}"#).unwrap_err();
        let message = body_error(&wrong);
        assert!(!message.contains("hunter2") && message.contains("wrong type"), "{message}");
        let missing = serde_json::from_str::<Secretish>(r#"{"value": "hunter2"}"#).unwrap_err();
        assert!(body_error(&missing).contains("missing field `count`"));
        let unknown =
            serde_json::from_str::<Secretish>(r#"{"valu": "hunter2", "count": 1}"#).unwrap_err();
        let message = body_error(&unknown);
        assert!(
            message.contains("unknown field `valu`") && !message.contains("hunter2"),
            "{message}"
        );
    }
}
