//! What the zone-manager needs from `auth`: the key hashes valid for a placement, and the audit
//! log. Behind a trait so the service runs (and is tested) without auth; [`GrpcAuth`] is the
//! real adapter.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use ramen_proto::auth::v1::auth_service_client::AuthServiceClient;
use ramen_proto::auth::v1::{AppendAuditRequest, AuditEntry, ListMcpKeyHashesRequest};
use ramen_proto::common::v1::{AuditOutcome, KeyHash, PageRequest};
use ramen_proto::metadata;
use tonic::transport::{Channel, Endpoint};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Auth cannot be reached now; try again later.
    #[error("auth unavailable: {0}")]
    Unavailable(String),
    /// Auth answered with a refusal (bad request, permission).
    #[error("auth refused: {0}")]
    Refused(String),
}

impl AuthError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// One audit entry to append.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRecord {
    pub actor: String,
    pub action: String,
    pub group: String,
    pub target: String,
    pub outcome: AuditOutcome,
    pub request_id: String,
    pub details: BTreeMap<String, String>,
}

#[async_trait]
pub trait AuthPort: Send + Sync {
    /// Hashes of the keys valid for `group` in `environment` × `zone` (unrevoked, unexpired).
    async fn key_hashes(
        &self,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<KeyHash>, AuthError>;

    async fn append_audit(&self, entry: AuditRecord) -> Result<(), AuthError>;
}

/// `AuthService` over gRPC (connected lazily, so start-up does not depend on auth being up).
pub struct GrpcAuth {
    client: AuthServiceClient<Channel>,
}

impl GrpcAuth {
    pub fn new(endpoint: &str) -> Result<Self, AuthError> {
        let channel = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| AuthError::Refused(format!("auth endpoint {endpoint:?}: {e}")))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(5))
            .connect_lazy();
        Ok(Self { client: AuthServiceClient::new(channel) })
    }

    fn request<T>(message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Ok(actor) = metadata::ACTOR_ZONE_MANAGER.parse() {
            request.metadata_mut().insert(metadata::ACTOR, actor);
        }
        request
    }
}

fn status_error(status: tonic::Status) -> AuthError {
    use tonic::Code;
    match status.code() {
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Unknown
        | Code::Cancelled
        | Code::ResourceExhausted => AuthError::Unavailable(status.message().to_owned()),
        _ => AuthError::Refused(format!("{:?}: {}", status.code(), status.message())),
    }
}

#[async_trait]
impl AuthPort for GrpcAuth {
    async fn key_hashes(
        &self,
        group: &str,
        environment: &str,
        zone: &str,
    ) -> Result<Vec<KeyHash>, AuthError> {
        let mut keys = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = ListMcpKeyHashesRequest {
                group: group.to_owned(),
                environment: environment.to_owned(),
                zone: zone.to_owned(),
                page: Some(PageRequest { page_size: 500, page_token }),
            };
            let response = self
                .client
                .clone()
                .list_mcp_key_hashes(Self::request(request))
                .await
                .map_err(status_error)?
                .into_inner();
            keys.extend(response.keys);
            page_token = response.page.map(|p| p.next_page_token).unwrap_or_default();
            if page_token.is_empty() {
                return Ok(keys);
            }
        }
    }

    async fn append_audit(&self, entry: AuditRecord) -> Result<(), AuthError> {
        let entry = AuditEntry {
            actor: entry.actor,
            action: entry.action,
            group: entry.group,
            target: entry.target,
            outcome: entry.outcome as i32,
            request_id: entry.request_id,
            details: entry.details.into_iter().collect(),
            ..Default::default()
        };
        let request = Self::request(AppendAuditRequest { entry: Some(entry) });
        self.client.clone().append_audit(request).await.map_err(status_error)?;
        Ok(())
    }
}
