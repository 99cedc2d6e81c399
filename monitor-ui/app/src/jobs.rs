//! The job rows. Rows are keyed by job id and cells by partition index, so a new snapshot moves
//! or patches the existing elements instead of rebuilding them: a selected job id stays selected,
//! and 50 jobs × 16 partitions cost a few attribute updates per snapshot.

use leptos::prelude::*;
use snarkd_monitor_model::labels::state_class;
use snarkd_monitor_model::{Dashboard, JobRow};

#[component]
pub fn JobList(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let ids = Memo::new(move |_| {
        dash.with(|d| {
            d.as_ref()
                .map(|d| d.jobs.iter().map(|j| j.job_id.clone()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
    });
    view! {
        <div class="jobs">
            <Show when=move || ids.with(|i| i.is_empty())>
                <p class="dim">"no jobs"</p>
            </Show>
            <For
                each=move || ids.get()
                key=|id| id.clone()
                children=move |id| view! { <Job id=id dash=dash /> }
            />
        </div>
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
        <div
            class=move || format!("job {}", state_class(&get(|r| r.state.to_string())))
            class:finished=move || row.with(|r| r.as_ref().is_some_and(|r| r.finished))
            style:opacity=move || format!("{:.2}", f64::from(row.with(|r| r.as_ref().map_or(100, |r| r.opacity_pct))) / 100.0)
            data-job-id=id.clone()
            data-state=move || get(|r| r.state.to_string())
        >
            <div class="job-head">
                <span class="job-id mono" title="job id">{id.clone()}</span>
                <button class="copy" title="copy the job id" on:click=move |_| copy(&copy_id)>"copy"</button>
                <span class="kind">{move || get(|r| r.kind.to_string())}</span>
                <span class=move || format!("prio prio-{}", get(|r| r.priority.to_string()))>{move || get(|r| r.priority.to_string())}</span>
                <span class="state">{move || get(|r| r.state.to_string())}</span>
                <span class="age" title="age (or how long it took)">{move || get(|r| r.age.clone())}</span>
                <span class="done">{move || row.with(|r| r.as_ref().map(|r| format!("{}/{}", r.done, r.cells.len())).unwrap_or_default())}</span>
                <span class="dim mono">{move || get(|r| r.circuit_id.clone())}</span>
            </div>
            <div class="grid">
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
            </div>
            <Show when=move || !get(|r| r.error_message.clone()).is_empty()>
                <div class="error">{move || get(|r| r.error_message.clone())}</div>
            </Show>
        </div>
    }
}

/// Puts `text` on the clipboard (the id is also plain selectable text).
fn copy(text: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
}
