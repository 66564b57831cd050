use proptest::prelude::*;

use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn aws(permissions: &[&str], resources: &[&str]) -> Result<(), OutOfBounds> {
    check(&Bounds::default().aws, Provider::Aws, 0, &strings(permissions), &strings(resources))
}

fn gcp(roles: &[&str], resources: &[&str]) -> Result<(), OutOfBounds> {
    check(&Bounds::default().gcp, Provider::Gcp, 2, &strings(roles), &strings(resources))
}

const BUCKET: &str = "arn:aws:s3:::team-data/*";
const GCS: &str = "projects/_/buckets/team-data";

#[test]
fn the_defaults_refuse_wildcards_iam_owner_editor_and_grants_on_everything() {
    let refused = aws(&["*"], &[BUCKET]).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "rule 1: permission \"*\" is outside the AWS bounds: no wildcards (aws.wildcards is false)"
    );
    assert!(aws(&["s3:*"], &[BUCKET]).unwrap_err().bound.contains("aws.wildcards"));
    let iam = aws(&["iam:PassRole"], &[BUCKET]).unwrap_err();
    assert_eq!(iam.bound, "aws.denied holds \"iam:*\"");
    assert!(aws(&["IAM:CreateUser"], &[BUCKET]).is_err(), "actions compare without case");
    assert!(aws(&["sts:AssumeRole"], &[BUCKET]).is_err());
    let everything = aws(&["s3:GetObject"], &[]).unwrap_err();
    assert_eq!(everything.what, "a grant on every resource (Resource \"*\")");
    assert!(everything.bound.contains("aws.unscoped is false"));
    assert!(aws(&["s3:GetObject"], &["*"]).is_err());

    let owner = gcp(&["roles/owner"], &[GCS]).unwrap_err();
    assert_eq!(
        owner.to_string(),
        "rule 3: permission \"roles/owner\" is outside the GCP bounds: gcp.denied holds \"roles/owner\""
    );
    assert!(gcp(&["roles/editor"], &[GCS]).is_err());
    assert!(gcp(&["roles/iam.serviceAccountTokenCreator"], &[GCS]).is_err());
    let project = gcp(&["roles/storage.objectViewer"], &[]).unwrap_err();
    assert_eq!(project.what, "a grant on the whole project");
    assert!(gcp(&["storage.objects.get"], &[GCS]).unwrap_err().bound.contains("gcp.permissions"));
}

#[test]
fn the_defaults_let_through_what_a_team_needs() {
    aws(&["s3:GetObject", "s3:PutObject"], &[BUCKET, "arn:aws:s3:::team-data"]).unwrap();
    aws(&["sqs:SendMessage"], &["arn:aws:sqs:us-east-1:123456789012:orders"]).unwrap();
    gcp(&["roles/storage.objectViewer"], &[GCS]).unwrap();
    gcp(&["projects/p/roles/custom"], &[GCS]).unwrap();
}

#[test]
fn narrowed_bounds_name_the_bound_a_rule_crosses() {
    let bounds = ProviderBounds {
        permissions: strings(&["s3:Get*", "s3:List*"]),
        denied: strings(&["s3:GetObjectAcl"]),
        resources: strings(&["arn:aws:s3:::team-*"]),
        wildcards: true,
        unscoped: false,
    };
    let run = |p: &[&str], r: &[&str]| check(&bounds, Provider::Aws, 0, &strings(p), &strings(r));
    run(&["s3:GetObject", "s3:List*"], &["arn:aws:s3:::team-a/*"]).unwrap();
    let put = run(&["s3:PutObject"], &["arn:aws:s3:::team-a/*"]).unwrap_err();
    assert_eq!(put.bound, "aws.permissions allows only [\"s3:Get*\", \"s3:List*\"]");
    let wide = run(&["s3:Get*"], &["arn:aws:s3:::team-a/*"]).unwrap_err();
    assert_eq!(
        wide.bound, "aws.denied holds \"s3:GetObjectAcl\"",
        "s3:Get* could be s3:GetObjectAcl"
    );
    let other = run(&["s3:GetObject"], &["arn:aws:s3:::payroll/*"]).unwrap_err();
    assert_eq!(other.what, "resource \"arn:aws:s3:::payroll/*\"");
    assert!(other.bound.starts_with("aws.resources allows only"));
    assert!(run(&["s3:*"], &["arn:aws:s3:::team-a/*"]).is_err(), "s3:* is wider than s3:Get*");
}

#[test]
fn project_scope_and_wildcards_are_a_super_admins_choice() {
    let mut bounds = Bounds::default();
    bounds.gcp.unscoped = true;
    check(&bounds.gcp, Provider::Gcp, 0, &strings(&["roles/pubsub.publisher"]), &[]).unwrap();
    bounds.aws.wildcards = true;
    let star = check(&bounds.aws, Provider::Aws, 0, &strings(&["*"]), &strings(&[BUCKET]));
    assert_eq!(star.unwrap_err().bound, "aws.denied holds \"iam:*\"", "* still reaches iam:*");
    check(&bounds.aws, Provider::Aws, 0, &strings(&["s3:*"]), &strings(&[BUCKET])).unwrap();
}

#[test]
fn bounds_round_trip_and_malformed_ones_name_their_field() {
    let bounds = Bounds::default();
    bounds.validate().unwrap();
    let json = serde_json::to_string(&bounds).unwrap();
    assert_eq!(serde_json::from_str::<Bounds>(&json).unwrap(), bounds);
    let mut bad = bounds.clone();
    bad.gcp.denied.push("roles/ owner".into());
    assert_eq!(bad.validate().unwrap_err().field, "gcp.denied");
    let mut long = bounds.clone();
    long.aws.resources = vec!["arn:aws:s3:::a".into(); MAX_PATTERNS + 1];
    assert_eq!(long.validate().unwrap_err().field, "aws.resources");
    for bad in ["arn:*", "arn:aws:*:::x", "s3:::bucket"] {
        let mut iam_refuses = bounds.clone();
        iam_refuses.aws.resources = vec![bad.into()];
        let err = iam_refuses.validate().unwrap_err();
        assert!(err.problem.contains("ARN pattern"), "{bad}: {err}");
    }
}

/// Reference matcher: `*` as any run, by recursion.
fn reference(p: &[u8], t: &[u8]) -> bool {
    match (p.first(), t.first()) {
        (None, None) => true,
        (Some(b'*'), _) => reference(&p[1..], t) || (!t.is_empty() && reference(p, &t[1..])),
        (Some(a), Some(b)) if a == b => reference(&p[1..], &t[1..]),
        _ => false,
    }
}

fn pattern() -> impl Strategy<Value = String> {
    "[ab:*]{0,8}"
}

fn literal() -> impl Strategy<Value = String> {
    "[ab:]{0,8}"
}

/// Every `*` of `w` replaced by the next of `fills`.
fn expand(w: &str, fills: &[String]) -> String {
    let mut fills = fills.iter().cycle();
    w.chars()
        .map(|c| if c == '*' { fills.next().cloned().unwrap_or_default() } else { c.to_string() })
        .collect()
}

proptest! {
    #[test]
    fn matching_a_literal_is_the_reference(p in pattern(), t in literal()) {
        prop_assert_eq!(matches(&p, &t, true), reference(p.as_bytes(), t.as_bytes()));
        prop_assert_eq!(overlaps(&p, &t, true), matches(&p, &t, true));
    }

    #[test]
    fn a_wildcard_text_that_matches_has_every_expansion_match(
        p in pattern(), w in pattern(), fills in proptest::collection::vec(literal(), 1..4)
    ) {
        if matches(&p, &w, true) {
            let expanded = expand(&w, &fills);
            prop_assert!(matches(&p, &expanded, true), "{p} covers {w} but not {expanded}");
        }
    }

    #[test]
    fn overlap_is_symmetric_and_found_whenever_a_common_string_exists(
        a in pattern(), b in pattern(), s in literal()
    ) {
        prop_assert_eq!(overlaps(&a, &b, true), overlaps(&b, &a, true));
        if matches(&a, &s, true) && matches(&b, &s, true) {
            prop_assert!(overlaps(&a, &b, true), "{s} is under both {a} and {b}");
        }
    }

    #[test]
    fn no_overlap_means_no_expansion_of_one_matches_the_other(
        a in pattern(), b in pattern(), fills in proptest::collection::vec(literal(), 1..4)
    ) {
        if !overlaps(&a, &b, true) {
            prop_assert!(!matches(&a, &expand(&b, &fills), true));
        }
    }
}
