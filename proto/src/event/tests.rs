use std::collections::BTreeSet;

use serde_json::json;

use super::*;
use crate::common::v1::{DeployStep, JobState, StepStatus, Track};

const EVENTS_PROTO: &str = include_str!("../../ramen/events/v1/events.proto");

/// `(subject, message)` pairs of the header comment block (`// - <subject> <Message>`).
fn header_subjects() -> BTreeSet<(String, String)> {
    EVENTS_PROTO
        .lines()
        .take_while(|line| !line.starts_with("package "))
        .filter_map(|line| line.strip_prefix("// - "))
        .map(|entry| {
            let mut words = entry.split_whitespace();
            (words.next().unwrap().to_owned(), words.next().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn header_lists_exactly_the_subjects_in_the_table() {
    let table: BTreeSet<_> = ALL
        .iter()
        .map(|(name, subject)| (subject.to_string(), name.to_string()))
        .chain([(DEPLOY_DLQ_SUBJECT.to_owned(), "DeployWork".to_owned())])
        .collect();
    assert_eq!(header_subjects(), table);
}

#[test]
fn every_message_documents_its_subject_right_above_it() {
    for (name, subject) in ALL {
        let at = EVENTS_PROTO.find(&format!("\nmessage {name} {{")).expect(name);
        let comment: Vec<&str> =
            EVENTS_PROTO[..at].lines().rev().take_while(|line| line.starts_with("//")).collect();
        let wanted = format!("// Subject: `{subject}`.");
        assert!(comment.iter().any(|l| l.starts_with(&wanted)), "{name} lacks `{wanted}`");
    }
}

#[test]
fn subjects_are_unique_and_versioned() {
    let subjects: BTreeSet<_> = ALL.iter().map(|(_, s)| *s).collect();
    assert_eq!(subjects.len(), ALL.len());
    assert!(subjects.iter().all(|s| s.starts_with("ramen.") && s.contains(".v1.")));
    assert!(ALL.iter().filter(|(_, s)| s.starts_with("ramen.events.")).count() > 10);
    assert_eq!(ev::DeployFinished::SUBJECT, "ramen.events.v1.deploy.finished");
}

fn finished() -> ev::DeployFinished {
    ev::DeployFinished {
        meta: Some(ev::EventMeta {
            event_id: "0190e0a0-0000-7000-8000-000000000001".into(),
            at_unix_ms: 1_760_000_000_000,
            actor: "u-1".into(),
            request_id: "req-9".into(),
        }),
        job_id: "job-1".into(),
        group: "team-a".into(),
        environment: "prod".into(),
        state: JobState::Succeeded.into(),
        zones: vec![ev::ZoneOutcome {
            zone: "local-a".into(),
            status: StepStatus::Succeeded.into(),
            error: String::new(),
        }],
        ..Default::default()
    }
}

#[test]
fn json_writes_enums_by_name_and_round_trips() {
    let event = finished();
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(value["state"], json!("JOB_STATE_SUCCEEDED"));
    assert_eq!(value["zones"][0]["status"], json!("STEP_STATUS_SUCCEEDED"));
    assert_eq!(value["meta"]["at_unix_ms"], json!(1_760_000_000_000_i64));
    let back: ev::DeployFinished = serde_json::from_value(value).unwrap();
    assert_eq!(back, event);
    assert_eq!(back.meta().unwrap().actor, "u-1");
}

#[test]
fn json_tolerates_missing_and_unknown_fields_like_protobuf() {
    let old_producer = json!({ "job_id": "job-2", "step": "DEPLOY_STEP_CANARY" });
    let event: ev::DeployStepChanged = serde_json::from_value(old_producer).unwrap();
    assert_eq!(event.job_id, "job-2");
    assert_eq!(event.step(), DeployStep::Canary);
    assert_eq!(event.status(), StepStatus::Unspecified);
    assert!(event.meta.is_none() && event.stuck.is_empty());

    let new_producer = json!({ "node_id": "n1", "track": "TRACK_WORKER_SHADOW", "extra": 1 });
    let report: ev::NodeLoadReport = serde_json::from_value(new_producer).unwrap();
    assert_eq!(report.track, 0, "unknown enum names read as UNSPECIFIED");
    assert_eq!(report.node_id, "n1");
}

#[test]
fn json_accepts_enum_numbers_and_keeps_unknown_ones() {
    let report: ev::NodeLoadReport = serde_json::from_value(json!({ "track": 2 })).unwrap();
    assert_eq!(report.track(), Track::WorkerCanary);
    let future = ev::NodeLoadReport { track: 42, ..Default::default() };
    assert_eq!(serde_json::to_value(&future).unwrap()["track"], json!(42));
    let from_bytes: ev::NodeLoadReport =
        serde_json::from_slice(br#"{"track":"TRACK_WORKER_CANARY","in_flight":3}"#).unwrap();
    assert_eq!((from_bytes.track(), from_bytes.in_flight), (Track::WorkerCanary, 3));
}

#[test]
fn json_refuses_enum_values_that_are_neither_name_nor_number() {
    for bad in [r#"{"track":true}"#, r#"{"track":1.5}"#, r#"{"track":4294967296}"#] {
        let err = serde_json::from_str::<ev::NodeLoadReport>(bad).unwrap_err().to_string();
        assert!(err.contains("enum"), "{bad}: {err}");
    }
}

#[test]
fn json_handles_repeated_enum_fields() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Tracks {
        #[serde(
            serialize_with = "crate::json::enum_list::serialize::<Track, _>",
            deserialize_with = "crate::json::enum_list::deserialize::<Track, _>"
        )]
        tracks: Vec<i32>,
    }
    let tracks = Tracks { tracks: vec![Track::Worker.into(), Track::WorkerCanary.into()] };
    let value = serde_json::to_value(&tracks).unwrap();
    assert_eq!(value, json!({ "tracks": ["TRACK_WORKER", "TRACK_WORKER_CANARY"] }));
    assert_eq!(serde_json::from_value::<Tracks>(value).unwrap(), tracks);
}

#[test]
fn maps_and_optional_fields_survive_json() {
    let mut audit = ev::AuditAppended { action: "group.create".into(), ..Default::default() };
    audit.details.insert("repo".into(), "https://example.com/r.git".into());
    let back: ev::AuditAppended =
        serde_json::from_str(&serde_json::to_string(&audit).unwrap()).unwrap();
    assert_eq!(back, audit);

    let worker = ev::WorkerChanged { exit_code: Some(137), ..Default::default() };
    let value = serde_json::to_value(&worker).unwrap();
    assert_eq!(value["exit_code"], json!(137));
    assert_eq!(serde_json::from_value::<ev::WorkerChanged>(value).unwrap(), worker);
}
