//! `[scheduler]`: the priority a request of each kind gets when it leaves `priority` unspecified,
//! and the most it may claim. A client's priority is a request, not a right: a PoRep that asks
//! for CRITICAL would push WinningPoSt (a block reward due in seconds) back, so it is lowered to
//! its kind's ceiling.

use serde::Deserialize;
use snarkd_engine::{Priority, ProofKind};

/// `[scheduler]`: each kind's usual priority and its ceiling.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    pub porep_priority: Priority,
    pub snap_priority: Priority,
    pub wpost_priority: Priority,
    pub winning_priority: Priority,
    pub porep_max_priority: Priority,
    pub snap_max_priority: Priority,
    pub wpost_max_priority: Priority,
    pub winning_max_priority: Priority,
    /// Nice steps below the daemon's own priority for the threads of NORMAL and LOW partitions
    /// (synthesis and device phase); 0 runs all work at the daemon's priority.
    pub background_nice: i32,
    /// A WinningPoSt or WindowPoSt partition that finds every device worker busy with PoRep or
    /// SnapDeals work starts on one at once; the running phase pauses at its next step boundary.
    pub preempt: bool,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        SchedulerSection {
            porep_priority: Priority::Normal,
            snap_priority: Priority::Normal,
            wpost_priority: Priority::High,
            winning_priority: Priority::Critical,
            porep_max_priority: Priority::Normal,
            snap_max_priority: Priority::Normal,
            wpost_max_priority: Priority::High,
            winning_max_priority: Priority::Critical,
            background_nice: 19,
            preempt: true,
        }
    }
}

impl SchedulerSection {
    /// The priority of a request of `kind` that does not set one.
    pub fn default_priority(&self, kind: ProofKind) -> Priority {
        self.of(kind).0
    }

    /// The most a request of `kind` may claim.
    pub fn max_priority(&self, kind: ProofKind) -> Priority {
        self.of(kind).1
    }

    /// The priority a request of `kind` asking for `requested` gets: the kind's usual one when it
    /// asks for none, never more than the kind's ceiling. The flag is true when it was lowered.
    pub fn effective_priority(
        &self,
        kind: ProofKind,
        requested: Option<Priority>,
    ) -> (Priority, bool) {
        let ceiling = self.max_priority(kind);
        match requested {
            None => (self.default_priority(kind), false),
            Some(asked) if asked > ceiling => (ceiling, true),
            Some(asked) => (asked, false),
        }
    }

    /// (usual, ceiling) of `kind`.
    fn of(&self, kind: ProofKind) -> (Priority, Priority) {
        match kind {
            ProofKind::PorepSealCommit => (self.porep_priority, self.porep_max_priority),
            ProofKind::SnapDealsUpdate => (self.snap_priority, self.snap_max_priority),
            ProofKind::WindowPost => (self.wpost_priority, self.wpost_max_priority),
            ProofKind::WinningPost => (self.winning_priority, self.winning_max_priority),
        }
    }

    /// A kind's usual priority must be within its ceiling; nice steps are 0 to 19.
    pub(super) fn validate(&self) -> Result<(), (String, String)> {
        if !(0..=19).contains(&self.background_nice) {
            return Err((
                "scheduler.background_nice".into(),
                "must be 0 to 19: Linux nice steps below the daemon's priority".into(),
            ));
        }
        for kind in ProofKind::ALL {
            let (usual, ceiling) = self.of(kind);
            if usual > ceiling {
                let name = kind.as_str();
                return Err((
                    format!("scheduler.{name}_priority"),
                    format!(
                        "is above scheduler.{name}_max_priority ({}): raise the ceiling or lower \
                         the usual priority",
                        ceiling.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_above_the_kinds_ceiling_is_lowered_to_it() {
        use Priority::*;
        use ProofKind::*;
        let s = SchedulerSection::default();
        let cases = [
            (PorepSealCommit, Some(Critical), (Normal, true)),
            (SnapDealsUpdate, Some(High), (Normal, true)),
            (WindowPost, Some(Critical), (High, true)),
            (WinningPost, Some(Critical), (Critical, false)),
            (PorepSealCommit, Some(Low), (Low, false)),
            (WindowPost, None, (High, false)),
            (PorepSealCommit, None, (Normal, false)),
        ];
        for (kind, asked, expected) in cases {
            assert_eq!(
                s.effective_priority(kind, asked),
                expected,
                "{kind} asking {asked:?}"
            );
        }
        let raised = SchedulerSection {
            porep_max_priority: Priority::High,
            ..Default::default()
        };
        assert_eq!(
            raised.effective_priority(PorepSealCommit, Some(High)),
            (High, false)
        );
    }
}
