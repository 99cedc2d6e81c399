//! cuzk's config carried over. An operator moving from Curio's cuzk daemon can start snarkd on
//! cuzk's TOML file (`snarkd run --config cuzk.toml`) or convert it once (`snarkd config
//! from-cuzk cuzk.toml > snarkd.toml`). A file is taken for cuzk's when it has any key that only
//! cuzk has (`[srs]`, `[memory] total_budget`, `[gpus] gpu_workers_per_device`, …). Each cuzk key
//! is then moved to the snarkd key that means the same, or dropped when snarkd has no such knob
//! or where the same name means something else, each with a note naming the snarkd key to set
//! (logged as a warning at startup, or written as a comment by `from-cuzk`). Only
//! `[gpus] devices` is refused: cuzk's are nvidia-smi indices, snarkd's OpenCL ordinals or names,
//! and guessing could prove on a GPU the operator kept for something else.

/// What becomes of one cuzk key.
enum Fate {
    /// The snarkd key (section, key) that means the same.
    MovesTo(&'static str, &'static str),
    /// No such knob in snarkd, or another meaning: dropped, with why and what to set instead.
    Dropped(&'static str),
}

/// Keys only cuzk has, and keys snarkd has under the same name with another meaning.
const KEYS: [(&str, &str, Fate); 20] = [
    ("srs", "param_cache", Fate::MovesTo("params", "dir")),
    ("srs", "preload", Fate::Dropped("parameters load on first use; PreloadSRS (or `snarkd params precompile`) warms them ahead")),
    ("daemon", "status_listen", Fate::MovesTo("daemon", "http_listen")),
    ("memory", "total_budget", Fate::MovesTo("memory", "budget")),
    ("memory", "eviction_min_idle", Fate::Dropped("snarkd evicts parameters only when the budget needs the room, or on EvictSRS")),
    ("memory", "pinned_budget", Fate::Dropped("ignored by cuzk too; the whole budget is [memory] budget")),
    ("memory", "working_memory_budget", Fate::Dropped("ignored by cuzk too; the whole budget is [memory] budget")),
    ("gpus", "gpu_workers_per_device", Fate::MovesTo("gpus", "workers_per_device")),
    ("gpus", "gpu_threads", Fate::Dropped("snarkd's device phase uses the partition's own threads; nothing to set")),
    ("scheduler", "max_batch_size", Fate::Dropped("snarkd proves each request on its own, partitions pipelined across devices")),
    ("scheduler", "max_batch_wait_ms", Fate::Dropped("snarkd does not batch, so nothing waits for a batch")),
    ("scheduler", "sort_by_type", Fate::Dropped("unused by cuzk; snarkd orders work by priority ([scheduler] *_priority)")),
    ("synthesis", "partition_workers", Fate::Dropped("ignored by cuzk too; [synthesis] threads is how many partitions synthesize at once")),
    ("synthesis", "threads", Fate::Dropped("cuzk's is a thread-pool size; snarkd's [synthesis] threads is how many partitions synthesize at once (0: one per core), which cuzk calls [pipeline] max_parallel_synthesis")),
    ("pipeline", "enabled", Fate::Dropped("snarkd always overlaps synthesis with the device phase")),
    ("pipeline", "synthesis_lookahead", Fate::Dropped("cuzk's is a minimum buffer; snarkd's [pipeline] synthesis_lookahead is the most partitions waiting ahead of the devices, \"auto\" by default")),
    ("pipeline", "synthesis_concurrency", Fate::Dropped("snarkd synthesizes partitions, not proofs, at once: [synthesis] threads")),
    ("pipeline", "max_parallel_synthesis", Fate::MovesTo("synthesis", "threads")),
    ("pipeline", "slot_size", Fate::Dropped("snarkd admits partitions one by one under the memory budget")),
    ("pipeline", "max_gpu_queue_depth", Fate::Dropped("the nearest is [pipeline] synthesis_lookahead (\"auto\": two per device)")),
];

/// Keys of [`KEYS`] that snarkd has too, under the same name with another meaning: they do not
/// make a file cuzk's, and are carried over only in one. (`[daemon] listen`, `[memory]
/// safety_margin`, `[gpus] devices` when empty, `[logging] level` and `format` mean the same in
/// both and stay as they are.)
const SAME_NAME: [(&str, &str); 2] = [
    ("synthesis", "threads"),
    ("pipeline", "synthesis_lookahead"),
];

/// Whether `table` is a cuzk config: it has a key only cuzk has.
pub(super) fn is_cuzk(table: &toml::Table) -> bool {
    table.contains_key("srs")
        || KEYS.iter().any(|(section, key, _)| {
            !SAME_NAME.contains(&(*section, *key)) && has(table, section, key)
        })
}

fn has(table: &toml::Table, section: &str, key: &str) -> bool {
    table
        .get(section)
        .and_then(toml::Value::as_table)
        .is_some_and(|t| t.contains_key(key))
}

/// Rewrites a cuzk config in `table` into snarkd's keys, returning a note for each key moved
/// or dropped; leaves any other file as it is. Err((key, message)) for a key that cannot be
/// carried over.
pub(super) fn carry_over(table: &mut toml::Table) -> Result<Vec<String>, (String, String)> {
    if !is_cuzk(table) {
        return Ok(Vec::new());
    }
    let mut notes = vec!["this is a cuzk config: its keys are read as snarkd's (`snarkd config from-cuzk FILE` prints the snarkd config it amounts to)".to_string()];
    if let Some(devices) = table
        .get("gpus")
        .and_then(|g| g.get("devices"))
        .and_then(toml::Value::as_array)
    {
        if !devices.is_empty() {
            return Err((
                "gpus.devices".into(),
                "in a cuzk config these are nvidia-smi indices; snarkd selects devices by the \
                 ordinals or names `snarkd devices` lists (OpenCL's order): write them that way \
                 in a snarkd config (`snarkd config from-cuzk` converts the rest), or [] for all"
                    .into(),
            ));
        }
    }
    let mut moved = Vec::new();
    for (section, key, fate) in &KEYS {
        let Some(value) = table
            .get_mut(*section)
            .and_then(toml::Value::as_table_mut)
            .and_then(|t| t.remove(*key))
        else {
            continue;
        };
        match fate {
            Fate::MovesTo(to_section, to_key) => {
                let skip = match (*section, *key, &value) {
                    // cuzk's "" turns its status server off; snarkd always serves HTTP.
                    ("daemon", "status_listen", toml::Value::String(s)) if s.is_empty() => true,
                    // cuzk's 0 means its default (18); snarkd's 0 means one per core.
                    ("pipeline", "max_parallel_synthesis", toml::Value::Integer(0)) => true,
                    _ => false,
                };
                if skip {
                    notes.push(format!("[{section}] {key} = {value}: left at snarkd's default [{to_section}] {to_key}"));
                } else {
                    notes.push(format!(
                        "[{section}] {key} is read as [{to_section}] {to_key} = {value}"
                    ));
                    moved.push((*to_section, *to_key, value));
                }
            }
            Fate::Dropped(why) => {
                notes.push(format!(
                    "[{section}] {key} = {value} is not carried over: {why}"
                ));
            }
        }
    }
    for (section, key, value) in moved {
        let section_table = table
            .entry(section)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(t) = section_table.as_table_mut() {
            t.insert(key.to_string(), value);
        }
    }
    // Sections cuzk has and snarkd does not, emptied above.
    table.retain(|_, v| v.as_table().is_none_or(|t| !t.is_empty()));
    Ok(notes)
}

/// What a carried-over `[daemon] listen` beyond loopback needs to start (snarkd refuses one
/// that no token guards, `AuthSection::validate`): said in the printed config.
pub(super) fn listen_note(table: &toml::Table) -> Option<String> {
    let daemon = table.get("daemon").and_then(toml::Value::as_table)?;
    let listen = daemon.get("listen").and_then(toml::Value::as_str)?;
    let addr: std::net::SocketAddr = listen.parse().ok()?;
    let auth = table.get("auth").and_then(toml::Value::as_table);
    let guarded = auth.is_some_and(|a| {
        a.contains_key("token_file")
            || a.get("allow_unauthenticated_remote") == Some(&toml::Value::Boolean(true))
    });
    (!addr.ip().is_loopback() && !guarded).then(|| {
        format!(
            "[daemon] listen = \"{listen}\" takes calls from beyond this machine, which snarkd \
             refuses without a token: listen on 127.0.0.1 where Curio runs here; else, where a \
             firewall keeps the port to Curio's machines (Curio sends no token), add [auth] \
             allow_unauthenticated_remote = true"
        )
    })
}
