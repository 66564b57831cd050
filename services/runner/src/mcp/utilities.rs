//! Methods the node answers itself because the SDK servers a package exposes have no public
//! API for them (docs/packages.md, "What is not supported"): `completion/complete` gets an
//! empty completion, `resources/subscribe` and `resources/unsubscribe` are acknowledged.
//! Both capabilities are declared in the initialize result, so the methods must answer.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::calls::Reply;
use super::jsonrpc::{self, INVALID_PARAMS};

type Answer = (Reply, String, &'static str);

fn invalid(id: &str, message: &str) -> Answer {
    (Reply::error(id, INVALID_PARAMS, message), String::new(), "error")
}

fn ok(id: &str, result: &str) -> Answer {
    (Reply::json(jsonrpc::result(id, result)), String::new(), "ok")
}

/// `completion/complete`: no suggestions, but only for a well-formed request (-32602 else).
pub fn complete(id: &str, params: Option<&RawValue>) -> Answer {
    match completion(params) {
        Ok(result) => ok(id, result),
        Err(message) => invalid(id, message),
    }
}

/// The `completion/complete` result, or why the request is malformed.
pub fn completion(params: Option<&RawValue>) -> Result<&'static str, &'static str> {
    #[derive(Deserialize)]
    struct Ref {
        #[serde(rename = "type")]
        kind: String,
    }
    /// Required by the schema; its value completes nothing here.
    #[derive(Deserialize)]
    struct Argument {
        #[serde(rename = "name")]
        _name: String,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "ref")]
        reference: Ref,
        #[serde(rename = "argument")]
        _argument: Argument,
    }
    match params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok()) {
        Some(p) if matches!(p.reference.kind.as_str(), "ref/prompt" | "ref/resource") => {
            Ok(r#"{"completion":{"values":[],"total":0,"hasMore":false}}"#)
        }
        Some(_) => Err("`ref.type` must be ref/prompt or ref/resource"),
        None => Err("completion/complete needs `ref` and `argument.name`"),
    }
}

/// `resources/subscribe` and `resources/unsubscribe`: `{}` for a request naming a `uri`.
/// Updates a tool sends (`notifications/resources/updated`) reach the session as any
/// notification does; the node keeps no subscription list to filter them by.
pub fn subscription(id: &str, params: Option<&RawValue>) -> Answer {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "uri")]
        _uri: String,
    }
    match params.and_then(|p| serde_json::from_str::<Params>(p.get()).ok()) {
        Some(_) => ok(id, "{}"),
        None => invalid(id, "params.uri is required"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn answer(f: fn(&str, Option<&RawValue>) -> Answer, params: Value) -> Value {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        let (Reply::Json(body), _, _) = f("7", Some(&raw)) else { panic!("not a JSON reply") };
        serde_json::from_str(&body).unwrap()
    }

    #[test]
    fn completion_is_empty_for_a_valid_request_and_refuses_a_malformed_one() {
        let ok = answer(
            complete,
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}}),
        );
        assert_eq!(ok["id"], 7);
        assert_eq!(ok["result"]["completion"]["values"], json!([]));
        let bad_ref =
            answer(complete, json!({"ref": {"type": "ref/tool"}, "argument": {"name": "a"}}));
        assert_eq!(bad_ref["error"]["code"], INVALID_PARAMS);
        let no_argument = answer(complete, json!({"ref": {"type": "ref/resource", "uri": "u"}}));
        assert_eq!(no_argument["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn subscriptions_are_acknowledged_when_they_name_a_uri() {
        assert_eq!(answer(subscription, json!({"uri": "test://x"}))["result"], json!({}));
        assert_eq!(answer(subscription, json!({}))["error"]["code"], INVALID_PARAMS);
    }
}
