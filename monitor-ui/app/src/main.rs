//! The snarkd monitor: a Leptos client-side app (wasm32) that watches one or more daemons through
//! `StreamStatus` over gRPC-web and draws what each snapshot says. Every decision about what to
//! show lives in `snarkd-monitor-model`; this crate only renders it.
//!
//! Layout:
//! - `stream`: one daemon's status stream, with reconnects, a retry-now and a silence watchdog.
//! - `clock`: the browser's clock and an async sleep.
//! - `panel`: one daemon's dashboard (link badge and stale mark, header, memory, synthesis,
//!   workers, jobs, tables).
//! - `summary`: the strip at the top (per kind, busy share, jobs ended per minute).
//! - `jobs`: the job list with its filters.
//! - `parts`: what the cards share (a part of the dashboard, the partition states' legend).
//!
//! The tab title says how many jobs run and failed over every daemon, and which are unreachable.
//! - `jobs`: the job rows with their partition grids, kept keyed so updates touch only what changed.

mod clock;
mod jobs;
mod panel;
mod parts;
mod stream;
mod summary;

use leptos::prelude::*;
use snarkd_monitor_model::{tab_title, Watched};

fn main() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(App);
}

/// One panel per daemon, side by side.
#[component]
fn App() -> impl IntoView {
    let location = window().location();
    let urls = snarkd_monitor_model::daemon_urls(
        &location.search().unwrap_or_default(),
        &location.origin().unwrap_or_default(),
        &location.pathname().unwrap_or_default(),
    );
    let several = urls.len() > 1;
    let shown: Vec<RwSignal<panel::Shown>> = urls
        .iter()
        .map(|_| RwSignal::new(Default::default()))
        .collect();
    let all = shown.clone();
    Effect::new(move |_| {
        let panels: Vec<panel::Shown> = all.iter().map(|s| s.get()).collect();
        let watched: Vec<Watched<'_>> = panels
            .iter()
            .map(|p| Watched {
                live: p.live,
                dashboard: p.dashboard.as_ref(),
            })
            .collect();
        document().set_title(&tab_title(&watched));
    });
    view! {
        <main class="daemons" class:several=several>
            {urls
                .into_iter()
                .zip(shown)
                .map(|(url, shown)| view! { <panel::DaemonPanel url=url several=several shown=shown /> })
                .collect_view()}
        </main>
    }
}

/// Panics go to the console (the app has no other error path worth a dependency).
fn console_error_panic_hook_lite() {
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&format!("snarkd monitor panicked: {info}").into());
    }));
}
