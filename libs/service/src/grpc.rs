use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;
use tonic::service::Routes;

/// Serves gRPC `routes` on `addr` until `stop`; returns the bound address and the task.
/// Each request's span is parented to the caller's `traceparent` metadata.
pub async fn serve_grpc(
    addr: SocketAddr,
    routes: Routes,
    stop: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tonic::transport::Server::builder()
        .trace_fn(|request| {
            let span = tracing::info_span!("grpc", path = %request.uri().path());
            ramen_telemetry::extract_http(&span, request.headers());
            span
        })
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, stop.cancelled_owned());
    let handle = tokio::spawn(async move {
        if let Err(err) = server.await {
            tracing::error!(%err, %bound, "gRPC server failed");
        }
    });
    Ok((bound, handle))
}
