//! The node ⇄ runtime wire format: a 4-byte big-endian length, then that many bytes of one
//! UTF-8 JSON object (see docs/packages.md, "Node ⇄ runtime protocol").

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Frames above this are refused on both sides (the runtime exits; the node restarts it).
pub const MAX_FRAME: usize = 64 * 1024 * 1024;

pub fn encode(json: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(4 + json.len());
    buf.put_u32(json.len() as u32);
    buf.put_slice(json);
    buf.freeze()
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("runtime closed its output")]
    Closed,
    #[error("runtime sent a {0}-byte frame, above the {MAX_FRAME}-byte limit")]
    TooLarge(usize),
    #[error("reading from the runtime failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame into `buf` (reused between calls to avoid an allocation per frame).
pub async fn read<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let len = match reader.read_u32().await {
        Ok(len) => len as usize,
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(FrameError::Closed);
        }
        Err(err) => return Err(err.into()),
    };
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    buf.clear();
    buf.resize(len, 0);
    reader.read_exact(buf).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_and_limits() {
        let mut wire = Vec::new();
        wire.extend_from_slice(&encode(br#"{"id":1}"#));
        wire.extend_from_slice(&encode(br#"{"id":2}"#));
        let mut reader = wire.as_slice();
        let mut buf = Vec::new();
        read(&mut reader, &mut buf).await.unwrap();
        assert_eq!(buf, br#"{"id":1}"#);
        read(&mut reader, &mut buf).await.unwrap();
        assert_eq!(buf, br#"{"id":2}"#);
        assert!(matches!(read(&mut reader, &mut buf).await, Err(FrameError::Closed)));

        let huge = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert!(matches!(read(&mut huge.as_slice(), &mut buf).await, Err(FrameError::TooLarge(_))));
    }
}
