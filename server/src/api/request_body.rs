//! Reading a request's body before tonic decodes it: one gRPC message, no larger than the call
//! allows, arrived by the body deadline. The message's length is known from its first five bytes,
//! so an oversized one is refused before the rest is read, the buffer is sized once in `finish`
//! (no copies as it grows), and a byte past the message means a second one.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::time::Instant;
use tonic::body::Body;

/// The gRPC length prefix: compression flag and big-endian length.
const PREFIX: usize = 5;

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Its message's length, over the call's limit.
    TooLarge(u64),
    /// Bytes after the first message.
    MoreThanOne,
    /// The deadline passed first.
    Late,
    /// The client reset the stream or the connection failed.
    Broken(String),
}

/// A body being read, by one deadline.
pub struct BodyReader {
    body: Body,
    buf: BytesMut,
    /// Prefix and message, once the prefix has arrived.
    whole: Option<usize>,
    ended: bool,
    limit: usize,
    deadline: Instant,
}

impl BodyReader {
    /// Reads `body`, whose message may be `limit` bytes, within `timeout` from now.
    pub fn new(body: Body, limit: usize, timeout: Duration) -> BodyReader {
        BodyReader {
            body,
            buf: BytesMut::new(),
            whole: None,
            ended: false,
            limit,
            deadline: Instant::now() + timeout,
        }
    }

    /// What has arrived so far.
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Reads until `n` bytes have arrived or the body has ended.
    pub async fn fill(&mut self, n: usize) -> Result<(), BodyError> {
        while !self.ended && self.buf.len() < n {
            let next = tokio::time::timeout_at(self.deadline, self.body.frame()).await;
            match next.map_err(|_| BodyError::Late)? {
                None => self.ended = true,
                Some(Err(err)) => return Err(BodyError::Broken(err.to_string())),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.push(&data)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The whole body. The buffer is sized for the announced message here, not while the first
    /// bytes are read (a proof request reads those before it holds a decoding slot).
    pub async fn finish(mut self) -> Result<Bytes, BodyError> {
        if let Some(whole) = self.whole {
            self.buf.reserve(whole.saturating_sub(self.buf.len()));
        }
        self.fill(usize::MAX).await?;
        Ok(self.buf.freeze())
    }

    fn push(&mut self, data: &[u8]) -> Result<(), BodyError> {
        if self.whole.is_none() && self.buf.len() + data.len() >= PREFIX {
            let mut prefix = [0; PREFIX];
            let have = self.buf.len();
            prefix[..have].copy_from_slice(&self.buf);
            prefix[have..].copy_from_slice(&data[..PREFIX - have]);
            let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
            if len as usize > self.limit {
                return Err(BodyError::TooLarge(u64::from(len)));
            }
            self.whole = Some(PREFIX + len as usize);
        }
        if self
            .whole
            .is_some_and(|whole| self.buf.len() + data.len() > whole)
        {
            return Err(BodyError::MoreThanOne);
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{stream, StreamExt};
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    fn body_of(chunks: Vec<Vec<u8>>) -> Body {
        let frames = chunks
            .into_iter()
            .map(|c| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(c))));
        Body::new(StreamBody::new(stream::iter(frames)))
    }

    fn message(len: usize) -> Vec<u8> {
        let mut out = vec![0];
        out.extend((len as u32).to_be_bytes());
        out.extend(std::iter::repeat_n(7, len));
        out
    }

    async fn read(chunks: Vec<Vec<u8>>, limit: usize) -> Result<Bytes, BodyError> {
        BodyReader::new(body_of(chunks), limit, Duration::from_secs(5))
            .finish()
            .await
    }

    #[tokio::test]
    async fn one_message_in_any_pieces_is_read_whole() {
        let whole = message(1000);
        for step in [1, 3, 5, 6, 999, 2000] {
            let chunks = whole.chunks(step).map(<[u8]>::to_vec).collect();
            assert_eq!(read(chunks, 1000).await.unwrap(), whole, "pieces of {step}");
        }
        assert_eq!(read(vec![], 10).await.unwrap(), Bytes::new());
    }

    #[tokio::test]
    async fn a_second_message_or_a_large_one_is_refused_before_the_rest_is_read() {
        let two = [message(10), message(0)].concat();
        assert_eq!(read(vec![two], 100).await, Err(BodyError::MoreThanOne));
        // Only the prefix of the large one arrives: its length is enough.
        let large = message(1001)[..9].to_vec();
        assert_eq!(
            read(vec![large], 1000).await,
            Err(BodyError::TooLarge(1001))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_coming_is_late() {
        let stalled = stream::iter([Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(
            message(100)[..50].to_vec(),
        )))])
        .chain(stream::pending());
        let mut reader = BodyReader::new(
            Body::new(StreamBody::new(stalled)),
            100,
            Duration::from_secs(60),
        );
        reader.fill(20).await.unwrap();
        assert_eq!(reader.buffered().len(), 50);
        assert_eq!(reader.finish().await, Err(BodyError::Late));
    }
}
