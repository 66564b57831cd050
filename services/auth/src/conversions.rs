//! Domain ⇄ `ramen.auth.v1` messages.

use prost_types::Timestamp;
use ramen_proto::auth::v1 as pb;
use ramen_store::Versioned;

use crate::error::AuthError;
use crate::members::Member;
use crate::model::{
    AuditRecord, BoundsRecord, McpKeyRecord, MembershipRecord, Role, RuleRecord, SecretRecord,
    ServiceAccountRecord, UserRecord,
};
use crate::sessions::Session;

pub fn ts(ms: i64) -> Timestamp {
    Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

pub fn opt_ts(ms: Option<i64>) -> Option<Timestamp> {
    ms.map(ts)
}

pub fn ms(ts: &Timestamp) -> i64 {
    ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000
}

pub fn user(user: &Versioned<UserRecord>) -> pb::User {
    let u = &user.value;
    pb::User {
        id: user.id.clone(),
        email: u.email.clone(),
        super_admin: u.super_admin,
        must_change_password: u.must_change_password,
        created_at: Some(ts(u.created_at_ms)),
        updated_at: Some(ts(u.updated_at_ms)),
        last_login_at: opt_ts(u.last_login_at_ms),
    }
}

pub fn role_to_pb(role: Role) -> pb::Role {
    match role {
        Role::Admin => pb::Role::Admin,
        Role::Member => pb::Role::Member,
    }
}

pub fn role_from_pb(role: pb::Role) -> Result<Role, AuthError> {
    match role {
        pb::Role::Admin => Ok(Role::Admin),
        pb::Role::Member => Ok(Role::Member),
        pb::Role::Unspecified => {
            Err(AuthError::invalid("role", "must be ROLE_ADMIN or ROLE_MEMBER"))
        }
    }
}

pub fn membership(m: &MembershipRecord, email: &str) -> pb::Membership {
    pb::Membership {
        group: m.group.clone(),
        user_id: m.user_id.clone(),
        email: email.to_owned(),
        role: role_to_pb(m.role) as i32,
        created_at: Some(ts(m.created_at_ms)),
    }
}

pub fn member(m: &Member) -> pb::Membership {
    membership(&m.membership, &m.email)
}

pub fn session(s: Session) -> pb::LoginResponse {
    let must_change_password = s.user.value.must_change_password;
    pb::LoginResponse {
        tokens: Some(pb::TokenPair {
            access_token: s.access_token,
            access_expires_at: Some(ts(s.access_expires_at_ms)),
            refresh_token: s.refresh.token,
            refresh_expires_at: Some(ts(s.refresh.expires_at_ms)),
        }),
        user: Some(user(&s.user)),
        must_change_password,
    }
}

pub fn key(key: &Versioned<McpKeyRecord>) -> pb::McpKey {
    let k = &key.value;
    pb::McpKey {
        id: key.id.clone(),
        group: k.group.clone(),
        name: k.name.clone(),
        prefix: k.prefix.clone(),
        environments: k.environments.clone(),
        zones: k.zones.clone(),
        expires_at: opt_ts(k.expires_at_ms),
        created_at: Some(ts(k.created_at_ms)),
        created_by: k.created_by.clone(),
        revoked_at: opt_ts(k.revoked_at_ms),
        last_used_at: opt_ts(k.last_used_at_ms),
    }
}

pub fn secret(secret: &Versioned<SecretRecord>) -> pb::Secret {
    let s = &secret.value;
    pb::Secret {
        group: s.group.clone(),
        name: s.name.clone(),
        scope: Some(pb::SecretScope { environment: s.environment.clone(), zone: s.zone.clone() }),
        key_id: s.sealed.key_id.clone(),
        created_at: Some(ts(s.created_at_ms)),
        updated_at: Some(ts(s.updated_at_ms)),
        updated_by: s.updated_by.clone(),
    }
}

pub fn rules_from_pb(rules: Vec<pb::ServiceAccountRule>) -> Vec<RuleRecord> {
    rules
        .into_iter()
        .map(|r| RuleRecord {
            provider: r.provider,
            permissions: r.permissions,
            resources: r.resources,
            description: r.description,
        })
        .collect()
}

pub fn service_account(
    group: &str,
    sa: &Versioned<ServiceAccountRecord>,
    bounds: &Versioned<BoundsRecord>,
) -> pb::ServiceAccountRules {
    let v = &sa.value;
    pb::ServiceAccountRules {
        group: group.to_owned(),
        rules: v
            .rules
            .iter()
            .map(|r| pb::ServiceAccountRule {
                provider: r.provider,
                permissions: r.permissions.clone(),
                resources: r.resources.clone(),
                description: r.description.clone(),
            })
            .collect(),
        version: sa.version,
        updated_at: (v.updated_at_ms > 0).then(|| ts(v.updated_at_ms)),
        updated_by: v.updated_by.clone(),
        bounds: Some(self::bounds(bounds)),
    }
}

pub fn bounds(b: &Versioned<BoundsRecord>) -> pb::ServiceAccountBounds {
    let v = &b.value;
    pb::ServiceAccountBounds {
        aws: Some((&v.bounds.aws).into()),
        gcp: Some((&v.bounds.gcp).into()),
        version: b.version,
        updated_at: (v.updated_at_ms > 0).then(|| ts(v.updated_at_ms)),
        updated_by: v.updated_by.clone(),
    }
}

pub fn audit_to_pb(id: String, e: AuditRecord) -> pb::AuditEntry {
    pb::AuditEntry {
        id,
        at: Some(ts(e.at_ms)),
        actor: e.actor,
        action: e.action,
        group: e.group,
        target: e.target,
        outcome: e.outcome,
        request_id: e.request_id,
        details: e.details.into_iter().collect(),
    }
}

pub fn audit_from_pb(e: pb::AuditEntry, now_ms: i64) -> (Option<String>, AuditRecord) {
    let record = AuditRecord {
        at_ms: e.at.as_ref().map_or(now_ms, ms),
        actor: e.actor,
        action: e.action,
        group: e.group,
        target: e.target,
        outcome: e.outcome,
        request_id: e.request_id,
        details: e.details.into_iter().collect(),
    };
    (Some(e.id), record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_including_before_the_epoch() {
        for t in [0, 1, 999, 1_700_000_000_123, -1, -1500] {
            assert_eq!(ms(&ts(t)), t, "{t}");
            assert!((0..1_000_000_000).contains(&ts(t).nanos));
        }
    }
}
