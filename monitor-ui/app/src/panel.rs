//! One daemon's dashboard: connection badge, header, memory bar, synthesis, worker chips, job
//! rows and the counters, queues and params tables. It re-derives the model's `Dashboard` from
//! the latest snapshot and a one-second tick (so ages move between snapshots while the stream is
//! live); sections read the parts they draw.

use std::time::Duration;

use leptos::prelude::*;
use snarkd_monitor_model::labels;
use snarkd_monitor_model::{Connection, Dashboard, Link};

use crate::clock::now_ms;
use crate::jobs::JobList;
use crate::parts::part;
use crate::stream::{watch, Received};
use crate::summary::SummaryStrip;

/// How often ages, busy times and fades move between snapshots.
const TICK: Duration = Duration::from_secs(1);

/// What a panel tells the page about itself (for the tab title).
#[derive(Clone, Default, PartialEq)]
pub struct Shown {
    pub live: bool,
    pub dashboard: Option<Dashboard>,
}

/// One daemon's panel. With `several` daemons on the page, a daemon that cannot be reached
/// collapses to its top bar.
#[component]
pub fn DaemonPanel(url: String, several: bool, shown: RwSignal<Shown>) -> impl IntoView {
    let latest = RwSignal::new(None::<Received>);
    let connection = RwSignal::new(Connection::Connecting { attempt: 0 });
    let tick = RwSignal::new(0u64);
    set_interval(move || tick.update(|t| *t += 1), TICK);
    let (retry_tx, retry_rx) = futures::channel::mpsc::unbounded();
    watch(url.clone(), latest, connection, retry_rx);

    // Disconnected, the page stops the clock at the last snapshot: it shows what was last known.
    let dash = Memo::new(move |_| {
        tick.track();
        let live = connection.with(|c| *c == Connection::Live);
        latest.with(|r| {
            r.as_ref().map(|r| {
                let local_now = if live { now_ms() } else { r.at_ms };
                let daemon_now = r.snapshot.taken_at_unix_ms + local_now.saturating_sub(r.at_ms);
                Dashboard::from_snapshot(&r.snapshot, daemon_now)
            })
        })
    });
    let live = move || connection.with(|c| *c == Connection::Live);
    // The badge, countdown and stale mark move with the tick while the stream is down.
    let link = Memo::new(move |_| {
        tick.track();
        connection.with(|c| latest.with(|r| Link::of(c, r.as_ref().map(|r| r.at_ms), now_ms())))
    });
    Effect::new(move |_| {
        let now = Shown {
            live: live(),
            dashboard: dash.get(),
        };
        if shown.with_untracked(|s| *s != now) {
            shown.set(now);
        }
    });
    let unreachable = move || link.with(|l| matches!(l.class, "conn-never" | "conn-lost"));

    view! {
        <section
            class="daemon"
            class:stale=move || !live()
            class:collapsed=move || several && unreachable()
            data-url=url.clone()
        >
            <TopBar url=url.clone() link=link retry_tx=retry_tx />
            <Show
                when=move || dash.with(|d| d.is_some())
                fallback=|| view! { <p class="waiting">"waiting for the first snapshot..."</p> }
            >
                <Header dash=dash />
                <SummaryStrip dash=dash />
                // On a wide screen (one daemon) the jobs get a column of their own beside the
                // rest, so that about 40 fit a 1080-pixel-high window.
                <div class="body">
                    <div class="side">
                        <div class="row">
                            <Memory dash=dash />
                            <Synthesis dash=dash />
                        </div>
                        <Workers dash=dash />
                        <Failures dash=dash />
                        <div class="row tables">
                            <Counters dash=dash />
                            <Queues dash=dash />
                            <Params dash=dash />
                        </div>
                    </div>
                    <div class="main-jobs">
                        <JobList dash=dash />
                    </div>
                </div>
            </Show>
        </section>
    }
}

/// The panel's top bar (the daemon's address, the connection's badge, a retry button while it
/// is down) and, when what follows is old, the stale mark.
#[component]
fn TopBar(
    url: String,
    link: Memo<Link>,
    retry_tx: futures::channel::mpsc::UnboundedSender<()>,
) -> impl IntoView {
    view! {
        <header class="top">
            <span class="url">{url}</span>
            <span class="link">
                <span
                    class=move || format!("conn {}", link.with(|l| l.class))
                    data-connection=move || link.with(|l| l.class)
                    role="status"
                >
                    {move || link.with(|l| l.badge.clone())}
                </span>
                <Show when=move || link.with(|l| l.can_retry)>
                    <button
                        class="retry"
                        on:click={
                            let retry_tx = retry_tx.clone();
                            move |_| {
                                let _ = retry_tx.unbounded_send(());
                            }
                        }
                    >
                        "retry now"
                    </button>
                </Show>
            </span>
        </header>
        <Show when=move || link.with(|l| l.stale.is_some())>
            <p class="stale-mark">
                <b>"stale"</b>
                " · " {move || link.with(|l| l.stale.clone().unwrap_or_default())}
                "; what follows is as of then"
            </p>
        </Show>
    }
}

#[component]
fn Header(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let h = move || part(dash, |d| d.header.clone());
    view! {
        <div class="header" data-sequence=move || h().sequence>
            <span class="brand">"snarkd"</span>
            <span>"version " <b>{move || h().version}</b></span>
            <span title="build">{move || h().build_id}</span>
            <span>"uptime " <b class="uptime">{move || h().uptime}</b></span>
            <span>"backend " <b>{move || h().backend}</b></span>
            <Show when=move || h().gpu_fallback>
                <span class="no-gpu" title="[gpus] backend asked for a GPU and none was found: install the GPU's OpenCL driver and check `snarkd devices`">
                    "NO GPU: proving on the CPU"
                </span>
            </Show>
            <span>"devices " <b>{move || h().devices.join(", ")}</b></span>
            <Show when=move || h().draining>
                <span class="draining">"draining: no new proofs"</span>
            </Show>
        </div>
    }
}

#[component]
fn Memory(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let m = move || part(dash, |d| d.memory.clone());
    view! {
        <div class="card memory">
            <h2>"Memory budget"</h2>
            <div class="bar">
                {move || {
                    m().segments
                        .into_iter()
                        .map(|s| {
                            let title = format!("{}: {}", s.label, s.bytes);
                            view! { <span class=format!("seg {}", s.class) style:width=s.width title=title></span> }
                        })
                        .collect_view()
                }}
            </div>
            <div class="bar-legend">
                {move || {
                    m().segments
                        .into_iter()
                        .map(|s| view! { <span><i class=format!("swatch {}", s.class)></i>{s.label}" "{s.bytes}</span> })
                        .collect_view()
                }}
            </div>
            <p>"used " <b>{move || m().used}</b> " of " <b>{move || m().total}</b> " · free " <b>{move || m().available}</b></p>
        </div>
    }
}

#[component]
fn Synthesis(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let s = move || part(dash, |d| d.synthesis.clone());
    view! {
        <div class="card synthesis">
            <h2>"Synthesis"</h2>
            <p class="big">
                <b class="synth-active">{move || s().active}</b>
                " active / "
                <b title="what the free memory budget allows now">{move || s().max_allowed_now}</b>
                " allowed"
            </p>
            <p class="dim">"configured ceiling " {move || s().max_configured}</p>
        </div>
    }
}

#[component]
fn Workers(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    view! {
        <h2>"Workers"</h2>
        <div class="workers">
            <For
                each=move || part(dash, |d| d.workers.clone())
                key=|w| w.clone()
                children=|w| {
                    let partition = w.partition.map(|p| p.to_string()).unwrap_or_default();
                    view! {
                        <div
                            class=format!("chip {}", labels::state_class(w.state))
                            data-worker=w.worker_id
                            data-state=w.state
                            data-job-id=w.job_id.clone()
                            data-partition=partition.clone()
                            data-paused=w.paused.clone()
                        >
                            <div class="chip-head">
                                <b>"worker " {w.worker_id}</b>
                                <span class="state">{w.state}</span>
                                <span class="dim">{w.device.clone()}</span>
                            </div>
                            <div class="chip-job mono">{w.job_id.clone()}</div>
                            <div class="dim">
                                {(!partition.is_empty()).then(|| format!("{} partition {partition} · ", w.job_kind))}
                                "busy " {w.busy.clone()} " · " {w.proofs_done} " done"
                            </div>
                            {(!w.paused.is_empty()).then(|| view! {
                                <div class="chip-paused dim mono">"pausing " {w.paused.clone()}</div>
                            })}
                            {(!w.readings.is_empty()).then(|| view! {
                                <div class="chip-readings dim">
                                    {w.readings.iter().map(|r| view! {
                                        <span data-reading=r.what>{r.text.clone()}</span>
                                    }).collect_view()}
                                </div>
                            })}
                        </div>
                    }
                }
            />
        </div>
    }
}

/// The daemon's failure log (failed jobs and refused requests), when it holds any. Rows do not
/// fade: an entry goes only when newer failures push it out of the daemon's log.
#[component]
fn Failures(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    let rows = move || part(dash, |d| d.failures.clone());
    view! {
        <Show when=move || !rows().is_empty()>
            <h2>"Failures " <span class="dim">{move || format!("(last {})", rows().len())}</span></h2>
            <div class="card failures-card">
                <table class="failures">
                    <thead><tr>
                        <th>"when"</th><th>"kind"</th><th>"what"</th><th>"request id"</th>
                        <th>"job id"</th><th>"message"</th>
                    </tr></thead>
                    <tbody>
                        {move || {
                            rows()
                                .into_iter()
                                .map(|f| {
                                    let (stage, request_id) = (f.stage.clone(), f.request_id.clone());
                                    view! {
                                    <tr class="failure" data-stage=stage data-request-id=request_id>
                                        <td class="nowrap">{f.when}</td>
                                        <td class="nowrap">{f.kind}</td>
                                        <td class="what">{f.what}</td>
                                        <td class="mono">{f.request_id}</td>
                                        <td class="mono">{f.job_id}</td>
                                        <td class="message">{f.message}</td>
                                    </tr>
                                    }
                                })
                                .collect_view()
                        }}
                    </tbody>
                </table>
            </div>
        </Show>
    }
}

#[component]
fn Counters(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    view! {
        <div class="card">
            <h2>"Counters"</h2>
            <table class="counters">
                <tbody>
                    {move || {
                        part(dash, |d| d.counters.clone())
                            .into_iter()
                            .map(|c| view! { <tr><td>{c.label}</td><td class="num">{c.value}</td></tr> })
                            .collect_view()
                    }}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn Queues(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    view! {
        <div class="card">
            <h2>"Queues"</h2>
            <table class="queues">
                <thead><tr><th>"kind"</th><th>"pending"</th><th>"in progress"</th></tr></thead>
                <tbody>
                    {move || {
                        part(dash, |d| d.queues.clone())
                            .into_iter()
                            .map(|q| view! { <tr><td>{q.kind}</td><td class="num">{q.pending}</td><td class="num">{q.in_progress}</td></tr> })
                            .collect_view()
                    }}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn Params(dash: Memo<Option<Dashboard>>) -> impl IntoView {
    view! {
        <div class="card">
            <h2>"Parameters"</h2>
            <table class="params">
                <thead><tr><th>"circuit"</th><th>"tier"</th><th>"size"</th><th title="the circuit's pre-compiled matrices, part of the size">"pre-compiled"</th><th>"refs"</th><th>"last used"</th></tr></thead>
                <tbody>
                    {move || {
                        part(dash, |d| d.params.clone())
                            .into_iter()
                            .map(|p| view! {
                                <tr>
                                    <td class="mono">{p.circuit_id}</td>
                                    <td>{p.tier}</td>
                                    <td class="num">{p.bytes}</td>
                                    <td class="num">{p.precompiled}</td>
                                    <td class="num">{p.ref_count}</td>
                                    <td class="num">{p.last_used}" ago"</td>
                                </tr>
                            })
                            .collect_view()
                    }}
                </tbody>
            </table>
        </div>
    }
}
