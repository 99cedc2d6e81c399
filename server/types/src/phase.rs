//! What a device phase tells whoever runs it, and the small facts of the threads steps run on.

/// What the device phase tells its caller on the way. Closures `FnMut(u64)` are hooks that only
/// hear of the a/b/c release.
pub trait PhaseHooks {
    /// The a/b/c evaluations were consumed by the H computation and freed (`bytes` of them);
    /// called once, so the caller can return that memory while the multiexps still run.
    fn abc_released(&mut self, bytes: u64);
    /// One step of the phase ended (the H polynomial, or one multiexp). These are the phase's
    /// preemption points: the caller may run other work now (a deadline partition's whole
    /// device phase), and this phase resumes when it returns, with its buffers intact.
    fn step_done(&mut self) {}
    /// Whether [`PhaseHooks::step_done`] would wait if called now (the phase is preempted, or
    /// held while a deadline partition runs on its device; a held phase whose stop is set
    /// stops instead): the phase first frees what it can make again (a device phase's
    /// multiexp workspaces), so the phase it waits for finds their room.
    fn will_wait(&self) -> bool {
        false
    }
    /// Whether the phase should stop at this step boundary rather than go on (its job was
    /// cancelled or failed): asked after each `step_done`; a phase that stops returns an error
    /// and frees its device.
    fn stop_requested(&self) -> bool {
        false
    }
    /// The phase is about to hold `bytes` of host memory in all, more than its reservation was
    /// made for (a device step falling back to the CPU): true once the reservation covers that
    /// much, false when the budget cannot give it now (the step then fails, to be retried).
    fn hold_at_least(&mut self, bytes: u64) -> bool {
        let _ = bytes;
        true
    }
    /// The phase is about to hold `bytes` of host memory more than everything else it holds,
    /// until it returns (B's G2 multiexp's scalars on the host beside a device's steps): true
    /// once the reservation has grown by that much (the a/b/c release then takes back only
    /// their share), false when the budget cannot give it now (the work then runs elsewhere).
    fn hold_more(&mut self, bytes: u64) -> bool {
        let _ = bytes;
        true
    }
}

impl<F: FnMut(u64)> PhaseHooks for F {
    fn abc_released(&mut self, bytes: u64) {
        self(bytes)
    }
}

/// The text of a panic's payload (`panic!` with a literal or a formatted message).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// The calling thread's nice value (Linux keeps one per thread; 0 when it cannot be read).
#[cfg(target_os = "linux")]
pub fn current_nice() -> i32 {
    // SAFETY: getpriority(PRIO_PROCESS, tid) reads one thread's value; it returns -1 both as a
    // value and as an error, told apart by errno.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        if nice == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            nice
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_come_from_either_payload() {
        let literal = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_message(&*literal), "plain");
        let formatted = std::panic::catch_unwind(|| panic!("partition {}", 3)).unwrap_err();
        assert_eq!(panic_message(&*formatted), "partition 3");
    }
}
