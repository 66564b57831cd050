//! [`LocalStream`]: a Unix stream socket that tokio watches for reading only.
//!
//! Linux tells a Unix stream socket's writer each time its reader takes data off the socket
//! (`unix_write_space`, on every buffer freed), and epoll passes that on as a fresh `EPOLLOUT`
//! to an edge-triggered watcher, which tokio's `UnixStream` is. So each request the edge sends
//! a node woke the edge once more when the node read it, and each answer woke the node when the
//! edge read it: a third `epoll_wait` per call at concurrency 1 (TCP says nothing to a writer
//! with room to spare), and ~1.3k instructions of tokio's bookkeeping for an event that asked
//! for nothing (docs/benchmarks.md, "Seventeenth round").
//!
//! Here the socket is registered for readability alone, and a write goes straight to the
//! socket. Only a write that finds the socket full (an answer larger than its buffer, a
//! reader that stopped reading) registers a second descriptor of the socket for writability,
//! and gives it up once the write has gone through.

use std::io::{self, IoSlice, Read, Write};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

pub struct LocalStream {
    /// Watched for readability only.
    io: AsyncFd<UnixStream>,
    /// A duplicate of the socket watched for writability while a write waits for room.
    room: Option<AsyncFd<UnixStream>>,
    /// How many bytes the next read asks for (see [`READ_AT_LEAST`]).
    read_size: usize,
}

/// The least a read asks for. Without `unsafe` a read cannot go into uninitialised memory, so
/// the part of the caller's buffer it uses is zeroed first: hyper offers 8 KiB and more, and
/// zeroing all of it for a request of a few hundred bytes cost ~8k instructions a call. So a
/// read asks for what the last one got, doubled while reads fill it (up to
/// [`READ_AT_MOST`]), halved while they use less than a quarter of it.
const READ_AT_LEAST: usize = 2048;
const READ_AT_MOST: usize = 256 * 1024;

impl LocalStream {
    /// Takes over a connected stream whose other end is a process of this one's effective
    /// user (`SO_PEERCRED`), or refuses it (`PermissionDenied`, naming both uids): on an
    /// abstract socket, which has no file permissions, the only way to know who is there.
    pub fn of_own_user(stream: tokio::net::UnixStream) -> io::Result<Self> {
        let (own, peer) = (nix::unistd::geteuid().as_raw(), stream.peer_cred()?);
        if peer.uid() != own {
            let message = format!(
                "the other end is uid {} (pid {:?}), not this process's uid {own}",
                peer.uid(),
                peer.pid()
            );
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, message));
        }
        Self::new(stream)
    }

    /// Takes over a connected stream from tokio (which watched it both ways).
    fn new(stream: tokio::net::UnixStream) -> io::Result<Self> {
        let stream = stream.into_std()?; // non-blocking still
        Ok(Self { io: watch(stream, Interest::READABLE)?, room: None, read_size: READ_AT_LEAST })
    }

    /// Writes with `write` while the socket has room, else waits for room (watching a
    /// duplicate of the socket for writability until then).
    fn poll_writing(
        &mut self,
        cx: &mut Context<'_>,
        mut write: impl FnMut(&UnixStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            match write(self.io.get_ref()) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                done => {
                    // Written (or failed): stop watching for room, so the reader's next read
                    // wakes no one.
                    self.room = None;
                    return Poll::Ready(done);
                }
            }
            let room = match &mut self.room {
                Some(room) => room,
                // Registered now, epoll reports room freed since the write failed at once.
                None => {
                    self.room.insert(watch(self.io.get_ref().try_clone()?, Interest::WRITABLE)?)
                }
            };
            ready!(room.poll_write_ready(cx))?.clear_ready();
        }
    }
}

/// Registers `socket` with tokio's reactor for `interest`.
///
/// tokio 1.54 deprecated this safe constructor (tokio#8587) because an arbitrary `AsRawFd` may
/// close or swap its descriptor while registered. A `UnixStream` owns its descriptor and
/// keeps it until it is dropped, with the `AsyncFd` that holds it: the condition the unsafe
/// `register_with_interest` asks its caller to uphold holds, and this workspace forbids
/// `unsafe`.
#[allow(deprecated)]
fn watch(socket: UnixStream, interest: Interest) -> io::Result<AsyncFd<UnixStream>> {
    AsyncFd::with_interest(socket, interest)
}

impl AsyncRead for LocalStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut ready = ready!(this.io.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled_to(buf.remaining().min(this.read_size));
            let room = unfilled.len();
            match this.io.get_ref().read(unfilled) {
                Ok(read) => {
                    if read == room {
                        this.read_size = (this.read_size * 2).min(READ_AT_MOST);
                    } else if read < this.read_size / 4 {
                        this.read_size = (this.read_size / 2).max(READ_AT_LEAST);
                    }
                    // Less than there was room for: the socket is drained, so the next read
                    // waits for epoll rather than trying in vain (what tokio's own streams do).
                    if read > 0 && read < room {
                        ready.clear_ready();
                    }
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => ready.clear_ready(),
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }
}

impl AsyncWrite for LocalStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_writing(cx, |mut socket| socket.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_writing(cx, |mut socket| socket.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.io.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Far more than a socket buffer holds, both ways at once: every write that finds the
    /// socket full waits for room and goes on, and every byte arrives in order.
    #[tokio::test]
    async fn writes_larger_than_the_socket_buffer_wait_for_room_and_arrive_whole() {
        let (a, b) = tokio::net::UnixStream::pair().unwrap();
        let (mut a, mut b) = (LocalStream::new(a).unwrap(), LocalStream::new(b).unwrap());
        let sent: Vec<u8> = (0..8 * 1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
        let expected = sent.clone();
        let writer = tokio::spawn(async move {
            a.write_all(&sent).await.unwrap();
            a.shutdown().await.unwrap();
            a
        });
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert!(
            got == expected,
            "{} bytes of {} arrived, or out of order",
            got.len(),
            expected.len()
        );
        let _a = writer.await.unwrap();
    }
}
