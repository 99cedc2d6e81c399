//! The browser tab's title: what a glance at the tab bar should tell, over every daemon watched.

use crate::Dashboard;

/// One daemon's share of the title: whether its stream is live, and its dashboard if one was
/// ever shown.
pub struct Watched<'a> {
    pub live: bool,
    pub dashboard: Option<&'a Dashboard>,
}

/// "snarkd · 3 running · 1 failed": jobs queued or running and failed jobs still listed, summed
/// over the daemons; daemons whose stream is not live are counted out loud ("1 of 2
/// disconnected"); "snarkd · idle" when nothing runs.
pub fn tab_title(watched: &[Watched<'_>]) -> String {
    let jobs = watched
        .iter()
        .filter_map(|w| w.dashboard)
        .flat_map(|d| &d.jobs);
    let (mut running, mut failed) = (0, 0);
    for job in jobs {
        match job.state {
            "queued" | "running" => running += 1,
            "failed" => failed += 1,
            _ => {}
        }
    }
    let mut parts = vec!["snarkd".to_string()];
    let down = watched.iter().filter(|w| !w.live).count();
    match (down, watched.len()) {
        (0, _) => {}
        (_, 1) => parts.push("disconnected".into()),
        (down, all) => parts.push(format!("{down} of {all} disconnected")),
    }
    if running > 0 {
        parts.push(format!("{running} running"));
    }
    if failed > 0 {
        parts.push(format!("{failed} failed"));
    }
    if parts.len() == 1 {
        parts.push("idle".into());
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobRow;

    fn dashboard(states: &[&'static str]) -> Dashboard {
        let jobs = states
            .iter()
            .map(|state| JobRow {
                state,
                ..JobRow::default()
            })
            .collect();
        Dashboard {
            jobs,
            ..Dashboard::default()
        }
    }

    #[test]
    fn the_title_counts_running_and_failed_jobs_and_disconnected_daemons() {
        let a = dashboard(&["running", "queued", "completed", "failed"]);
        let b = dashboard(&["running"]);
        let live = |d| Watched {
            live: true,
            dashboard: Some(d),
        };
        assert_eq!(tab_title(&[live(&a)]), "snarkd · 2 running · 1 failed");
        assert_eq!(
            tab_title(&[live(&a), live(&b)]),
            "snarkd · 3 running · 1 failed"
        );
        let lost = Watched {
            live: false,
            dashboard: Some(&b),
        };
        assert_eq!(
            tab_title(&[live(&a), lost]),
            "snarkd · 1 of 2 disconnected · 3 running · 1 failed"
        );
        let never = Watched {
            live: false,
            dashboard: None,
        };
        assert_eq!(tab_title(&[never]), "snarkd · disconnected");
        assert_eq!(
            tab_title(&[live(&dashboard(&["completed"]))]),
            "snarkd · idle"
        );
    }
}
