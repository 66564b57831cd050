//! Hostile HTTP against the server every ramen listener runs (`serve_http`), over raw TCP:
//! slowloris headers and bodies, oversized headers and bodies, smuggling attempts, and a flood
//! of idle connections. Each gets its answer (or its connection closed) within a bounded time,
//! and an ordinary client is served all along. The limits are shortened here (`Limits`); the
//! shipped ones are in `docs/reliability.md`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use axum::routing::{get, post};
use ramen_lifecycle::{Limits, read_body, serve_http_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const LIMIT: usize = 1024;

fn limits() -> Limits {
    Limits {
        header_read_timeout: Duration::from_secs(1),
        body_read_timeout: Duration::from_secs(1),
        max_connections: 64,
    }
}

async fn start(limits: Limits) -> (SocketAddr, CancellationToken) {
    let router = Router::new().route("/ok", get(|| async { "ok" })).route(
        "/echo",
        post(|body: Body| async move {
            match read_body(body, LIMIT).await {
                Ok(bytes) => (StatusCode::OK, format!("{} bytes", bytes.len())),
                Err(refused) => (refused.status, refused.message),
            }
        }),
    );
    let stop = CancellationToken::new();
    let (addr, _task, _) =
        serve_http_with("127.0.0.1:0".parse().unwrap(), router, stop.clone(), limits)
            .await
            .unwrap();
    (addr, stop)
}

/// What the server sent before closing (or within `wait`).
async fn answer(stream: &mut TcpStream, wait: Duration) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn ordinary_client_is_served(addr: SocketAddr) {
    let http =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap();
    let answer = http.get(format!("http://{addr}/ok")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
}

/// Whether the server has closed the connection (a read returns end of stream or an error).
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut byte = [0u8; 1];
    matches!(tokio::time::timeout(wait, stream.read(&mut byte)).await, Ok(Ok(0) | Err(_)))
}

#[tokio::test]
async fn trickled_headers_are_cut_off() {
    let (addr, _stop) = start(limits()).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let trickle = async {
        for _ in 0..40 {
            if slow.write_all(b"X-A: b\r\n").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    trickle.await;
    // 4 s of trickling against a 1 s header timeout: the server has let go.
    assert!(
        closed_within(&mut slow, Duration::from_secs(2)).await,
        "a trickling client is cut off"
    );
    ordinary_client_is_served(addr).await;
}

#[tokio::test]
async fn a_trickled_body_is_answered_408() {
    let (addr, _stop) = start(limits()).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n").await.unwrap();
    for _ in 0..5 {
        // Each byte arrives within any per-read timeout; the whole body never does in time.
        if slow.write_all(b"a").await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let text = answer(&mut slow, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request body not received within 1s"), "{text}");
    ordinary_client_is_served(addr).await;
}

#[tokio::test]
async fn oversized_headers_and_bodies_are_refused() {
    let (addr, _stop) = start(limits()).await;
    let mut big = TcpStream::connect(addr).await.unwrap();
    let header =
        format!("GET /ok HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(600 * 1024));
    let _ = big.write_all(header.as_bytes()).await;
    let text = answer(&mut big, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{}", &text[..text.len().min(200)]);

    let mut many = TcpStream::connect(addr).await.unwrap();
    let headers: String = (0..200).map(|i| format!("X-{i}: v\r\n")).collect();
    let _ =
        many.write_all(format!("GET /ok HTTP/1.1\r\nHost: x\r\n{headers}\r\n").as_bytes()).await;
    let text = answer(&mut many, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{text}");

    let mut huge = TcpStream::connect(addr).await.unwrap();
    let head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n";
    huge.write_all(head.as_bytes()).await.unwrap();
    let _ = huge.write_all(&vec![b'a'; 64 * 1024]).await;
    let text = answer(&mut huge, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("above the 1024-byte limit"), "{text}");
    ordinary_client_is_served(addr).await;
}

#[tokio::test]
async fn smuggling_attempts_are_refused_or_read_one_way() {
    let (addr, _stop) = start(limits()).await;
    // Both framings: hyper reads Transfer-Encoding alone (RFC 9112 §6.3) and drops the
    // Content-Length, so this server never reads the bytes after the chunked body as part of
    // it, and closes the connection after answering (§6.1): the request pipelined behind it
    // is never read.
    let both = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(both.as_bytes()).await.unwrap();
    let text = answer(&mut stream, Duration::from_secs(3)).await;
    assert!(
        text.contains("0 bytes") && !text.contains("4 bytes"),
        "read by Transfer-Encoding only: {text}"
    );
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "closed after one answer: {text}");
    let refused = [
        // Two different lengths.
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd",
        // An encoding that is not chunked last.
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
        // Transfer-Encoding in HTTP/1.0.
        "POST /echo HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ];
    for attempt in refused {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(attempt.as_bytes()).await.unwrap();
        let text = answer(&mut stream, Duration::from_secs(3)).await;
        let first = text.lines().next().unwrap_or_default();
        assert!(first.starts_with("HTTP/1.1 400"), "{attempt:?} answered {first:?}");
        assert_eq!(text.matches("HTTP/1.1").count(), 1, "one answer, nothing smuggled: {text}");
    }
    ordinary_client_is_served(addr).await;
}

#[tokio::test]
async fn a_flood_of_idle_connections_is_capped_and_others_are_served_after_it() {
    let (addr, _stop) = start(Limits { max_connections: 8, ..limits() }).await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // Past the cap a new connection is closed at once.
    let mut over = TcpStream::connect(addr).await.unwrap();
    let _ = over.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(closed_within(&mut over, Duration::from_secs(2)).await, "over the cap: closed");
    // The idle ones send no header: they are dropped after the header timeout, and the
    // listener serves again.
    let http =
        reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match http.get(format!("http://{addr}/ok")).send().await {
            Ok(answer) if answer.status() == 200 => break,
            other => assert!(tokio::time::Instant::now() < deadline, "still refused: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(idle);
}
