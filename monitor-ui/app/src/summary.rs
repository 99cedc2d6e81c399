//! The summary strip at the top of a panel: a row per active proof kind (where its partitions
//! are, proofs per minute, latency, failures), the workers' busy share, a bar per minute of the
//! last hour drawn as plain boxes, and memory and partitions over the hour as SVG polylines
//! (neither needs a charting library, and the page stays small).

use leptos::prelude::*;
use snarkd_monitor_model::Dashboard;

use crate::parts::part;

#[component]
pub fn SummaryStrip(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let sum = move || part(dash, |d| d.summary.clone());
    view! {
        <div class="card summary">
            <table class="summary-table">
                <thead><tr>
                    <th>"kind"</th>
                    <th class="num" title="partitions waiting for memory or a synthesis slot">"waiting for admission"</th>
                    <th class="num">"synthesizing"</th>
                    <th class="num" title="synthesized, waiting for a device worker">"waiting for a worker"</th>
                    <th class="num">"on a worker"</th>
                    <th class="num">"proofs/min 5 min · 1 h"</th>
                    <th class="num">"p50 / p99 (1 h)"</th>
                    <th class="num">"failed (1 h)"</th>
                </tr></thead>
                <tbody>
                    {move || {
                        let rows = sum().rows;
                        if rows.is_empty() {
                            return view! { <tr><td colspan="8" class="dim">"nothing waiting, running or ended in the last hour"</td></tr> }.into_any();
                        }
                        rows.into_iter()
                            .map(|r| view! {
                                <tr class="summary-row" data-kind=r.kind>
                                    <td class="kind">{r.kind}</td>
                                    <td class="num" data-count="waiting_for_admission">{r.waiting_for_admission}</td>
                                    <td class="num" data-count="synthesizing">{r.synthesizing}</td>
                                    <td class="num" data-count="waiting_for_worker">{r.waiting_for_worker}</td>
                                    <td class="num" data-count="on_worker">{r.on_worker}</td>
                                    <td class="num">{r.per_min_5m}" · "{r.per_min_1h}</td>
                                    <td class="num">{r.latency_1h}</td>
                                    <td class="num" class:bad={r.failed_1h > 0}>{r.failed_1h}</td>
                                </tr>
                            })
                            .collect_view()
                            .into_any()
                    }}
                </tbody>
            </table>
            <div class="summary-side">
                <p>"workers busy " <b class="busy-5m">{move || sum().busy_5m}</b> " (5 min) · "
                    <b class="busy-1h">{move || sum().busy_1h}</b> " (1 h) · charts: the last hour"</p>
                <div class="charts">
                    <div>
                        <div class="minutes" title="jobs ended per minute, last hour">
                            {move || {
                                sum().minutes
                                    .into_iter()
                                    .map(|m| view! {
                                        <span class="minute" title=m.title data-completed=m.completed data-failed=m.failed>
                                            <i class="ok" style:height=m.completed_height></i>
                                            <i class="bad" style:height=m.failed_height></i>
                                        </span>
                                    })
                                    .collect_view()
                            }}
                        </div>
                        <p class="dim">"jobs ended a minute · most " {move || sum().busiest}</p>
                    </div>
                    <div title="memory budget in use, last hour">
                        <svg class="chart load-memory" viewBox="0 0 360 40" preserveAspectRatio="none">
                            <polyline class="memory" points=move || sum().load.memory></polyline>
                        </svg>
                        <p class="dim">"memory · " {move || sum().load.memory_label}</p>
                    </div>
                    <div title="partitions waiting (for admission or a worker) and running (synthesizing or on a worker), last hour">
                        <svg class="chart load-queue" viewBox="0 0 360 40" preserveAspectRatio="none">
                            <polyline class="waiting" points=move || sum().load.waiting></polyline>
                            <polyline class="running" points=move || sum().load.running></polyline>
                        </svg>
                        <p class="dim"><span class="key-waiting">"waiting"</span> " · "
                            <span class="key-running">"running"</span> " · most "
                            {move || sum().load.busiest}</p>
                    </div>
                </div>
            </div>
        </div>
    }
}
