//! Validation of obviously bad bodies, with the apiserver's field paths and messages, so a
//! provider that builds an invalid manifest fails here as it would on a cluster. Only the
//! checks a client is likely to trip are made (names, labels, selectors, container basics);
//! the rest of the schema is left to `kubernetes-validate` on the recorded requests.

use serde_json::Value;

use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::store::meta;

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns1035_label(s: &str) -> bool {
    is_dns_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

fn is_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_label_value(s: &str) -> bool {
    s.is_empty()
        || (s.len() <= 63
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && s.as_bytes()[0].is_ascii_alphanumeric()
            && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric())
}

fn is_label_key(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    prefix.is_none_or(is_subdomain) && !name.is_empty() && is_label_value(name)
}

/// Which rule a kind's names follow (`ValidateObjectMeta` name functions).
fn name_rule(rt: &ResourceType) -> (fn(&str) -> bool, &'static str) {
    match rt.plural {
        "namespaces" => (is_dns_label, LABEL_MSG),
        "services" => (is_dns1035_label, DNS1035_MSG),
        _ => (is_subdomain, SUBDOMAIN_MSG),
    }
}

fn invalid_value(field: &str, value: &str, message: &str) -> (String, String) {
    (field.to_owned(), format!("Invalid value: {value:?}: {message}"))
}

/// Checks an object about to be stored; `Err` is a 422 `Invalid` naming every bad field.
pub fn validate(rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let name = meta::name(obj);
    let mut causes = Vec::new();
    let (rule, message) = name_rule(rt);
    if name.is_empty() {
        causes.push((
            "metadata.name".to_owned(),
            "Required value: name or generateName is required".to_owned(),
        ));
    } else if !rule(name) {
        causes.push(invalid_value("metadata.name", name, message));
    }
    for (key, value) in meta::labels(obj) {
        let value = value.as_str().unwrap_or_default();
        if !is_label_key(&key) {
            causes.push(invalid_value("metadata.labels", &key, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"));
        }
        if !is_label_value(value) {
            causes.push(invalid_value("metadata.labels", value, LABEL_VALUE_MSG));
        }
    }
    match rt.plural {
        "pods" => containers("spec", obj.get("spec"), &mut causes),
        "deployments" | "replicasets" => workload(obj, &mut causes),
        _ => {}
    }
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid(rt, name, causes)) }
}

fn workload(obj: &Value, causes: &mut Vec<(String, String)>) {
    let selector = obj.pointer("/spec/selector/matchLabels").and_then(Value::as_object);
    let labels = obj.pointer("/spec/template/metadata/labels").and_then(Value::as_object);
    match (selector, labels) {
        (None, _) if obj.pointer("/spec/selector/matchExpressions").is_none() => {
            causes.push(("spec.selector".to_owned(), "Required value".to_owned()))
        }
        (Some(selector), labels) => {
            let matches = selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
            if !matches {
                causes.push((
                    "spec.template.metadata.labels".to_owned(),
                    format!(
                        "Invalid value: {}: `selector` does not match template `labels`",
                        serde_json::to_string(&labels).unwrap_or_default()
                    ),
                ));
            }
        }
        _ => {}
    }
    containers("spec.template.spec", obj.pointer("/spec/template/spec"), causes);
}

fn containers(at: &str, spec: Option<&Value>, causes: &mut Vec<(String, String)>) {
    let list = spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        causes.push((format!("{at}.containers"), "Required value".to_owned()));
        return;
    };
    for (i, container) in list.iter().enumerate() {
        let name = container.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            causes.push((format!("{at}.containers[{i}].name"), "Required value".to_owned()));
        } else if !is_dns_label(name) {
            causes.push(invalid_value(&format!("{at}.containers[{i}].name"), name, LABEL_MSG));
        }
        if container.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
            causes.push((format!("{at}.containers[{i}].image"), "Required value".to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rules_match_the_apiserver() {
        assert!(is_dns_label("a-1"));
        assert!(!is_dns_label("A"));
        assert!(!is_dns_label("a_b"));
        assert!(!is_dns_label("-a"));
        assert!(is_subdomain("a.b-c"));
        assert!(!is_dns1035_label("1abc"));
        assert!(is_label_key("app.kubernetes.io/name"));
        assert!(!is_label_value("has space"));
    }
}
