//! `proxy-floor`: the least an HTTP/1 proxy built on hyper can do, for comparing the edge
//! against (docs/benchmarks.md, "Eighth round"). It takes `edge-static`'s arguments and
//! forwards every request of a client connection to the one worker, over one worker connection
//! of its own, rewriting the path to `/mcp` and nothing else: no routing, no keys, no sessions,
//! no header filtering, bodies streamed through unread. Not a product: the figure it gives is
//! what hyper's parse and write on both legs and tokio's scheduling cost before any of the
//! edge's own work.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::client::conn::http1 as client;
use hyper::server::conn::http1 as server;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
// The serving binaries' allocator, as edge-static has it.
use ramen_alloc as _;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ramen_bench::serve_floor("proxy-floor", relay).await
}

/// Serves one client connection, forwarding over the worker connection opened for it.
async fn relay(stream: TcpStream, upstream: TcpStream) -> anyhow::Result<()> {
    let (sender, connection) = client::handshake(TokioIo::new(upstream)).await?;
    tokio::spawn(connection);
    let sender = Arc::new(Mutex::new(sender));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let sender = sender.clone();
        async move {
            let (mut parts, body) = request.into_parts();
            parts.uri = Uri::from_static("/mcp");
            let mut sender = sender.lock().await;
            sender.ready().await?;
            sender.send_request(Request::from_parts(parts, body)).await
        }
    });
    server::Builder::new().serve_connection(TokioIo::new(stream), service).await?;
    Ok(())
}
