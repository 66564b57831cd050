use mongodb::bson::{Bson, doc};
use serde_json::json;

use super::{filter_doc, from_document, sort_doc, to_document};
use crate::{Filter, Query};

#[test]
fn documents_round_trip_without_extended_json_surprises() {
    let body = json!({
        "n": 3, "f": 2.5, "whole": 4.0, "s": "x", "none": null, "yes": true,
        "nested": {"list": [1, "two", {"$oid_lookalike": "kept"}]},
        "oid": {"oid": "not an ObjectId"},
    });
    let stored = to_document("abc", 7, &body);
    assert_eq!(stored.get("_id"), Some(&Bson::String("abc".into())));
    assert_eq!(stored.get("_v"), Some(&Bson::Int64(7)));
    assert_eq!(stored.get("n"), Some(&Bson::Int64(3)));
    let back = from_document(stored).expect("decodes");
    assert_eq!((back.id.as_str(), back.version), ("abc", 7));
    assert_eq!(back.doc, body);
}

#[test]
fn filters_become_an_and_of_operator_documents() {
    let filter = Filter::new().gte("at", 5).lt("at", 9).exists("owner.email", true);
    assert_eq!(
        filter_doc(&filter),
        doc! { "$and": [
            { "at": { "$gte": 5_i64 } },
            { "at": { "$lt": 9_i64 } },
            { "owner.email": { "$exists": true } },
        ] }
    );
    assert_eq!(filter_doc(&Filter::new()), doc! {});
}

#[test]
fn sorts_end_with_the_id() {
    let q = Query::new().sort_desc("at").sort_asc("name");
    assert_eq!(sort_doc(&q.sort), doc! { "at": -1, "name": 1, "_id": 1 });
    let by_id = Query::new().sort_desc("_id");
    assert_eq!(sort_doc(&by_id.sort), doc! { "_id": -1 });
}
