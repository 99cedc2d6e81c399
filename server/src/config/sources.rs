//! Reads the config file and `SNARKD_<SECTION>_<KEY>` variables, merges them over the defaults in
//! order (file, then environment, then flags) and turns every failure into an error that names
//! the key and where its value came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Config, ListenAddr, TcpAddr};

/// The sections a `SNARKD_<SECTION>_<KEY>` variable may name. Variables naming anything else
/// (e.g. `SNARKD_CONFIG`) are not config keys and are left alone.
const SECTIONS: [&str; 13] = [
    "daemon",
    "jobs",
    "params",
    "memory",
    "gpus",
    "scheduler",
    "synthesis",
    "pipeline",
    "logging",
    "http",
    "auth",
    "tls",
    "limits",
];

/// Keys that moved to another section: (old dotted key, new dotted key). Naming the new place
/// beats serde's "unknown field" for a config written before the move.
const MOVED: [(&str, &str); 1] = [("gpus.partition_retries", "pipeline.partition_retries")];

/// Values given on the command line; they win over the file and the environment.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub listen: Option<ListenAddr>,
    pub http_listen: Option<TcpAddr>,
}

/// Why the config could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}; check the path, or write a default one with `snarkd config default > snarkd.toml`")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {msg}")]
    Syntax { path: PathBuf, msg: String },
    #[error("config key {key}{origin}: {msg}")]
    Invalid {
        /// Dotted path such as `daemon.listen`.
        key: String,
        msg: String,
        /// Where the value came from, e.g. " (from SNARKD_DAEMON_LISTEN)"; may be empty.
        origin: String,
    },
}

impl ConfigError {
    /// A startup refusal over what `key` (dotted, e.g. `gpus.backend`) asks for: `msg` says the
    /// value and the fix. It exits 78 like any other config error, so the unit does not restart
    /// a daemon that cannot start as configured.
    pub fn refused(key: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            key: key.to_string(),
            msg: msg.into(),
            origin: String::new(),
        }
    }
}

/// Builds the config from the file at `path`, the variables in `env` and the flags.
pub(super) fn load(
    path: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    overrides: &Overrides,
) -> Result<Config, ConfigError> {
    let mut table = match path {
        Some(path) => read_file(path)?,
        None => toml::Table::new(),
    };
    let file_label = path
        .map(|p| format!(" (in {})", p.display()))
        .unwrap_or_default();
    let carried_over =
        super::cuzk::carry_over(&mut table).map_err(|(key, msg)| ConfigError::Invalid {
            key,
            msg,
            origin: file_label.clone(),
        })?;
    let from_env = apply_env(&mut table, env)?;
    check_moved(&table, &from_env, &file_label)?;

    let mut config: Config =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|err| {
            let key = err.path().to_string();
            let origin = origin_of(&key, &from_env, &file_label);
            ConfigError::Invalid {
                key,
                msg: err.into_inner().message().to_string(),
                origin,
            }
        })?;

    config.carried_over = carried_over;
    if let Some(listen) = &overrides.listen {
        config.daemon.listen = listen.clone();
    }
    if let Some(http_listen) = overrides.http_listen {
        config.daemon.http_listen = http_listen;
    }
    config
        .validate()
        .map_err(|(key, msg)| ConfigError::Invalid {
            origin: origin_of(&key, &from_env, &file_label),
            key,
            msg,
        })?;
    Ok(config)
}

/// The snarkd config a cuzk config at `path` amounts to, as TOML, with a comment for each key
/// moved or dropped (`snarkd config from-cuzk`). Checked by loading it as snarkd would.
pub(super) fn from_cuzk(path: &Path) -> Result<String, ConfigError> {
    let mut table = read_file(path)?;
    let label = format!(" (in {})", path.display());
    let invalid = |(key, msg)| ConfigError::Invalid {
        key,
        msg,
        origin: label.clone(),
    };
    if !super::cuzk::is_cuzk(&table) {
        return Err(invalid((
            String::new(),
            "has no key only cuzk has ([srs], [memory] total_budget, [gpus] gpu_workers_per_device, ...): is it a cuzk config?".into(),
        )));
    }
    let mut notes = super::cuzk::carry_over(&mut table).map_err(invalid)?;
    notes.extend(super::cuzk::listen_note(&table));
    let text = toml::to_string(&table).map_err(|e| invalid((String::new(), e.to_string())))?;
    let mut out = format!(
        "# snarkd config carried over from the cuzk config {}.\n",
        path.display()
    );
    for note in notes.iter().skip(1) {
        out.push_str(&format!("# {note}\n"));
    }
    out.push_str(
        "# Every other key has snarkd's default: `snarkd config default` shows them all.\n\n",
    );
    out.push_str(&text);
    // What it says must load as a snarkd config.
    let reread: toml::Table = out
        .parse()
        .map_err(|e: toml::de::Error| invalid((String::new(), e.to_string())))?;
    serde_path_to_error::deserialize::<_, Config>(toml::Value::Table(reread))
        .map_err(|e| invalid((e.path().to_string(), e.into_inner().message().to_string())))?;
    Ok(out)
}

fn read_file(path: &Path) -> Result<toml::Table, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|err| ConfigError::Syntax {
            path: path.to_path_buf(),
            msg: err.to_string().trim_end().to_string(),
        })
}

/// Writes every `SNARKD_<SECTION>_<KEY>=value` into `table`, returning which dotted keys came
/// from which variable. A value is read as a TOML value when it is one (`4`, `true`, `[0, 1]`)
/// and as a string otherwise (`5m`, `64GiB`, `127.0.0.1:9820`).
fn apply_env(
    table: &mut toml::Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut from_env = BTreeMap::new();
    for (name, value) in env {
        let Some(rest) = name.strip_prefix("SNARKD_") else {
            continue;
        };
        let rest = rest.to_ascii_lowercase();
        let Some((section, key)) = rest.split_once('_') else {
            continue;
        };
        if !SECTIONS.contains(&section) {
            continue;
        }
        let section_table = table
            .entry(section)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(section_table) = section_table.as_table_mut() else {
            return Err(ConfigError::Invalid {
                key: section.to_string(),
                msg: format!("must be a table ([{section}]) for {name} to set a key in it"),
                origin: String::new(),
            });
        };
        section_table.insert(key.to_string(), env_value(&value));
        from_env.insert(format!("{section}.{key}"), name);
    }
    Ok(from_env)
}

fn check_moved(
    table: &toml::Table,
    from_env: &BTreeMap<String, String>,
    file_label: &str,
) -> Result<(), ConfigError> {
    for (old, new) in MOVED {
        let (section, key) = old.split_once('.').expect("moved keys are dotted");
        let set = table
            .get(section)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key(key));
        if set {
            let (new_section, new_key) = new.split_once('.').expect("moved keys are dotted");
            return Err(ConfigError::Invalid {
                key: old.to_string(),
                msg: format!(
                    "has moved: write it as {new_key} in [{new_section}] (or SNARKD_{}_{})",
                    new_section.to_ascii_uppercase(),
                    new_key.to_ascii_uppercase()
                ),
                origin: origin_of(old, from_env, file_label),
            });
        }
    }
    Ok(())
}

fn env_value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

fn origin_of(key: &str, from_env: &BTreeMap<String, String>, file_label: &str) -> String {
    from_env
        .iter()
        .find(|(k, _)| {
            key == k.as_str()
                || key.starts_with(&format!("{k}."))
                || k.starts_with(&format!("{key}."))
        })
        .map(|(_, var)| format!(" (from {var})"))
        .unwrap_or_else(|| file_label.to_string())
}
