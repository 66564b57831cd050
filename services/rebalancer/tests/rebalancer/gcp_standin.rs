//! A local HTTP server playing the three Compute API calls the GCP balancer makes (no emulator
//! of Compute exists): `backendServices.get`, `backendServices.patch` (JSON merge patch with the
//! fingerprint check) and `globalOperations.get`. A patch starts an operation that stays
//! `RUNNING` for `running_polls` reads before it is `DONE` and the new scalers take effect.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use base64::Engine;
use parking_lot::Mutex;
use serde_json::{Value, json};

pub const PROJECT: &str = "proj";

/// Each backend of a service: (NEG URL, capacity scaler).
pub type Backends = Vec<(String, f64)>;

/// A running operation: (operation, service, backends once done, reads left while running).
pub type PendingPatch = (String, String, Backends, u32);

#[derive(Debug, Default)]
pub struct Compute {
    /// Backend service name → (NEG URL, capacity scaler) of each backend.
    pub services: std::collections::HashMap<String, Backends>,
    pub fingerprint: u64,
    pub pending: Option<PendingPatch>,
    pub running_polls: u32,
    pub patches: u32,
    pub operation_reads: u32,
}

pub struct ComputeStandIn {
    pub url: String,
    pub state: Arc<Mutex<Compute>>,
}

pub fn neg_url(zone_location: &str, neg: &str) -> String {
    format!(
        "https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone_location}/networkEndpointGroups/{neg}"
    )
}

fn fingerprint(n: u64) -> String {
    base64::engine::general_purpose::STANDARD.encode(n.to_be_bytes())
}

type Answer = (StatusCode, Json<Value>);

fn error(code: StatusCode, reason: &str, message: &str) -> Answer {
    (
        code,
        Json(
            json!({"error": {"code": code.as_u16(), "message": message, "errors": [{"reason": reason, "message": message}]}}),
        ),
    )
}

fn operation(name: &str, service: &str, status: &str) -> Answer {
    let target = format!(
        "https://www.googleapis.com/compute/v1/projects/{PROJECT}/global/backendServices/{service}"
    );
    (
        StatusCode::OK,
        Json(
            json!({"kind": "compute#operation", "name": name, "operationType": "patch", "status": status, "targetLink": target}),
        ),
    )
}

async fn get_service(
    State(state): State<Arc<Mutex<Compute>>>,
    Path((_project, name)): Path<(String, String)>,
) -> Answer {
    let state = state.lock();
    let Some(backends) = state.services.get(&name) else {
        return error(
            StatusCode::NOT_FOUND,
            "notFound",
            &format!("backend service {name} was not found"),
        );
    };
    let backends: Vec<Value> = backends
        .iter()
        .map(|(group, scaler)| json!({"group": group, "balancingMode": "RATE", "maxRatePerEndpoint": 100.0, "capacityScaler": scaler}))
        .collect();
    (
        StatusCode::OK,
        Json(
            json!({"kind": "compute#backendService", "name": name, "fingerprint": fingerprint(state.fingerprint), "backends": backends}),
        ),
    )
}

async fn patch_service(
    State(state): State<Arc<Mutex<Compute>>>,
    Path((_project, name)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Answer {
    let mut state = state.lock();
    state.patches += 1;
    if state.pending.is_some() {
        return error(StatusCode::BAD_REQUEST, "resourceNotReady", "the resource is not ready");
    }
    if body["fingerprint"].as_str() != Some(fingerprint(state.fingerprint).as_str()) {
        return error(StatusCode::PRECONDITION_FAILED, "conditionNotMet", "fingerprint mismatch");
    }
    let Some(backends) = body["backends"].as_array() else {
        return error(StatusCode::BAD_REQUEST, "invalid", "backends: required");
    };
    let backends: Vec<(String, f64)> = backends
        .iter()
        .map(|b| {
            (
                b["group"].as_str().unwrap_or_default().to_owned(),
                b["capacityScaler"].as_f64().unwrap_or(1.0),
            )
        })
        .collect();
    let op = format!("operation-{}", state.patches);
    if state.running_polls == 0 {
        state.services.insert(name.clone(), backends);
        state.fingerprint += 1;
        return operation(&op, &name, "DONE");
    }
    let polls = state.running_polls;
    state.pending = Some((op.clone(), name.clone(), backends, polls));
    operation(&op, &name, "RUNNING")
}

async fn get_operation(
    State(state): State<Arc<Mutex<Compute>>>,
    Path((_project, op)): Path<(String, String)>,
) -> Answer {
    let mut state = state.lock();
    state.operation_reads += 1;
    let Some((name, service, backends, left)) = state.pending.take() else {
        return operation(&op, "", "DONE");
    };
    if name != op {
        state.pending = Some((name, service, backends, left));
        return error(StatusCode::NOT_FOUND, "notFound", &format!("operation {op} was not found"));
    }
    if left > 1 {
        state.pending = Some((name, service.clone(), backends, left - 1));
        return operation(&op, &service, "RUNNING");
    }
    state.services.insert(service.clone(), backends);
    state.fingerprint += 1;
    operation(&op, &service, "DONE")
}

impl ComputeStandIn {
    pub async fn start(state: Compute) -> Self {
        let state = Arc::new(Mutex::new(state));
        let router = axum::Router::new()
            .route(
                "/compute/v1/projects/{project}/global/backendServices/{name}",
                get(get_service).patch(patch_service),
            )
            .route("/compute/v1/projects/{project}/global/operations/{op}", get(get_operation))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        // Lives as long as the test's runtime.
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self { url, state }
    }

    pub fn scalers(&self, service: &str) -> Vec<(String, f64)> {
        self.state.lock().services.get(service).cloned().unwrap_or_default()
    }
}
