//! The job table: one line per job with labelled columns (job id with copy, request id, kind,
//! priority, state, age or duration, summed synthesis and device times, the partition grid
//! inline), filtered by state and kind. Rows are keyed by job id and cells by partition index, so
//! a new snapshot moves or patches the existing elements instead of rebuilding them: a selected
//! job id stays selected, and 50 jobs × 16 partitions cost a few attribute updates per snapshot.

use leptos::prelude::*;
use snarkd_monitor_model::jobs::shown;
use snarkd_monitor_model::labels::{self, state_class};
use snarkd_monitor_model::{Dashboard, JobRow};

use crate::parts::Legend;

/// The state filter's choices (value, label); the values are what `jobs::shown` takes.
const STATES: [(&str, &str); 6] = [
    ("all", "all states"),
    ("active", "queued or running"),
    ("completed", "completed"),
    ("failed", "failed"),
    ("cancelled", "cancelled"),
    ("queued", "queued"),
];

#[component]
pub fn JobList(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let state = RwSignal::new("all".to_string());
    let kind = RwSignal::new("all".to_string());
    let ids = Memo::new(move |_| {
        let (state, kind) = (state.get(), kind.get());
        dash.with(|d| {
            d.as_ref()
                .map(|d| {
                    d.jobs
                        .iter()
                        .filter(|j| shown(j, &state, &kind))
                        .map(|j| j.job_id.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    });
    let total = move || dash.with(|d| d.as_ref().map_or(0, |d| d.jobs.len()));
    view! {
        <div class="job-filters">
            <h2>"Jobs"</h2>
            <label>"state "
                <select class="filter-state" on:change=move |ev| state.set(event_target_value(&ev))>
                    {STATES.iter().map(|(value, label)| view! { <option value=*value>{*label}</option> }).collect_view()}
                </select>
            </label>
            <label>"kind "
                <select class="filter-kind" on:change=move |ev| kind.set(event_target_value(&ev))>
                    <option value="all">"all kinds"</option>
                    {labels::kinds().map(|k| view! { <option value=k>{k}</option> }).collect_view()}
                </select>
            </label>
            <span class="dim">{move || format!("{} of {} jobs", ids.with(Vec::len), total())}</span>
            <Legend />
        </div>
        <table class="jobs">
            <thead><tr>
                <th>"job id"</th><th>"request id"</th><th>"kind"</th><th>"priority"</th>
                <th>"state"</th><th class="num" title="time since submit; for a finished job, how long it took">"age / took"</th>
                <th class="num" title="partition synthesis times, summed">"synthesis Σ"</th>
                <th class="num" title="partition device-phase times, summed">"device Σ"</th>
                <th>"partitions"</th><th>"circuit"</th>
            </tr></thead>
            <tbody>
                <For
                    each=move || ids.get()
                    key=|id| id.clone()
                    children=move |id| view! { <Job id=id dash=dash /> }
                />
            </tbody>
        </table>
        <Show when=move || ids.with(|i| i.is_empty())>
            <p class="dim">{move || if total() == 0 { "no jobs" } else { "no job matches the filters" }}</p>
        </Show>
    }
}

#[component]
fn Job(id: String, dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let row = {
        let id = id.clone();
        Memo::new(move |_| {
            dash.with(|d| {
                d.as_ref()
                    .and_then(|d| d.jobs.iter().find(|j| j.job_id == id).cloned())
            })
        })
    };
    let get = move |f: fn(&JobRow) -> String| row.with(|r| r.as_ref().map(f).unwrap_or_default());
    let cells = move || row.with(|r| r.as_ref().map_or(0, |r| r.cells.len()));
    let copy_id = id.clone();
    view! {
        <tr
            class=move || format!("job {}", state_class(&get(|r| r.state.to_string())))
            class:finished=move || row.with(|r| r.as_ref().is_some_and(|r| r.finished))
            style:opacity=move || format!("{:.2}", f64::from(row.with(|r| r.as_ref().map_or(100, |r| r.opacity_pct))) / 100.0)
            data-job-id=id.clone()
            data-state=move || get(|r| r.state.to_string())
            title=move || get(|r| r.error_message.clone())
        >
            <td class="id-cell">
                <span class="job-id mono">{id.clone()}</span>
                <button class="copy" title="copy the job id" on:click=move |_| copy(&copy_id)>"copy"</button>
            </td>
            <td class="mono request-id">{move || get(|r| r.request_id.clone())}</td>
            <td class="kind">{move || get(|r| r.kind.to_string())}</td>
            <td><span class=move || format!("prio prio-{}", get(|r| r.priority.to_string()))>{move || get(|r| r.priority.to_string())}</span></td>
            <td class="state">{move || get(|r| r.state.to_string())}</td>
            <td class="num age" title=move || get(|r| r.age_title.to_string())>{move || get(|r| r.age.clone())}</td>
            <td class="num">{move || get(|r| r.synthesis.clone())}</td>
            <td class="num">{move || get(|r| r.device.clone())}</td>
            <td class="grid-cell">
                <span class="grid">
                    <For
                        each=move || 0..cells()
                        key=|i| *i
                        children=move |i| {
                            let cell = move || row.with(|r| r.as_ref().and_then(|r| r.cells.get(i).cloned()));
                            view! {
                                <span
                                    class=move || format!("cell {}", state_class(cell().map_or("unknown", |c| c.state)))
                                    data-partition=i
                                    data-state=move || cell().map_or("unknown", |c| c.state)
                                    title=move || cell().map(|c| c.title).unwrap_or_default()
                                ></span>
                            }
                        }
                    />
                </span>
                <span class="done dim">{move || row.with(|r| r.as_ref().map(|r| format!("{}/{}", r.done, r.cells.len())).unwrap_or_default())}</span>
            </td>
            <td class="dim mono">{move || get(|r| r.circuit_id.clone())}</td>
        </tr>
        <Show when=move || !get(|r| r.error_message.clone()).is_empty()>
            <tr class="job-error" data-job-id=id.clone()>
                <td colspan="10" class="error">{move || get(|r| r.error_message.clone())}</td>
            </tr>
        </Show>
    }
}

/// Puts `text` on the clipboard (the id is also plain selectable text).
fn copy(text: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
}
