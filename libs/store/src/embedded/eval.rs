//! Filter, sort and unique-key evaluation over JSON documents, with MongoDB's semantics for
//! the cases the port documents (see `Op`), so both adapters answer a query alike.

use std::cmp::Ordering;

use serde_json::{Number, Value};

use crate::{Condition, Filter, Op, Order};

/// The value at a dotted path; `_id` is the document id. Numeric segments index arrays.
pub(super) fn lookup<'a>(id: &'a Value, doc: &'a Value, path: &str) -> Option<&'a Value> {
    if path == "_id" {
        return Some(id);
    }
    path.split('.').try_fold(doc, |current, segment| match current {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

pub(super) fn matches(filter: &Filter, id: &Value, doc: &Value) -> bool {
    filter.conditions.iter().all(|cond| matches_one(cond, lookup(id, doc, &cond.field)))
}

fn matches_one(cond: &Condition, field: Option<&Value>) -> bool {
    match &cond.op {
        Op::Eq(target) => equals(field, target),
        Op::Ne(target) => !equals(field, target),
        Op::In(targets) => targets.iter().any(|t| equals(field, t)),
        Op::Exists(present) => field.is_some() == *present,
        Op::Gt(t) => compares(field, t, |o| o == Ordering::Greater),
        Op::Gte(t) => compares(field, t, |o| o != Ordering::Less),
        Op::Lt(t) => compares(field, t, |o| o == Ordering::Less),
        Op::Lte(t) => compares(field, t, |o| o != Ordering::Greater),
    }
}

/// Like MongoDB: `null` matches a missing field, and an array matches when it equals the
/// target or holds an element that does.
fn equals(field: Option<&Value>, target: &Value) -> bool {
    match field {
        None => target.is_null(),
        Some(value) => {
            same(value, target)
                || matches!(value, Value::Array(items) if items.iter().any(|v| same(v, target)))
        }
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y) == Ordering::Equal,
        _ => a == b,
    }
}

fn compares(field: Option<&Value>, target: &Value, accept: impl Fn(Ordering) -> bool) -> bool {
    let test = |v: &Value| like_cmp(v, target).is_some_and(&accept);
    match field {
        None => false,
        Some(Value::Array(items)) => items.iter().any(test),
        Some(value) => test(value),
    }
}

/// Orders two values of the same kind (numbers or strings); other pairs are incomparable.
fn like_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Some(number_cmp(x, y)),
        (Value::String(x), Value::String(y)) => Some(x.as_str().cmp(y.as_str())),
        _ => None,
    }
}

pub(super) fn number_cmp(a: &Number, b: &Number) -> Ordering {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            x.total_cmp(&y)
        }
    }
}

/// MongoDB's cross-type sort order, for the kinds JSON has: missing and null, numbers,
/// strings, objects, arrays, booleans.
fn rank(value: Option<&Value>) -> u8 {
    match value {
        None | Some(Value::Null) => 0,
        Some(Value::Number(_)) => 1,
        Some(Value::String(_)) => 2,
        Some(Value::Object(_)) => 3,
        Some(Value::Array(_)) => 4,
        Some(Value::Bool(_)) => 5,
    }
}

pub(super) fn sort_cmp(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(x), Some(y)) => like_cmp(x, y).unwrap_or_else(|| x.to_string().cmp(&y.to_string())),
        _ => Ordering::Equal,
    })
}

/// Orders documents by the sort keys, then by id (ascending) so results are stable.
pub(super) fn order_by(
    sort: &[(String, Order)],
    a: (&Value, &Value),
    b: (&Value, &Value),
) -> Ordering {
    sort.iter()
        .map(|(field, order)| {
            let o = sort_cmp(lookup(a.0, a.1, field), lookup(b.0, b.1, field));
            if *order == Order::Desc { o.reverse() } else { o }
        })
        .find(|o| o.is_ne())
        .unwrap_or_else(|| sort_cmp(Some(a.0), Some(b.0)))
}

/// The key a document holds in a unique index, or `None` when it lacks one of the fields (a
/// partial index, as in the MongoDB adapter). Numbers are canonical so `1` and `1.0` collide,
/// as they do in MongoDB.
pub(super) fn unique_key(doc: &Value, fields: &[String]) -> Option<Vec<u8>> {
    let mut out = String::from("[");
    for (i, field) in fields.iter().enumerate() {
        let value = lookup(&Value::Null, doc, field)?;
        if i > 0 {
            out.push(',');
        }
        canonical(value, &mut out);
    }
    out.push(']');
    Some(out.into_bytes())
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            // Whole floats in i64 range print like the integer they equal.
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                out.push_str(&(f as i64).to_string());
            }
            _ => out.push_str(&n.to_string()),
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(item, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
#[path = "eval_tests.rs"]
mod tests;
