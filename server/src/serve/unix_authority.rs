//! Lets every gRPC client use the unix socket. grpc-go (Curio) sends `:authority: localhost`
//! there, but grpcurl sends the socket's path and grpcio other names that are no URI authority;
//! h2 resets such a stream with PROTOCOL_ERROR before any service sees it. [`AuthorityFix`]
//! wraps a unix connection: it reads the client's HTTP/2 frames, decodes each header block
//! (HPACK, with the client's dynamic table), replaces an `:authority` that is not a valid
//! authority by `localhost`, and encodes the block again as literals without indexing (so h2's
//! table stays empty and in step). Every other frame, and everything the server writes, passes
//! through unchanged: a DATA frame's payload is read straight into the server's buffer. On a
//! unix socket the authority names nothing, so nothing is lost. No h2 or hyper setting relaxes
//! the check (hyperium/h2#487 proposes one); the cost of this on a 256 MiB input is measured by
//! `cargo bench -p snarkd --bench unix_socket` (bench-client/BENCHMARKS.md).

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use loona_hpack::encoder::encode_integer_into;
use loona_hpack::Decoder;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// The client connection preface, passed through as it is.
const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// Frames we write carry at most this much: the size every HTTP/2 peer must accept.
const MAX_FRAME_LEN: usize = 16_384;
/// The dynamic table the client may use: h2's default SETTINGS_HEADER_TABLE_SIZE, which the
/// servers here do not change.
const HEADER_TABLE_SIZE: usize = 4096;
/// Most bytes of one header block, encoded or decoded (HPACK counts 32 more per field). hyper
/// answers blocks over 16 KiB with 431 itself; this only bounds what is held meanwhile.
const MAX_HEADER_BLOCK: usize = 64 * 1024;
/// What replaces an authority that is not one.
const LOCALHOST: &[u8] = b"localhost";

/// A unix connection whose client header blocks carry a valid `:authority`.
pub struct AuthorityFix<IO> {
    io: IO,
    frames: Rewriter,
    /// Bytes ready for the server, from `pending_at` on.
    pending: Vec<u8>,
    pending_at: usize,
    read_buf: Box<[u8]>,
}

impl<IO> AuthorityFix<IO> {
    pub fn new(io: IO) -> Self {
        AuthorityFix {
            io,
            frames: Rewriter::new(),
            pending: Vec::new(),
            pending_at: 0,
            read_buf: vec![0; 16 * 1024].into_boxed_slice(),
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for AuthorityFix<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.pending_at < this.pending.len() {
                let n = buf.remaining().min(this.pending.len() - this.pending_at);
                buf.put_slice(&this.pending[this.pending_at..this.pending_at + n]);
                this.pending_at += n;
                if this.pending_at == this.pending.len() {
                    this.pending.clear();
                    this.pending_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            // A DATA frame's payload (nearly all of a 256 MiB input) goes straight into the
            // caller's buffer: no copy, no look at its bytes.
            if let Some(left) = this.frames.passing_through() {
                let want = left.min(buf.remaining());
                let mut direct = ReadBuf::new(buf.initialize_unfilled_to(want));
                ready!(Pin::new(&mut this.io).poll_read(cx, &mut direct))?;
                let n = direct.filled().len();
                buf.advance(n);
                this.frames.passed(n);
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.read_buf);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return Poll::Ready(Ok(()));
            }
            this.frames
                .feed(read.filled(), &mut this.pending)
                .map_err(|msg| io::Error::new(io::ErrorKind::InvalidData, msg))?;
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: Connected> Connected for AuthorityFix<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// Where the client's byte stream is.
enum Stage {
    Preface {
        left: usize,
    },
    FrameHeader,
    /// A frame other than a header block: its payload passes through.
    PassThrough {
        left: usize,
    },
    /// A HEADERS or CONTINUATION frame, read whole.
    HeaderFrame {
        kind: u8,
        flags: u8,
        stream: u32,
        left: usize,
    },
}

/// The first frame of a header block being collected.
struct OpenBlock {
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; 5]>,
}

/// The client-to-server frame rewriter, fed bytes as they arrive.
struct Rewriter {
    stage: Stage,
    header: Vec<u8>,
    frame: Vec<u8>,
    open: Option<OpenBlock>,
    block: Vec<u8>,
    decoder: Decoder<'static>,
}

impl Rewriter {
    fn new() -> Self {
        let mut decoder = Decoder::new();
        decoder.set_max_allowed_table_size(HEADER_TABLE_SIZE);
        Rewriter {
            stage: Stage::Preface { left: PREFACE_LEN },
            header: Vec::with_capacity(FRAME_HEADER_LEN),
            frame: Vec::new(),
            open: None,
            block: Vec::new(),
            decoder,
        }
    }

    /// How many bytes of a frame that passes unchanged are still to come, if one is under way.
    fn passing_through(&self) -> Option<usize> {
        match self.stage {
            Stage::Preface { left } | Stage::PassThrough { left } if left > 0 => Some(left),
            _ => None,
        }
    }

    /// `n` bytes of the frame that passes unchanged went to the server directly.
    fn passed(&mut self, n: usize) {
        if let Stage::Preface { left } | Stage::PassThrough { left } = &mut self.stage {
            *left -= n;
            if *left == 0 {
                self.stage = Stage::FrameHeader;
            }
        }
    }

    /// Consumes `input`, appending what the server should read to `out`.
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        while !input.is_empty() {
            match &mut self.stage {
                Stage::Preface { left } | Stage::PassThrough { left } => {
                    let n = (*left).min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n;
                    if *left == 0 {
                        self.stage = Stage::FrameHeader;
                    }
                }
                Stage::FrameHeader => {
                    let n = (FRAME_HEADER_LEN - self.header.len()).min(input.len());
                    self.header.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if self.header.len() == FRAME_HEADER_LEN {
                        self.start_frame(out)?;
                    }
                }
                Stage::HeaderFrame { left, .. } => {
                    let n = (*left).min(input.len());
                    self.frame.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n;
                    if *left == 0 {
                        self.end_header_frame(out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn start_frame(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let h = &self.header;
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        self.header.clear();
        if kind == HEADERS || kind == CONTINUATION {
            if self.block.len() + len > MAX_HEADER_BLOCK {
                return Err(format!(
                    "a header block over {MAX_HEADER_BLOCK} bytes on the unix socket"
                ));
            }
            self.frame.clear();
            self.stage = Stage::HeaderFrame {
                kind,
                flags,
                stream,
                left: len,
            };
            if len == 0 {
                self.end_header_frame(out)?;
            }
            return Ok(());
        }
        if self.open.is_some() {
            return Err("a frame inside a header block (expected CONTINUATION)".into());
        }
        frame_header(len, kind, flags, stream, out);
        self.stage = if len == 0 {
            Stage::FrameHeader
        } else {
            Stage::PassThrough { left: len }
        };
        Ok(())
    }

    fn end_header_frame(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let Stage::HeaderFrame {
            kind,
            flags,
            stream,
            ..
        } = self.stage
        else {
            unreachable!("called at the end of a header frame")
        };
        self.stage = Stage::FrameHeader;
        let payload = std::mem::take(&mut self.frame);
        match (kind, &self.open) {
            (HEADERS, None) => {
                let mut rest = &payload[..];
                let mut padding = 0;
                if flags & PADDED != 0 {
                    let (&pad, tail) =
                        rest.split_first().ok_or("HEADERS without its pad length")?;
                    padding = pad as usize;
                    rest = tail;
                }
                let mut priority = None;
                if flags & PRIORITY != 0 {
                    let (fields, tail) = rest
                        .split_first_chunk::<5>()
                        .ok_or("HEADERS without its priority fields")?;
                    priority = Some(*fields);
                    rest = tail;
                }
                let fragment = rest
                    .len()
                    .checked_sub(padding)
                    .map(|end| &rest[..end])
                    .ok_or("HEADERS padding longer than the frame")?;
                self.block.clear();
                self.block.extend_from_slice(fragment);
                self.open = Some(OpenBlock {
                    stream,
                    end_stream: flags & END_STREAM != 0,
                    priority,
                });
            }
            (CONTINUATION, Some(open)) if open.stream == stream => {
                self.block.extend_from_slice(&payload);
            }
            _ => return Err("a header block out of order".into()),
        }
        self.frame = payload;
        if flags & END_HEADERS != 0 {
            let open = self.open.take().expect("a block is open");
            let block = self.rewrite_block()?;
            self.block.clear();
            write_block(&open, &block, out);
        }
        Ok(())
    }

    /// Decodes the collected block and encodes it again with a valid `:authority`.
    fn rewrite_block(&mut self) -> Result<Vec<u8>, String> {
        let mut encoded = Vec::with_capacity(self.block.len() + LOCALHOST.len());
        let mut size = 0;
        self.decoder
            .decode_with_cb(&self.block, |name, value| {
                size += name.len() + value.len() + 32;
                if size > MAX_HEADER_BLOCK {
                    return;
                }
                let value = if &*name == b":authority"
                    && http::uri::Authority::try_from(&*value).is_err()
                {
                    LOCALHOST
                } else {
                    &value
                };
                literal(&name, value, &mut encoded);
            })
            .map_err(|err| format!("a header block that is not valid HPACK: {err}"))?;
        if size > MAX_HEADER_BLOCK {
            return Err(format!(
                "header fields over {MAX_HEADER_BLOCK} bytes on the unix socket"
            ));
        }
        Ok(encoded)
    }
}

/// A header field as a literal without indexing, with a literal name (RFC 7541, 6.2.2).
fn literal(name: &[u8], value: &[u8], out: &mut Vec<u8>) {
    out.push(0);
    for text in [name, value] {
        encode_integer_into(text.len(), 7, 0, out).expect("writing to a Vec");
        out.extend_from_slice(text);
    }
}

/// The block as one HEADERS frame and as many CONTINUATION frames as it needs.
fn write_block(open: &OpenBlock, block: &[u8], out: &mut Vec<u8>) {
    let priority = open.priority.as_ref().map_or(&[][..], |p| &p[..]);
    let first_len = block.len().min(MAX_FRAME_LEN - priority.len());
    let (first, mut rest) = block.split_at(first_len);
    let mut flags = 0;
    if open.end_stream {
        flags |= END_STREAM;
    }
    if open.priority.is_some() {
        flags |= PRIORITY;
    }
    if rest.is_empty() {
        flags |= END_HEADERS;
    }
    frame_header(
        priority.len() + first.len(),
        HEADERS,
        flags,
        open.stream,
        out,
    );
    out.extend_from_slice(priority);
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rest.len().min(MAX_FRAME_LEN));
        let flags = if tail.is_empty() { END_HEADERS } else { 0 };
        frame_header(chunk.len(), CONTINUATION, flags, open.stream, out);
        out.extend_from_slice(chunk);
        rest = tail;
    }
}

fn frame_header(len: usize, kind: u8, flags: u8, stream: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

#[cfg(test)]
mod tests;
