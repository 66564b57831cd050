use mongodb::bson::{Bson, doc};
use serde_json::json;

use super::{and_live, filter_doc, from_document, sort_doc, to_document};
use crate::{Expiry, Filter, Query};

#[test]
fn documents_round_trip_without_extended_json_surprises() {
    let body = json!({
        "n": 3, "f": 2.5, "whole": 4.0, "s": "x", "none": null, "yes": true,
        "nested": {"list": [1, "two", {"$oid_lookalike": "kept"}]},
        "oid": {"oid": "not an ObjectId"},
    });
    let stored = to_document("abc", 7, &body, None);
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

#[test]
fn a_retention_stamps_a_date_the_ttl_index_reads_and_the_body_comes_back_unchanged() {
    let expiry = Expiry { field: "at_ms".into(), after_seconds: 60 };
    let body = json!({"at_ms": 1_700_000_000_123_i64, "tool": "notes.add"});
    let stored = to_document("r1", 1, &body, Some(&expiry));
    let stamped = mongodb::bson::DateTime::from_millis(1_700_000_000_123);
    assert_eq!(stored.get("_expires"), Some(&Bson::DateTime(stamped)));
    assert_eq!(from_document(stored).expect("decodes").doc, body, "the stamp is never returned");
    // No time in the body: no stamp, so the TTL index never deletes it.
    let timeless = to_document("r2", 1, &json!({"tool": "x"}), Some(&expiry));
    assert!(!timeless.contains_key("_expires"));
    // Reads keep what has no stamp or a stamp after the cutoff.
    let cutoff = mongodb::bson::DateTime::from_millis(1_000_000 - 60_000);
    assert_eq!(
        and_live(doc! { "tool": "x" }, Some(&expiry), 1_000_000),
        doc! { "$and": [ { "tool": "x" }, { "$or": [
        { "_expires": { "$exists": false } }, { "_expires": { "$gt": cutoff } } ] } ] }
    );
    assert_eq!(and_live(doc! { "tool": "x" }, None, 1_000_000), doc! { "tool": "x" });
}
