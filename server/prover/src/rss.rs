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

/// What this process has used so far (`getrusage`): CPU seconds in user and system mode and
/// minor page faults (pages first touched, or reclaimed without I/O).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    pub minor_faults: u64,
}

impl Usage {
    /// This process's usage now.
    pub fn now() -> Usage {
        // SAFETY: all-zero is a valid `rusage`, which getrusage fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage`.
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Usage {
            user_s: secs(usage.ru_utime),
            sys_s: secs(usage.ru_stime),
            minor_faults: usage.ru_minflt as u64,
        }
    }

    /// What was used since `earlier`.
    pub fn since(self, earlier: Usage) -> Usage {
        Usage {
            user_s: self.user_s - earlier.user_s,
            sys_s: self.sys_s - earlier.sys_s,
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
        }
    }

    /// User and system seconds together.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_the_work_and_the_pages_touched_since() {
        let before = Usage::now();
        // 64 MiB first touched: at least one minor fault per 4 KiB page (fewer with huge pages,
        // never none).
        let mut v = vec![0u8; 64 << 20];
        for page in v.chunks_mut(4096) {
            page[0] = 1;
        }
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box((x, &v));
        let used = Usage::now().since(before);
        assert!(used.minor_faults > 0, "{used:?}");
        assert!(used.cpu_s() > 0.0, "{used:?}");
    }
}
