use std::cmp::Ordering;

use serde_json::{Value, json};

use super::{matches, sort_cmp, unique_key};
use crate::Filter;

fn hit(filter: Filter, doc: Value) -> bool {
    matches(&filter, &json!("id-1"), &doc)
}

#[test]
fn null_and_ne_match_missing_fields_like_mongodb() {
    assert!(hit(Filter::new().eq("gone", Value::Null), json!({})));
    assert!(!hit(Filter::new().eq("here", Value::Null), json!({"here": 1})));
    assert!(hit(Filter::new().ne("gone", 1), json!({})));
    assert!(!hit(Filter::new().ne("n", 1.0), json!({"n": 1})));
}

#[test]
fn arrays_match_by_element() {
    let doc = json!({"tags": ["a", "b"], "scores": [3, 9]});
    assert!(hit(Filter::new().eq("tags", "b"), doc.clone()));
    assert!(hit(Filter::new().eq("tags", json!(["a", "b"])), doc.clone()));
    assert!(hit(Filter::new().gt("scores", 8), doc.clone()));
    assert!(!hit(Filter::new().gt("scores", 9), doc.clone()));
    assert!(hit(Filter::new().eq("tags.1", "b"), doc));
}

#[test]
fn ordering_compares_only_like_with_like() {
    assert!(!hit(Filter::new().gt("v", 1), json!({"v": "2"})));
    assert!(!hit(Filter::new().lt("v", "z"), json!({"v": 1})));
    assert!(hit(Filter::new().gt("v", 9), json!({"v": 10})));
    assert!(hit(Filter::new().lt("v", "9"), json!({"v": "10"})));
    assert!(hit(Filter::new().gte("v", 2.5).lte("v", 2.5), json!({"v": 2.5})));
}

#[test]
fn the_id_is_a_field() {
    assert!(hit(Filter::new().eq("_id", "id-1"), json!({})));
    assert!(hit(Filter::new().is_in("_id", ["x", "id-1"]), json!({})));
}

#[test]
fn sort_order_follows_mongodb_type_ranks() {
    let (null, num, text) = (json!(null), json!(5), json!("a"));
    assert_eq!(sort_cmp(None, Some(&null)), Ordering::Equal);
    assert_eq!(sort_cmp(Some(&null), Some(&num)), Ordering::Less);
    assert_eq!(sort_cmp(Some(&num), Some(&text)), Ordering::Less);
    assert_eq!(sort_cmp(Some(&json!(10)), Some(&json!(9.5))), Ordering::Greater);
}

#[test]
fn unique_keys_are_canonical_and_partial() {
    let fields = vec!["a".to_owned(), "b.c".to_owned()];
    let one = unique_key(&json!({"a": 1, "b": {"c": {"y": 1, "x": 2}}}), &fields);
    let same = unique_key(&json!({"a": 1.0, "b": {"c": {"x": 2, "y": 1}}}), &fields);
    assert!(one.is_some());
    assert_eq!(one, same);
    assert_ne!(one, unique_key(&json!({"a": "1", "b": {"c": {"x": 2, "y": 1}}}), &fields));
    assert_eq!(unique_key(&json!({"a": 1}), &fields), None);
    assert!(unique_key(&json!({"a": null, "b": {"c": null}}), &fields).is_some());
}
