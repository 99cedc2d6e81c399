//! OS thread priorities for the work the engine starts. Deadline work (CRITICAL and HIGH
//! partitions: WinningPoSt, WindowPoSt) keeps the process's own priority; the rest (PoRep,
//! SnapDeals) runs `background_nice` steps lower (Linux nice values are per thread), so when
//! both want the cores the OS gives them to the deadline first and PoRep continues with what is
//! left. A thread can always lower its own priority; only raising it back needs privileges, so
//! every step runs on a thread started for it.

use crate::domain::Priority;

/// Lowers the calling thread's OS priority by `background_nice` steps when `priority` is below
/// HIGH; deadline work is left as it is.
pub fn apply(priority: Priority, background_nice: i32) {
    if priority >= Priority::High || background_nice <= 0 {
        return;
    }
    let now = current_nice();
    // SAFETY: setpriority with PRIO_PROCESS and a thread id changes only that thread.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, now + background_nice) };
    if done != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "cannot lower a thread's priority");
    }
}

pub use snarkd_types::current_nice;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_work_runs_lower_and_deadline_work_does_not() {
        let on_thread = |priority| {
            std::thread::spawn(move || {
                let before = current_nice();
                apply(priority, 10);
                current_nice() - before
            })
            .join()
            .unwrap()
        };
        // 19 is the lowest priority there is: a process already near it goes no further.
        let lowered = (19 - current_nice()).min(10);
        assert_eq!(on_thread(Priority::Normal), lowered);
        assert_eq!(on_thread(Priority::Low), lowered);
        assert_eq!(on_thread(Priority::High), 0);
        assert_eq!(on_thread(Priority::Critical), 0);
    }
}
