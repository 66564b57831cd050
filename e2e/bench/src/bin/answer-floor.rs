//! `answer-floor`: one loopback HTTP request, served and nothing else, as the yardstick issue 32
//! set its microsecond targets against ("a loopback HTTP request costs about 6.5 µs of CPU
//! here"; docs/benchmarks.md, "Nineteenth round"). It takes `edge-static`'s arguments (the
//! worker is not used) and answers every request on hyper's HTTP/1 server, body read, with
//! a fixed JSON-RPC answer that `mcp-load` accepts: `{}` for a `ping`, a result of 42 for
//! anything else (an `initialize` finds its `protocolVersion` there too). Not a product: no
//! MCP, no keys, no sessions; the figure it gives is what tokio and hyper charge for one HTTP
//! request on this machine, so that the node's and the edge's µs can be read against the
//! machine they were measured on.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1 as server;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
// The serving binaries' allocator, as edge-static has it.
use ramen_alloc as _;

const PING: &[u8] = br#""method":"ping""#;
const PONG: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","content":[{"type":"text","text":"42"}],"structuredContent":{"result":42},"isError":false}}"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = <ramen_bench::ProxyArgs as clap::Parser>::parse();
    ramen_bench::serve_each("answer-floor", args.listen, |client| async move {
        let service = hyper::service::service_fn(answer);
        server::Builder::new().serve_connection(TokioIo::new(client), service).await?;
        Ok(())
    })
    .await
}

async fn answer(request: Request<Incoming>) -> anyhow::Result<Response<Full<Bytes>>> {
    let body = request.into_body().collect().await?.to_bytes();
    let ping = body.windows(PING.len()).any(|w| w == PING);
    let mut response =
        Response::new(Full::new(Bytes::from_static(if ping { PONG } else { ANSWER })));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert("mcp-session-id", HeaderValue::from_static("answer-floor"));
    Ok(response)
}
