//! Assembles a node from its config and runs it until it is told to stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::get;
use ramen_blob::{BlobStore, LocalDirStore, S3Settings, S3Store};
use ramen_lifecycle::{
    Health, HealthCheck, Limits, OpenConnections, TaskCenter, admin_router, serve_http,
    serve_http_local, serve_http_with,
};
use ramen_proto::runner::v1::ReloadOutcome;
use ramen_telemetry::Metrics;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::SnapshotRef;
use crate::admin::Control;
use crate::config::NodeConfig;
use crate::confine::GroupCode;
use crate::drain;
use crate::metrics::NodeMetrics;
use crate::node::{Identity, Node, Settings};
use crate::node_bus::NodeBus;
use crate::policy::Policy;
use crate::reload::{Reloaded, Reloader, Workdir};
use crate::runtime::{Runtime, RuntimeSpec, RuntimeState};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("invalid node config: {0}")]
    Config(String),
    #[error("cannot prepare the working directory: {0}")]
    Workdir(std::io::Error),
    #[error("blob store: {0}")]
    Blob(#[from] ramen_blob::BlobError),
    #[error("{0}")]
    Listen(std::io::Error),
}

/// A running node. Tests start one in-process; `ramen worker` runs one per process.
pub struct Worker {
    pub node: Arc<Node>,
    pub mcp_addr: SocketAddr,
    pub admin_addr: SocketAddr,
    pub grpc_addr: SocketAddr,
    /// The abstract Unix socket serving MCP too (`@name`), when the config asked for one.
    pub mcp_local: Option<String>,
    pub health: Health,
    pub config: NodeConfig,
    control: Arc<Control>,
    tasks: TaskCenter,
    stop: CancellationToken,
    servers: Vec<tokio::task::JoinHandle<()>>,
    /// The MCP listener's connections: a drained node stops once its clients closed them.
    mcp_connections: OpenConnections,
    /// The node's NATS connection (load reports, call records); none without `nats_url`.
    bus: Option<NodeBus>,
}

/// How this node confines its group's code, as its config says.
fn group_code(config: &NodeConfig, workdir: &Workdir) -> GroupCode {
    if config.sandbox.enabled {
        tracing::info!(
            confinement = %ramen_sandbox::Support::probe().describe(),
            ports = ?config.sandbox.connect_ports,
            "the group's code runs confined"
        );
    } else {
        tracing::warn!("the group's code runs unconfined (sandbox off in the node config)");
    }
    let mut read = config.site_packages.clone();
    read.push(workdir.root.join("environments"));
    GroupCode {
        confined: config.sandbox.enabled,
        read,
        scratch: workdir.scratch(),
        connect_ports: config.sandbox.connect_ports.clone(),
    }
}

struct RuntimeReady(Arc<Node>);

#[async_trait::async_trait]
impl HealthCheck for RuntimeReady {
    fn name(&self) -> &str {
        "runtime"
    }
    async fn check(&self) -> Result<(), String> {
        match self.0.runtime.state() {
            RuntimeState::Ready(_) => Ok(()),
            RuntimeState::Idle => Err("no snapshot loaded yet".into()),
            RuntimeState::Starting => Err("starting".into()),
            RuntimeState::Failed(reason) => Err(reason),
        }
    }
}

impl Worker {
    pub async fn start(config: NodeConfig, metrics: Metrics) -> Result<Self, WorkerError> {
        config.validate().map_err(WorkerError::Config)?;
        // The node holds its group's secrets and its control keys: no other process of this
        // user may read them out of its memory.
        if let Err(err) = ramen_sandbox::forbid_dumping() {
            tracing::warn!(%err, "cannot make the node undumpable");
        }
        let workdir = Workdir { root: config.workdir.clone() };
        std::fs::create_dir_all(&workdir.root).map_err(WorkerError::Workdir)?;
        workdir.install_runtime().map_err(WorkerError::Workdir)?;
        workdir.create_scratch().map_err(WorkerError::Workdir)?;
        let group_code = group_code(&config, &workdir);

        let stop = CancellationToken::new();
        let tasks = TaskCenter::new(&stop);
        let node_metrics = NodeMetrics::register(&metrics, &config.group, &config.zone);
        node_metrics.in_flight_cap.set(i64::try_from(config.in_flight_cap).unwrap_or(i64::MAX));
        let threads = tokio::runtime::Handle::current().metrics().num_workers();
        node_metrics.threads.set(i64::try_from(threads).unwrap_or(i64::MAX));
        let runtime = Runtime::start(
            RuntimeSpec {
                python: workdir.python(),
                runtime_dir: workdir.runtime_dir(),
                namespace: config.namespace,
                ready_timeout: config.ready_timeout,
                group_code: group_code.clone(),
            },
            node_metrics.runtime_restarts.clone(),
            stop.child_token(),
        );
        // A mounted policy file (Kubernetes) is newer than the policy the config was written
        // with; its node-local parts stay as configured, as with a pushed update.
        let file = config.read_policy_file().map_err(|e| WorkerError::Config(e.to_string()))?;
        let policy = match file {
            Some(file) => crate::PolicyConfig {
                require_key: config.policy.require_key,
                allowed_origins: config.policy.allowed_origins.clone(),
                verbose: config.policy.verbose,
                ..file
            },
            None => config.policy.clone(),
        };
        let policy = Policy::compile(policy).map_err(|e| WorkerError::Config(e.to_string()))?;
        // Calls are recorded where they can be published: a node of a placement with a bus.
        let publisher = (!config.nats_url.is_empty()).then(crate::call_log::queue);
        let call_log = match &publisher {
            Some((recorder, _)) => {
                let secrets = config.env.values().cloned().collect();
                crate::call_log::CallLog::new(recorder.clone(), secrets)
            }
            None => crate::call_log::CallLog::default(),
        };
        let node = Arc::new(
            Node::new(settings(&config), identity(&config), policy, runtime, node_metrics)
                .with_call_log(call_log),
        );
        let bus = (!config.nats_url.is_empty()).then(|| {
            let name = format!("runner-{}", config.node_id);
            NodeBus::new(config.nats_url.clone(), name, config.nats_credentials.0.clone())
        });
        if let (Some((recorder, batcher)), Some(bus)) = (publisher, bus.clone()) {
            let node = node.clone();
            tasks.spawn("call-records", move |token| {
                crate::call_log::run(node, batcher, recorder, bus, token)
            });
        }
        let blob = open_blob(&config).await?;
        let reloader = Arc::new(Reloader {
            workdir,
            blob,
            python: config.python.clone(),
            site_packages: config.site_packages.clone(),
            pip_args: config.pip_args.clone(),
            group_code,
        });

        let health = Health::default();
        health.add(RuntimeReady(node.clone()));
        // `/readyz` on the MCP port too: a cloud load balancer health-checks the port it sends
        // traffic to, and the admin port is closed to it.
        let mcp = ramen_lifecycle::Routes::with_fast_route(
            crate::mcp::http::router(node.clone(), &config.mcp_path)
                .merge(ramen_lifecycle::public_readiness_router(health.clone())),
            crate::mcp::http::McpRoute::new(node.clone(), &config.mcp_path),
        );
        let (mcp_addr, mcp_server, mcp_connections) =
            serve_http_with(config.listen, mcp.clone(), stop.child_token(), Limits::default())
                .await
                .map_err(WorkerError::Listen)?;
        let mut servers = vec![mcp_server];
        let mcp_local = if config.listen_local {
            // Random, so no other process can hold the name before the node binds it.
            let name = format!("ramen/node/{}", uuid::Uuid::new_v4().simple());
            let limits = Limits::default();
            let server = serve_http_local(&name, mcp, stop.child_token(), limits, &mcp_connections)
                .await
                .map_err(WorkerError::Listen)?;
            servers.push(server);
            Some(format!("@{name}"))
        } else {
            None
        };
        // `/healthz`, `/readyz` and `/metrics` stay open (probes, scrapers); the rest of the
        // admin port is the control plane's.
        let gate = crate::admin::ControlGate::from_config(&config);
        let control_routes =
            axum::Router::new().route("/status", get(status)).with_state(node.clone()).route_layer(
                axum::middleware::from_fn_with_state(gate.clone(), crate::admin::require_ticket),
            );
        let admin = admin_router(health.clone(), metrics).merge(control_routes);
        let (admin_addr, admin_server) = serve_http(config.admin, admin, stop.child_token())
            .await
            .map_err(WorkerError::Listen)?;

        let env = config.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let control = Arc::new(Control::new(
            node.clone(),
            reloader,
            health.clone(),
            env,
            config.drain_timeout,
        ));
        let (grpc_addr, grpc_server) =
            serve_grpc(config.grpc, control.clone(), gate, stop.child_token()).await?;
        if let Some(path) = &config.ports_file {
            let ports = ramen_node_contract::NodePorts {
                pid: std::process::id(),
                mcp: mcp_addr,
                admin: admin_addr,
                grpc: grpc_addr,
                mcp_local: mcp_local.clone(),
            };
            ports.write(path).map_err(WorkerError::Workdir)?;
        }

        servers.extend([admin_server, grpc_server]);
        let worker = Self {
            node,
            mcp_addr,
            admin_addr,
            grpc_addr,
            mcp_local,
            health,
            config,
            control,
            tasks,
            stop,
            servers,
            mcp_connections,
            bus,
        };
        worker.spawn_background();
        Ok(worker)
    }

    fn spawn_background(&self) {
        let node = self.node.clone();
        self.tasks.spawn("runtime-report-watch", move |token| follow_reports(node, token));
        let node = self.node.clone();
        self.tasks.spawn("session-expiry", move |token| expire_sessions(node, token));
        let node = self.node.clone();
        self.tasks.spawn("runtime-relist", move |token| relist(node, token));
        if let Some(snapshot) = self.config.snapshot.clone() {
            let control = self.control.clone();
            self.tasks.spawn("initial-load", move |_token| async move {
                match control.load(&snapshot).await {
                    Ok(load) if load.outcome() == ReloadOutcome::Ok => {}
                    Ok(load) => tracing::error!(
                        commit = %snapshot.commit,
                        outcome = ?load.outcome(),
                        log = %load.log.join("\n"),
                        "the configured snapshot did not load cleanly"
                    ),
                    Err(err) => {
                        tracing::error!(%err, commit = %snapshot.commit, "loading the configured snapshot failed")
                    }
                }
            });
        }
        if let Some(path) = self.config.policy_file.clone() {
            let control = self.control.clone();
            self.tasks.spawn("policy-file-watch", move |token| {
                crate::policy_file::watch(path, control, token)
            });
        }
        if let Some(bus) = self.bus.clone() {
            let (node, interval) = (self.node.clone(), self.config.load_report_interval);
            self.tasks
                .spawn("load-reports", move |token| crate::load::run(node, bus, interval, token));
        }
    }

    /// Loads a snapshot (what the admin `Reload` does).
    pub async fn reload(
        &self,
        snapshot: &SnapshotRef,
    ) -> Result<Reloaded, crate::reload::ReloadError> {
        self.control.reload(snapshot).await
    }

    /// Replaces the live policy (what the admin `UpdatePolicy` does).
    pub fn update_policy(
        &self,
        policy: crate::PolicyConfig,
    ) -> Result<bool, crate::policy::PolicyError> {
        self.control.update_policy(policy)
    }

    /// Drains per the config, lingers until the MCP clients closed their connections (at most
    /// `drain_linger`), then stops the servers and the runtime.
    pub async fn shutdown(self) {
        drain::drain(&self.node, &self.health, self.config.drain_mode, self.config.drain_timeout)
            .await;
        let linger = self.config.drain_linger;
        if !self.mcp_connections.wait_closed(linger).await {
            tracing::info!(
                open = self.mcp_connections.count(),
                ?linger,
                "MCP connections still open after the drain's linger; closing them"
            );
        }
        self.stop_now().await;
    }

    /// Connections open on the MCP listener.
    pub fn open_connections(&self) -> usize {
        self.mcp_connections.count()
    }

    /// Stops without draining (tests, and after a drain).
    pub async fn stop_now(self) {
        for id in self.node.sessions.ids() {
            self.node.sessions.remove(&id);
        }
        self.node.changes.publish(crate::mcp::changes::Change::Closing);
        self.node.parked.clear();
        self.stop.cancel();
        if let Err(err) = self.tasks.shutdown(Duration::from_secs(5)).await {
            tracing::warn!(%err, "background tasks did not stop in time");
        }
        for server in self.servers {
            if tokio::time::timeout(Duration::from_secs(5), server).await.is_err() {
                tracing::warn!("an HTTP server did not stop within 5s");
            }
        }
        // Give the runtime supervisor a moment to take its child down.
        let mut state = self.node.runtime.watch();
        let _ = tokio::time::timeout(
            Duration::from_secs(6),
            state.wait_for(|s| !matches!(s, RuntimeState::Ready(_))),
        )
        .await;
    }

    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

async fn serve_grpc(
    addr: SocketAddr,
    control: Arc<Control>,
    gate: crate::admin::ControlGate,
    stop: CancellationToken,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), WorkerError> {
    use ramen_proto::runner::v1::runner_service_server::RunnerServiceServer;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        WorkerError::Listen(std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
    })?;
    let bound = listener.local_addr().map_err(WorkerError::Listen)?;
    let incoming = ramen_lifecycle::no_delay(listener);
    let server = tonic::transport::Server::builder()
        .trace_fn(|request| {
            let span = tracing::info_span!("grpc", path = %request.uri().path());
            ramen_telemetry::extract_http(&span, request.headers());
            span
        })
        .layer(tonic::service::InterceptorLayer::new(move |request| gate.intercept(request)))
        .add_service(RunnerServiceServer::new(crate::admin::AdminService(control)))
        .serve_with_incoming_shutdown(incoming, stop.cancelled_owned());
    let handle = tokio::spawn(async move {
        if let Err(err) = server.await {
            tracing::error!(%err, "admin gRPC server failed");
        }
    });
    Ok((bound, handle))
}

/// A runtime that restarted after a crash comes back with a fresh report; install it.
async fn follow_reports(node: Arc<Node>, token: CancellationToken) {
    let mut state = node.runtime.watch();
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            changed = state.changed() => if changed.is_err() { return },
        }
        let report = match &*state.borrow_and_update() {
            RuntimeState::Ready(report) => report.clone(),
            _ => continue,
        };
        node.set_report(report, None);
    }
}

/// The runtime hinted that a list changed: list again and install what it says (the node
/// then tells sessions and listen streams whatever callers can now see differently).
async fn relist(node: Arc<Node>, token: CancellationToken) {
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = node.runtime.relist_wanted() => {}
        }
        if !node.runtime.is_ready() {
            continue; // a (re)start brings a fresh report of its own
        }
        match node.runtime.list().await {
            Ok(report) => {
                node.metrics.runtime_relists.inc();
                node.set_report(Arc::new(report), None);
            }
            Err(err) => {
                tracing::warn!(code = err.code, message = %err.message, "re-listing the packages failed")
            }
        }
    }
}

async fn expire_sessions(node: Arc<Node>, token: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {
                let expired = node.sessions.expire(node.settings.session_idle);
                if expired > 0 {
                    tracing::debug!(expired, "idle sessions expired");
                    node.metrics.sessions.set(node.sessions.len() as i64);
                }
                let unanswered = node.parked.expire(crate::mcp::modern::park::WAIT);
                if unanswered > 0 {
                    tracing::debug!(unanswered, "calls waiting for their clients' answers cancelled");
                }
            }
        }
    }
}

async fn status(State(node): State<Arc<Node>>) -> Json<serde_json::Value> {
    Json(node.status())
}

fn settings(config: &NodeConfig) -> Settings {
    Settings {
        in_flight_cap: config.in_flight_cap,
        max_body_bytes: config.max_body_bytes,
        page_size: config.page_size,
        max_sessions: config.max_sessions,
        max_sessions_per_key: config.max_sessions_per_key,
        session_idle: config.session_idle,
        ..Settings::default()
    }
}

fn identity(config: &NodeConfig) -> Identity {
    Identity {
        node_id: config.node_id.clone(),
        group: config.group.clone(),
        zone: config.zone.clone(),
        track: config.track.clone(),
    }
}

async fn open_blob(config: &NodeConfig) -> Result<Arc<dyn BlobStore>, WorkerError> {
    open_blob_at(&config.blob, &config.workdir).await
}

/// The blob store `blob` names (a directory under `workdir` when it names none).
pub(crate) async fn open_blob_at(
    blob: &ramen_node_contract::BlobConfig,
    workdir: &std::path::Path,
) -> Result<Arc<dyn BlobStore>, WorkerError> {
    if let Some(s3) = &blob.s3 {
        return Ok(Arc::new(S3Store::connect(S3Settings::from_config(s3)).await?));
    }
    let dir = blob.dir.clone().unwrap_or_else(|| workdir.join("blobs"));
    Ok(Arc::new(LocalDirStore::open(dir)?))
}

impl Node {
    /// What `/status` and the load reports say about this node.
    pub fn status(&self) -> serde_json::Value {
        let runtime = match self.runtime.state() {
            RuntimeState::Idle => "idle".to_owned(),
            RuntimeState::Starting => "starting".to_owned(),
            RuntimeState::Ready(_) => "ready".to_owned(),
            RuntimeState::Failed(reason) => format!("failed: {reason}"),
        };
        json!({
            "node_id": self.identity.node_id,
            "group": self.identity.group,
            "zone": self.identity.zone,
            "track": self.identity.track,
            "in_flight": self.in_flight(),
            "cap": self.settings.in_flight_cap,
            "ready": self.is_ready(),
            "draining": self.is_draining(),
            "loaded_commit": self.loaded_commit(),
            "runtime": runtime,
            "sessions": self.sessions.len(),
        })
    }
}
