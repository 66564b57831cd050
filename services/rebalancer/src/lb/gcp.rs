//! GCP: the capacity scaler of each backend of the group's backend service (Compute Engine
//! API through the official `google-cloud-compute-v1` client).
//!
//! Contract with the provisioning side: the group's global backend service is named
//! [`backend_service_name`] (`ramen-<group>`) and each placement's zonal NEG is named
//! [`neg_name`] (`ramen-<group>-<zone>`, the placement's namespace, via GKE's standalone NEG
//! name annotation). A patch returns a Compute operation; until it is `DONE` the rebalance is
//! reconciling and the operation's name is the ticket the retries follow.

mod errors;

use async_trait::async_trait;
use google_cloud_compute_v1::client::BackendServices;
use google_cloud_compute_v1::model::operation::Status;
use google_cloud_compute_v1::model::{BackendService, Operation};
use tokio::sync::OnceCell;

use super::{Applied, LbError, LoadBalancer, Measure, Target, ZoneRef};
use crate::model::Caller;
use errors::gax_error;

#[derive(Clone, Debug, Default)]
pub struct GcpSettings {
    pub project: String,
    /// Empty = the API's default endpoint.
    pub endpoint: String,
    pub anonymous: bool,
}

pub fn backend_service_name(group: &str) -> String {
    format!("ramen-{group}")
}

pub fn neg_name(group: &str, zone: &str) -> String {
    format!("ramen-{group}-{zone}")
}

pub struct GcpBalancer {
    settings: GcpSettings,
    client: OnceCell<BackendServices>,
}

impl GcpBalancer {
    pub fn new(settings: GcpSettings) -> Self {
        Self { settings, client: OnceCell::new() }
    }

    async fn client(&self) -> Result<&BackendServices, LbError> {
        if self.settings.project.is_empty() {
            return Err(LbError::NotConfigured("rebalancer.gcp.project is not set".into()));
        }
        self.client
            .get_or_try_init(|| async {
                let mut builder = BackendServices::builder();
                if !self.settings.endpoint.is_empty() {
                    builder = builder.with_endpoint(&self.settings.endpoint);
                }
                if self.settings.anonymous {
                    builder = builder.with_credentials(
                        google_cloud_auth::credentials::anonymous::Builder::new().build(),
                    );
                }
                builder
                    .build()
                    .await
                    .map_err(|e| LbError::NotConfigured(format!("Compute API client: {e}")))
            })
            .await
    }

    async fn service(
        &self,
        client: &BackendServices,
        group: &str,
    ) -> Result<BackendService, LbError> {
        let name = backend_service_name(group);
        let get = client.get().set_project(&self.settings.project).set_backend_service(&name);
        get.send().await.map_err(|e| gax_error(&format!("backend service {name}"), e))
    }

    /// Follows the operation a previous attempt started: `Some` answer while it is not done.
    async fn follow(
        &self,
        client: &BackendServices,
        operation: &str,
    ) -> Result<Option<Applied>, LbError> {
        let get =
            client.get_operation().set_project(&self.settings.project).set_operation(operation);
        let op = get.send().await.map_err(|e| gax_error(&format!("operation {operation}"), e))?;
        check_failed(&op)?;
        Ok(pending(&op))
    }
}

/// The NEG name at the end of a backend's group URL.
fn neg_of(group_url: &str) -> &str {
    group_url.rsplit('/').next().unwrap_or_default()
}

fn check_failed(op: &Operation) -> Result<(), LbError> {
    let errors = op.error.as_ref().map(|e| e.errors.as_slice()).unwrap_or_default();
    if errors.is_empty() {
        return Ok(());
    }
    let messages: Vec<String> = errors
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e.code.as_deref().unwrap_or("error"),
                e.message.as_deref().unwrap_or_default()
            )
        })
        .collect();
    Err(LbError::Refused(format!("backend service update failed: {}", messages.join("; "))))
}

fn pending(op: &Operation) -> Option<Applied> {
    let status = op.status.clone().unwrap_or(Status::Done);
    if status == Status::Done {
        return None;
    }
    let name = op.name.clone().unwrap_or_default();
    Some(Applied::Reconciling {
        note: format!(
            "backend service update {name} is {}; retrying",
            status.name().unwrap_or("in progress")
        ),
        ticket: Some(name),
    })
}

/// Sets the scalers of the listed NEGs; `true` when something changed.
fn rescale(service: &mut BackendService, weights: &[(String, u32)]) -> bool {
    let mut changed = false;
    for backend in &mut service.backends {
        let neg = neg_of(backend.group.as_deref().unwrap_or_default()).to_owned();
        if let Some((_, weight)) = weights.iter().find(|(t, _)| *t == neg) {
            let scaler = *weight as f32 / 1000.0;
            if backend.capacity_scaler.is_none_or(|s| (s - scaler).abs() > 0.0005) {
                backend.capacity_scaler = Some(scaler);
                changed = true;
            }
        }
    }
    changed
}

#[async_trait]
impl LoadBalancer for GcpBalancer {
    async fn targets(&self, zone: &ZoneRef) -> Result<Vec<Target>, LbError> {
        let client = self.client().await?;
        let service = self.service(client, &zone.group).await?;
        let prefix = format!("ramen-{}-", zone.group);
        let targets: Vec<Target> = service
            .backends
            .iter()
            .filter_map(|b| {
                let neg = neg_of(b.group.as_deref()?);
                let zone = neg.strip_prefix(&prefix)?.to_owned();
                Some(Target { id: neg.to_owned(), measure: Measure::Cell { zone } })
            })
            .collect();
        let own = neg_name(&zone.group, &zone.zone);
        if !targets.iter().any(|t| t.id == own) {
            let name = backend_service_name(&zone.group);
            return Err(LbError::NotFound(format!(
                "backend service {name} has no backend for NEG {own}"
            )));
        }
        Ok(targets)
    }

    async fn apply(
        &self,
        _caller: &Caller,
        zone: &ZoneRef,
        weights: &[(String, u32)],
        ticket: Option<&str>,
    ) -> Result<Applied, LbError> {
        let client = self.client().await?;
        if let Some(operation) = ticket.filter(|t| !t.is_empty())
            && let Some(still) = self.follow(client, operation).await?
        {
            return Ok(still);
        }
        let mut service = self.service(client, &zone.group).await?;
        if !rescale(&mut service, weights) {
            return Ok(Applied::Done("capacity scalers in place".into()));
        }
        let body = BackendService::new()
            .set_backends(service.backends.clone())
            .set_or_clear_fingerprint(service.fingerprint.clone());
        let name = backend_service_name(&zone.group);
        let patch = client
            .patch()
            .set_project(&self.settings.project)
            .set_backend_service(&name)
            .set_body(body);
        let op = patch
            .send()
            .await
            .map_err(|e| gax_error(&format!("patching backend service {name}"), e))?;
        check_failed(&op)?;
        Ok(pending(&op).unwrap_or_else(|| {
            Applied::Done(format!("capacity scalers set on backend service {name}"))
        }))
    }
}
