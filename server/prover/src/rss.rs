//! The process's peak resident set, read and reset (Linux `/proc`), for the benchmarks and the
//! production-shape measurements (feature `bench`).

/// Resets the kernel's peak-RSS counter of this process (Linux `clear_refs` 5); best effort.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set size of this process (`VmHWM`), Linux only.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
