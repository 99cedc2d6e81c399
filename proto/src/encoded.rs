//! A `StatusSnapshot` encoded before it is sent: the server's StreamStatus sends each message as
//! shared bytes encoded once for every stream, through tonic's own prost codec.

use prost::bytes::{Buf, BufMut, Bytes};
use prost::encoding::{DecodeContext, WireType};
use prost::DecodeError;

/// A `cuzk.v1.StatusSnapshot` as bytes on the wire: parts, each a run of whole fields, back to
/// back (a decoder sees one message: fields may come in any order and repeated entries append).
/// The generated server sends it in place of the message; clients decode the message itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncodedStatusSnapshot {
    parts: Vec<Bytes>,
}

impl EncodedStatusSnapshot {
    /// The message made of `parts`, each a run of whole `StatusSnapshot` fields.
    pub fn from_parts(parts: Vec<Bytes>) -> EncodedStatusSnapshot {
        EncodedStatusSnapshot { parts }
    }

    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }
}

impl prost::Message for EncodedStatusSnapshot {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        for part in &self.parts {
            buf.put_slice(part);
        }
    }

    /// Never read (the server only sends it): a field is skipped.
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        self.parts.iter().map(Bytes::len).sum()
    }

    fn clear(&mut self) {
        self.parts.clear();
    }
}
