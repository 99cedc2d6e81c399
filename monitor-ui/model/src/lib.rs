//! The monitor's view model: everything the dashboard decides about a `StatusSnapshot` (labels,
//! colours, durations, order, fade-out, the memory bar, reconnect timing, which daemons to watch),
//! as plain functions and structs with no web dependency, so it is tested natively in
//! `cargo test --workspace`. The browser app (`monitor-ui/app`) only renders these structs.
//!
//! Layout:
//! - `format`: durations, ages and byte sizes as short human text.
//! - `labels`: proof kinds, priorities and states as text and CSS classes (the colours live in
//!   the app's stylesheet, one class per state).
//! - `jobs`: one row per job (order, fade-out, partition cells with their hover text).
//! - `failures`: the failure log's rows (failed jobs and refused requests; they never fade).
//! - `summary`: the strip at the top (per kind: where work is, rates, latency; busy share; a
//!   bar per minute of the last hour).
//! - `load`: the strip's charts of memory in use and partitions waiting and running over the hour.
//! - `dashboard`: the whole page for one daemon, built from a snapshot.
//! - `devices`: a device's readings (NVML, snarkd's device-memory pool) on its workers' chips.
//! - `connection`: the stream's connection state, the reconnect backoff and what the page says
//!   about the link (never reached or lost, countdown, stale mark).
//! - `daemons`: which daemons the page watches (`?daemon=URL&daemon=URL`).
//! - `title`: the tab title over every daemon watched.

pub mod connection;
pub mod daemons;
pub mod dashboard;
pub mod devices;
pub mod failures;
pub mod format;
pub mod jobs;
pub mod labels;
pub mod load;
pub mod summary;
pub mod title;

pub use connection::{backoff_ms, Connection, Link};
pub use daemons::daemon_urls;
pub use dashboard::Dashboard;
pub use jobs::{JobRow, PartitionCell};
pub use title::{tab_title, Watched};
