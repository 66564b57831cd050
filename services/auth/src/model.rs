//! The documents auth keeps in the store. Times are unix milliseconds; ids are UUIDv7 unless
//! said otherwise.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::seal::Sealed;

pub fn now_ms() -> i64 {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    since.as_millis() as i64
}

pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// `auth_users`; unique on `email` (stored lowercased).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UserRecord {
    pub email: String,
    /// argon2id PHC string.
    pub password_hash: String,
    pub super_admin: bool,
    /// A one-time password (bootstrap or admin-created): only ChangePassword until changed.
    pub must_change_password: bool,
    /// Created by the first-boot bootstrap.
    #[serde(default)]
    pub bootstrap: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    #[serde(default)]
    pub last_login_at_ms: Option<i64>,
    /// `<issuer> <subject>` of the OpenID identity that signs in as this account, once one
    /// has (single sign-on); found by it from then on, whatever the email becomes.
    #[serde(default)]
    pub sso_id: Option<String>,
    /// A super admin because of `sso.super_admin_groups`: taken away at a sign-in no longer
    /// matching them (a super admin made by hand is not).
    #[serde(default)]
    pub sso_super_admin: bool,
}

pub use ramen_access::Role;

/// `auth_groups`, id = the group name: the groups that exist (recorded by the deployer when it
/// creates one, removed by PurgeGroup). Auth refuses members, keys and secrets for any other.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupRecord {
    pub created_at_ms: i64,
    pub created_by: String,
}

/// `auth_memberships`, id = `<group>/<user_id>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MembershipRecord {
    pub group: String,
    pub user_id: String,
    pub role: Role,
    pub created_at_ms: i64,
    /// Given by `sso.memberships` (changed or removed at a sign-in no longer matching it);
    /// a membership made by hand never is.
    #[serde(default)]
    pub from_sso: bool,
}

pub fn membership_id(group: &str, user_id: &str) -> String {
    format!("{group}/{user_id}")
}

/// `auth_pending_accounts`, id = an email (lowercased) that a group admin added as a member
/// before it had an account: the user id reserved for it (see `pending.rs`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PendingAccountRecord {
    pub user_id: String,
    pub created_at_ms: i64,
}

/// `auth_refresh_tokens`, id = lowercase hex SHA-256 of the token. One login starts a family;
/// every refresh marks the presented token used and adds the next one to the family.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefreshRecord {
    pub user_id: String,
    pub family_id: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    #[serde(default)]
    pub used_at_ms: Option<i64>,
    #[serde(default)]
    pub revoked_at_ms: Option<i64>,
}

/// `auth_revoked_sessions`, id = the session (refresh-token family) id: a session signed out
/// or ended by a password change. Its access tokens carry the id (`sid`) and are refused while
/// the record lives, which is longer than any of them can (the access TTL and a margin).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RevokedSessionRecord {
    pub user_id: String,
    pub revoked_at_ms: i64,
    pub expires_at_ms: i64,
}

/// `auth_sso_flows`, id = lowercase hex SHA-256 of the flow's `state`: a single sign-on
/// between its start and its callback (taken, i.e. deleted, by the callback: once only).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoFlowRecord {
    pub nonce: String,
    /// The PKCE verifier of the code the provider will send.
    pub verifier: String,
    /// Console: where to land afterwards.
    pub next: String,
    /// CLI: the loopback port and the S256 challenge of the CLI's own verifier.
    #[serde(default)]
    pub cli_port: Option<u16>,
    #[serde(default)]
    pub cli_challenge: Option<String>,
    pub expires_at_ms: i64,
}

/// `auth_sso_codes`, id = lowercase hex SHA-256 of a one-time code handed to the CLI's
/// loopback: redeemed (deleted) once, with the verifier of `challenge`, before it expires.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SsoCodeRecord {
    pub user_id: String,
    pub challenge: String,
    pub expires_at_ms: i64,
}

/// `auth_mcp_keys`, id = key id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct McpKeyRecord {
    pub group: String,
    pub name: String,
    pub prefix: String,
    /// Lowercase hex SHA-256 of the plaintext, as the node compares it.
    pub sha256_hex: String,
    pub environments: Vec<String>,
    pub zones: Vec<String>,
    #[serde(default)]
    pub expires_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub created_by: String,
    #[serde(default)]
    pub revoked_at_ms: Option<i64>,
    /// When the edge last let a request with it through, to the minute.
    #[serde(default)]
    pub last_used_at_ms: Option<i64>,
}

/// `auth_secrets`, id = [`secret_id`]; the sealed value is bound to that id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SecretRecord {
    pub group: String,
    pub name: String,
    /// Empty = any.
    pub environment: String,
    pub zone: String,
    pub sealed: Sealed,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

pub fn secret_id(group: &str, environment: &str, zone: &str, name: &str) -> String {
    let any = |s: &str| if s.is_empty() { "*".to_owned() } else { s.to_owned() };
    format!("{group}/{}/{}/{name}", any(environment), any(zone))
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRecord {
    /// `ramen.common.v1.Provider` by number.
    pub provider: i32,
    pub permissions: Vec<String>,
    pub resources: Vec<String>,
    pub description: String,
}

/// `auth_service_accounts`, id = group. The store's version is the rules' version.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServiceAccountRecord {
    pub rules: Vec<RuleRecord>,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// `auth_service_account_bounds`, one document ([`BOUNDS_ID`]): what group admins may grant.
/// Absent = [`ramen_grant_bounds::Bounds::default`]. The store's version is the bounds' version.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BoundsRecord {
    pub bounds: ramen_grant_bounds::Bounds,
    pub updated_at_ms: i64,
    pub updated_by: String,
}

/// The id of the one bounds document.
pub const BOUNDS_ID: &str = "platform";

/// `auth_audit`, id = entry id. Only ever inserted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub at_ms: i64,
    pub actor: String,
    pub action: String,
    pub group: String,
    pub target: String,
    /// `ramen.common.v1.AuditOutcome` by number.
    pub outcome: i32,
    pub request_id: String,
    pub details: BTreeMap<String, String>,
}
