//! What the panel's cards share: reading one part of the dashboard, and the partition states'
//! legend (the job list and the workers' card both show it).

use leptos::prelude::*;
use snarkd_monitor_model::labels::{self, PARTITION_STATES};
use snarkd_monitor_model::Dashboard;

/// Reads one part of the dashboard (callers render only once it exists).
pub(crate) fn part<T: Default>(dash: Memo<Option<Dashboard>>, f: impl Fn(&Dashboard) -> T) -> T {
    dash.with(|d| d.as_ref().map(&f).unwrap_or_default())
}

#[component]
pub(crate) fn Legend() -> impl IntoView {
    view! {
        <div class="legend">
            {PARTITION_STATES
                .iter()
                .map(|s| {
                    let word = labels::partition_state(*s);
                    view! { <span><i class=format!("cell {}", labels::state_class(word))></i>{word}</span> }
                })
                .collect_view()}
        </div>
    }
}
