//! `byte-floor`: an HTTP/1 proxy without hyper, for comparing the edge and `proxy-floor`
//! against (docs/benchmarks.md, "Thirteenth round"). It takes `edge-static`'s arguments. Each
//! request head is parsed once (httparse, hyper's own parser) and its bytes forwarded to the
//! worker with only the path rewritten to `/mcp`; the answer's head is parsed once and its bytes
//! copied back, its body found by `Content-Length` or by chunk sizes. One worker connection per
//! client connection, driven in the client connection's own task: no `Request` built, no header
//! map, no second task, no channel. Not a product (no limits, no timeouts, no request bodies but
//! `Content-Length` ones, no smuggling rules): the figure it gives is the least a proxy that
//! forwards bytes instead of rebuilding requests costs on this machine.

use bytes::{Buf, BytesMut};
use ramen_bench::{MAX_HEADERS, content_length, fill, has_transfer_encoding, read_more};
// The serving binaries' allocator, as edge-static has it.
use ramen_alloc as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    ramen_bench::serve_floor("byte-floor", relay).await
}

/// Serves one client connection, forwarding over the worker connection opened for it.
async fn relay(mut client: TcpStream, mut upstream: TcpStream) -> anyhow::Result<()> {
    let mut from_client = BytesMut::with_capacity(16 * 1024);
    let mut from_worker = BytesMut::with_capacity(16 * 1024);
    let mut forwarded = Vec::with_capacity(16 * 1024);
    loop {
        let Some(request) = request_head(&mut client, &mut from_client).await? else {
            return Ok(());
        };
        let whole = request.head_len + request.body_len;
        fill(&mut client, &mut from_client, whole).await?;
        forwarded.clear();
        forwarded.extend_from_slice(&from_client[..request.path.start]);
        forwarded.extend_from_slice(b"/mcp");
        forwarded.extend_from_slice(&from_client[request.path.end..whole]);
        upstream.write_all(&forwarded).await?;
        from_client.advance(whole);

        let answer = answer_len(&mut upstream, &mut from_worker).await?;
        client.write_all(&from_worker[..answer]).await?;
        from_worker.advance(answer);
    }
}

struct RequestHead {
    /// Where the path is in the buffer.
    path: std::ops::Range<usize>,
    head_len: usize,
    body_len: usize,
}

/// Reads until `buf` holds a whole request head; `None` when the client closed between requests.
async fn request_head(
    client: &mut TcpStream,
    buf: &mut BytesMut,
) -> anyhow::Result<Option<RequestHead>> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        if let httparse::Status::Complete(head_len) = request.parse(buf)? {
            let path = request.path.ok_or_else(|| anyhow::anyhow!("request without a path"))?;
            let start = path.as_ptr() as usize - buf.as_ptr() as usize;
            if has_transfer_encoding(request.headers) {
                anyhow::bail!("byte-floor forwards Content-Length bodies only");
            }
            let body_len = content_length(request.headers)?.unwrap_or(0);
            return Ok(Some(RequestHead { path: start..start + path.len(), head_len, body_len }));
        }
        if client.read_buf(buf).await? == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            anyhow::bail!("client closed inside a request head");
        }
    }
}

/// Reads the worker's answer into `buf` until it is whole; its length in bytes.
async fn answer_len(upstream: &mut TcpStream, buf: &mut BytesMut) -> anyhow::Result<usize> {
    let (head_len, body_len) = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head_len) = response.parse(buf)? {
            let chunked = response.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("transfer-encoding")
                    && h.value.eq_ignore_ascii_case(b"chunked")
            });
            break (
                head_len,
                if chunked { None } else { Some(content_length(response.headers)?.unwrap_or(0)) },
            );
        }
        read_more(upstream, buf).await?;
    };
    if let Some(body_len) = body_len {
        fill(upstream, buf, head_len + body_len).await?;
        return Ok(head_len + body_len);
    }
    // Chunked: walk the chunk sizes to the last (empty) chunk and the blank line after it.
    let mut at = head_len;
    loop {
        match httparse::parse_chunk_size(&buf[at..])
            .map_err(|_| anyhow::anyhow!("bad chunk size"))?
        {
            httparse::Status::Complete((size_len, size)) => {
                at += size_len + usize::try_from(size)? + 2;
                fill(upstream, buf, at).await?;
                if size == 0 {
                    return Ok(at);
                }
            }
            httparse::Status::Partial => read_more(upstream, buf).await?,
        }
    }
}
