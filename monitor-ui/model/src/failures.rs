//! The failure log's rows: the daemon's last failed jobs and refused requests, newest first.
//! They never fade (unlike finished job rows): the daemon drops an entry only when newer ones
//! push it out of its log.

use snarkd_proto::v1::{Failure, ProofKind};

use crate::{format, labels};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FailureRow {
    /// "12 s ago", as of the page's now on the daemon's clock.
    pub when: String,
    pub kind: &'static str,
    /// `refused`, `params`, `synthesis`, `device`, `finalize` or `journal`.
    pub stage: String,
    /// "refused at submit (INVALID_ARGUMENT; input)" or "failed in device (device)": what
    /// happened, and whose fault it was (the daemon's class: input, setup, resource, device, bug).
    pub what: String,
    pub request_id: String,
    /// Empty for a refused request (it never became a job).
    pub job_id: String,
    /// The whole message the client got.
    pub message: String,
}

pub fn failure_rows(failures: &[Failure], now_ms: u64) -> Vec<FailureRow> {
    failures
        .iter()
        .map(|f| FailureRow {
            when: format!(
                "{} ago",
                format::duration_ms(now_ms.saturating_sub(f.at_unix_ms))
            ),
            kind: match f.proof_kind() {
                ProofKind::Unspecified => "kind unknown",
                kind => labels::kind(kind),
            },
            stage: f.stage.clone(),
            what: what(f),
            request_id: f.request_id.clone(),
            job_id: f.job_id.clone(),
            message: f.message.clone(),
        })
        .collect()
}

/// What happened, in words, with whose fault it was where the daemon said.
fn what(f: &Failure) -> String {
    let said: Vec<&str> = [f.code.as_str(), f.class.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    let how = match f.stage.as_str() {
        "refused" => "refused at submit".to_string(),
        stage => format!("failed in {stage}"),
    };
    match said.is_empty() {
        true => how,
        false => format!("{how} ({})", said.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_say_what_happened_when_and_to_which_request() {
        let failures = [
            Failure {
                at_unix_ms: 50_000,
                proof_kind: ProofKind::WinningPost as i32,
                request_id: "winpost-1".into(),
                stage: "refused".into(),
                code: "INVALID_ARGUMENT".into(),
                class: "input".into(),
                message: "vanilla_proofs is empty".into(),
                ..Default::default()
            },
            Failure {
                at_unix_ms: 10_000,
                proof_kind: ProofKind::SnapDealsUpdate as i32,
                request_id: "snap-1".into(),
                job_id: "j-1".into(),
                stage: "params".into(),
                class: "setup".into(),
                message: "params snap-2k failed to load".into(),
                ..Default::default()
            },
        ];
        // An hour later the rows are still there, unfaded, with their age.
        let rows = failure_rows(&failures, 3_610_000);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].what, "refused at submit (INVALID_ARGUMENT; input)");
        assert_eq!(
            (rows[0].kind, rows[0].job_id.as_str()),
            ("winning-post", "")
        );
        assert_eq!(rows[1].what, "failed in params (setup)");
        assert_eq!(
            rows[1].when,
            format!("{} ago", format::duration_ms(3_600_000))
        );
        assert_eq!(rows[1].message, "params snap-2k failed to load");
    }
}
