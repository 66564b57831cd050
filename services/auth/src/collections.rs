//! The collections auth owns, with their indexes (ensured at start-up).

use std::sync::Arc;
use std::time::Duration;

use ramen_store::{Collection, CollectionSpec, DocumentStore, StoreError};

use ramen_call_records::CallRecord;

use crate::model::{
    AuditRecord, BoundsRecord, GroupRecord, McpKeyRecord, MembershipRecord, PendingAccountRecord,
    RefreshRecord, RevokedSessionRecord, SecretRecord, ServiceAccountRecord, SsoCodeRecord,
    SsoFlowRecord, UserRecord,
};

pub const USERS: &str = "auth_users";
pub const GROUPS: &str = "auth_groups";
pub const MEMBERSHIPS: &str = "auth_memberships";
pub const PENDING_ACCOUNTS: &str = "auth_pending_accounts";
pub const REFRESH_TOKENS: &str = "auth_refresh_tokens";
pub const REVOKED_SESSIONS: &str = "auth_revoked_sessions";
pub const MCP_KEYS: &str = "auth_mcp_keys";
pub const SECRETS: &str = "auth_secrets";
pub const SERVICE_ACCOUNTS: &str = "auth_service_accounts";
pub const BOUNDS: &str = "auth_service_account_bounds";
pub const AUDIT: &str = "auth_audit";
pub const SSO_FLOWS: &str = "auth_sso_flows";
pub const SSO_CODES: &str = "auth_sso_codes";
pub const CALLS: &str = "auth_calls";
/// How long call records are kept when nothing says otherwise (`calls.retention`).
pub const DEFAULT_CALLS_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

#[derive(Clone)]
pub struct Collections {
    pub users: Collection<UserRecord>,
    pub groups: Collection<GroupRecord>,
    pub memberships: Collection<MembershipRecord>,
    pub pending: Collection<PendingAccountRecord>,
    pub refresh: Collection<RefreshRecord>,
    pub revoked: Collection<RevokedSessionRecord>,
    pub keys: Collection<McpKeyRecord>,
    pub secrets: Collection<SecretRecord>,
    pub service_accounts: Collection<ServiceAccountRecord>,
    pub bounds: Collection<BoundsRecord>,
    pub audit: Collection<AuditRecord>,
    pub sso_flows: Collection<SsoFlowRecord>,
    pub sso_codes: Collection<SsoCodeRecord>,
    /// Call records ([`crate::calls`]), each gone `calls_retention` after its call.
    pub calls: Collection<CallRecord>,
    calls_retention: Duration,
}

impl Collections {
    pub fn new(store: Arc<dyn DocumentStore>) -> Self {
        Self {
            users: Collection::new(store.clone(), USERS),
            groups: Collection::new(store.clone(), GROUPS),
            memberships: Collection::new(store.clone(), MEMBERSHIPS),
            pending: Collection::new(store.clone(), PENDING_ACCOUNTS),
            refresh: Collection::new(store.clone(), REFRESH_TOKENS),
            revoked: Collection::new(store.clone(), REVOKED_SESSIONS),
            keys: Collection::new(store.clone(), MCP_KEYS),
            secrets: Collection::new(store.clone(), SECRETS),
            service_accounts: Collection::new(store.clone(), SERVICE_ACCOUNTS),
            bounds: Collection::new(store.clone(), BOUNDS),
            audit: Collection::new(store.clone(), AUDIT),
            sso_flows: Collection::new(store.clone(), SSO_FLOWS),
            sso_codes: Collection::new(store.clone(), SSO_CODES),
            calls: Collection::new(store, CALLS),
            calls_retention: DEFAULT_CALLS_RETENTION,
        }
    }

    /// Keeps call records for `retention` (at least a second) instead of the default.
    pub fn with_calls_retention(mut self, retention: Duration) -> Self {
        self.calls_retention = retention;
        self
    }

    pub async fn ensure(&self) -> Result<(), StoreError> {
        let store = self.users.store();
        let specs = [
            CollectionSpec::new(USERS).unique("email", ["email"]).index("sso", ["sso_id"]),
            CollectionSpec::new(GROUPS),
            CollectionSpec::new(MEMBERSHIPS).index("group", ["group"]).index("user", ["user_id"]),
            CollectionSpec::new(PENDING_ACCOUNTS).index("user", ["user_id"]),
            CollectionSpec::new(REFRESH_TOKENS)
                .index("family", ["family_id"])
                .index("user", ["user_id"]),
            CollectionSpec::new(REVOKED_SESSIONS).index("expires", ["expires_at_ms"]),
            CollectionSpec::new(MCP_KEYS).index("group", ["group"]),
            CollectionSpec::new(SECRETS).index("group", ["group"]),
            CollectionSpec::new(SERVICE_ACCOUNTS),
            CollectionSpec::new(BOUNDS),
            CollectionSpec::new(AUDIT).index("at", ["at_ms"]).index("group_at", ["group", "at_ms"]),
            CollectionSpec::new(SSO_FLOWS).index("expires", ["expires_at_ms"]),
            CollectionSpec::new(SSO_CODES).index("expires", ["expires_at_ms"]),
            // Read newest first per group, filtered by environment, target, caller or outcome
            // within it: the group-and-time index bounds every query.
            CollectionSpec::new(CALLS)
                .index("group_at", ["group", "at_ms"])
                .expire_after("at_ms", self.calls_retention),
        ];
        for spec in &specs {
            store.ensure_collection(spec).await?;
        }
        Ok(())
    }
}
