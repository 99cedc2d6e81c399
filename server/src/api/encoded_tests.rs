use std::collections::HashSet;

use super::*;
use crate::fixture;

fn busy() -> Arc<StatusSnapshot> {
    Arc::new(fixture::busy())
}

#[test]
fn a_message_decodes_to_what_prost_would_have_sent() {
    let s = busy();
    let encodings = Encodings::default();
    assert!(s.jobs.len() >= 2, "the fixture lists several jobs");
    let at = fixture::TAKEN_MS + 250;
    let every = encodings.message(&s, &HashSet::new(), at);
    assert_eq!(decode(&every).unwrap(), status::snapshot(&s, &[], at));
    assert_eq!(
        every.encoded_len(),
        status::snapshot(&s, &[], at).encoded_len()
    );

    let only = vec![fixture::DONE_JOB.to_string(), "no-such-job".to_string()];
    let some = encodings.message(&s, &only.iter().cloned().collect(), at);
    let decoded = decode(&some).unwrap();
    assert_eq!(decoded, status::snapshot(&s, &only, at));
    assert_eq!(decoded.jobs.len(), 1);
    assert_eq!(decoded.jobs[0].job_id, fixture::DONE_JOB);
}

#[test]
fn streams_sending_one_snapshot_within_a_second_share_one_encoding() {
    let s = busy();
    let encodings = Encodings::default();
    let first = encodings.message(&s, &HashSet::new(), fixture::TAKEN_MS + 100);
    let same_second = encodings.message(&s, &HashSet::new(), fixture::TAKEN_MS + 900);
    assert_eq!(
        first.parts()[0].as_ptr(),
        same_second.parts()[0].as_ptr(),
        "encoded once"
    );
    assert_eq!(first.parts()[1].as_ptr(), same_second.parts()[1].as_ptr());
    // Its time is the first asker's.
    assert_eq!(
        decode(&same_second).unwrap().taken_at_unix_ms,
        fixture::TAKEN_MS + 100
    );

    // The next second is a message of its own, with the same jobs' bytes.
    let next_second = encodings.message(&s, &HashSet::new(), fixture::TAKEN_MS + 1_000);
    assert_ne!(first.parts()[0].as_ptr(), next_second.parts()[0].as_ptr());
    assert_eq!(first.parts()[1].as_ptr(), next_second.parts()[1].as_ptr());
    assert_eq!(
        decode(&next_second).unwrap().taken_at_unix_ms,
        fixture::TAKEN_MS + 1_000
    );

    // A stream following one job sends a slice of the same bytes.
    let one = encodings.message(
        &s,
        &HashSet::from([fixture::DONE_JOB.to_string()]),
        fixture::TAKEN_MS + 500,
    );
    assert_eq!(one.parts()[0].as_ptr(), first.parts()[0].as_ptr());
    let all = first.parts()[1].as_ptr_range();
    assert!(all.contains(&one.parts()[1].as_ptr()));
}

#[test]
fn an_equal_snapshot_published_anew_is_encoded_for_itself() {
    let (a, b) = (busy(), busy());
    let encodings = Encodings::default();
    let at = fixture::TAKEN_MS + 2_000;
    let from_a = encodings.message(&a, &HashSet::new(), at);
    let from_b = encodings.message(&b, &HashSet::new(), at);
    assert_ne!(from_a.parts()[0].as_ptr(), from_b.parts()[0].as_ptr());
    assert_eq!(decode(&from_a).unwrap(), decode(&from_b).unwrap());
}

/// The streams' work follows the writer's: a job view the next snapshot shares is copied, not
/// encoded again; only the changed one is, and the message is still what prost would send.
#[test]
fn a_job_view_shared_with_the_last_snapshot_is_not_encoded_again() {
    let first = busy();
    let encodings = Encodings::default();
    let at = fixture::TAKEN_MS + 100;
    encodings.message(&first, &HashSet::new(), at);
    let jobs = first.jobs.len() as u64;
    assert_eq!(encodings.encoded(), jobs, "each job encoded once");

    let mut next = (*first).clone();
    next.sequence += 1;
    let mut changed = next.jobs[0].clone();
    changed.error = Some("changed".into());
    next.jobs.insert(0, Arc::new(changed));
    let next = Arc::new(next);
    let message = encodings.message(&next, &HashSet::new(), at);
    assert_eq!(
        encodings.encoded(),
        jobs + 1,
        "only the changed view encoded"
    );
    assert_eq!(decode(&message).unwrap(), status::snapshot(&next, &[], at));
}

#[test]
fn the_entries_kept_for_the_next_snapshot_are_the_messages_own_bytes() {
    let s = busy();
    let encodings = Encodings::default();
    let message = encodings.message(&s, &HashSet::new(), fixture::TAKEN_MS + 100);
    let jobs = &message.parts()[1];
    let within = jobs.as_ptr() as usize..jobs.as_ptr() as usize + jobs.len();
    let entries = encodings.entries.lock().unwrap();
    assert_eq!(entries.len(), s.jobs.len());
    for (_, entry) in entries.values() {
        let at = entry.as_ptr() as usize;
        assert!(
            within.contains(&at) && at + entry.len() <= within.end,
            "a kept entry is a slice of the joined entries, not a copy of its own"
        );
    }
}
