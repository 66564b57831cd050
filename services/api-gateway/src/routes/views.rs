//! JSON shapes of the auth domain's REST answers, and their conversions from the gRPC
//! messages. Times are RFC 3339 strings; enums are lowercase words.

use std::collections::BTreeMap;

use prost_types::Timestamp;
use ramen_proto::auth::v1 as pb;
use ramen_proto::common::v1::{AuditOutcome, Provider};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::{IntoParams, ToSchema};

use crate::error::ApiError;

pub fn time(ts: Option<&Timestamp>) -> Option<String> {
    let ts = ts?;
    let nanos = i128::from(ts.seconds) * 1_000_000_000 + i128::from(ts.nanos);
    OffsetDateTime::from_unix_timestamp_nanos(nanos).ok()?.format(&Rfc3339).ok()
}

/// Parses an RFC 3339 time from a request, naming the field when it is not one.
pub fn parse_time(field: &str, value: &str) -> Result<Timestamp, ApiError> {
    let at = OffsetDateTime::parse(value, &Rfc3339).map_err(|_| {
        ApiError::invalid(format!(
            "{field}: `{value}` is not an RFC 3339 time (2026-01-31T12:00:00Z)"
        ))
    })?;
    Ok(Timestamp { seconds: at.unix_timestamp(), nanos: at.nanosecond() as i32 })
}

/// `?page_size=&page_token=` on every list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page (0 or none: the server's default, 100; at most 1000).
    pub page_size: Option<u32>,
    /// `next_page_token` of the previous page.
    pub page_token: Option<String>,
}

impl PageQuery {
    /// The page request; a size over [`ramen_service::paging::MAX_SIZE`] is refused (the
    /// document says the bound, so a larger one is not silently cut).
    pub fn to_pb(&self) -> crate::error::ApiResult<Option<ramen_proto::common::v1::PageRequest>> {
        let page_size = self.page_size.unwrap_or(0);
        if u64::from(page_size) > ramen_service::paging::MAX_SIZE {
            return Err(crate::error::ApiError::invalid(format!(
                "page_size: {page_size} is more than {} items a page",
                ramen_service::paging::MAX_SIZE
            )));
        }
        Ok(Some(ramen_proto::common::v1::PageRequest {
            page_size,
            page_token: self.page_token.clone().unwrap_or_default(),
        }))
    }
}

/// An optional name filter of a query (`group`, `environment`, `zone`): empty = no filter, else
/// a DNS label, as the document says, so a name that can name nothing is a 400 rather than an
/// empty page.
pub fn filter_label(field: &str, value: &str) -> crate::error::ApiResult<()> {
    if value.is_empty() {
        return Ok(());
    }
    ramen_service::validate::dns_label(value)
        .map_err(|reason| crate::error::ApiError::invalid(format!("{field}: {reason}")))
}

pub fn next_token(page: Option<ramen_proto::common::v1::PageInfo>) -> String {
    page.map(|p| p.next_page_token).unwrap_or_default()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    pub id: String,
    pub email: String,
    pub super_admin: bool,
    pub must_change_password: bool,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// Absent when the user never signed in.
    pub last_login_at: Option<String>,
}

impl From<pb::User> for UserView {
    fn from(u: pb::User) -> Self {
        Self {
            created_at: time(u.created_at.as_ref()),
            updated_at: time(u.updated_at.as_ref()),
            last_login_at: time(u.last_login_at.as_ref()),
            id: u.id,
            email: u.email,
            super_admin: u.super_admin,
            must_change_password: u.must_change_password,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoleName {
    Admin,
    Member,
}

impl RoleName {
    pub fn from_pb(role: pb::Role) -> Option<Self> {
        match role {
            pb::Role::Admin => Some(Self::Admin),
            pb::Role::Member => Some(Self::Member),
            pb::Role::Unspecified => None,
        }
    }

    pub fn to_pb(self) -> pb::Role {
        match self {
            Self::Admin => pb::Role::Admin,
            Self::Member => pb::Role::Member,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MembershipView {
    pub group: String,
    pub user_id: String,
    pub email: String,
    pub role: Option<RoleName>,
    pub created_at: Option<String>,
}

impl From<pb::Membership> for MembershipView {
    fn from(m: pb::Membership) -> Self {
        Self {
            role: RoleName::from_pb(m.role()),
            created_at: time(m.created_at.as_ref()),
            group: m.group,
            user_id: m.user_id,
            email: m.email,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyView {
    pub id: String,
    pub group: String,
    pub name: String,
    /// The first characters of the key, to recognise it.
    pub prefix: String,
    /// Empty = every environment.
    pub environments: Vec<String>,
    /// Empty = every zone.
    pub zones: Vec<String>,
    pub expires_at: Option<String>,
    pub created_at: Option<String>,
    pub created_by: String,
    /// Set once revoked.
    pub revoked_at: Option<String>,
    /// When the edge last let a request with it through (to the minute, reported every 30 s);
    /// absent = never.
    pub last_used_at: Option<String>,
}

impl From<pb::McpKey> for KeyView {
    fn from(k: pb::McpKey) -> Self {
        Self {
            last_used_at: time(k.last_used_at.as_ref()),
            expires_at: time(k.expires_at.as_ref()),
            created_at: time(k.created_at.as_ref()),
            revoked_at: time(k.revoked_at.as_ref()),
            id: k.id,
            group: k.group,
            name: k.name,
            prefix: k.prefix,
            environments: k.environments,
            zones: k.zones,
            created_by: k.created_by,
        }
    }
}

/// A secret's metadata; values are never returned.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretView {
    pub group: String,
    pub name: String,
    /// Empty = every environment.
    pub environment: String,
    /// Empty = every zone.
    pub zone: String,
    /// The sealing key's id.
    pub key_id: String,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

impl From<pb::Secret> for SecretView {
    fn from(s: pb::Secret) -> Self {
        let scope = s.scope.unwrap_or_default();
        Self {
            created_at: time(s.created_at.as_ref()),
            updated_at: time(s.updated_at.as_ref()),
            group: s.group,
            name: s.name,
            environment: scope.environment,
            zone: scope.zone,
            key_id: s.key_id,
            updated_by: s.updated_by,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderName {
    Local,
    Gcp,
    Aws,
}

impl ProviderName {
    pub fn from_pb(p: Provider) -> Option<Self> {
        match p {
            Provider::Local => Some(Self::Local),
            Provider::Gcp => Some(Self::Gcp),
            Provider::Aws => Some(Self::Aws),
            Provider::Unspecified => None,
        }
    }

    pub fn to_pb(self) -> Provider {
        match self {
            Self::Local => Provider::Local,
            Self::Gcp => Provider::Gcp,
            Self::Aws => Provider::Aws,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleView {
    pub provider: ProviderName,
    /// Provider roles or actions, e.g. `roles/storage.objectViewer`, `s3:GetObject`.
    pub permissions: Vec<String>,
    /// Empty = every resource (AWS) or the whole project (GCP): only where the bounds allow it.
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceAccountView {
    pub group: String,
    pub rules: Vec<RuleView>,
    /// Send it back as `expected_version` to update only what you read.
    pub version: u64,
    pub updated_at: Option<String>,
    pub updated_by: String,
}

impl From<pb::ServiceAccountRules> for ServiceAccountView {
    fn from(s: pb::ServiceAccountRules) -> Self {
        let rules = s
            .rules
            .into_iter()
            .map(|r| RuleView {
                provider: ProviderName::from_pb(r.provider()).unwrap_or(ProviderName::Local),
                permissions: r.permissions,
                resources: r.resources,
                description: r.description,
            })
            .collect();
        Self {
            updated_at: time(s.updated_at.as_ref()),
            group: s.group,
            rules,
            version: s.version,
            updated_by: s.updated_by,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditEntryView {
    pub id: String,
    pub at: Option<String>,
    /// A user id, or a service actor such as `scheduler`.
    pub actor: String,
    pub action: String,
    pub group: String,
    pub target: String,
    /// `success`, `failure`, `denied`.
    pub outcome: String,
    pub request_id: String,
    pub details: BTreeMap<String, String>,
}

impl From<pb::AuditEntry> for AuditEntryView {
    fn from(e: pb::AuditEntry) -> Self {
        let outcome = match e.outcome() {
            AuditOutcome::Success => "success",
            AuditOutcome::Failure => "failure",
            AuditOutcome::Denied => "denied",
            AuditOutcome::Unspecified => "unknown",
        };
        Self {
            at: time(e.at.as_ref()),
            outcome: outcome.to_owned(),
            details: e.details.into_iter().collect(),
            id: e.id,
            actor: e.actor,
            action: e.action,
            group: e.group,
            target: e.target,
            request_id: e.request_id,
        }
    }
}

/// A page of items and the token of the next one (empty on the last page).
#[derive(Debug, Serialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_page_token: String,
}
