//! Whose fault a failure is: one class for a refused request, a failed step and a failed job.

use std::fmt;

/// Whose fault a failure is, which says who must act and whether trying again can help. Every
/// error of the engine and the prover has one; it reaches the client's message, the failure log,
/// `snarkd_proofs_failed_total{class}` and the monitor.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The request is wrong (undecodable, inconsistent, a witness the circuit rejects, a proof
    /// that does not verify): the client must change it; sent again it fails the same way.
    Input,
    /// This machine is set up wrong (parameters missing, unreadable or of another circuit, a
    /// budget too small for the job): the operator must fix what the message names.
    Setup,
    /// Not now: memory, an intake limit, the journal's disk or a shutdown; the same request can
    /// succeed later.
    Resource,
    /// A device fault (an OpenCL error, a wrong result): the step is retried, and a new attempt
    /// may succeed.
    Device,
    /// A bug in snarkd (a panic, a broken invariant): logged with its context.
    Bug,
}

impl FailureClass {
    /// Every class, in the order above.
    pub const ALL: [FailureClass; 5] = [
        FailureClass::Input,
        FailureClass::Setup,
        FailureClass::Resource,
        FailureClass::Device,
        FailureClass::Bug,
    ];

    /// The class's name in metric labels, logs, the status and the monitor.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Input => "input",
            FailureClass::Setup => "setup",
            FailureClass::Resource => "resource",
            FailureClass::Device => "device",
            FailureClass::Bug => "bug",
        }
    }

    /// What the class means for whoever reads a failed job's message.
    pub fn meaning(self) -> &'static str {
        match self {
            FailureClass::Input => "the request is wrong; sent again, it fails the same way",
            FailureClass::Setup => "this machine is set up wrong; the operator must fix it",
            FailureClass::Resource => "out of resources now; a retry later may succeed",
            FailureClass::Device => "a device fault; a retry may succeed",
            FailureClass::Bug => "a bug in snarkd; please report it",
        }
    }

    /// The class of name `name` ([`FailureClass::as_str`]).
    pub fn from_name(name: &str) -> Option<FailureClass> {
        FailureClass::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_has_a_name_that_reads_back_and_a_meaning() {
        for class in FailureClass::ALL {
            assert_eq!(FailureClass::from_name(class.as_str()), Some(class));
            assert!(!class.meaning().is_empty());
        }
        assert_eq!(FailureClass::from_name("client"), None);
    }
}
