//! What a listener serves: an axum [`Router`], with an optional [`FastRoute`] ahead of it for
//! the one path that carries a server's traffic (the node's and the edge's MCP endpoints).
//!
//! Why: axum's routing, extractors and per-route layers cost ~5k instructions a request
//! (`e2e/run-cost-gate`: 13 % of a node's `ping`, 8 % of a proxied `tools/call`), for
//! matching one path and one of three methods. A fast route matches those itself and hands
//! every other request, untouched, to the router, which keeps answering the rest (other
//! methods, 404s, health) exactly as before.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use axum::routing::future::RouteFuture;

/// The answer a fast route gives: one boxed future a request (axum boxes at least one too).
pub type Answer = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Requests a listener answers before its router sees them.
pub trait FastRoute: Send + Sync + 'static {
    /// The answer to `request` when it is this route's, else the request back, untouched, for
    /// the router.
    fn route(&self, request: Request<Body>) -> Result<Answer, Request<Body>>;
}

/// A [`Router`] with an optional [`FastRoute`] ahead of it: what `serve_http` serves.
#[derive(Clone)]
pub struct Routes {
    fast: Option<Arc<dyn FastRoute>>,
    router: Router,
}

impl Routes {
    /// `router`, with `fast` answering the requests it takes first.
    pub fn with_fast_route(router: Router, fast: impl FastRoute) -> Self {
        Self { fast: Some(Arc::new(fast)), router }
    }
}

impl From<Router> for Routes {
    fn from(router: Router) -> Self {
        Self { fast: None, router }
    }
}

impl tower::Service<Request<Body>> for Routes {
    type Response = Response;
    type Error = Infallible;
    type Future = Routed;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // A router is always ready, and so is a fast route.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let request = match &self.fast {
            Some(fast) => match fast.route(request) {
                Ok(answer) => return Routed::Fast { answer },
                Err(request) => request,
            },
            None => request,
        };
        Routed::Router { future: tower::Service::call(&mut self.router, request) }
    }
}

pin_project_lite::pin_project! {
    /// The answer of a [`Routes`], from whichever of the two took the request.
    #[project = RoutedProjection]
    pub enum Routed {
        Fast { answer: Answer },
        Router { #[pin] future: RouteFuture<Infallible> },
    }
}

impl Future for Routed {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            RoutedProjection::Fast { answer } => answer.as_mut().poll(cx).map(Ok),
            RoutedProjection::Router { future } => future.poll(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    /// Takes GET `/fast` only.
    struct Fast;

    impl FastRoute for Fast {
        fn route(&self, request: Request<Body>) -> Result<Answer, Request<Body>> {
            if request.uri().path() != "/fast" || request.method() != axum::http::Method::GET {
                return Err(request);
            }
            Ok(Box::pin(async { Response::new(Body::from("fast")) }))
        }
    }

    async fn answer(routes: Routes, method: &str, path: &str) -> (StatusCode, String) {
        let request = Request::builder().method(method).uri(path).body(Body::empty()).unwrap();
        let response = routes.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_fast_route_answers_what_it_takes_and_the_router_the_rest() {
        let router = Router::new()
            .route("/fast", get(|| async { "router" }).post(|| async { "router post" }))
            .route("/other", get(|| async { "other" }));
        let routes = Routes::with_fast_route(router.clone(), Fast);
        assert_eq!(answer(routes.clone(), "GET", "/fast").await, (StatusCode::OK, "fast".into()));
        // Declined requests reach the router whole: its routes, methods and 404s.
        assert_eq!(
            answer(routes.clone(), "POST", "/fast").await,
            (StatusCode::OK, "router post".into())
        );
        assert_eq!(answer(routes.clone(), "GET", "/other").await, (StatusCode::OK, "other".into()));
        assert_eq!(answer(routes.clone(), "GET", "/none").await.0, StatusCode::NOT_FOUND);
        // Without a fast route the router answers everything.
        assert_eq!(
            answer(Routes::from(router), "GET", "/fast").await,
            (StatusCode::OK, "router".into())
        );
    }
}
