use ramen_proto::auth::v1::{Action, Decision};

use super::*;

fn who(super_admin: bool, role: Option<Role>) -> Standing {
    Standing { super_admin, must_change_password: false, group_exists: true, role }
}

#[test]
fn the_role_table() {
    let member = who(false, Some(Role::Member));
    let admin = who(false, Some(Role::Admin));
    let stranger = who(false, None);
    let sa = who(true, None);
    let cases = [
        (
            Action::ReadGroup,
            [Decision::Allow, Decision::Allow, Decision::NotFound, Decision::Allow],
        ),
        (
            Action::ManageKeys,
            [Decision::Deny, Decision::Allow, Decision::NotFound, Decision::Allow],
        ),
        (Action::Deploy, [Decision::Deny, Decision::Allow, Decision::NotFound, Decision::Allow]),
        (
            Action::ManageGroup,
            [Decision::Deny, Decision::Deny, Decision::NotFound, Decision::Allow],
        ),
        (Action::SetSize, [Decision::Deny, Decision::Deny, Decision::NotFound, Decision::Allow]),
        (Action::CreateGroup, [Decision::Deny, Decision::Deny, Decision::Deny, Decision::Allow]),
        (Action::Admin, [Decision::Deny, Decision::Deny, Decision::Deny, Decision::Allow]),
        (Action::Unspecified, [Decision::Deny, Decision::Deny, Decision::Deny, Decision::Deny]),
    ];
    for (action, expected) in cases {
        let got = [member, admin, stranger, sa].map(|s| decide(s, action));
        assert_eq!(got, expected, "{action:?}");
    }
}

#[test]
fn unregistered_groups_are_not_found_even_for_super_admins() {
    let gone = Standing { group_exists: false, ..who(true, Some(Role::Admin)) };
    assert_eq!(decide(gone, Action::ReadGroup), Decision::NotFound);
    assert_eq!(
        decide(gone, Action::CreateGroup),
        Decision::Allow,
        "global actions ignore the group"
    );
}

#[test]
fn a_one_time_password_allows_nothing_yet_hides_nothing_extra() {
    let pending = Standing { must_change_password: true, ..who(false, Some(Role::Admin)) };
    assert_eq!(decide(pending, Action::ReadGroup), Decision::Deny);
    let pending_sa = Standing { must_change_password: true, ..who(true, None) };
    assert_eq!(decide(pending_sa, Action::Admin), Decision::Deny);
    let pending_stranger = Standing { must_change_password: true, ..who(false, None) };
    assert_eq!(decide(pending_stranger, Action::ReadGroup), Decision::NotFound);
}
