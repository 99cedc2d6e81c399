//! The thread pools that a partition's synthesis and the parallel steps of its device phase
//! run on. Work done for a thread runs at that thread's OS priority (its Linux nice value, which
//! is per thread): each kind of work has one pool per nice value, whose threads inherited that
//! value from the thread that made it. So the engine sets a partition's priority once, on the
//! thread it starts for the partition, and every task done for the partition follows. Synthesis
//! ([`install`]) and the device phase's host work ([`pool`]) have pools of their own, so a
//! device phase feeding a GPU never queues behind a synthesis of the same priority.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use rayon::ThreadPool;

pub use snarkd_types::current_nice;

/// Pools of one kind of work, by nice value.
type Pools = OnceLock<Mutex<HashMap<i32, Arc<ThreadPool>>>>;

/// The pool of `pools` for the calling thread's nice value: one thread per core, made the first
/// time a thread at that value asks (its threads inherit the value from it), kept for the life
/// of the process.
fn at_my_priority(pools: &'static Pools, name: &'static str) -> Arc<ThreadPool> {
    let nice = current_nice();
    let mut pools = pools.get_or_init(Default::default).lock();
    let pool = pools.entry(nice).or_insert_with(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .thread_name(move |i| format!("snarkd-{name}{nice:+}-{i}"))
            .build()
            .expect("the OS refused to start a thread pool");
        Arc::new(pool)
    });
    Arc::clone(pool)
}

/// The pool for the device phase's host work done on behalf of the calling thread (multiexp
/// tiles, FFT passes, scalar preparation), at its nice value.
pub fn pool() -> Arc<ThreadPool> {
    static POOLS: Pools = OnceLock::new();
    at_my_priority(&POOLS, "msm")
}

/// The pool for B's G2 multiexp run on the host beside a device's G1 steps, at the calling
/// thread's nice value: apart from [`pool`], so the host work that feeds the device (read-back
/// sums, windows combined, bases staged) never queues behind its tiles.
pub fn beside() -> Arc<ThreadPool> {
    static POOLS: Pools = OnceLock::new();
    at_my_priority(&POOLS, "b2")
}

/// Runs `f` on the synthesis pool of the calling thread's priority, or where it is when the
/// caller already runs in a rayon pool (a benchmark's, a circuit's own parallel part): a
/// partition's synthesis, witness and products, keeps to one pool of its priority.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOLS: Pools = OnceLock::new();
    match rayon::current_thread_index() {
        Some(_) => f(),
        None => at_my_priority(&POOLS, "syn").install(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_runs_at_the_priority_of_the_thread_that_asks() {
        let base = current_nice();
        let (mine, in_pool) = std::thread::spawn(|| {
            // SAFETY: nice(2) lowers only the calling thread's priority on Linux.
            unsafe { libc::nice(5) };
            (current_nice(), pool().install(current_nice))
        })
        .join()
        .unwrap();
        assert_eq!(in_pool, mine);
        assert_eq!(mine, (base + 5).min(19));
        assert_eq!(pool().install(current_nice), base);
    }

    #[test]
    fn install_runs_in_the_priority_synthesis_pool_and_stays_in_a_pool_it_is_in() {
        let name = || std::thread::current().name().map(str::to_string);
        let outside = install(name).unwrap();
        assert!(outside.starts_with("snarkd-syn"), "{outside}");
        assert_eq!(install(current_nice), current_nice());
        let other = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "other".into())
            .build()
            .unwrap();
        assert_eq!(other.install(|| install(name)).as_deref(), Some("other"));
    }
}
