//! Pins the compiled contract to the wire table of the product brief (Curio's `cuzk.v1`).
//!
//! Client and server share the generated code, so a renumbered or retyped field would pass every
//! other test while breaking Curio. This test reads the descriptor set `build.rs` compiled from
//! `proving.proto` and compares it with the brief's table, written out here by hand. The contract
//! may grow (new messages, fields, RPCs, enum values), so only what the table names is checked.

use std::collections::BTreeMap;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};

/// (RPC, request, response, server-streaming). No RPC streams requests.
const RPCS: &[(&str, &str, &str, bool)] = &[
    (
        "SubmitProof",
        "SubmitProofRequest",
        "SubmitProofResponse",
        false,
    ),
    (
        "AwaitProof",
        "AwaitProofRequest",
        "AwaitProofResponse",
        false,
    ),
    ("Prove", "ProveRequest", "ProveResponse", false),
    (
        "CancelProof",
        "CancelProofRequest",
        "CancelProofResponse",
        false,
    ),
    ("GetStatus", "GetStatusRequest", "GetStatusResponse", false),
    (
        "GetMetrics",
        "GetMetricsRequest",
        "GetMetricsResponse",
        false,
    ),
    (
        "PreloadSRS",
        "PreloadSrsRequest",
        "PreloadSrsResponse",
        false,
    ),
    ("EvictSRS", "EvictSrsRequest", "EvictSrsResponse", false),
    // snarkd's addition (issue 2): a server stream of snapshots.
    (
        "StreamStatus",
        "StreamStatusRequest",
        "StatusSnapshot",
        true,
    ),
];

/// One field: (number, name, type, repeated). A type is a scalar's proto name, or the
/// fully-qualified name of an enum or message.
type Field = (i32, &'static str, &'static str, bool);

const ONE: bool = false;
const MANY: bool = true;

/// Every message of the brief's table with its fields, in the table's order.
const MESSAGES: &[(&str, &[Field])] = &[
    (
        "SubmitProofRequest",
        &[
            (1, "request_id", "string", ONE),
            (2, "proof_kind", ".cuzk.v1.ProofKind", ONE),
            (3, "sector_size", "uint64", ONE),
            (4, "registered_proof", "uint64", ONE),
            (5, "priority", ".cuzk.v1.Priority", ONE),
            (10, "vanilla_proof", "bytes", ONE),
            (11, "vanilla_proofs", "bytes", MANY),
            (20, "sector_number", "uint64", ONE),
            (21, "miner_id", "uint64", ONE),
            (22, "randomness", "bytes", ONE),
            (23, "partition_index", "uint32", ONE),
            (30, "comm_r_old", "bytes", ONE),
            (31, "comm_r_new", "bytes", ONE),
            (32, "comm_d_new", "bytes", ONE),
        ],
    ),
    (
        "SubmitProofResponse",
        &[
            (1, "job_id", "string", ONE),
            (2, "queue_position", "uint32", ONE),
            (3, "assigned_gpu", "string", ONE),
        ],
    ),
    (
        "AwaitProofRequest",
        &[
            (1, "job_id", "string", ONE),
            (2, "timeout_ms", "uint64", ONE),
        ],
    ),
    (
        "AwaitProofResponse",
        &[
            (1, "job_id", "string", ONE),
            (2, "status", ".cuzk.v1.AwaitProofResponse.Status", ONE),
            (3, "proof", "bytes", ONE),
            (4, "error_message", "string", ONE),
            (10, "queue_wait_ms", "uint64", ONE),
            (11, "srs_load_ms", "uint64", ONE),
            (12, "synthesis_ms", "uint64", ONE),
            (13, "gpu_compute_ms", "uint64", ONE),
            (14, "total_ms", "uint64", ONE),
        ],
    ),
    (
        "ProveRequest",
        &[(1, "submit", ".cuzk.v1.SubmitProofRequest", ONE)],
    ),
    (
        "ProveResponse",
        &[(1, "result", ".cuzk.v1.AwaitProofResponse", ONE)],
    ),
    ("CancelProofRequest", &[(1, "job_id", "string", ONE)]),
    ("CancelProofResponse", &[(1, "was_running", "bool", ONE)]),
    ("GetStatusRequest", &[]),
    (
        "GetStatusResponse",
        &[
            (1, "gpus", ".cuzk.v1.GPUStatus", MANY),
            (2, "loaded_srs", ".cuzk.v1.SRSStatus", MANY),
            (3, "queues", ".cuzk.v1.QueueStatus", MANY),
            (4, "total_proofs_completed", "uint64", ONE),
            (5, "total_proofs_failed", "uint64", ONE),
            (6, "uptime_seconds", "uint64", ONE),
            (7, "pinned_memory_bytes", "uint64", ONE),
            (8, "pinned_memory_limit_bytes", "uint64", ONE),
        ],
    ),
    (
        "GPUStatus",
        &[
            (1, "ordinal", "uint32", ONE),
            (2, "name", "string", ONE),
            (3, "vram_total_bytes", "uint64", ONE),
            (4, "vram_free_bytes", "uint64", ONE),
            (5, "current_job_id", "string", ONE),
            (6, "current_proof_kind", "string", ONE),
        ],
    ),
    (
        "SRSStatus",
        &[
            (1, "circuit_id", "string", ONE),
            (2, "tier", ".cuzk.v1.SRSStatus.Tier", ONE),
            (3, "size_bytes", "uint64", ONE),
            (4, "ref_count", "uint32", ONE),
        ],
    ),
    (
        "QueueStatus",
        &[
            (1, "proof_kind", "string", ONE),
            (2, "pending", "uint32", ONE),
            (3, "in_progress", "uint32", ONE),
        ],
    ),
    ("PreloadSrsRequest", &[(1, "circuit_id", "string", ONE)]),
    (
        "PreloadSrsResponse",
        &[
            (1, "already_loaded", "bool", ONE),
            (2, "load_time_ms", "uint64", ONE),
        ],
    ),
    ("EvictSrsRequest", &[(1, "circuit_id", "string", ONE)]),
    (
        "EvictSrsResponse",
        &[
            (1, "was_loaded", "bool", ONE),
            (2, "freed_bytes", "uint64", ONE),
        ],
    ),
    ("GetMetricsRequest", &[]),
    (
        "GetMetricsResponse",
        &[(1, "prometheus_text", "string", ONE)],
    ),
    // snarkd's addition (issue 2): the request the monitor and scripts send.
    (
        "StreamStatusRequest",
        &[
            (1, "min_interval_ms", "uint32", ONE),
            (2, "job_ids", "string", MANY),
        ],
    ),
];

/// Every enum of the brief's table (nested ones by their dotted path) with its values.
const ENUMS: &[(&str, &[(i32, &str)])] = &[
    (
        "ProofKind",
        &[
            (0, "PROOF_KIND_UNSPECIFIED"),
            (1, "POREP_SEAL_COMMIT"),
            (2, "SNAP_DEALS_UPDATE"),
            (3, "WINDOW_POST_PARTITION"),
            (4, "WINNING_POST"),
        ],
    ),
    (
        "Priority",
        &[
            (0, "PRIORITY_UNSPECIFIED"),
            (1, "LOW"),
            (2, "NORMAL"),
            (3, "HIGH"),
            (4, "CRITICAL"),
        ],
    ),
    (
        "AwaitProofResponse.Status",
        &[
            (0, "UNKNOWN"),
            (1, "COMPLETED"),
            (2, "FAILED"),
            (3, "CANCELLED"),
            (4, "TIMEOUT"),
        ],
    ),
    ("SRSStatus.Tier", &[(0, "HOT"), (1, "WARM"), (2, "COLD")]),
];

fn contract() -> FileDescriptorProto {
    let set = FileDescriptorSet::decode(snarkd_proto::FILE_DESCRIPTOR_SET)
        .expect("FILE_DESCRIPTOR_SET decodes");
    set.file
        .into_iter()
        .find(|f| f.package() == "cuzk.v1")
        .expect("the descriptor set holds package cuzk.v1")
}

/// Every message of the file by dotted path (`AwaitProofResponse`, nested ones included).
fn messages(file: &FileDescriptorProto) -> BTreeMap<String, &DescriptorProto> {
    fn walk<'a>(
        prefix: &str,
        list: &'a [DescriptorProto],
        out: &mut BTreeMap<String, &'a DescriptorProto>,
    ) {
        for m in list {
            let path = format!("{prefix}{}", m.name());
            walk(&format!("{path}."), &m.nested_type, out);
            out.insert(path, m);
        }
    }
    let mut out = BTreeMap::new();
    walk("", &file.message_type, &mut out);
    out
}

/// Every enum of the file by dotted path (`Priority`, `SRSStatus.Tier`).
fn enums(file: &FileDescriptorProto) -> BTreeMap<String, &EnumDescriptorProto> {
    let mut out: BTreeMap<String, &EnumDescriptorProto> = file
        .enum_type
        .iter()
        .map(|e| (e.name().to_string(), e))
        .collect();
    for (path, m) in messages(file) {
        for e in &m.enum_type {
            out.insert(format!("{path}.{}", e.name()), e);
        }
    }
    out
}

/// A field's type as the table writes it.
fn type_of(field: &prost_types::FieldDescriptorProto) -> String {
    match field.r#type() {
        Type::Message | Type::Enum => field.type_name().to_string(),
        scalar => scalar
            .as_str_name()
            .trim_start_matches("TYPE_")
            .to_ascii_lowercase(),
    }
}

#[test]
fn the_service_has_every_rpc_of_the_brief_with_its_types() {
    let file = contract();
    assert_eq!(file.syntax(), "proto3");
    let service = file
        .service
        .iter()
        .find(|s| s.name() == "ProvingEngine")
        .expect("service cuzk.v1.ProvingEngine");
    for &(name, request, response, streams) in RPCS {
        let rpc = service
            .method
            .iter()
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("rpc {name} is missing"));
        assert_eq!(rpc.input_type(), format!(".cuzk.v1.{request}"), "{name}");
        assert_eq!(rpc.output_type(), format!(".cuzk.v1.{response}"), "{name}");
        assert!(!rpc.client_streaming(), "{name} must not stream requests");
        assert_eq!(rpc.server_streaming(), streams, "{name} server streaming");
    }
}

#[test]
fn every_message_field_of_the_brief_keeps_its_number_name_type_and_label() {
    let file = contract();
    let messages = messages(&file);
    for &(message, fields) in MESSAGES {
        let descriptor = messages
            .get(message)
            .unwrap_or_else(|| panic!("message {message} is missing"));
        for &(number, name, ty, repeated) in fields {
            let field = descriptor
                .field
                .iter()
                .find(|f| f.name() == name)
                .unwrap_or_else(|| panic!("{message}.{name} is missing"));
            assert_eq!(field.number(), number, "{message}.{name} number");
            assert_eq!(type_of(field), ty, "{message}.{name} type");
            let label = if repeated {
                Label::Repeated
            } else {
                Label::Optional
            };
            assert_eq!(field.label(), label, "{message}.{name} label");
            // proto3 `optional` would change the generated type (an Option) Curio's code expects.
            assert!(
                !field.proto3_optional(),
                "{message}.{name} must be a plain proto3 field"
            );
            assert!(
                field.oneof_index.is_none(),
                "{message}.{name} must not be in a oneof"
            );
        }
    }
}

#[test]
fn every_enum_of_the_brief_keeps_its_values() {
    let file = contract();
    let enums = enums(&file);
    for &(name, values) in ENUMS {
        let descriptor = enums
            .get(name)
            .unwrap_or_else(|| panic!("enum {name} is missing"));
        for &(number, value) in values {
            let found = descriptor
                .value
                .iter()
                .find(|v| v.name() == value)
                .unwrap_or_else(|| panic!("{name}.{value} is missing"));
            assert_eq!(found.number(), number, "{name}.{value}");
        }
    }
}
