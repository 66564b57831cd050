use proptest::prelude::*;

use super::*;

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

fn alice<'a>(groups: &'a [String], scopes: &'a [String]) -> Who<'a> {
    Who::Token { subject: "alice", groups, roles: &[], scopes }
}

#[test]
fn no_rules_grant_everything() {
    let rules = Rules::new(Vec::new());
    assert!(rules.is_empty());
    assert_eq!(rules.grant(&Who::Anonymous), Grant::Everything);
    assert_eq!(rules.grant(&Who::Key { id: "k1", name: "ci" }), Grant::Everything);
}

#[test]
fn a_caller_gets_the_union_of_the_rules_it_matches() {
    let rules = Rules::new(vec![
        Rule { groups: strings(&["payments"]), allow: strings(&["payments"]), ..Rule::default() },
        Rule { scopes: strings(&["mcp:admin"]), allow: strings(&["*"]), ..Rule::default() },
        Rule { subjects: strings(&["alice"]), allow: strings(&["notes.add"]), ..Rule::default() },
        Rule { keys: strings(&["ci"]), allow: strings(&["weather"]), ..Rule::default() },
    ]);
    let (groups, scopes) = (strings(&["payments", "staff"]), strings(&["mcp:tools"]));
    let grant = rules.grant(&alice(&groups, &scopes));
    assert!(grant.name("payments", "payments.refund"), "the whole package, by group");
    assert!(grant.name("notes", "notes.add"), "one tool, by subject");
    assert!(!grant.name("notes", "notes.divide"), "another tool of that package is not");
    assert!(!grant.package("notes"), "resources go by package");
    assert!(!grant.name("weather", "weather.forecast"), "a key's rule is not a token's");

    let admin = strings(&["mcp:admin"]);
    assert_eq!(rules.grant(&alice(&[], &admin)), Grant::Everything, "`*` is everything");

    let ci = rules.grant(&Who::Key { id: "k_1", name: "ci" });
    assert!(ci.name("weather", "weather.forecast") && !ci.name("payments", "payments.refund"));
    let by_id = Rules::new(vec![Rule {
        keys: strings(&["k_1"]),
        allow: strings(&["x"]),
        ..Rule::default()
    }]);
    assert!(by_id.grant(&Who::Key { id: "k_1", name: "ci" }).package("x"), "a key by its id");
}

#[test]
fn every_condition_of_a_rule_must_hold() {
    let rules = Rules::new(vec![Rule {
        groups: strings(&["payments"]),
        scopes: strings(&["mcp:write"]),
        allow: strings(&["payments"]),
        ..Rule::default()
    }]);
    let groups = strings(&["payments"]);
    let only_group = rules.grant(&alice(&groups, &[]));
    assert!(only_group.is_nothing(), "the group without the scope matches nothing");
    let write = strings(&["mcp:write"]);
    assert!(rules.grant(&alice(&groups, &write)).package("payments"));
    assert!(rules.grant(&Who::Anonymous).is_nothing(), "an anonymous caller meets no condition");
}

#[test]
fn values_are_trimmed_and_blank_ones_dropped() {
    let rules = Rules::new(vec![Rule {
        subjects: strings(&[" alice ", ""]),
        allow: strings(&[" notes ", " "]),
        ..Rule::default()
    }]);
    assert_eq!(rules.rules()[0].subjects, ["alice"]);
    assert_eq!(rules.rules()[0].allow, ["notes"]);
    assert!(rules.grant(&alice(&[], &[])).package("notes"));
}

#[test]
fn modes_read_and_print() {
    for mode in [AuthMode::Keys, AuthMode::Oauth, AuthMode::Both] {
        assert_eq!(mode.as_str().parse::<AuthMode>(), Ok(mode));
    }
    assert!(AuthMode::Both.keys() && AuthMode::Both.oauth());
    assert!(!AuthMode::Oauth.keys() && !AuthMode::Keys.oauth());
    let error = "KEYS".parse::<AuthMode>().unwrap_err();
    assert!(error.contains("keys, oauth, both"), "{error}");
    let rule: Rule = serde_json::from_str(r#"{"groups":["g"],"allow":["p"]}"#).unwrap();
    assert_eq!(rule.groups, ["g"]);
}

fn name() -> impl Strategy<Value = String> {
    "[a-c]{1,2}"
}

proptest! {
    /// Adding a rule never takes anything away from anyone (the grant is a union), and a
    /// caller matching no rule gets nothing.
    #[test]
    fn rules_only_add(
        groups in proptest::collection::vec(name(), 0..3),
        rule_groups in proptest::collection::vec(proptest::collection::vec(name(), 0..2), 1..4),
        allows in proptest::collection::vec(proptest::collection::vec(name(), 0..3), 1..4),
        extra_allow in proptest::collection::vec(name(), 0..3),
        probe in name(),
    ) {
        let rules: Vec<Rule> = rule_groups
            .iter()
            .zip(&allows)
            .map(|(g, a)| Rule { groups: g.clone(), allow: a.clone(), ..Rule::default() })
            .collect();
        let who = Who::Token { subject: "s", groups: &groups, roles: &[], scopes: &[] };
        let before = Rules::new(rules.clone()).grant(&who);
        let mut more = rules.clone();
        more.push(Rule { groups: groups.clone(), allow: extra_allow, ..Rule::default() });
        let after = Rules::new(more).grant(&who);
        prop_assert!(!before.package(&probe) || after.package(&probe));
        let matched = rules.iter().any(|r| r.matches(&who));
        if !matched {
            prop_assert!(before.is_nothing());
        }
    }
}

#[test]
fn roles_are_a_condition_of_their_own() {
    let rules = Rules::new(vec![Rule {
        roles: strings(&["Payments.Admin"]),
        allow: strings(&["payments"]),
        ..Rule::default()
    }]);
    let (admin, group) = (strings(&["Payments.Admin"]), strings(&["Payments.Admin"]));
    let with_role = Who::Token { subject: "s", groups: &[], roles: &admin, scopes: &[] };
    assert!(rules.grant(&with_role).package("payments"));
    let only_group = Who::Token { subject: "s", groups: &group, roles: &[], scopes: &[] };
    assert!(rules.grant(&only_group).is_nothing(), "a group of the same name is not the role");
    assert!(rules.grant(&Who::Key { id: "k", name: "Payments.Admin" }).is_nothing());
}
