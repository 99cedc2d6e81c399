//! Benchmark 7: StreamStatus under many subscribers. `queued` WindowPoSt jobs are submitted (they
//! queue, and proofs run), then one subscriber, then `subscribers` at once, each side on a daemon
//! in the same state. Each side measures, for every subscriber, the time from its call to its
//! first message, and for `markers` jobs submitted one by one while it streams, the time from the
//! moment the engine took the job (the job's `submitted_at_unix_ms`, on this host's clock) to
//! the message that first lists it: change to client. A (subscriber, marker) pair never seen is
//! counted. The daemon's CPU time (all of it, and that of its async runtime's threads, which do
//! the streaming) and RSS over each side are read from `/proc`.
//!
//! Subscribers only walk the fields of what they receive (the job ids, and the submit time of a
//! job not seen before), so the client takes as little as it can of the cores it shares with the
//! daemon: decoding a thousand streams of hundreds of jobs with prost takes more CPU than the
//! daemon spends sending them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use bytes::{Buf, Bytes};
use prost::encoding::{decode_key, decode_varint, WireType};
use snarkd_proto::v1 as pb;
use snarkd_prover::ProofInput;
use tokio_stream::StreamExt;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::transport::{Channel, Endpoint};
use tonic::Status;
use tonic_prost::ProstCodec;

use super::daemon::Daemon;
use super::{ms, preload, Row};
use crate::client::Client;
use crate::remote::request_id;
use crate::request::to_wire;

/// How the run is shaped.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub subscribers: usize,
    pub queued: usize,
    /// HTTP/2 connections the subscribers share (a browser tab has one of its own; one
    /// process opening a thousand would only measure the process's file limit).
    pub connections: usize,
    pub markers: usize,
    pub min_interval_ms: u32,
    /// Each stream's HTTP/2 receive window (KiB; 0: tonic's default).
    pub window_kib: u32,
}

impl Shape {
    /// The run `o` asks for: 20 streams a connection.
    pub fn of(o: &super::Options) -> Shape {
        Shape {
            subscribers: o.subscribers,
            queued: o.subscribers_queued,
            connections: o.subscribers.div_ceil(20),
            markers: o.subscribers_markers,
            min_interval_ms: o.subscribers_interval_ms,
            window_kib: o.subscribers_window_kib,
        }
    }

    /// `env` with limits that let every subscriber stream and every job queue.
    pub fn daemon_env(&self, mut env: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
        env.push((
            "SNARKD_LIMITS_STATUS_STREAMS",
            (self.subscribers + 1).to_string(),
        ));
        env.push((
            "SNARKD_LIMITS_QUEUED_JOBS",
            (self.queued + 4 * self.markers).to_string(),
        ));
        env
    }
}

/// What one side measured.
pub(super) struct Side {
    pub subscribers: usize,
    /// Call to first message, per subscriber.
    pub first: Vec<Duration>,
    /// Engine's taking of a marker job to the message listing it, per (subscriber, marker).
    pub change: Vec<Duration>,
    /// (subscriber, marker) pairs never seen, of `pairs`.
    pub unseen: usize,
    pub pairs: usize,
    /// Daemon CPU seconds per second while the side streamed: (the whole process, its runtime).
    pub cpu: (f64, f64),
    /// Daemon RSS with the side's streams open.
    pub rss: u64,
    /// Messages and bytes all subscribers received per second.
    pub messages_per_s: f64,
    pub bytes_per_s: f64,
}

/// Both sides on one daemon: one subscriber, then `shape.subscribers`.
pub(super) async fn run(d: &Daemon, wpost: &ProofInput, shape: Shape) -> Result<[Side; 2]> {
    let mut client = d.client().await?;
    preload(client.clone(), "wpost-2k").await?;
    for _ in 0..shape.queued {
        submit(&mut client, wpost).await?;
    }
    eprintln!("7/7 subscribers: {} jobs queued", shape.queued);
    let channels = connect(&d.addr, shape.connections, shape.window_kib).await?;
    let one = side(d, &mut client, wpost, &channels, 1, shape).await?;
    let many = side(d, &mut client, wpost, &channels, shape.subscribers, shape).await?;
    Ok([one, many])
}

async fn side(
    d: &Daemon,
    client: &mut Client,
    wpost: &ProofInput,
    channels: &[Channel],
    subscribers: usize,
    shape: Shape,
) -> Result<Side> {
    eprintln!("7/7 subscribers: {subscribers} subscribing");
    let seen = Arc::new(Mutex::new(Vec::<Received>::new()));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for i in 0..subscribers {
        let channel = channels[i % channels.len()].clone();
        let (seen, first, stopped) = (seen.clone(), first_tx.clone(), stopped.clone());
        let interval = shape.min_interval_ms;
        tasks.push(tokio::spawn(async move {
            subscribe(channel, interval, first, seen, stopped).await
        }));
    }
    drop(first_tx);
    let mut first = Vec::with_capacity(subscribers);
    while first.len() < subscribers {
        match tokio::time::timeout(Duration::from_secs(120), first_rx.recv()).await {
            Ok(Some(latency)) => first.push(latency),
            Ok(None) => bail!("a subscriber ended before its first message"),
            Err(_) => bail!(
                "{} of {subscribers} subscribers had no first message in 120 s",
                subscribers - first.len()
            ),
        }
    }

    let (cpu_at, started) = (Cpu::read(d.pid())?, Instant::now());
    let mut markers = Vec::with_capacity(shape.markers);
    for _ in 0..shape.markers {
        markers.push(submit(client, wpost).await?);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let elapsed = started.elapsed();
    let cpu = Cpu::read(d.pid())?.since(&cpu_at, elapsed);
    let rss = d.rss()?;
    stop.send(true)?;
    for task in tasks {
        task.await??;
    }

    let seen = std::mem::take(&mut *seen.lock().expect("seen lock"));
    let mut change = Vec::new();
    let mut unseen = 0;
    for received in &seen {
        for id in &markers {
            match received.new.get(id.as_bytes()) {
                Some(latency) => change.push(*latency),
                None => unseen += 1,
            }
        }
    }
    Ok(Side {
        subscribers,
        first,
        change,
        unseen,
        pairs: subscribers * markers.len(),
        cpu,
        rss,
        // Counted from the first message on, so a little more than the timed window's share.
        messages_per_s: seen.iter().map(|r| r.messages).sum::<usize>() as f64
            / elapsed.as_secs_f64(),
        bytes_per_s: seen.iter().map(|r| r.bytes).sum::<usize>() as f64 / elapsed.as_secs_f64(),
    })
}

/// The subscribers run's rows: each figure with one subscriber beside it with many.
pub(super) fn rows(sides: &[Side; 2], shape: Shape) -> Vec<Row> {
    let [one, many] = sides;
    let label = |s: &Side| {
        format!(
            "{} subscriber{}, {} jobs queued, {} ms interval{}",
            s.subscribers,
            if s.subscribers == 1 { "" } else { "s" },
            shape.queued,
            shape.min_interval_ms,
            match shape.window_kib {
                0 => String::new(),
                kib => format!(", {kib} KiB windows"),
            }
        )
    };
    let p99 = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        crate::summary::percentile_of(&v, 99.0).map_or(f64::NAN, |d| ms(*d))
    };
    let row = |name: &str, (a, b): (f64, f64), target| Row {
        name: name.into(),
        baseline: (label(one), a),
        snarkd: (label(many), b),
        ratio: b / a,
        target,
    };
    let unseen = |s: &Side| s.unseen as f64 / s.pairs.max(1) as f64;
    let (first, change) = (
        (p99(&one.first), p99(&many.first)),
        (p99(&one.change), p99(&many.change)),
    );
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    vec![
        row(
            "StreamStatus: first message p99 (ms)",
            first,
            Some(("< 1000 ms", first.1 < 1000.0)),
        ),
        row(
            "StreamStatus: change to client p99 (ms)",
            change,
            Some(("< 250 ms", change.1 < 250.0)),
        ),
        row(
            "StreamStatus: (subscriber, job) pairs never seen, share",
            (unseen(one), unseen(many)),
            Some(("0", many.unseen == 0)),
        ),
        row(
            "daemon CPU while streaming (cores: whole process)",
            (one.cpu.0, many.cpu.0),
            None,
        ),
        row(
            "daemon CPU while streaming (cores: async runtime threads)",
            (one.cpu.1, many.cpu.1),
            None,
        ),
        row(
            "StreamStatus: messages received per second, all subscribers",
            (one.messages_per_s, many.messages_per_s),
            None,
        ),
        row(
            "StreamStatus: MiB received per second, all subscribers",
            (
                one.bytes_per_s / (1 << 20) as f64,
                many.bytes_per_s / (1 << 20) as f64,
            ),
            None,
        ),
        row(
            "daemon RSS with the streams open (MiB)",
            (mib(one.rss), mib(many.rss)),
            None,
        ),
    ]
}

/// A WindowPoSt job submitted (not awaited) as NORMAL work, so that its proving threads run
/// below the subscribers, which share the daemon's cores here (on a real box they are elsewhere);
/// its job id.
async fn submit(client: &mut Client, wpost: &ProofInput) -> Result<String> {
    let submit = to_wire(wpost, pb::Priority::Normal, request_id(0));
    Ok(client
        .submit_proof(submit)
        .await
        .context("SubmitProof")?
        .into_inner()
        .job_id)
}

/// `n` HTTP/2 connections, with receive windows of `window_kib` a stream and 20 times that a
/// connection (0: tonic's, that is hyper's, defaults). A window is what a client lets the daemon
/// send ahead of its reading: a subscriber slower than the messages reads that much old data
/// before the new.
async fn connect(addr: &str, n: usize, window_kib: u32) -> Result<Vec<Channel>> {
    let mut channels = Vec::with_capacity(n);
    let window = (window_kib > 0).then(|| window_kib * 1024);
    for _ in 0..n {
        channels.push(
            Endpoint::from_shared(addr.to_string())?
                .initial_stream_window_size(window)
                .initial_connection_window_size(window.map(|w| w * 20))
                .connect()
                .await
                .with_context(|| format!("connecting to {addr}"))?,
        );
    }
    Ok(channels)
}

/// One subscriber: reports its first message's latency, then notes when it first saw each job
/// submitted after the newest its first message listed (as a latency from the job's submit
/// time) until `stopped`.
async fn subscribe(
    channel: Channel,
    min_interval_ms: u32,
    first: tokio::sync::mpsc::UnboundedSender<Duration>,
    seen: Arc<Mutex<Vec<Received>>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let called = Instant::now();
    let mut grpc = tonic::client::Grpc::new(channel).max_decoding_message_size(usize::MAX);
    grpc.ready().await?;
    let request = pb::StreamStatusRequest {
        min_interval_ms,
        job_ids: Vec::new(),
    };
    let path = http::uri::PathAndQuery::from_static("/cuzk.v1.ProvingEngine/StreamStatus");
    let mut stream = grpc
        .server_streaming(tonic::Request::new(request), path, RawCodec)
        .await
        .context("StreamStatus")?
        .into_inner();
    let mut newest_known = 0;
    let mut new: HashMap<Bytes, Duration> = HashMap::new();
    let (mut messages, mut bytes) = (0, 0);
    loop {
        let message = tokio::select! {
            m = stream.next() => m,
            _ = stopped.wait_for(|s| *s) => break,
        };
        let Some(message) = message else {
            bail!("the daemon ended a status stream")
        };
        let message = message.context("StreamStatus message")?;
        let now = unix_ms();
        bytes += message.len();
        for job in listed_jobs(&message)? {
            // Jobs are listed oldest submit first; those the first message listed are known.
            if messages == 0 {
                newest_known = newest_known.max(submitted_at(&job)?);
                continue;
            }
            let submitted = submitted_at(&job)?;
            if submitted > newest_known {
                let id = job_id(&job)?;
                new.entry(id)
                    .or_insert_with(|| Duration::from_millis(now.saturating_sub(submitted)));
            }
        }
        if messages == 0 {
            let _ = first.send(called.elapsed());
        }
        messages += 1;
    }
    seen.lock().expect("seen lock").push(Received {
        new,
        messages,
        bytes,
    });
    Ok(())
}

/// What one subscriber received: when it first saw each job its first message did not list,
/// and how much.
struct Received {
    new: HashMap<Bytes, Duration>,
    messages: usize,
    bytes: usize,
}

/// Fields of a protobuf message as (field number, value): a length-delimited field's bytes, or
/// nothing for the others.
fn fields(message: &Bytes) -> Result<Vec<(u32, Field)>> {
    let mut rest = &message[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (tag, wire) = decode_key(&mut rest)?;
        let field = match wire {
            WireType::Varint => {
                decode_varint(&mut rest)?;
                Field::Other
            }
            WireType::LengthDelimited => {
                let len = decode_varint(&mut rest)? as usize;
                let start = message.len() - rest.len();
                if len > rest.len() {
                    bail!("a field runs past its message");
                }
                rest = &rest[len..];
                Field::Bytes(message.slice(start..start + len))
            }
            WireType::SixtyFourBit => {
                rest = rest
                    .get(8..)
                    .context("a fixed64 field runs past its message")?;
                Field::Other
            }
            WireType::ThirtyTwoBit => {
                rest = rest
                    .get(4..)
                    .context("a fixed32 field runs past its message")?;
                Field::Other
            }
            other => bail!("unexpected wire type {other:?}"),
        };
        out.push((tag, field));
    }
    Ok(out)
}

enum Field {
    Other,
    Bytes(Bytes),
}

/// The `jobs` entries (field 4) of a StatusSnapshot, as their own encodings.
fn listed_jobs(message: &Bytes) -> Result<Vec<Bytes>> {
    Ok(fields(message)?
        .into_iter()
        .filter_map(|(tag, f)| match (tag, f) {
            (4, Field::Bytes(job)) => Some(job),
            _ => None,
        })
        .collect())
}

/// A JobStatus's `job_id` (field 1), as a slice of it. prost writes fields in order, so it is
/// the first; anything else is parsed the long way.
fn job_id(job: &Bytes) -> Result<Bytes> {
    if job.first() == Some(&0x0a) {
        let mut rest = &job[1..];
        let len = decode_varint(&mut rest)? as usize;
        let start = job.len() - rest.len();
        if start + len <= job.len() {
            return Ok(job.slice(start..start + len));
        }
    }
    fields(job)?
        .into_iter()
        .find_map(|(tag, f)| match (tag, f) {
            (1, Field::Bytes(id)) => Some(id),
            _ => None,
        })
        .context("a listed job has no job_id")
}

/// A JobStatus's `submitted_at_unix_ms` (field 5), read up to where it is (prost writes fields
/// in order).
fn submitted_at(job: &Bytes) -> Result<u64> {
    let mut rest = &job[..];
    while !rest.is_empty() {
        let (tag, wire) = decode_key(&mut rest)?;
        match wire {
            WireType::Varint => {
                let v = decode_varint(&mut rest)?;
                if tag == 5 {
                    return Ok(v);
                }
            }
            WireType::LengthDelimited => {
                let len = decode_varint(&mut rest)? as usize;
                rest = rest.get(len..).context("a field runs past its job")?;
            }
            other => bail!("unexpected wire type {other:?} in a job"),
        }
        if tag > 5 {
            break;
        }
    }
    Ok(0)
}

/// StreamStatus as it comes: requests encoded by prost, messages handed over as bytes.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = pb::StreamStatusRequest;
    type Decode = Bytes;
    type Encoder = <ProstCodec<pb::StreamStatusRequest, pb::StatusSnapshot> as Codec>::Encoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<pb::StreamStatusRequest, pb::StatusSnapshot>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        let len = src.remaining();
        Ok(Some(src.copy_to_bytes(len)))
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// CPU ticks of a process: all its threads, and its async runtime's (`snarkd-rt`: the workers,
/// which serve every stream, and the blocking threads, which decode the submitted markers).
struct Cpu {
    all: u64,
    runtime: u64,
}

impl Cpu {
    fn read(pid: u32) -> Result<Cpu> {
        let mut cpu = Cpu { all: 0, runtime: 0 };
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            let Ok(stat) = std::fs::read_to_string(task?.path().join("stat")) else {
                continue; // the thread ended meanwhile
            };
            // `pid (comm) state ...`: comm may hold spaces, so split at its closing parenthesis.
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are fields 14 and 15, the 12th and 13th after the comm.
            let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
            cpu.all += ticks;
            if head.ends_with("snarkd-rt") {
                cpu.runtime += ticks;
            }
        }
        Ok(cpu)
    }

    /// CPU seconds per second since `earlier`, `elapsed` ago: (all, runtime).
    fn since(&self, earlier: &Cpu, elapsed: Duration) -> (f64, f64) {
        // SAFETY: sysconf only reads a constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let rate =
            |now: u64, then: u64| now.saturating_sub(then) as f64 / hz / elapsed.as_secs_f64();
        (
            rate(self.all, earlier.all),
            rate(self.runtime, earlier.runtime),
        )
    }
}
