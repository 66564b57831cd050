//! `RunnerService`, the node's admin gRPC API (control plane only): reload a snapshot, report
//! status, drain, and replace the live policy; and [`ControlGate`], which lets through only
//! calls carrying a ticket the control plane signed for this node's placement — on this API and
//! on the admin port's routes other than `/healthz`, `/readyz` and `/metrics`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Request as HttpRequest, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response as HttpResponse};
use ramen_access::{AudienceKeys, TICKET_HEADER};
use ramen_config::DrainMode;
use ramen_lifecycle::Health;
use ramen_proto::common::v1 as common;
use ramen_proto::runner::v1::runner_service_server::RunnerService;
use ramen_proto::runner::v1::{
    DrainRequest, DrainResponse, NodeStatus, ReloadOutcome, ReloadRequest, ReloadResponse,
    StatusRequest, UpdatePolicyRequest, UpdatePolicyResponse,
};
use tonic::{Request, Response, Status};

use crate::config::{NodeConfig, SnapshotRef};
use crate::node::Node;
use crate::policy::{Policy, PolicyConfig};
use crate::reload::{ReloadError, Reloaded, Reloader};
use crate::runtime::{Report, RuntimeError};

/// What the admin API acts on; shared with the worker that owns the servers.
pub struct Control {
    pub node: Arc<Node>,
    pub reloader: Arc<Reloader>,
    pub health: Health,
    pub env: Vec<(String, String)>,
    pub drain_timeout: Duration,
    policy_version: AtomicU64,
    started_at: SystemTime,
    /// How the last load went (the one at start from the config, or the last `Reload`), as
    /// `Status` reports it: the deploy's smoke step reads it instead of loading again.
    last_load: parking_lot::Mutex<Option<ReloadResponse>>,
}

impl Control {
    pub fn new(
        node: Arc<Node>,
        reloader: Arc<Reloader>,
        health: Health,
        env: Vec<(String, String)>,
        drain_timeout: Duration,
    ) -> Self {
        let version = node.policy().source.version;
        Self {
            node,
            reloader,
            health,
            env,
            drain_timeout,
            policy_version: AtomicU64::new(version),
            started_at: SystemTime::now(),
            last_load: parking_lot::Mutex::new(None),
        }
    }

    pub async fn reload(&self, snapshot: &SnapshotRef) -> Result<Reloaded, ReloadError> {
        let reloaded = self.reloader.reload(&self.node.runtime, snapshot, self.env.clone()).await?;
        self.node.set_report(reloaded.report.clone(), Some(&snapshot.commit));
        Ok(reloaded)
    }

    /// Loads `snapshot` and answers how it went (what `Reload` returns), remembering the answer
    /// for `Status`. Only failures that say nothing about the snapshot (it is missing, it does
    /// not match its digest, the blob store is down) are errors.
    pub async fn load(&self, snapshot: &SnapshotRef) -> Result<ReloadResponse, ReloadError> {
        let started = Instant::now();
        let outcome = self.reload(snapshot).await;
        let took = prost_types::Duration::try_from(started.elapsed()).ok();
        let loaded_commit = self.node.loaded_commit();
        let response = match outcome {
            Ok(reloaded) => ReloadResponse {
                outcome: if reloaded.report.load_errors().is_empty() {
                    ReloadOutcome::Ok
                } else {
                    ReloadOutcome::PackageErrors
                } as i32,
                loaded_commit,
                packages: packages(&reloaded.report),
                pip_ran: reloaded.pip_ran,
                log: reloaded.report.packages.iter().map(|p| p.describe()).collect(),
                took,
            },
            Err(ReloadError::Pip { status, output }) => ReloadResponse {
                outcome: ReloadOutcome::PipFailed as i32,
                loaded_commit,
                log: std::iter::once(format!("pip install -r requirements.txt failed ({status})"))
                    .chain(output.lines().map(str::to_owned))
                    .collect(),
                took,
                ..Default::default()
            },
            Err(ReloadError::Runtime(RuntimeError::Start(reason))) => ReloadResponse {
                outcome: ReloadOutcome::RuntimeFailed as i32,
                loaded_commit,
                log: reason.lines().map(str::to_owned).collect(),
                took,
                ..Default::default()
            },
            Err(err) => return Err(err),
        };
        for line in &response.log {
            tracing::info!(commit = %snapshot.commit, "{line}");
        }
        *self.last_load.lock() = Some(response.clone());
        Ok(response)
    }

    /// Applies `update` unless it is older than the policy in force. The node-local parts
    /// (key requirement, allowed origins, verbosity) stay as configured.
    pub fn update_policy(&self, update: PolicyConfig) -> Result<bool, crate::policy::PolicyError> {
        let current = self.node.policy();
        if update.version < self.policy_version.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let merged = PolicyConfig {
            require_key: current.source.require_key,
            allowed_origins: current.source.allowed_origins.clone(),
            verbose: current.source.verbose,
            ..update
        };
        let version = merged.version;
        self.node.set_policy(Policy::compile(merged)?);
        self.policy_version.store(version, Ordering::SeqCst);
        Ok(true)
    }
}

/// Who may drive this node: the control plane, proved by a caller ticket signed for the node's
/// placement (`runner:<group>/<zone>`) under the key its config carries. Group code runs beside
/// the node and reaches its ports (loopback on a local zone, the pod network on Kubernetes), so
/// where a call comes from proves nothing.
#[derive(Clone, Debug)]
pub struct ControlGate {
    /// `None`: the config carries no key (a node started by hand, a bare test node).
    keys: Option<Arc<AudienceKeys>>,
    audience: String,
}

impl ControlGate {
    pub fn from_config(config: &NodeConfig) -> Self {
        let audience = ramen_access::audience::runner(&config.group, &config.zone);
        let mut keys = config.ticket_keys.iter().map(|k| *k.expose());
        let keys = keys
            .next()
            .map(|current| Arc::new(AudienceKeys::from_keys(&audience, current, keys.next())));
        Self { keys, audience }
    }

    /// The refusal, in words the caller can act on, unless `ticket` was signed for this node.
    pub fn check(&self, ticket: Option<&str>) -> Result<ramen_access::Caller, String> {
        let Some(keys) = &self.keys else {
            return Err(format!(
                "this node has no ticket key configured (`ticket_keys` in its node config, \
                 written by the zone-manager for {:?}), so it takes no admin calls",
                self.audience
            ));
        };
        keys.verify_header(ticket, ramen_access::ticket::now_ms()).map_err(|e| e.to_string())
    }

    /// The gRPC interceptor: UNAUTHENTICATED before any handler runs.
    pub fn intercept(&self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let ticket = request.metadata().get(TICKET_HEADER).and_then(|v| v.to_str().ok());
        let caller = self.check(ticket).map_err(Status::unauthenticated)?;
        request.extensions_mut().insert(caller);
        Ok(request)
    }
}

/// The admin port's gate (axum middleware): 401 with a JSON `error` naming what is wrong.
pub async fn require_ticket(
    State(gate): State<ControlGate>,
    request: HttpRequest,
    next: Next,
) -> HttpResponse {
    let ticket = request.headers().get(TICKET_HEADER).and_then(|v| v.to_str().ok());
    match gate.check(ticket) {
        Ok(_) => next.run(request).await,
        Err(error) => {
            (http::StatusCode::UNAUTHORIZED, axum::Json(serde_json::json!({ "error": error })))
                .into_response()
        }
    }
}

/// The gRPC face of [`Control`].
pub struct AdminService(pub Arc<Control>);

#[tonic::async_trait]
impl RunnerService for AdminService {
    async fn reload(
        &self,
        request: Request<ReloadRequest>,
    ) -> Result<Response<ReloadResponse>, Status> {
        let snapshot = request
            .into_inner()
            .snapshot
            .ok_or_else(|| Status::invalid_argument("snapshot is required"))?;
        let snapshot = SnapshotRef {
            commit: snapshot.commit,
            key: snapshot.location,
            digest: snapshot.digest.trim_start_matches("sha256:").to_owned(),
            environment: snapshot.environment.map(|e| ramen_node_contract::EnvironmentRef {
                key: e.key,
                location: e.location,
                digest: e.digest.trim_start_matches("sha256:").to_owned(),
            }),
        };
        let response = self.0.load(&snapshot).await.map_err(reload_status)?;
        Ok(Response::new(response))
    }

    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<NodeStatus>, Status> {
        let node = &self.0.node;
        let last_load = self.0.last_load.lock().clone().unwrap_or_default();
        let track = if node.identity.track == "worker-canary" {
            common::Track::WorkerCanary
        } else {
            common::Track::Worker
        };
        Ok(Response::new(NodeStatus {
            node_id: node.identity.node_id.clone(),
            group: node.identity.group.clone(),
            zone: node.identity.zone.clone(),
            track: track as i32,
            ready: node.is_ready(),
            in_flight: node.in_flight() as u32,
            cap: node.settings.in_flight_cap as u32,
            loaded_commit: node.loaded_commit(),
            runtime_restarts: node.metrics.runtime_restarts.get() as u32,
            draining: node.is_draining(),
            policy_version: self.0.policy_version.load(Ordering::SeqCst),
            sessions: node.sessions.len() as u32,
            started_at: Some(prost_types::Timestamp::from(self.0.started_at)),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            load_outcome: last_load.outcome,
            packages: last_load.packages,
            pip_ran: last_load.pip_ran,
            load_log: last_load.log,
        }))
    }

    async fn drain(
        &self,
        request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        let request = request.into_inner();
        let mode = match common::DrainMode::try_from(request.mode) {
            Ok(common::DrainMode::Interrupt) => DrainMode::Interrupt,
            _ => DrainMode::Complete,
        };
        let timeout = request
            .timeout
            .and_then(|d| Duration::try_from(d).ok())
            .unwrap_or(self.0.drain_timeout);
        let before = self.0.node.in_flight();
        crate::drain::drain(&self.0.node, &self.0.health, mode, timeout).await;
        let cancelled = if mode == DrainMode::Interrupt { before } else { 0 };
        Ok(Response::new(DrainResponse {
            completed: (before - cancelled) as u32,
            cancelled: cancelled as u32,
        }))
    }

    async fn update_policy(
        &self,
        request: Request<UpdatePolicyRequest>,
    ) -> Result<Response<UpdatePolicyResponse>, Status> {
        let policy = request
            .into_inner()
            .policy
            .ok_or_else(|| Status::invalid_argument("policy is required"))?;
        let update = PolicyConfig {
            version: policy.version,
            blocked: policy.blocked,
            disabled_packages: policy.disabled_packages,
            key_hashes: policy.key_hashes.into_iter().map(Into::into).collect(),
            ip_allow: policy.ip_allow,
            trusted_proxies: policy.trusted_proxies,
            auth: ramen_node_contract::NodeAuth::from_wire(policy.auth.as_ref()),
            environment: policy.environment,
            record_arguments: policy.record_arguments,
            ..Default::default()
        };
        let applied =
            self.0.update_policy(update).map_err(|e| Status::invalid_argument(e.to_string()))?;
        Ok(Response::new(UpdatePolicyResponse {
            applied,
            version: self.0.policy_version.load(Ordering::SeqCst),
        }))
    }
}

fn reload_status(err: ReloadError) -> Status {
    match err {
        ReloadError::Missing { .. } => Status::not_found(err.to_string()),
        ReloadError::DigestMismatch { .. } => Status::data_loss(err.to_string()),
        ReloadError::Blob(ref blob) if blob.is_retryable() => Status::unavailable(err.to_string()),
        _ => Status::internal(err.to_string()),
    }
}

/// The runtime's report as the wire type (schemas carried as JSON text).
pub fn packages(report: &Report) -> Vec<common::PackageReport> {
    let text = |v: &serde_json::Value, field: &str| {
        v.get(field).and_then(|x| x.as_str()).unwrap_or_default().to_owned()
    };
    let json = |v: &serde_json::Value, field: &str| {
        v.get(field).filter(|x| !x.is_null()).map(|x| x.to_string()).unwrap_or_default()
    };
    report
        .packages
        .iter()
        .map(|p| common::PackageReport {
            name: p.name.clone(),
            tools: p
                .tools
                .iter()
                .map(|t| common::ToolInfo {
                    name: text(t, "name"),
                    title: text(t, "title"),
                    description: text(t, "description"),
                    input_schema_json: json(t, "inputSchema"),
                    output_schema_json: json(t, "outputSchema"),
                    annotations_json: json(t, "annotations"),
                })
                .collect(),
            resources: p
                .resources
                .iter()
                .map(|r| common::ResourceInfo {
                    uri: text(r, "uri"),
                    name: text(r, "name"),
                    title: text(r, "title"),
                    description: text(r, "description"),
                    mime_type: text(r, "mimeType"),
                })
                .collect(),
            resource_templates: p
                .resource_templates
                .iter()
                .map(|r| common::ResourceTemplateInfo {
                    uri_template: text(r, "uriTemplate"),
                    name: text(r, "name"),
                    title: text(r, "title"),
                    description: text(r, "description"),
                    mime_type: text(r, "mimeType"),
                })
                .collect(),
            prompts: p
                .prompts
                .iter()
                .map(|r| common::PromptInfo {
                    name: text(r, "name"),
                    title: text(r, "title"),
                    description: text(r, "description"),
                    arguments: r
                        .get("arguments")
                        .and_then(|a| a.as_array())
                        .map(|args| {
                            args.iter()
                                .map(|a| common::PromptArgument {
                                    name: text(a, "name"),
                                    description: text(a, "description"),
                                    required: a
                                        .get("required")
                                        .and_then(|x| x.as_bool())
                                        .unwrap_or(false),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
            error: p.error.as_ref().map(|e| common::LoadError {
                message: e.message.clone(),
                traceback: e.traceback.clone(),
            }),
        })
        .collect()
}
