//! The edge's connections to the workers: HTTP/1.1, one request at a time on each, kept
//! idle for the next request to the same worker for [`IDLE_FOR`].
//!
//! A pool of our own rather than hyper-util's legacy client: that client hashes its
//! `(scheme, authority)` key byte by byte with SipHash three times a request, sets the `Host`
//! header from the URI and spawns a task per request to put the connection back, about 10k
//! instructions of the edge's ~71k per proxied call. This one keys by the worker's address
//! as the directory writes it and puts a connection back when its answer's body ends.
//!
//! A worker on the edge's own host (a local zone's) may also listen on an abstract Unix
//! socket ([`WorkerRoute::local`](crate::WorkerRoute)): each send and receive there costs the
//! kernel about half what one over loopback TCP does (docs/benchmarks.md, "Seventeenth
//! round"). New connections to it go there first, and over TCP when that fails.
//!
//! What it must keep from that client: a request sent on a kept connection that the worker
//! closed at that moment is given back by hyper unsent ([`SendRequest::try_send_request`]),
//! and goes on another connection; one that was (even partly) written is not sent again,
//! since the worker may have run it.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use ramen_lifecycle::LocalStream;
use tokio::net::{TcpStream, UnixStream};
use tokio::task::JoinHandle;

/// How long a connection to a worker is kept idle for reuse: none idle longer is used, and
/// the reaper closes it within twice that. The edge must close an idle connection before the
/// node does (the node's header timeout, 10 s, and the linger of a drained node, 3 s): a
/// request sent on a connection the node is closing at that moment is lost, and the edge
/// cannot tell whether it ran, so it cannot send it elsewhere.
pub(crate) const IDLE_FOR: Duration = Duration::from_secs(1);

type Sender = SendRequest<Full<Bytes>>;

/// Why a request did not get an answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// It never reached the worker (no connection, or the connection closed before a byte of
    /// the request was written): another worker may safely take it.
    Undelivered(String),
    /// The connection failed after the request (or part of it) went out: the worker may have
    /// run it.
    Broken(hyper::Error),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Undelivered(why) => write!(f, "not delivered: {why}"),
            Self::Broken(err) => write!(f, "connection failed mid-request: {err}"),
        }
    }
}

/// Connects to the abstract Unix socket `local` (`@name`), when a process of the edge's own
/// user listens there: a name another user bound (before the node, or after it stopped) is
/// never sent a request, with the MCP key it carries.
async fn connect_local(local: &str) -> std::io::Result<LocalStream> {
    let Some(name) = local.strip_prefix('@') else {
        let message = format!("{local:?} is not an abstract socket name (@name)");
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
    };
    // tokio reads a leading NUL as the abstract namespace. A connect to a Unix socket
    // completes or fails at once (EAGAIN when its backlog is full): no timeout needed.
    LocalStream::of_own_user(UnixStream::connect(format!("\0{name}")).await?)
}

/// Starts HTTP/1.1 on a new connection to `worker`, its connection driven by a task of its own.
async fn handshake<S>(worker: &str, stream: S) -> Result<Sender, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| Failure::Undelivered(format!("handshake with {worker}: {err}")))?;
    tokio::spawn(async move {
        if let Err(err) = connection.await {
            tracing::debug!(%err, "worker connection ended");
        }
    });
    Ok(sender)
}

pub(crate) struct Upstream {
    connect_timeout: Duration,
    idle_for: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Idle connections by worker address, the most recently used last. Hashed with foldhash:
    /// SipHash cost more than the rest of a checkout and a release together.
    idle: std::collections::HashMap<Box<str>, Vec<Idle>, foldhash::fast::RandomState>,
    /// The task closing connections idle too long; runs while any are idle.
    reaper: Option<JoinHandle<()>>,
}

struct Idle {
    sender: Sender,
    since: Instant,
}

impl Idle {
    /// Whether it may carry a request: open, and idle for less than `idle_for`.
    fn usable(&self, idle_for: Duration) -> bool {
        self.since.elapsed() < idle_for && !self.sender.is_closed()
    }
}

impl Upstream {
    pub(crate) fn new(connect_timeout: Duration) -> Arc<Self> {
        Self::with_idle(connect_timeout, IDLE_FOR)
    }

    fn with_idle(connect_timeout: Duration, idle_for: Duration) -> Arc<Self> {
        Arc::new(Self { connect_timeout, idle_for, state: Mutex::default() })
    }

    /// Sends `request` (origin-form URI, `Host` set) to `worker` (`host:port`; `local`, its
    /// abstract socket on this host, if any) on a kept connection, or a new one when none is
    /// idle.
    pub(crate) async fn send(
        self: &Arc<Self>,
        worker: &str,
        local: Option<&str>,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<PooledBody>, Failure> {
        while let Some(mut sender) = self.checkout(worker) {
            if !sender.is_ready() && sender.ready().await.is_err() {
                continue; // closed while it waited to be put back
            }
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(self.answer(worker, sender, response)),
                Err(mut err) => match err.take_message() {
                    // Unsent: the worker closed the kept connection; try the next one.
                    Some(unsent) => request = unsent,
                    None => return Err(Failure::Broken(err.into_error())),
                },
            }
        }
        let mut sender = self.connect(worker, local).await?;
        match sender.try_send_request(request).await {
            Ok(response) => Ok(self.answer(worker, sender, response)),
            Err(mut err) => match err.take_message() {
                Some(_) => Err(Failure::Undelivered(err.into_error().to_string())),
                None => Err(Failure::Broken(err.into_error())),
            },
        }
    }

    /// The most recently used connection to `worker` idle for less than `idle_for`; older
    /// ones are closed (dropped) on the way.
    fn checkout(&self, worker: &str) -> Option<Sender> {
        let mut state = self.state.lock();
        let idle = state.idle.get_mut(worker)?;
        while let Some(kept) = idle.pop() {
            if kept.usable(self.idle_for) {
                return Some(kept.sender);
            }
        }
        None
    }

    async fn connect(&self, worker: &str, local: Option<&str>) -> Result<Sender, Failure> {
        if let Some(local) = local {
            match connect_local(local).await {
                Ok(stream) => return handshake(worker, stream).await,
                // The edge runs on another host (or in another network namespace), or the
                // node restarted with another name: TCP still reaches it.
                Err(err) => {
                    tracing::debug!(%worker, %local, %err, "local socket unusable; over TCP")
                }
            }
        }
        let stream =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(worker)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    return Err(Failure::Undelivered(format!("connect to {worker}: {err}")));
                }
                Err(_) => {
                    let waited = self.connect_timeout;
                    return Err(Failure::Undelivered(format!(
                        "connect to {worker}: no answer in {waited:?}"
                    )));
                }
            };
        // Requests are small and answered at once: Nagle would hold the next one back.
        let _ = stream.set_nodelay(true);
        handshake(worker, stream).await
    }

    /// The worker's answer; its connection goes back to the pool when the body ends.
    fn answer(
        self: &Arc<Self>,
        worker: &str,
        sender: Sender,
        response: Response<Incoming>,
    ) -> Response<PooledBody> {
        response.map(|body| {
            let mut pooled = PooledBody {
                body,
                keep: Some(Keep { upstream: self.clone(), worker: worker.into(), sender }),
            };
            if pooled.body.is_end_stream() {
                pooled.release();
            }
            pooled
        })
    }

    fn put_back(self: &Arc<Self>, worker: Box<str>, sender: Sender) {
        let kept = Idle { sender, since: Instant::now() };
        let mut state = self.state.lock();
        match state.idle.get_mut(&*worker) {
            Some(idle) => idle.push(kept),
            None => {
                state.idle.insert(worker, vec![kept]);
            }
        }
        if state.reaper.as_ref().is_none_or(JoinHandle::is_finished) {
            // Spawned where the connection was put back (a runtime is there): a runtime that
            // has since shut down took its reaper along, and the next put-back starts another.
            state.reaper = Some(tokio::spawn(reap(Arc::downgrade(self), self.idle_for)));
        }
    }

    /// Closes the connections idle for `idle_for` or longer; whether any are left.
    fn reap(&self) -> bool {
        let mut state = self.state.lock();
        state.idle.retain(|_, idle| {
            idle.retain(|kept| kept.usable(self.idle_for));
            !idle.is_empty()
        });
        !state.idle.is_empty()
    }

    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.state.lock().idle.values().map(Vec::len).sum()
    }
}

/// Every `idle_for`, closes what has been idle that long; ends when nothing is idle or the
/// edge is gone.
async fn reap(upstream: Weak<Upstream>, idle_for: Duration) {
    loop {
        tokio::time::sleep(idle_for).await;
        match upstream.upgrade() {
            Some(upstream) if upstream.reap() => {}
            _ => return,
        }
    }
}

struct Keep {
    upstream: Arc<Upstream>,
    worker: Box<str>,
    sender: Sender,
}

/// A worker's answer body, streamed through unbuffered; when it ends, its connection is put
/// back for the next request. Dropped before its end (the client went away), the connection
/// goes with it: hyper closes a connection whose answer was not read to the end.
pub(crate) struct PooledBody {
    body: Incoming,
    keep: Option<Keep>,
}

impl PooledBody {
    fn release(&mut self) {
        if let Some(Keep { upstream, worker, sender }) = self.keep.take() {
            upstream.put_back(worker, sender);
        }
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.release(),
            Poll::Ready(Some(Ok(_))) if this.body.is_end_stream() => this.release(),
            Poll::Ready(Some(Err(_))) => this.keep = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpSocket};

    use super::*;

    /// What the played worker does with the connections it accepts.
    #[derive(Clone, Copy)]
    enum Worker {
        /// Answers every request and keeps the connection.
        Keeps,
        /// Answers one request, then closes the connection without saying so (no
        /// `Connection: close`), as a worker stopping or timing an idle connection out does.
        ClosesAfterOne,
        /// Reads the request and closes the connection without answering.
        HangsUp,
    }

    struct Played {
        address: String,
        accepted: Arc<AtomicUsize>,
        open: Arc<AtomicUsize>,
        /// Requests read, over all connections.
        requests: Arc<AtomicUsize>,
        /// Connections it has closed itself.
        closed: Arc<tokio::sync::Notify>,
    }

    /// A worker over a raw socket: every byte it answers is written here, so the test decides
    /// when a connection ends.
    async fn play(behaviour: Worker) -> Played {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let played = Played {
            address: listener.local_addr().unwrap().to_string(),
            accepted: Arc::default(),
            open: Arc::default(),
            requests: Arc::default(),
            closed: Arc::default(),
        };
        let (accepted, open, requests, closed) = (
            played.accepted.clone(),
            played.open.clone(),
            played.requests.clone(),
            played.closed.clone(),
        );
        tokio::spawn(async move {
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                let n = accepted.fetch_add(1, Ordering::SeqCst) + 1;
                open.fetch_add(1, Ordering::SeqCst);
                let (open, requests, closed) = (open.clone(), requests.clone(), closed.clone());
                tokio::spawn(async move {
                    let mut socket = BufReader::new(socket);
                    while let Some(body) = read_request(&mut socket).await {
                        requests.fetch_add(1, Ordering::SeqCst);
                        if matches!(behaviour, Worker::HangsUp) {
                            break;
                        }
                        let answer = format!(r#"{{"connection":{n},"echo":{body}}}"#);
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            answer.len()
                        );
                        let out = socket.get_mut();
                        out.write_all(head.as_bytes()).await.unwrap();
                        out.write_all(answer.as_bytes()).await.unwrap();
                        if matches!(behaviour, Worker::ClosesAfterOne) {
                            break;
                        }
                    }
                    let _ = socket.get_mut().shutdown().await;
                    drop(socket);
                    open.fetch_sub(1, Ordering::SeqCst);
                    closed.notify_one();
                });
            }
        });
        played
    }

    /// One request's body, or `None` at the end of the connection.
    async fn read_request(socket: &mut BufReader<TcpStream>) -> Option<String> {
        let mut length = 0;
        let mut first = true;
        loop {
            let mut line = String::new();
            if socket.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            if first {
                assert!(
                    line.starts_with("POST /mcp HTTP/1.1"),
                    "origin-form request line: {line:?}"
                );
                first = false;
                continue;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        socket.read_exact(&mut body).await.ok()?;
        Some(String::from_utf8(body).unwrap())
    }

    fn request(worker: &str, body: &str) -> Request<Full<Bytes>> {
        Request::post("/mcp")
            .header(http::header::HOST, worker)
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap()
    }

    /// Sends `body` and reads the answer to its end (which puts the connection back).
    async fn call(upstream: &Arc<Upstream>, worker: &str, body: &str) -> Result<String, Failure> {
        let answer = upstream.send(worker, None, request(worker, body)).await?;
        assert_eq!(answer.status(), 200);
        let bytes = answer.into_body().collect().await.expect("the whole answer").to_bytes();
        Ok(String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn one_connection_carries_request_after_request() {
        let worker = play(Worker::Keeps).await;
        let upstream = Upstream::new(Duration::from_secs(2));
        for i in 0..5 {
            let answer = call(&upstream, &worker.address, &i.to_string()).await.unwrap();
            assert_eq!(answer, format!(r#"{{"connection":1,"echo":{i}}}"#));
        }
        assert_eq!(worker.accepted.load(Ordering::SeqCst), 1);
        assert_eq!(upstream.idle_count(), 1);
    }

    #[tokio::test]
    async fn a_request_after_the_worker_closed_the_kept_connection_goes_on_a_new_one() {
        let worker = play(Worker::ClosesAfterOne).await;
        let upstream = Upstream::new(Duration::from_secs(2));
        for i in 1..=10 {
            let closed = worker.closed.notified();
            let answer = call(&upstream, &worker.address, "0").await.unwrap_or_else(|err| {
                panic!("request {i} on a connection the worker had closed: {err}")
            });
            assert_eq!(answer, format!(r#"{{"connection":{i},"echo":0}}"#));
            // The worker has closed the connection the pool holds before the next request.
            closed.await;
        }
        assert_eq!(worker.requests.load(Ordering::SeqCst), 10, "each request sent once");
    }

    #[tokio::test]
    async fn a_request_the_worker_hung_up_on_is_not_sent_again() {
        let worker = play(Worker::HangsUp).await;
        let upstream = Upstream::new(Duration::from_secs(2));
        let failure = call(&upstream, &worker.address, "0").await.unwrap_err();
        assert!(matches!(failure, Failure::Broken(_)), "{failure}");
        assert_eq!(worker.requests.load(Ordering::SeqCst), 1, "the worker may have run it");
        assert_eq!(worker.accepted.load(Ordering::SeqCst), 1, "not sent on another connection");
    }

    #[tokio::test]
    async fn a_worker_without_a_listener_is_undelivered() {
        // A port bound by this test and not listened on: connections to it are refused, and no
        // other process can listen on it meanwhile.
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = socket.local_addr().unwrap().to_string();
        let upstream = Upstream::new(Duration::from_secs(2));
        let failure = call(&upstream, &address, "0").await.unwrap_err();
        assert!(matches!(failure, Failure::Undelivered(_)), "{failure}");
        assert!(failure.to_string().contains(&address), "names the worker: {failure}");
    }

    #[tokio::test]
    async fn idle_connections_are_closed() {
        let worker = play(Worker::Keeps).await;
        let upstream = Upstream::with_idle(Duration::from_secs(2), Duration::from_millis(100));
        call(&upstream, &worker.address, "0").await.unwrap();
        assert_eq!(worker.open.load(Ordering::SeqCst), 1, "kept for the next request");
        ramen_testkit::eventually(
            "the idle connection is closed",
            Duration::from_secs(5),
            || async {
                match (worker.open.load(Ordering::SeqCst), upstream.idle_count()) {
                    (0, 0) => Ok(()),
                    other => Err(other),
                }
            },
        )
        .await;
        // And the next request gets a new one.
        assert_eq!(
            call(&upstream, &worker.address, "1").await.unwrap(),
            r#"{"connection":2,"echo":1}"#
        );
    }

    #[tokio::test]
    async fn an_answer_not_read_to_its_end_takes_its_connection_along() {
        let worker = play(Worker::Keeps).await;
        let upstream = Upstream::new(Duration::from_secs(2));
        let answer =
            upstream.send(&worker.address, None, request(&worker.address, "0")).await.unwrap();
        drop(answer);
        assert_eq!(upstream.idle_count(), 0);
        call(&upstream, &worker.address, "1").await.unwrap();
        assert_eq!(worker.accepted.load(Ordering::SeqCst), 2);
    }
}
