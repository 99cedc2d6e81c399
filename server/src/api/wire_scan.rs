//! A look at a request's protobuf bytes before prost decodes them. prost makes one `Vec` per
//! `vanilla_proofs` entry (one `String` per StreamStatus job id), so a message of one-byte
//! entries would cost about 20 times its size in memory before any check ran; counting the
//! entries on the wire (no allocation) lets such a request be refused at the size it arrived
//! with. The first bytes of a SubmitProof or Prove also name its request id and proof kind, which
//! decide its decoding slot before the rest arrives.

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

/// `SubmitProofRequest.request_id` and `.proof_kind`; `StreamStatusRequest.job_ids`.
const REQUEST_ID_FIELD: u64 = 1;
const PROOF_KIND_FIELD: u64 = 2;
const JOB_IDS_FIELD: u64 = 2;

/// The request id and proof kind a SubmitProofRequest (or a ProveRequest when `prove`) names in
/// the first bytes of its gRPC frame, as far as they go. Encoders write fields in number order
/// (protobuf's recommendation, and what Go's and prost's do), so both come first, ahead of the
/// inputs; a field not found in `head` is `None`.
pub fn submit_head(head: &[u8], prove: bool) -> (Option<String>, Option<i32>) {
    let Some(mut message) = head.get(5..) else {
        return (None, None);
    };
    if prove {
        // The submit field's key and length, then the SubmitProofRequest's own bytes.
        let mut rest = message;
        match varint(&mut rest) {
            Some(key) if key == SUBMIT_FIELD << 3 | 2 && varint(&mut rest).is_some() => {
                message = rest
            }
            _ => return (None, None),
        }
    }
    let (mut request_id, mut kind) = (None, None);
    let mut rest = message;
    while let Some(key) = varint(&mut rest) {
        match (key >> 3, key & 7) {
            (REQUEST_ID_FIELD, 2) => {
                let Some(len) = varint(&mut rest).and_then(|n| usize::try_from(n).ok()) else {
                    break;
                };
                let text = &rest[..len.min(rest.len())];
                request_id = Some(String::from_utf8_lossy(text).into_owned());
                match rest.get(len..) {
                    Some(after) => rest = after,
                    None => break,
                }
            }
            (PROOF_KIND_FIELD, 0) => {
                kind = varint(&mut rest).and_then(|v| i32::try_from(v).ok());
                break;
            }
            _ => break,
        }
    }
    (request_id, kind)
}

/// The number of `job_ids` in a StreamStatusRequest's gRPC frame (`None`: not a plain frame).
pub fn job_ids_in_frame(frame: &[u8]) -> Option<usize> {
    let (&[0, ..], message) = frame.split_first_chunk::<5>()? else {
        return None;
    };
    count_field(message, JOB_IDS_FIELD)
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
    fn the_request_id_and_kind_are_read_from_the_first_bytes() {
        let submit = submit(2349);
        let whole = frame(&submit);
        for head in [&whole[..40], &whole[..]] {
            let (id, kind) = submit_head(head, false);
            assert_eq!(id.as_deref(), Some("wdpost-[1 2]"));
            assert_eq!(kind, Some(3));
        }
        let prove = frame(&pb::ProveRequest {
            submit: Some(submit.clone()),
        });
        assert_eq!(
            submit_head(&prove[..60], true),
            (Some("wdpost-[1 2]".into()), Some(3))
        );
        // Cut inside the id: what arrived of it, and no kind yet.
        assert_eq!(submit_head(&whole[..10], false), (Some("wdp".into()), None));
        assert_eq!(submit_head(&whole[..3], false), (None, None));
        // A kind left out (proto3's default) or written after the inputs is not guessed.
        let unordered = frame(&pb::SubmitProofRequest {
            proof_kind: 0,
            ..submit
        });
        assert_eq!(submit_head(&unordered, false).1, None);
    }

    #[test]
    fn job_ids_are_counted_on_the_wire() {
        for n in [0, 1, 5000] {
            let request = pb::StreamStatusRequest {
                min_interval_ms: 100,
                job_ids: vec!["x".into(); n],
            };
            assert_eq!(job_ids_in_frame(&frame(&request)), Some(n));
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
