//! What a worker's queues did, counted as it happens: bytes each way, kernel launches, host
//! waits (and which of them left the device idle) and the multiexps' point additions. Read as
//! [`DeviceCounters`].

use std::sync::atomic::{AtomicU64, Ordering};

use crate::groth16::DeviceCounters;

/// See the module's doc.
#[derive(Default)]
pub struct Counts {
    to_device: AtomicU64,
    from_device: AtomicU64,
    launches: AtomicU64,
    waits: AtomicU64,
    idle_waits: AtomicU64,
    additions: AtomicU64,
}

impl Counts {
    /// Everything counted so far.
    pub fn read(&self) -> DeviceCounters {
        DeviceCounters {
            bytes_to_device: self.to_device.load(Ordering::Relaxed),
            bytes_from_device: self.from_device.load(Ordering::Relaxed),
            launches: self.launches.load(Ordering::Relaxed),
            host_waits: self.waits.load(Ordering::Relaxed),
            idle_waits: self.idle_waits.load(Ordering::Relaxed),
            point_additions: self.additions.load(Ordering::Relaxed),
        }
    }

    /// `bytes` copied up.
    pub fn up(&self, bytes: u64) {
        self.to_device.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `bytes` copied down.
    pub fn down(&self, bytes: u64) {
        self.from_device.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A kernel launched.
    pub fn launch(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    /// A host wait; `work_behind`: whether work enqueued after what it waits for keeps the
    /// device busy meanwhile (else it is an idle wait too).
    pub fn wait(&self, work_behind: bool) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        if !work_behind {
            self.idle_waits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `n` curve-point additions of a multiexp's kernels.
    pub fn additions(&self, n: u64) {
        self.additions.fetch_add(n, Ordering::Relaxed);
    }
}
