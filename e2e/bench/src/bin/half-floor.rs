//! `half-floor`: hyper serves the client, the worker leg is bytes (docs/benchmarks.md,
//! "Thirteenth round"). Takes `edge-static`'s arguments. Each request's head is written to the
//! worker from hyper's parsed request (path rewritten to `/mcp`), inline in the request's own
//! task over the client connection's one worker connection; the answer is read with httparse
//! and handed back to hyper whole (`Content-Length` answers only). The floor of an edge that
//! keeps hyper on the client's side and drops hyper's client toward the worker.

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1 as server;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
// The serving binaries' allocator, as edge-static has it.
use ramen_alloc as _;
use ramen_bench::{MAX_HEADERS, content_length, fill, has_transfer_encoding, read_more};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

/// The client connection's one worker connection, with its read buffer and the bytes of the
/// request being written.
struct Worker {
    stream: TcpStream,
    buf: BytesMut,
    out: Vec<u8>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ramen_bench::serve_floor("half-floor", relay).await
}

/// Serves one client connection, forwarding over the worker connection opened for it.
async fn relay(stream: TcpStream, upstream: TcpStream) -> anyhow::Result<()> {
    let connection = Arc::new(Mutex::new(Worker {
        stream: upstream,
        buf: BytesMut::with_capacity(16 * 1024),
        out: Vec::with_capacity(16 * 1024),
    }));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let connection = connection.clone();
        async move { forward(&connection, request).await }
    });
    server::Builder::new().serve_connection(TokioIo::new(stream), service).await?;
    Ok(())
}

/// Writes `request` to the worker and reads its whole answer.
async fn forward(
    worker: &Mutex<Worker>,
    request: Request<Incoming>,
) -> anyhow::Result<Response<Full<Bytes>>> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut worker = worker.lock().await;
    let Worker { stream, buf, out } = &mut *worker;
    out.clear();
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.extend_from_slice(b" /mcp HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        if name == hyper::header::CONTENT_LENGTH {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&body);
    stream.write_all(out).await?;

    let (head_len, body_len, answer) = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head_len) = response.parse(buf)? {
            if has_transfer_encoding(response.headers) {
                anyhow::bail!("half-floor hands back Content-Length answers only");
            }
            let body_len = content_length(response.headers)?.unwrap_or(0);
            let mut answer = Response::builder().status(response.code.unwrap_or(502));
            for h in response.headers.iter() {
                if !h.name.eq_ignore_ascii_case("content-length") {
                    answer = answer.header(h.name, h.value);
                }
            }
            break (head_len, body_len, answer);
        }
        read_more(stream, buf).await?;
    };
    fill(stream, buf, head_len + body_len).await?;
    buf.advance(head_len);
    Ok(answer.body(Full::new(buf.split_to(body_len).freeze()))?)
}
