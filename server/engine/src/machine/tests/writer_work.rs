//! The writer's work per input, counted where it is done (job records read, job views built):
//! the same with ten jobs queued as with five thousand. One input here is what the driver does
//! for it: apply it, then build the snapshot that shows it if the machine's version moved.

use super::*;
use crate::IntakeLimits;

/// The work each step of one round of ordinary inputs took, by step, behind `queued` jobs.
fn work_of_a_round(queued: usize) -> Vec<(&'static str, WriterWork)> {
    let mut h = Harness::new(1 << 40, 1, 1);
    h.machine.config.limits = IntakeLimits {
        queued_jobs: 2 * queued + 10,
        queued_input_bytes: u64::MAX,
    };
    let porep = |h: &mut Harness| {
        h.submit_with_input(ProofKind::PorepSealCommit, Priority::Normal, 10, 1000, 100)
            .expect("accepted")
            .job_id
    };
    // The first job synthesizes (the only synthesis thread is busy); the rest wait behind it.
    let running = porep(&mut h);
    while let Some(i) = (h.pending.iter()).position(|e| matches!(e, Effect::LoadParams { .. })) {
        h.complete(i, false);
    }
    let mut waiting: Vec<String> = (0..queued).map(|_| porep(&mut h)).collect();
    h.machine.snapshot();

    let mut steps = Vec::new();
    let mut step = |h: &mut Harness, name: &'static str, input: &mut dyn FnMut(&mut Harness)| {
        let (before, version) = (h.machine.work(), h.machine.version());
        input(h);
        if h.machine.version() != version {
            h.machine.snapshot();
        }
        let after = h.machine.work();
        steps.push((
            name,
            WriterWork {
                jobs_visited: after.jobs_visited - before.jobs_visited,
                views_rebuilt: after.views_rebuilt - before.views_rebuilt,
            },
        ));
    };
    step(&mut h, "submit", &mut |h| {
        porep(h);
    });
    step(&mut h, "cancel of an unknown job", &mut |h| {
        assert!(h.cancel("no-such-job").is_err());
    });
    step(&mut h, "synthesized", &mut |h| {
        let i = h.find(|e| matches!(e, Effect::Synthesize { .. }));
        h.complete(i, false);
    });
    step(&mut h, "proved", &mut |h| {
        let i = h.find(|e| matches!(e, Effect::Prove { .. }));
        h.complete(i, false);
    });
    step(&mut h, "deadline submit", &mut |h| {
        h.submit(ProofKind::WinningPost, Priority::Critical, 1, 10)
            .expect("accepted");
    });
    step(&mut h, "cancel a queued job", &mut |h| {
        let job = waiting.pop().expect("jobs wait");
        assert_eq!(h.cancel(&job), Ok(false));
    });
    step(&mut h, "cancel the running job", &mut |h| {
        assert_eq!(h.cancel(&running), Ok(true));
    });
    step(&mut h, "tick", &mut |h| h.apply(Input::Tick));
    step(&mut h, "nothing changed", &mut |_| {});
    steps
}

#[test]
fn the_writers_work_per_input_does_not_grow_with_the_queue() {
    let small = work_of_a_round(10);
    let large = work_of_a_round(5000);
    assert_eq!(small, large, "work per input, 10 jobs queued against 5000");
    for (name, work) in &small {
        // A step reads a few jobs and builds the views of the jobs it changed (and of those
        // whose memory a step's thread holds), never all of them.
        assert!(
            work.jobs_visited <= 40 && work.views_rebuilt <= 3,
            "{name}: {work:?}"
        );
    }
    let nothing = small.last().expect("steps").1;
    assert_eq!(
        nothing,
        WriterWork::default(),
        "an input that changes nothing costs nothing"
    );
    eprintln!("{small:?}");
}
