//! The HTTP server every ramen listener runs (node MCP and admin ports, the api-gateway's API,
//! console and MCP edge), with what a public listener needs against slow and hostile clients:
//!
//! - **Headers** must arrive within [`HEADER_READ_TIMEOUT`] of the connection (or of the
//!   previous request on a kept-alive one), or the connection is closed: a slowloris client
//!   trickling header bytes holds nothing for long. (`axum::serve` sets no timer, so hyper's
//!   header timeout never fired.)
//! - **Bodies** must arrive within [`BODY_READ_TIMEOUT`] of the first time the handler waits
//!   for them, however slowly they trickle; [`read_body`] answers 408 past it, 413 above a
//!   size limit.
//! - **Connections** are capped at [`MAX_CONNECTIONS`] per listener; past the cap a new one is
//!   closed at once instead of exhausting file descriptors for every other client.
//! - Header size and count are hyper's limits (400 KiB of buffer, 100 headers): above them the
//!   answer is 431. Two different `Content-Length`s, a `Transfer-Encoding` not ending in
//!   `chunked` or in HTTP/1.0, and bare LFs are refused by hyper's parser (400); with both
//!   `Content-Length` and `Transfer-Encoding` the latter alone frames the body (RFC 9112
//!   §6.3), so no request is read two ways here.
//! - `TCP_NODELAY` on every connection (Nagle would hold a response's second small write until
//!   the client's delayed ACK) and the peer address as axum's `ConnectInfo<SocketAddr>`.
//! - A timer kept armed beside the listener's ([`crate::timer_anchor`]), so that arming a
//!   request's header timeout does not wake tokio's I/O driver with a system call.
//! - A listener on this host's own socket ([`serve_http_local`]): an abstract Unix socket that
//!   only processes of the same user may use (checked on every connection with
//!   `SO_PEERCRED`), so that a proxy on the same host (the edge in front of a local zone's
//!   nodes) saves the kernel's TCP work on each request.
//! - Graceful stop: on `stop`, no new connection is accepted, in-flight requests finish and
//!   idle keep-alive connections are closed. A server whose clients keep connections alive
//!   (the node, behind the edge) waits for [`OpenConnections`] to reach zero before it stops:
//!   closing an idle connection just as a client sends on it loses that request.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::poll_again::PollAgain;
use crate::routes::Routes;

/// How long a client may take to send a request's headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body, from the handler's first wait for it.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Open connections one listener holds at most.
pub const MAX_CONNECTIONS: usize = 16_384;

/// The limits a listener enforces; [`Limits::default`] is what every ramen listener uses.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// Binds `addr` (failing fast with the address in the error) and serves `routes` (an axum
/// `Router`, or one with a fast route ahead of it) until `stop` is cancelled. Returns the bound
/// address (useful with port 0) and the server task.
pub async fn serve_http(
    addr: SocketAddr,
    routes: impl Into<Routes>,
    stop: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let (bound, handle, _) = serve_http_with(addr, routes, stop, Limits::default()).await?;
    Ok((bound, handle))
}

/// [`serve_http`] with the given limits (tests of the limits themselves), also returning the
/// listener's [`OpenConnections`] (the node waits on them when it stops).
pub async fn serve_http_with(
    addr: SocketAddr,
    routes: impl Into<Routes>,
    stop: CancellationToken,
    limits: Limits,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>, OpenConnections)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let open = OpenConnections::new(limits.max_connections);
    let handle = serve(Listener::Tcp(listener), routes.into(), stop, limits, &open);
    Ok((bound, handle, open))
}

/// Serves `routes` on the abstract Unix socket `name` (Linux; written `@name` by `ss` and in
/// ramen's configs) until `stop` is cancelled, with the limits of `limits` and the connection
/// count of `open` (shared with the TCP listener serving the same routes, so that a server
/// waiting for its connections to close counts both).
///
/// Only a process of this one's effective user may connect: any other is closed at once, so
/// another user of the host cannot speak to the server as its own proxy would. (An abstract
/// name has no file permissions; confining a process's own code away from it is Landlock's
/// abstract-socket scope, `ramen_sandbox`.) A connection's peer address, as handlers see it
/// in `ConnectInfo`, is `127.0.0.1:0`: a process of this host, which is what a loopback TCP
/// peer is too, so address rules read it the same way.
pub async fn serve_http_local(
    name: &str,
    routes: impl Into<Routes>,
    stop: CancellationToken,
    limits: Limits,
    open: &OpenConnections,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = bind_local(name)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on @{name}: {e}")))?;
    Ok(serve(Listener::Local(listener), routes.into(), stop, limits, open))
}

/// Binds the abstract socket `name`.
fn bind_local(name: &str) -> std::io::Result<tokio::net::UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    let listener = std::os::unix::net::UnixListener::bind_addr(&address)?;
    listener.set_nonblocking(true)?;
    tokio::net::UnixListener::from_std(listener)
}

fn serve(
    listener: Listener,
    routes: Routes,
    stop: CancellationToken,
    limits: Limits,
    open: &OpenConnections,
) -> tokio::task::JoinHandle<()> {
    // So that arming the header timeout for a kept-alive connection's next request is no
    // system call (`timer_anchor`).
    tokio::spawn(crate::timer_anchor::keep_a_timer_armed(stop.clone()));
    tokio::spawn(accept_loop(listener, routes, stop, limits, open.clone()))
}

/// How many connections a listener holds open (each holds one of its slots).
#[derive(Clone, Debug)]
pub struct OpenConnections {
    slots: Arc<Semaphore>,
    max: usize,
}

impl OpenConnections {
    /// Room for `max` connections.
    pub fn new(max: usize) -> Self {
        Self { slots: Arc::new(Semaphore::new(max)), max }
    }

    pub fn count(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// Waits until no connection is open, at most `bound`; false when some still were.
    pub async fn wait_closed(&self, bound: Duration) -> bool {
        poll_until(bound, || self.count() == 0).await
    }
}

/// Checks `done` every 20 ms until it holds or `bound` has passed; false when it never held.
/// For counts with no notification of their own (connections, calls in flight) at stop time.
pub async fn poll_until(bound: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// Where a server takes its connections from.
enum Listener {
    Tcp(tokio::net::TcpListener),
    Local(tokio::net::UnixListener),
}

/// The peer address a connection on this host's own socket is given.
const LOCAL_PEER: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// An accepted connection, ready to serve.
enum Accepted {
    Tcp(tokio::net::TcpStream, SocketAddr),
    Local(crate::LocalStream),
}

impl Listener {
    /// The next connection to serve. A local peer of another user is closed here, and `None`
    /// returned for it.
    async fn accept(&self) -> std::io::Result<Option<Accepted>> {
        match self {
            Self::Tcp(listener) => {
                let (tcp, peer) = listener.accept().await?;
                // Nagle would hold a response's second small write until the client's
                // delayed ACK.
                let _ = tcp.set_nodelay(true);
                Ok(Some(Accepted::Tcp(tcp, peer)))
            }
            Self::Local(listener) => {
                let (stream, _) = listener.accept().await?;
                match crate::LocalStream::of_own_user(stream) {
                    Ok(stream) => Ok(Some(Accepted::Local(stream))),
                    Err(err) => {
                        tracing::warn!(%err, "local connection refused");
                        Ok(None)
                    }
                }
            }
        }
    }
}

async fn accept_loop(
    listener: Listener,
    routes: Routes,
    stop: CancellationToken,
    limits: Limits,
    open: OpenConnections,
) {
    let max_connections = limits.max_connections;
    let deadline = limits.body_read_timeout;
    // HTTP/1.1 only: no client of these listeners speaks h2c (gRPC has listeners of its own),
    // and the auto-detecting builder waits for a first byte with no timeout at all.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let graceful = GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(Some(accepted)) => accepted,
                Ok(None) => continue,
                Err(err) => {
                    // EMFILE and the like: back off a moment instead of spinning.
                    tracing::warn!(%err, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let peer = match &accepted {
            Accepted::Tcp(_, peer) => *peer,
            Accepted::Local(_) => LOCAL_PEER,
        };
        let Ok(slot) = open.slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max_connections, "connection refused: the listener is at its cap");
            continue;
        };
        let routes = routes.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            // The body's read deadline wraps hyper's body where the request is made: one
            // boxed body per request and no middleware layer, whose boxed future and second
            // body box cost 2–5k instructions a request (e2e/run-cost-gate).
            let mut request = request.map(|body| Body::new(Deadline::new(body, deadline)));
            request.extensions_mut().insert(ConnectInfo(peer));
            routes.clone().oneshot(request)
        });
        // Polled again when it wakes itself (every request with a body does): see PollAgain.
        match accepted {
            Accepted::Tcp(tcp, _) => {
                let connection = builder.serve_connection(TokioIo::new(tcp), service);
                spawn_connection(PollAgain::new(graceful.watch(connection)), peer, slot);
            }
            Accepted::Local(stream) => {
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                spawn_connection(PollAgain::new(graceful.watch(connection)), peer, slot);
            }
        }
    }
    drop(listener);
    graceful.shutdown().await;
}

fn spawn_connection<E: std::fmt::Display>(
    connection: impl std::future::Future<Output = Result<(), E>> + Send + 'static,
    peer: SocketAddr,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!(%peer, %err, "connection ended with an error");
        }
        drop(slot);
    });
}

/// Why a request body could not be read, as the answer to give.
#[derive(Debug)]
pub struct BodyRefused {
    pub status: StatusCode,
    pub message: String,
}

/// Reads a whole request body of at most `limit` bytes: 413 above it, 408 when the client did
/// not send it within the listener's body timeout, 400 when the connection broke.
///
/// A body that came in one piece (most: they arrive with their headers) is returned as that
/// piece, with no copy and no list of chunks to gather it from (`axum::body::to_bytes` cost
/// ~700 instructions more a request, e2e/run-cost-gate).
pub async fn read_body(mut body: Body, limit: usize) -> Result<Bytes, BodyRefused> {
    use http_body_util::BodyExt;

    let too_large = || BodyRefused {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        message: format!("request body above the {limit}-byte limit"),
    };
    // A declared length over the limit is refused before anything is read.
    if usize::try_from(hyper::body::Body::size_hint(&body).lower()).map_or(true, |n| n > limit) {
        return Err(too_large());
    }
    let mut whole = Bytes::new();
    let mut gathered: Option<bytes::BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| unreadable(&err))?;
        let Ok(data) = frame.into_data() else { continue }; // trailers: not part of the body
        let length = whole.len() + gathered.as_ref().map_or(0, |g| g.len()) + data.len();
        if length > limit {
            return Err(too_large());
        }
        match &mut gathered {
            Some(gathered) => gathered.extend_from_slice(&data),
            None if whole.is_empty() => whole = data,
            None => {
                let mut more = bytes::BytesMut::with_capacity(length);
                more.extend_from_slice(&std::mem::take(&mut whole));
                more.extend_from_slice(&data);
                gathered = Some(more);
            }
        }
    }
    Ok(gathered.map_or(whole, bytes::BytesMut::freeze))
}

/// Why a body could not be read: 408 when its deadline passed, else 400.
fn unreadable(err: &axum::Error) -> BodyRefused {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if let Some(timeout) = cause.downcast_ref::<BodyTimeout>() {
            let message = format!("request body not received within {:?}", timeout.0);
            return BodyRefused { status: StatusCode::REQUEST_TIMEOUT, message };
        }
        source = cause.source();
    }
    BodyRefused {
        status: StatusCode::BAD_REQUEST,
        message: format!("reading the request body: {err}"),
    }
}

/// The body did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("request body not received within {0:?}")]
pub struct BodyTimeout(Duration);

pin_project_lite::pin_project! {
    /// A request body that fails with [`BodyTimeout`] once `limit` has passed since it first
    /// had to wait for the client (a handler that never reads the body is not timed, nor one
    /// whose body had all arrived).
    struct Deadline<B> {
        #[pin]
        inner: B,
        limit: Duration,
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<B> Deadline<B> {
    fn new(inner: B, limit: Duration) -> Self {
        Self { inner, limit, sleep: None }
    }
}

impl<B> hyper::body::Body for Deadline<B>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        // Armed at the first wait for the client, not at the first read: a body that came
        // with its headers (most do) costs no timer (a clock read, a boxed `Sleep` and its
        // place in the wheel: ~1.2k instructions a request), and no time before that wait
        // was the client's.
        let limit = *this.limit;
        let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout(limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(chunks: &[&'static str]) -> Body {
        let chunks =
            chunks.iter().map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c.as_bytes())));
        Body::from_stream(futures::stream::iter(chunks.collect::<Vec<_>>()))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_one_piece_or_many() {
        assert_eq!(read_body(Body::from("one piece"), 9).await.unwrap(), "one piece");
        assert_eq!(read_body(chunked(&["a", "", "bc", "def"]), 6).await.unwrap(), "abcdef");
        assert_eq!(read_body(Body::empty(), 0).await.unwrap(), "");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_413_whether_declared_or_streamed() {
        let declared = read_body(Body::from("ten bytes!"), 9).await.unwrap_err();
        assert_eq!(declared.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(declared.message, "request body above the 9-byte limit");
        let streamed = read_body(chunked(&["abcd", "efgh", "ij"]), 9).await.unwrap_err();
        assert_eq!(streamed.status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn a_broken_body_is_400_with_its_cause() {
        let broken = Body::from_stream(futures::stream::iter([
            Ok(Bytes::from_static(b"a")),
            Err(std::io::Error::other("connection reset")),
        ]));
        let refused = read_body(broken, 100).await.unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(refused.message.contains("connection reset"), "{}", refused.message);
    }
}
