//! Group memberships: admins run the group, members read it.

use std::collections::HashMap;

use ramen_proto::auth::v1::Action;
use ramen_proto::common::v1::{PageInfo, PageRequest};
use ramen_store::{Filter, Query};

use crate::audit::details;
use crate::error::AuthError;
use crate::model::{MembershipRecord, Role, membership_id, now_ms};
use crate::{Auth, paging, validate};
use ramen_access::Caller;

/// A membership with the member's email, for display.
pub struct Member {
    pub membership: MembershipRecord,
    pub email: String,
}

/// Identifies the user of AddMember.
pub enum Who<'a> {
    Id(&'a str),
    Email(&'a str),
}

impl Auth {
    /// Adds `who` to `group` with `role`, or changes their role. An email without an account
    /// answers the same as one with (`pending.rs`): the membership takes effect when the
    /// account is created.
    pub async fn add_member(
        &self,
        caller: &Caller,
        group: &str,
        who: Who<'_>,
        role: Role,
    ) -> Result<Member, AuthError> {
        let target = match &who {
            Who::Id(id) => format!("user/{id}"),
            Who::Email(email) => format!("user/{}", email.trim().to_ascii_lowercase()),
        };
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageMembers).await?;
            let (user_id, email) = match who {
                // Ids are not guessable: an unknown one is simply not found.
                Who::Id(id) => {
                    let user = self.db.users.get(id).await?;
                    let user = user.ok_or_else(|| AuthError::NotFound(format!("user {id}")))?;
                    (user.id, user.value.email)
                }
                Who::Email(email) => {
                    let email = validate::email(email)?;
                    let user =
                        self.db.users.find_one(Filter::new().eq("email", email.as_str())).await?;
                    match user {
                        Some(user) => (user.id, email),
                        None => (self.reserve_id(&email).await?, email),
                    }
                }
            };
            let existing = self.db.memberships.get(&membership_id(group, &user_id)).await?;
            let membership = MembershipRecord {
                group: group.to_owned(),
                user_id: user_id.clone(),
                role,
                created_at_ms: existing.map_or_else(now_ms, |m| m.value.created_at_ms),
                // Made by hand now: single sign-on leaves it alone from here on.
                from_sso: false,
            };
            self.db.memberships.put(&membership_id(group, &user_id), &membership).await?;
            Ok(Member { membership, email })
        }
        .await;
        let role_name = match role {
            Role::Admin => "admin",
            Role::Member => "member",
        };
        self.audited(
            caller,
            "member.add",
            group,
            &target,
            details([("role", role_name.into())]),
            result,
        )
        .await
    }

    /// Idempotent: removing a non-member succeeds.
    pub async fn remove_member(
        &self,
        caller: &Caller,
        group: &str,
        user_id: &str,
    ) -> Result<(), AuthError> {
        let result = async {
            validate::group(group)?;
            self.require(caller, group, Action::ManageMembers).await?;
            self.db.memberships.delete(&membership_id(group, user_id), None).await?;
            Ok(())
        }
        .await;
        self.audited(
            caller,
            "member.remove",
            group,
            &format!("user/{user_id}"),
            details([]),
            result,
        )
        .await
    }

    pub async fn list_members(
        &self,
        caller: &Caller,
        group: &str,
        page: Option<&PageRequest>,
    ) -> Result<(Vec<Member>, PageInfo), AuthError> {
        validate::group(group)?;
        self.require(caller, group, Action::ReadGroup).await?;
        let page = paging::parse(page)?;
        let query = Query::new()
            .eq("group", group)
            .sort_asc("user_id")
            .skip(page.offset)
            .limit(page.probe());
        let mut found: Vec<MembershipRecord> =
            self.db.memberships.find(&query).await?.into_iter().map(|m| m.value).collect();
        let info = page.finish(&mut found);
        let ids: Vec<String> = found.iter().map(|m| m.user_id.clone()).collect();
        let users = self.db.users.find(&Query::new().is_in("_id", ids.clone())).await?;
        let mut emails: HashMap<String, String> =
            users.into_iter().map(|u| (u.id, u.value.email)).collect();
        let reserved: Vec<String> = ids.into_iter().filter(|id| !emails.contains_key(id)).collect();
        emails.extend(self.pending_emails(reserved).await?);
        let members = found
            .into_iter()
            .map(|m| Member {
                email: emails.get(&m.user_id).cloned().unwrap_or_default(),
                membership: m,
            })
            .collect();
        Ok((members, info))
    }
}
