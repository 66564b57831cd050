use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use parking_lot::RwLock;
use ramen_telemetry::Metrics;
use serde_json::{Map, Value, json};

/// Each dependency is given this long to answer a readiness ping.
pub const CHECK_DEADLINE: Duration = Duration::from_secs(1);

/// A dependency `/readyz` pings (store, bus, blob store, runtime…).
#[async_trait::async_trait]
pub trait HealthCheck: Send + Sync {
    fn name(&self) -> &str;
    async fn check(&self) -> Result<(), String>;
}

/// A check that fails until [`Startup::done`]: the admin port (and `/healthz`) comes up first,
/// but `/readyz` must not say ready before the process's own listeners are bound.
#[derive(Clone, Default)]
pub struct Startup(Arc<AtomicBool>);

impl Startup {
    pub fn done(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl HealthCheck for Startup {
    fn name(&self) -> &str {
        "startup"
    }
    async fn check(&self) -> Result<(), String> {
        if self.0.load(Ordering::SeqCst) { Ok(()) } else { Err("still starting".to_owned()) }
    }
}

/// Readiness of the process: the registered dependency checks, and a draining flag that makes
/// readiness fail at once on shutdown so load balancers stop sending work first.
#[derive(Clone, Default)]
pub struct Health {
    checks: Arc<RwLock<Vec<Arc<dyn HealthCheck>>>>,
    draining: Arc<AtomicBool>,
}

impl Health {
    pub fn add(&self, check: impl HealthCheck + 'static) {
        self.checks.write().push(Arc::new(check));
    }

    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Pings every dependency concurrently; `Ok` when all answer in time.
    pub async fn ready(&self) -> (bool, Value) {
        let checks: Vec<_> = self.checks.read().clone();
        let results = futures::future::join_all(checks.iter().map(|c| async move {
            let outcome = match tokio::time::timeout(CHECK_DEADLINE, c.check()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(err)) => Err(err),
                Err(_) => Err(format!("no answer within {CHECK_DEADLINE:?}")),
            };
            (c.name().to_owned(), outcome)
        }))
        .await;
        let mut map = Map::new();
        let mut ok = !self.is_draining();
        if self.is_draining() {
            map.insert("draining".into(), json!("shutting down"));
        }
        for (name, outcome) in results {
            match outcome {
                Ok(()) => map.insert(name, json!("ok")),
                Err(err) => {
                    ok = false;
                    map.insert(name, json!(format!("error: {err}")))
                }
            };
        }
        (ok, Value::Object(map))
    }
}

#[derive(Clone)]
struct AdminState {
    health: Health,
    metrics: Metrics,
}

/// `/healthz` (the listener is up), `/readyz` (dependencies, 503 with a JSON map naming the
/// failing one) and `/metrics` (Prometheus text). Served on the admin port, never publicly.
pub fn admin_router(health: Health, metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(|| async { (StatusCode::OK, "ok") }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(AdminState { health, metrics })
}

/// `/readyz` alone, answering only `ready` (200) or `not ready` (503): for a public port a
/// load balancer health-checks (the node's MCP port), where the admin port's JSON naming the
/// failing dependency is not shown.
pub fn public_readiness_router(health: Health) -> Router {
    Router::new().route("/readyz", get(public_readyz)).with_state(health)
}

async fn public_readyz(State(health): State<Health>) -> impl IntoResponse {
    match health.ready().await.0 {
        true => (StatusCode::OK, "ready"),
        false => (StatusCode::SERVICE_UNAVAILABLE, "not ready"),
    }
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    let (ok, body) = state.health.ready().await;
    let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, axum::Json(body))
}

async fn metrics_text(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        state.metrics.encode(),
    )
}

/// The accepted connections of `listener` with `TCP_NODELAY` set, for servers that take an
/// incoming stream (tonic's `serve_with_incoming`, which does not apply its own `tcp_nodelay`
/// to streams it did not accept). Without it, Nagle holds a response's second small write
/// (gRPC sends headers, body and trailers apart) until the peer's delayed ACK: ~40 ms per call
/// on Linux loopback.
pub fn no_delay(
    listener: tokio::net::TcpListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use futures::StreamExt;
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|tcp| {
            let _ = tcp.set_nodelay(true);
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve_http;
    use tokio_util::sync::CancellationToken;

    struct Fixed(&'static str, Option<&'static str>, Duration);

    #[async_trait::async_trait]
    impl HealthCheck for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        async fn check(&self) -> Result<(), String> {
            tokio::time::sleep(self.2).await;
            self.1.map_or(Ok(()), |e| Err(e.to_owned()))
        }
    }

    #[tokio::test]
    async fn readyz_names_the_failing_dependency() {
        let health = Health::default();
        health.add(Fixed("store", None, Duration::ZERO));
        health.add(Fixed("bus", Some("connection refused"), Duration::ZERO));
        health.add(Fixed("blob", None, Duration::from_secs(5)));
        let stop = CancellationToken::new();
        let (addr, _task) = serve_http(
            "127.0.0.1:0".parse().unwrap(),
            admin_router(health.clone(), Metrics::default()),
            stop.clone(),
        )
        .await
        .unwrap();

        let response = reqwest::get(format!("http://{addr}/readyz")).await.unwrap();
        assert_eq!(response.status(), 503);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["store"], "ok");
        assert_eq!(body["bus"], "error: connection refused");
        assert!(body["blob"].as_str().unwrap().contains("no answer within"), "{body}");

        let healthz = reqwest::get(format!("http://{addr}/healthz")).await.unwrap();
        assert_eq!(healthz.status(), 200);
        let metrics = reqwest::get(format!("http://{addr}/metrics")).await.unwrap();
        assert_eq!(metrics.status(), 200);
        stop.cancel();
    }

    #[tokio::test]
    async fn draining_fails_readiness_even_when_dependencies_are_fine() {
        let health = Health::default();
        health.add(Fixed("store", None, Duration::ZERO));
        assert!(health.ready().await.0);
        health.set_draining();
        let (ok, body) = health.ready().await;
        assert!(!ok);
        assert_eq!(body["draining"], "shutting down");
    }
}
