//! `AuthService` as the deployer uses it: role checks, the group registry, key hashes,
//! secret values (only the `deployer` actor gets them), the audit log and the group purge.

use std::collections::BTreeMap;
use std::time::Duration;

use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::common::v1::{AuditOutcome, KeyHash, PageRequest};
use ramen_proto::metadata;
use tonic::transport::{Channel, Endpoint};

use crate::caller::Ctx;
use crate::error::{Error, Result};

const SERVICE: &str = "auth";

/// One audit entry.
#[derive(Clone, Debug)]
pub struct Audit {
    pub action: &'static str,
    pub group: String,
    pub target: String,
    pub outcome: AuditOutcome,
    pub details: BTreeMap<String, String>,
}

/// A secret value for one deploy scope. `Debug` hides the value.
#[derive(Clone)]
pub struct SecretValue {
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretValue").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The `AuthService` client (connected lazily: start-up does not wait for auth).
#[derive(Clone)]
pub struct AuthClient {
    client: AuthServiceClient<Channel>,
}

impl AuthClient {
    pub fn new(endpoint: &str) -> Result<Self> {
        let channel = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| Error::Internal(format!("auth endpoint {endpoint:?}: {e}")))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .connect_lazy();
        Ok(Self { client: AuthServiceClient::new(channel) })
    }

    fn client(&self) -> AuthServiceClient<Channel> {
        self.client.clone()
    }

    pub async fn authorize(
        &self,
        actor: &str,
        group: &str,
        action: pb::Action,
    ) -> Result<pb::AuthorizeResponse> {
        let request = pb::AuthorizeRequest {
            user_id: actor.to_owned(),
            group: group.to_owned(),
            action: action as i32,
        };
        let answer = self.client().authorize(as_deployer(request)).await.map_err(status)?;
        Ok(answer.into_inner())
    }

    /// Whether `user` is a super admin, and the groups they belong to.
    pub async fn memberships(&self, user: &str) -> Result<(bool, Vec<String>)> {
        let request = pb::GetUserRequest { user_id: user.to_owned() };
        let answer =
            self.client().get_user(as_deployer(request)).await.map_err(status)?.into_inner();
        let super_admin = answer.user.is_some_and(|u| u.super_admin);
        Ok((super_admin, answer.memberships.into_iter().map(|m| m.group).collect()))
    }

    /// Records the group in auth, on behalf of the caller (so the registration is audited as
    /// theirs). False when it was registered already.
    pub async fn register_group(&self, ctx: &Ctx, group: &str) -> Result<bool> {
        let request = ctx.request(pb::RegisterGroupRequest { group: group.to_owned() });
        Ok(self.client().register_group(request).await.map_err(status)?.into_inner().created)
    }

    pub async fn purge_group(&self, group: &str) -> Result<pb::PurgeGroupResponse> {
        let request = as_deployer(pb::PurgeGroupRequest { group: group.to_owned() });
        Ok(self.client().purge_group(request).await.map_err(status)?.into_inner())
    }

    /// Hashes of the keys valid on `environment` × `zone`.
    pub async fn key_hashes(
        &self,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<KeyHash>> {
        let mut keys = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = pb::ListMcpKeyHashesRequest {
                group: group.to_owned(),
                environment: environment.to_owned(),
                zone: zone.to_owned(),
                page: Some(PageRequest { page_size: 500, page_token }),
            };
            let answer =
                self.client().list_mcp_key_hashes(as_deployer(request)).await.map_err(status)?;
            let answer = answer.into_inner();
            keys.extend(answer.keys);
            page_token = answer.page.map(|p| p.next_page_token).unwrap_or_default();
            if page_token.is_empty() {
                return Ok(keys);
            }
        }
    }

    /// Secret values for the scope (zone empty = group- and environment-wide only).
    pub async fn resolve_secrets(
        &self,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<SecretValue>> {
        let request = pb::ResolveSecretsRequest {
            group: group.to_owned(),
            environment: environment.to_owned(),
            zone: zone.to_owned(),
        };
        let answer = self.client().resolve_secrets(as_deployer(request)).await.map_err(status)?;
        Ok(answer
            .into_inner()
            .secrets
            .into_iter()
            .map(|s| SecretValue { name: s.name, value: s.value })
            .collect())
    }

    /// Appends an audit entry; a failure is logged, not returned: the action already happened
    /// and refusing to answer would hide that from its caller.
    pub async fn audit(&self, ctx: &Ctx, entry: Audit) {
        let action = entry.action;
        let request = pb::AppendAuditRequest {
            entry: Some(pb::AuditEntry {
                actor: ctx.audit_actor().to_owned(),
                action: action.to_owned(),
                group: entry.group,
                target: entry.target,
                outcome: entry.outcome as i32,
                request_id: ctx.request_id.clone(),
                details: entry.details.into_iter().collect(),
                ..Default::default()
            }),
        };
        if let Err(err) = self.client().append_audit(as_deployer(request)).await {
            tracing::warn!(%action, error = %err.message(), "audit entry not appended");
        }
    }
}

fn status(status: tonic::Status) -> Error {
    Error::from_status(SERVICE, status)
}

/// A request made by the deployer on its own behalf.
pub fn as_deployer<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert(metadata::ACTOR, metadata::ACTOR_DEPLOYER.parse().expect("ascii"));
    request
}
