//! Arbitrary JSON for property tests of the node's readers of raw JSON, with the keys and
//! texts a reader looks for mixed in, so generated values exercise them.

use proptest::prelude::*;
use serde_json::Value;

/// A string that is one of `named` as often as anything else, when `named` is not empty.
fn string(named: &'static [&'static str]) -> BoxedStrategy<String> {
    if named.is_empty() {
        return any::<String>().boxed();
    }
    prop_oneof![proptest::sample::select(named).prop_map(str::to_owned), any::<String>()].boxed()
}

/// JSON nested up to four levels, objects keyed by `keys` or anything, strings `texts` or
/// anything.
pub fn json_value(
    keys: &'static [&'static str],
    texts: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        string(texts).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            proptest::collection::btree_map(string(keys), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
