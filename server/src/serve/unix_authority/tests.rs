use loona_hpack::{Decoder, Encoder};

use super::*;

const CLIENT_PREFACE: &[u8; PREFACE_LEN] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

type Fields = Vec<(Vec<u8>, Vec<u8>)>;
/// A frame as the server sees it: kind, stream, and its decoded fields or its payload.
type Seen = (u8, u32, Result<Fields, Vec<u8>>);

fn request(authority: &str) -> Fields {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/cuzk.v1.ProvingEngine/GetStatus"),
        (":authority", authority),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect()
}

/// The client's side: frames as an HPACK encoder with a dynamic table writes them.
fn headers_frame(encoder: &mut Encoder, stream: u32, headers: &Fields) -> Vec<u8> {
    let block = encoder.encode(headers.iter().map(|(n, v)| (&n[..], &v[..])));
    let mut out = Vec::new();
    frame_header(block.len(), HEADERS, END_HEADERS, stream, &mut out);
    out.extend_from_slice(&block);
    out
}

fn data_frame(stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame_header(payload.len(), 0x0, END_STREAM, stream, &mut out);
    out.extend_from_slice(payload);
    out
}

/// The server's side: splits frames, decodes header blocks with its own table.
fn server_view(mut bytes: &[u8]) -> Vec<Seen> {
    assert_eq!(&bytes[..PREFACE_LEN], CLIENT_PREFACE);
    bytes = &bytes[PREFACE_LEN..];
    let mut decoder = Decoder::new();
    let mut frames = Vec::new();
    let mut block = Vec::new();
    while !bytes.is_empty() {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let (kind, flags) = (bytes[3], bytes[4]);
        let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap());
        let payload = &bytes[9..9 + len];
        assert!(len <= MAX_FRAME_LEN);
        bytes = &bytes[9 + len..];
        if kind == HEADERS || kind == CONTINUATION {
            block.extend_from_slice(payload);
            if flags & END_HEADERS != 0 {
                frames.push((HEADERS, stream, Ok(decoder.decode(&block).unwrap())));
                block.clear();
            }
        } else {
            frames.push((kind, stream, Err(payload.to_vec())));
        }
    }
    frames
}

/// Feeds `input` to a rewriter in pieces of `step` bytes.
fn rewrite(input: &[u8], step: usize) -> Vec<u8> {
    let mut rewriter = Rewriter::new();
    let mut out = Vec::new();
    for piece in input.chunks(step) {
        rewriter.feed(piece, &mut out).unwrap();
    }
    out
}

#[test]
fn a_socket_path_authority_becomes_localhost_and_the_rest_is_kept() {
    let mut encoder = Encoder::new();
    let mut input = CLIENT_PREFACE.to_vec();
    input.extend(headers_frame(&mut encoder, 1, &request("/run/snarkd.sock")));
    input.extend(data_frame(1, b"\0\0\0\0\0"));
    // The second request refers to the client's dynamic table for most fields.
    input.extend(headers_frame(&mut encoder, 3, &request("/run/snarkd.sock")));
    input.extend(headers_frame(&mut encoder, 5, &request("localhost:9820")));

    for step in [1, 7, 4096] {
        let frames = server_view(&rewrite(&input, step));
        assert_eq!(frames.len(), 4, "step {step}");
        for (i, stream, authority) in [
            (0, 1, "localhost"),
            (2, 3, "localhost"),
            (3, 5, "localhost:9820"),
        ] {
            assert_eq!(frames[i].1, stream);
            assert_eq!(
                frames[i].2.as_ref().unwrap(),
                &request(authority),
                "step {step}"
            );
        }
        assert_eq!(frames[1], (0x0, 1, Err(b"\0\0\0\0\0".to_vec())));
    }
}

#[test]
fn a_large_block_leaves_in_continuation_frames() {
    let mut headers = request("/tmp/s.sock");
    headers.push((b"x-big".to_vec(), vec![b'a'; 40_000]));
    let mut input = CLIENT_PREFACE.to_vec();
    input.extend(headers_frame(&mut Encoder::new(), 1, &headers));
    let frames = server_view(&rewrite(&input, 1000));
    headers[3].1 = b"localhost".to_vec();
    assert_eq!(frames, vec![(HEADERS, 1, Ok(headers))]);
}

#[test]
fn padding_and_priority_are_understood() {
    let block = Encoder::new().encode(
        request("/tmp/s.sock")
            .iter()
            .map(|(n, v)| (&n[..], &v[..]))
            .collect::<Vec<_>>(),
    );
    let mut input = CLIENT_PREFACE.to_vec();
    let (half, rest) = block.split_at(block.len() / 2);
    let payload = [&[3u8][..], &[0, 0, 0, 0, 15], half, &[0, 0, 0]].concat();
    frame_header(
        payload.len(),
        HEADERS,
        PADDED | PRIORITY | END_STREAM,
        7,
        &mut input,
    );
    input.extend(payload);
    frame_header(rest.len(), CONTINUATION, END_HEADERS, 7, &mut input);
    input.extend(rest);
    let out = rewrite(&input, 3);
    assert_eq!(out[PREFACE_LEN + 4], END_STREAM | PRIORITY | END_HEADERS);
    assert_eq!(&out[PREFACE_LEN + 9..PREFACE_LEN + 14], &[0, 0, 0, 0, 15]);
    let without_priority = [
        &out[..PREFACE_LEN],
        &{
            let mut h = Vec::new();
            let len = u32::from_be_bytes([0, out[24], out[25], out[26]]) as usize - 5;
            frame_header(len, HEADERS, END_HEADERS, 7, &mut h);
            h
        },
        &out[PREFACE_LEN + 14..],
    ]
    .concat();
    let frames = server_view(&without_priority);
    assert_eq!(frames, vec![(HEADERS, 7, Ok(request("localhost")))]);
}

#[test]
fn broken_input_is_an_error_not_a_panic() {
    let mut rewriter = Rewriter::new();
    let mut out = Vec::new();
    rewriter.feed(CLIENT_PREFACE, &mut out).unwrap();
    let mut bad = Vec::new();
    frame_header(2, HEADERS, END_HEADERS, 1, &mut bad);
    bad.extend([0xff, 0xff]);
    assert!(rewriter.feed(&bad, &mut out).is_err());

    let mut rewriter = Rewriter::new();
    let mut huge = CLIENT_PREFACE.to_vec();
    frame_header(MAX_HEADER_BLOCK + 1, HEADERS, 0, 1, &mut huge);
    assert!(rewriter.feed(&huge, &mut Vec::new()).is_err());

    let mut rewriter = Rewriter::new();
    let mut interleaved = CLIENT_PREFACE.to_vec();
    frame_header(1, HEADERS, 0, 1, &mut interleaved);
    interleaved.push(0x82);
    interleaved.extend(data_frame(1, b""));
    assert!(rewriter.feed(&interleaved, &mut Vec::new()).is_err());
}

/// What the server reads through [`AuthorityFix`], `chunk` bytes at most per read.
async fn read_through(input: &[u8], chunk: usize) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut fix = AuthorityFix::new(input);
    let mut out = Vec::new();
    let mut buf = vec![0; chunk];
    loop {
        match fix.read(&mut buf).await.unwrap() {
            0 => return out,
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn payloads_read_straight_through_match_the_rewriter() {
    let mut encoder = Encoder::new();
    let mut input = CLIENT_PREFACE.to_vec();
    input.extend(headers_frame(&mut encoder, 1, &request("/run/snarkd.sock")));
    let payload: Vec<u8> = (0..16_000u32).map(|i| (i % 251) as u8).collect();
    input.extend(data_frame(1, &payload));
    input.extend(data_frame(1, &payload));
    input.extend(headers_frame(&mut encoder, 3, &request("/run/snarkd.sock")));
    input.extend(data_frame(3, &payload[..5]));
    let expected = rewrite(&input, input.len());
    for chunk in [1, 9, 4096, 65_536] {
        let read = read_through(&input, chunk).await;
        assert!(read == expected, "reads of {chunk} bytes");
    }
    let frames = server_view(&expected);
    assert_eq!(frames[1], (0x0, 1, Err(payload.clone())));
    assert_eq!(frames[2], (0x0, 1, Err(payload.clone())));
    assert_eq!(frames[3].2.as_ref().unwrap(), &request("localhost"));
}
