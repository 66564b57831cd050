//! `AuthService` as other services call it.

use ramen_access::Caller;
use ramen_proto::auth::v1 as pb;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::common::v1::{KeyHash, PageRequest};

use crate::Signed;
use crate::UpstreamError;
use crate::macros::{CallBudget, client};

client! {
    /// What services ask of auth: the group registry, key hashes (the zone-manager pushes them
    /// to nodes), secret values (the deployer writes them into a zone's config), the audit
    /// log, a group's service-account rules (the zone-manager grants them to a cloud zone's
    /// identity). The api-gateway's login, authorize and REST calls use the generated client.
    trait AuthClient, grpc GrpcAuth, service "auth", proto AuthServiceClient<Signed>;
    fn register_group(pb::RegisterGroupRequest) -> pb::RegisterGroupResponse;
    fn purge_group(pb::PurgeGroupRequest) -> pb::PurgeGroupResponse;
    fn list_mcp_key_hashes(pb::ListMcpKeyHashesRequest) -> pb::ListMcpKeyHashesResponse;
    fn record_mcp_key_use(pb::RecordMcpKeyUseRequest) -> pb::RecordMcpKeyUseResponse;
    fn resolve_secrets(pb::ResolveSecretsRequest) -> pb::ResolveSecretsResponse;
    fn append_audit(pb::AppendAuditRequest) -> pb::AuditEntry;
    fn get_service_account_rules(pb::GetServiceAccountRulesRequest) -> pb::ServiceAccountRules;
}

impl CallBudget for pb::RegisterGroupRequest {}
impl CallBudget for pb::PurgeGroupRequest {}
impl CallBudget for pb::ListMcpKeyHashesRequest {}
impl CallBudget for pb::RecordMcpKeyUseRequest {}
impl CallBudget for pb::ResolveSecretsRequest {}
impl CallBudget for pb::AppendAuditRequest {}
impl CallBudget for pb::GetServiceAccountRulesRequest {}

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

impl dyn AuthClient {
    /// Every key valid on `environment` × `zone`, all pages.
    pub async fn key_hashes(
        &self,
        caller: &Caller,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<KeyHash>, UpstreamError> {
        let (mut keys, mut page_token) = (Vec::new(), String::new());
        loop {
            let request = pb::ListMcpKeyHashesRequest {
                group: group.to_owned(),
                environment: environment.to_owned(),
                zone: zone.to_owned(),
                page: Some(PageRequest { page_size: 500, page_token }),
            };
            let answer = self.list_mcp_key_hashes(caller, request).await?;
            keys.extend(answer.keys);
            page_token = answer.page.map(|p| p.next_page_token).unwrap_or_default();
            if page_token.is_empty() {
                return Ok(keys);
            }
        }
    }

    /// Secret values for the scope (zone empty = group- and environment-wide only).
    pub async fn secrets(
        &self,
        caller: &Caller,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<SecretValue>, UpstreamError> {
        let request = pb::ResolveSecretsRequest {
            group: group.to_owned(),
            environment: environment.to_owned(),
            zone: zone.to_owned(),
        };
        let answer = self.resolve_secrets(caller, request).await?;
        Ok(answer
            .secrets
            .into_iter()
            .map(|s| SecretValue { name: s.name, value: s.value })
            .collect())
    }
}

/// The grants an `Authorize` answer carries, as a caller ticket holds them (what the
/// api-gateway forwards for the user it authorized).
pub fn grants(answer: &pb::AuthorizeResponse) -> ramen_access::Grants {
    let groups = answer
        .groups
        .iter()
        .filter_map(|g| {
            let role = match pb::Role::try_from(g.role).ok()? {
                pb::Role::Admin => ramen_access::Role::Admin,
                pb::Role::Member => ramen_access::Role::Member,
                pb::Role::Unspecified => return None,
            };
            Some((g.group.clone(), role))
        })
        .collect();
    ramen_access::Grants {
        super_admin: answer.super_admin,
        must_change_password: answer.must_change_password,
        groups,
    }
}
