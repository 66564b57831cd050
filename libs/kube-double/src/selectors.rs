//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!` not-exists) and field
//! selectors (`=`, `==`, `!=` on dotted paths such as `metadata.name`) as list and watch take
//! them, plus the structured `matchLabels`/`matchExpressions` form controllers use.

use serde_json::{Map, Value};

use crate::errors::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part).ok_or_else(|| {
                ApiError::bad_request(format!("unable to parse requirement: {part:?}"))
            })?);
        }
        Ok(Self(requirements))
    }

    /// `matchLabels` + `matchExpressions` of a `metav1.LabelSelector`.
    pub fn from_structured(selector: &Value) -> Self {
        let mut requirements = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                requirements.push(Requirement::Equals(
                    k.clone(),
                    v.as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
        for expr in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten()
        {
            let key = expr["key"].as_str().unwrap_or_default().to_owned();
            let values = crate::store::meta::strings(expr.get("values"));
            requirements.push(match expr["operator"].as_str().unwrap_or_default() {
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "DoesNotExist" => Requirement::NotExists(key),
                _ => Requirement::Exists(key),
            });
        }
        Self(requirements)
    }

    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        })
    }

    /// `k=v,...` for a selector of equalities (a Scale's `status.selector`).
    pub fn to_text(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => format!("{k}={v}"),
                Requirement::NotEquals(k, v) => format!("{k}!={v}"),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::NotExists(k) => format!("!{k}"),
            })
            .collect();
        parts.join(",")
    }
}

/// Splits on commas outside `( ... )` value sets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Option<Requirement> {
    if let Some(key) = part.strip_prefix('!') {
        return Some(Requirement::NotExists(key.trim().to_owned()));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Some(Requirement::NotEquals(k.trim().to_owned(), v.trim().to_owned()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Some(Requirement::Equals(k.trim().to_owned(), v.trim().to_owned()));
    }
    for (op, set) in [(" notin ", false), (" in ", true)] {
        if let Some((k, rest)) = part.split_once(op) {
            let values = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
            let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
            let key = k.trim().to_owned();
            return Some(if set {
                Requirement::In(key, values)
            } else {
                Requirement::NotIn(key, values)
            });
        }
    }
    let key = part.trim();
    (!key.contains(char::is_whitespace)).then(|| Requirement::Exists(key.to_owned()))
}

/// A parsed field selector: equalities on dotted paths of the object.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            terms.push((path.trim().to_owned(), equal, value.trim().to_owned()));
        }
        Ok(Self(terms))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let pointer = format!("/{}", path.replace('.', "/"));
            let actual = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn set_based_and_equality_requirements() {
        let l = labels(json!({"app": "web", "tier": "front"}));
        let ok = [
            "app=web",
            "app==web",
            "tier!=back",
            "app in (web,api)",
            "tier notin (back)",
            "app",
            "!missing",
            "app=web,tier in (front)",
        ];
        for text in ok {
            assert!(LabelSelector::parse(text).unwrap().matches(&l), "{text}");
        }
        for text in ["app=api", "app notin (web)", "missing", "!app", "app in (api, db)"] {
            assert!(!LabelSelector::parse(text).unwrap().matches(&l), "{text}");
        }
    }

    #[test]
    fn field_selectors_on_metadata() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        assert!(
            FieldSelector::parse("metadata.name=a,metadata.namespace!=x").unwrap().matches(&obj)
        );
        assert!(!FieldSelector::parse("metadata.name=b").unwrap().matches(&obj));
    }
}
