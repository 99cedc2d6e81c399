//! A look at a SubmitProof or Prove request's protobuf bytes before prost decodes them. prost
//! makes one `Vec` per `vanilla_proofs` entry, so a message of one-byte entries would cost about
//! 20 times its size in memory before any check ran; counting the entries on the wire (no
//! allocation) lets such a request be refused at the size it arrived with.

/// Most `vanilla_proofs` entries any proof kind takes: a 32 GiB or 64 GiB WindowPoSt partition's
/// sectors (SnapDeals takes at most 16 partition proofs, WinningPoSt one sector proof).
pub const MAX_VANILLA_PROOFS: usize = 2349;

/// `SubmitProofRequest.vanilla_proofs` and `ProveRequest.submit`.
const VANILLA_PROOFS_FIELD: u64 = 11;
const SUBMIT_FIELD: u64 = 1;

/// The number of `vanilla_proofs` entries in one gRPC frame holding a SubmitProofRequest (or a
/// ProveRequest when `prove`). `None` when the bytes are not a plain protobuf frame of that
/// shape: prost then reports the error itself.
pub fn vanilla_proofs_in_frame(frame: &[u8], prove: bool) -> Option<usize> {
    // The gRPC length-prefixed message: compression flag, big-endian length, message.
    let (&[compressed, a, b, c, d], message) = frame.split_first_chunk::<5>()?;
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if compressed != 0 || message.len() != len {
        return None;
    }
    if prove {
        let mut count = 0;
        for_each_field(message, |field, value| {
            if let (SUBMIT_FIELD, Some(submit)) = (field, value) {
                count += count_field(submit, VANILLA_PROOFS_FIELD)?;
            }
            Some(())
        })?;
        Some(count)
    } else {
        count_field(message, VANILLA_PROOFS_FIELD)
    }
}

/// Occurrences of length-delimited field `wanted` in one message.
fn count_field(message: &[u8], wanted: u64) -> Option<usize> {
    let mut count = 0;
    for_each_field(message, |field, value| {
        if field == wanted && value.is_some() {
            count += 1;
        }
        Some(())
    })?;
    Some(count)
}

/// Calls `f` with each field number and, for length-delimited fields, its bytes.
fn for_each_field(
    mut rest: &[u8],
    mut f: impl FnMut(u64, Option<&[u8]>) -> Option<()>,
) -> Option<()> {
    while !rest.is_empty() {
        let key = varint(&mut rest)?;
        let (field, wire_type) = (key >> 3, key & 7);
        match wire_type {
            0 => {
                varint(&mut rest)?;
                f(field, None)?;
            }
            1 | 5 => {
                let n = if wire_type == 1 { 8 } else { 4 };
                rest = rest.get(n..)?;
                f(field, None)?;
            }
            2 => {
                let len = usize::try_from(varint(&mut rest)?).ok()?;
                let value = rest.get(..len)?;
                rest = &rest[len..];
                f(field, Some(value))?;
            }
            // Groups are not used by proto3 messages.
            _ => return None,
        }
    }
    Some(())
}

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use snarkd_proto::v1 as pb;

    fn frame(message: &impl Message) -> Vec<u8> {
        let body = message.encode_to_vec();
        let mut out = vec![0];
        out.extend((body.len() as u32).to_be_bytes());
        out.extend(body);
        out
    }

    fn submit(entries: usize) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: "wdpost-[1 2]".into(),
            proof_kind: 3,
            vanilla_proof: vec![1; 300],
            vanilla_proofs: vec![vec![7]; entries],
            randomness: vec![2; 32],
            partition_index: 9,
            miner_id: u64::MAX,
            ..Default::default()
        }
    }

    #[test]
    fn counts_entries_as_prost_would_decode_them() {
        for n in [0, 1, 2349, 100_000] {
            let submit = submit(n);
            assert_eq!(vanilla_proofs_in_frame(&frame(&submit), false), Some(n));
            let prove = pb::ProveRequest {
                submit: Some(submit),
            };
            assert_eq!(vanilla_proofs_in_frame(&frame(&prove), true), Some(n));
        }
    }

    #[test]
    fn anything_else_is_left_to_prost() {
        let good = frame(&submit(3));
        assert_eq!(
            vanilla_proofs_in_frame(&good[..good.len() - 1], false),
            None
        );
        assert_eq!(vanilla_proofs_in_frame(&good[..3], false), None);
        let mut compressed = good.clone();
        compressed[0] = 1;
        assert_eq!(vanilla_proofs_in_frame(&compressed, false), None);
        let mut bad_varint = good[..5].to_vec();
        bad_varint.extend([0xff; 11]);
        bad_varint[1..5].copy_from_slice(&11u32.to_be_bytes());
        assert_eq!(vanilla_proofs_in_frame(&bad_varint, false), None);
    }
}
