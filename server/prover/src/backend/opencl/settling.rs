//! [`Settling`]: what must outlive device work the host has not waited for. A multiexp
//! pipeline dropped with a chunk in flight (a panic in a step unwinds through it) leaves the
//! host buffers its read-backs write and the room its device buffers take: the buffers
//! themselves are freed by the OpenCL runtime once the commands using them have run, but the
//! read-backs' host memory and the pool's grant must wait for that too. They are kept here
//! until the queue's next successful [`super::DeviceQueue::finish`], which every path after
//! such a drop takes (the fault policy's wait after a failed step, the partition's close).

use std::sync::{Arc, Mutex, MutexGuard};

/// The things a queue's next successful wait lets go (cloned handles share one list).
#[derive(Clone, Default)]
pub struct Settling(Arc<Mutex<Vec<Box<dyn Send>>>>);

impl Settling {
    /// Keeps `thing` until the queue's next successful wait; never lets it go where the queue
    /// is gone (no wait will come: a copy may still write it).
    pub fn keep(&self, thing: impl Send + 'static) {
        match Arc::strong_count(&self.0) {
            1 => std::mem::forget(thing),
            _ => self.list().push(Box::new(thing)),
        }
    }

    /// Whether anything waits to be let go.
    pub fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    /// Lets go what is kept: the queue has run everything enqueued before it.
    pub fn let_go(&self) {
        let kept = std::mem::take(&mut *self.list());
        drop(kept);
    }

    /// Never lets go what is kept (a queue dropped whose wait failed: a copy may still write
    /// the memory, and a grant given back would hand out room the device may still use).
    pub fn leak(&self) {
        std::mem::forget(std::mem::take(&mut *self.list()));
    }

    fn list(&self) -> MutexGuard<'_, Vec<Box<dyn Send>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_kept_goes_at_the_wait_and_never_after_a_leak() {
        let settling = Settling::default();
        let held = Arc::new(());
        let flight = settling.clone();
        flight.keep(Arc::clone(&held));
        assert!(!settling.is_empty());
        assert_eq!(Arc::strong_count(&held), 2, "kept until the wait");
        settling.let_go();
        assert!(settling.is_empty());
        assert_eq!(Arc::strong_count(&held), 1, "let go at the wait");
        settling.keep(Arc::clone(&held));
        settling.leak();
        assert!(settling.is_empty());
        assert_eq!(
            Arc::strong_count(&held),
            2,
            "a leaked thing is never dropped"
        );
        // Kept where the queue is gone: no wait will let it go, so it is never dropped.
        drop(settling);
        flight.keep(Arc::clone(&held));
        assert_eq!(Arc::strong_count(&held), 3);
    }
}
