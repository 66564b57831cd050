//! Serving gRPC the one way every service does: each call's caller ticket verified, as meant
//! for this service, before any handler runs.

use std::net::SocketAddr;
use std::sync::Arc;

use ramen_access::{AudienceKeys, TICKET_HEADER, TicketKeys};
use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

/// Serves gRPC `routes` on `addr` until `stop`; returns the bound address and the task.
/// Every call must carry a caller ticket signed for `audience` (`ramen_access::audience`: the
/// service's own name) under `tickets` — UNAUTHENTICATED otherwise, before any handler runs,
/// naming the audience the ticket was meant for when it was another's. The verified
/// [`Caller`](ramen_access::Caller) is in the request's extensions for the handler
/// (`Caller::from_request`). Each request's span is parented to the caller's `traceparent`
/// metadata.
pub async fn serve_grpc(
    addr: SocketAddr,
    routes: Routes,
    stop: CancellationToken,
    tickets: &TicketKeys,
    audience: &str,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let incoming = ramen_lifecycle::no_delay(listener);
    let keys = Arc::new(tickets.audience(audience));
    let verify = move |request: tonic::Request<()>| verify_caller(&keys, request);
    let server = tonic::transport::Server::builder()
        .trace_fn(|request| {
            let span = tracing::info_span!("grpc", path = %request.uri().path());
            ramen_telemetry::extract_http(&span, request.headers());
            span
        })
        .layer(tonic::service::InterceptorLayer::new(verify))
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, stop.cancelled_owned());
    let handle = tokio::spawn(async move {
        if let Err(err) = server.await {
            tracing::error!(%err, %bound, "gRPC server failed");
        }
    });
    Ok((bound, handle))
}

fn verify_caller(
    keys: &AudienceKeys,
    mut request: tonic::Request<()>,
) -> Result<tonic::Request<()>, tonic::Status> {
    let ticket = request.metadata().get(TICKET_HEADER).and_then(|v| v.to_str().ok());
    let caller = keys
        .verify_header(ticket, ramen_access::ticket::now_ms())
        .map_err(|e| tonic::Status::unauthenticated(e.to_string()))?;
    request.extensions_mut().insert(caller);
    Ok(request)
}
