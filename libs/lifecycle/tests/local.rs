//! A listener on this host's own socket (`serve_http_local`): an abstract Unix socket that
//! serves the same routes with the same limits to processes of the server's own user, whose
//! connections count with the TCP listener's, and that closes a connection of any other user
//! before reading a byte of it.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use ramen_lifecycle::{Limits, OpenConnections, poll_until, serve_http_local};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// Serves `/peer` (the peer address handlers see) on a fresh abstract name.
async fn start() -> (String, OpenConnections, CancellationToken) {
    let router = Router::new().route(
        "/peer",
        get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }),
    );
    let name = format!("ramen-test/{}/{}", std::process::id(), rand_suffix());
    let open = OpenConnections::new(8);
    let stop = CancellationToken::new();
    serve_http_local(&name, router, stop.clone(), Limits::default(), &open).await.unwrap();
    (name, open, stop)
}

/// Distinct per call within the process (the tests of one binary run in parallel).
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

const REQUEST: &[u8] = b"GET /peer HTTP/1.1\r\nhost: local\r\nconnection: close\r\n\r\n";

#[tokio::test]
async fn a_process_of_the_same_user_is_served_as_a_peer_of_this_host() {
    let (name, open, stop) = start().await;
    let mut stream = UnixStream::connect(format!("\0{name}")).await.unwrap();
    // Counted with the TCP listener's connections (a draining node waits for both).
    assert!(poll_until(Duration::from_secs(10), || open.count() == 1).await);
    stream.write_all(REQUEST).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("\r\n\r\n127.0.0.1:0"), "{answer}");
    stop.cancel();
}

#[tokio::test]
async fn a_name_already_bound_is_refused_with_the_name() {
    let (name, open, _stop) = start().await;
    let router = Router::new().route("/", get(|| async { "second" }));
    let err = serve_http_local(&name, router, CancellationToken::new(), Limits::default(), &open)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(err.to_string().contains(&format!("cannot listen on @{name}")), "{err}");
}

/// Another user of the host (here `nobody`, from a child that drops root's uid) is closed
/// at once: it gets no answer, however it asks. Needs root to run a child as another user,
/// as CI does.
#[tokio::test]
async fn a_process_of_another_user_is_closed_unanswered() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test starts a child as another user, which takes root (CI runs as root)"
    );
    let (name, _open, stop) = start().await;
    // What the child read back before the server closed the connection, as hex (empty: nothing).
    let script = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect("\0" + sys.argv[1])
got = b""
try:
    s.sendall(b"GET /peer HTTP/1.1\r\nhost: local\r\nconnection: close\r\n\r\n")
    while chunk := s.recv(4096):
        got += chunk
except (BrokenPipeError, ConnectionResetError):
    pass  # closed under it: what the server does to another user
print("answer:" + got.hex())
"#;
    let child = tokio::process::Command::from({
        let mut command = std::process::Command::new("python3");
        command.arg("-c").arg(script).arg(&name).uid(65534).gid(65534);
        command
    })
    .output();
    let output = tokio::time::timeout(Duration::from_secs(30), child).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout} {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.trim(), "answer:", "another user's request was answered");
    stop.cancel();
}
