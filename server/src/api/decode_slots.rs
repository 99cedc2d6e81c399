//! The decoding slots: how many SubmitProof and Prove requests are received and decoded at once
//! (each may be 256 MiB). `[limits] decoding_requests` slots serve every kind;
//! `[limits] deadline_decoding_requests` more are kept for the deadline kinds (those whose
//! `[scheduler] <kind>_max_priority` is HIGH or CRITICAL: WindowPoSt and WinningPoSt by
//! default), so uploads of PoRep inputs, however slow or many, never leave a WinningPoSt without
//! one. A deadline kind takes a kept slot first and a shared one when those are taken.

use std::sync::Arc;

use snarkd_engine::{Priority, ProofKind};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

use crate::config::{LimitsSection, SchedulerSection};

/// One slot, in the request's extensions from the limit layer to the handler: free again once
/// every clone is dropped, which the handler does when the request is decoded and submitted (a
/// Prove call then waits for its proof without one).
#[derive(Clone)]
pub struct DecodeSlot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

/// Both pools of slots.
#[derive(Debug, Clone)]
pub struct DecodeSlots {
    shared: Arc<Semaphore>,
    kept: Arc<Semaphore>,
    shared_count: usize,
    kept_count: usize,
    deadline_kinds: Vec<ProofKind>,
}

impl DecodeSlots {
    pub fn new(limits: &LimitsSection, scheduler: &SchedulerSection) -> DecodeSlots {
        let deadline_kinds = ProofKind::ALL
            .into_iter()
            .filter(|&kind| scheduler.max_priority(kind) >= Priority::High)
            .collect();
        DecodeSlots::with(
            limits.decoding_requests,
            limits.deadline_decoding_requests,
            deadline_kinds,
        )
    }

    pub fn with(shared: usize, kept: usize, deadline_kinds: Vec<ProofKind>) -> DecodeSlots {
        DecodeSlots {
            shared: Arc::new(Semaphore::new(shared)),
            kept: Arc::new(Semaphore::new(kept)),
            shared_count: shared,
            kept_count: kept,
            deadline_kinds,
        }
    }

    /// A slot for a request of `kind` (`None` when its first bytes did not say), or
    /// RESOURCE_EXHAUSTED saying which limit is reached.
    pub fn take(&self, kind: Option<ProofKind>) -> Result<DecodeSlot, Status> {
        let deadline = kind.is_some_and(|k| self.deadline_kinds.contains(&k));
        let kept = deadline.then(|| self.kept.clone().try_acquire_owned().ok());
        kept.flatten()
            .or_else(|| self.shared.clone().try_acquire_owned().ok())
            .map(|permit| DecodeSlot(Arc::new(permit)))
            .ok_or_else(|| self.refusal(deadline))
    }

    fn refusal(&self, deadline: bool) -> Status {
        let kept = if deadline {
            format!(
                " and the deadline_decoding_requests limit ({}) too",
                self.kept_count
            )
        } else {
            String::new()
        };
        Status::resource_exhausted(format!(
            "the decoding_requests limit ({}) is reached{kept}: that many proof requests are being \
             received and decoded; retry in a moment, or raise [limits] decoding_requests",
            self.shared_count
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_kinds_have_their_own_slots_and_share_the_rest() {
        let slots = DecodeSlots::with(2, 1, vec![ProofKind::WinningPost]);
        let porep = Some(ProofKind::PorepSealCommit);
        let held: Vec<_> = (0..2).map(|_| slots.take(porep).unwrap()).collect();
        let refused = slots.take(porep).err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(refused.message().contains("decoding_requests limit (2)"));
        assert!(slots.take(None).is_err(), "an unknown kind shares");
        // The kept slot is the WinningPoSt's, and it is one.
        let winning = slots.take(Some(ProofKind::WinningPost)).unwrap();
        let refused = slots.take(Some(ProofKind::WinningPost)).err().unwrap();
        assert!(
            refused
                .message()
                .contains("deadline_decoding_requests limit (1)"),
            "{}",
            refused.message()
        );
        // A freed shared slot serves anyone; a deadline kind uses it once its own are taken.
        drop(held);
        let second = slots.take(Some(ProofKind::WinningPost)).unwrap();
        assert!(slots.take(porep).is_ok());
        drop((winning, second));
    }

    #[test]
    fn the_deadline_kinds_follow_the_ceilings() {
        let mut scheduler = SchedulerSection::default();
        let slots = DecodeSlots::new(&LimitsSection::default(), &scheduler);
        assert_eq!(
            slots.deadline_kinds,
            [ProofKind::WindowPost, ProofKind::WinningPost]
        );
        scheduler.wpost_max_priority = Priority::Normal;
        let slots = DecodeSlots::new(&LimitsSection::default(), &scheduler);
        assert_eq!(slots.deadline_kinds, [ProofKind::WinningPost]);
    }
}
