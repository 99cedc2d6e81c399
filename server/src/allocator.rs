//! The C allocator's share of the memory budget. glibc's malloc gives each thread that
//! allocates concurrently an arena of its own, up to eight per core, and memory freed in one
//! arena is reused only by the threads that land on it. A daemon with a synthesis pool, rayon
//! pools per priority and device workers then holds the high-water mark of every arena at once,
//! which the budget (charged with reservations, not with the allocator's slack) cannot see. At
//! 2 KiB the burst benchmark measured a peak of 1.11x the budget with the default arenas and
//! 1.03x with two (`snarkd-bench report --only memory`).
//!
//! snarkd therefore caps the arenas at a quarter of the cores (at least two). Contention stays
//! low at production sizes: a partition's large vectors (hundreds of MiB) are above glibc's
//! largest mmap threshold (32 MiB) and are mapped outside any arena. A `MALLOC_ARENA_MAX` in the
//! environment is the operator's choice and is left alone.

/// Caps glibc's malloc arenas unless `MALLOC_ARENA_MAX` is set; returns the cap it set.
/// Call it before the daemon starts threads.
pub fn cap_malloc_arenas() -> Option<usize> {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let arenas = (cores / 4).max(2);
    set_arena_max(arenas).then_some(arenas)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(arenas: usize) -> bool {
    let arenas = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt only changes a malloc tunable; it is called before other threads start.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_: usize) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn glibc_accepts_the_arena_cap() {
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            assert_eq!(
                super::cap_malloc_arenas(),
                None,
                "the operator's value stays"
            );
        } else {
            let cap = super::cap_malloc_arenas().expect("mallopt accepted M_ARENA_MAX");
            assert!(cap >= 2);
        }
    }
}
