//! Value types of the config file that are more than a number or a string: listen addresses,
//! the memory budget, the device backend, log format, priorities. Each parses from the same text
//! in the TOML file, in `SNARKD_*` variables and on the command line.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;

use bytesize::ByteSize;
use serde::{Deserialize, Deserializer};
use snarkd_engine::Lookahead;
use snarkd_prover::groth16::G2On;
use snarkd_prover::ProofKind;

/// Where the gRPC server listens: a TCP address or a unix socket (`unix:///run/snarkd.sock`,
/// the form Curio's `[Cuzk] Address` uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "{text:?} is not an absolute socket path: write unix:///path/to/snarkd.sock (three slashes)"
                ));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        parse_tcp(text).map(ListenAddr::Tcp)
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}

impl<'de> Deserialize<'de> for ListenAddr {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Unix permission bits, written in octal like `"0660"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMode(pub u32);

impl FromStr for FileMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        u32::from_str_radix(text.trim_start_matches("0o"), 8)
            .ok()
            .filter(|mode| *mode <= 0o777)
            .map(FileMode)
            .ok_or_else(|| {
                format!("{text:?} is not a permission mode: write octal bits such as \"0660\"")
            })
    }
}

impl<'de> Deserialize<'de> for FileMode {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A TCP listen address; host names (e.g. `localhost:9821`) resolve to their first address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpAddr(pub SocketAddr);

impl FromStr for TcpAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.starts_with("unix://") {
            return Err(format!(
                "{text:?} is a unix socket: the HTTP port takes host:port such as 127.0.0.1:9821"
            ));
        }
        parse_tcp(text).map(TcpAddr)
    }
}

impl<'de> Deserialize<'de> for TcpAddr {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn parse_tcp(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let hint = "expected host:port such as 127.0.0.1:9820, 0.0.0.0:9820 or [::1]:9820, or unix:///path/to/snarkd.sock";
    match text.to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| format!("{text:?} resolves to no address: {hint}")),
        Err(_) => Err(format!("{text:?} is not a listen address: {hint}")),
    }
}

/// How much memory the engine may reserve for partitions and parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryBudget {
    /// The machine's total memory minus `[memory] safety_margin`.
    Auto,
    Fixed(ByteSize),
}

impl MemoryBudget {
    /// The budget in bytes when this process may use `usable` bytes of memory
    /// ([`super::MachineMemory::usable`]): "auto" leaves `safety_margin` and `reserve` of it.
    pub fn resolve(
        self,
        usable: u64,
        safety_margin: ByteSize,
        reserve: ByteSize,
    ) -> Result<u64, String> {
        match self {
            MemoryBudget::Fixed(size) => Ok(size.as_u64()),
            MemoryBudget::Auto => {
                match usable.checked_sub(safety_margin.as_u64().saturating_add(reserve.as_u64())) {
                    Some(budget) if budget > 0 => Ok(budget),
                    _ => Err(format!(
                        "budget \"auto\" leaves nothing: this process may use {} of memory, the \
                         safety margin is {} and the reserve {}; lower [memory] safety_margin or \
                         reserve, or set [memory] budget to a size such as \"8GiB\"",
                        ByteSize(usable).to_string_as(true),
                        safety_margin.to_string_as(true),
                        reserve.to_string_as(true)
                    )),
                }
            }
        }
    }
}

impl FromStr for MemoryBudget {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("auto") {
            return Ok(MemoryBudget::Auto);
        }
        let size: ByteSize = text.parse().map_err(|_| {
            format!(
                "{text:?} is not a size: write \"auto\" or a size such as \"64GiB\" or \"500MiB\""
            )
        })?;
        if size.as_u64() == 0 {
            return Err(
                "a budget of 0 bytes admits no proof: write \"auto\" or a size such as \"64GiB\""
                    .into(),
            );
        }
        Ok(MemoryBudget::Fixed(size))
    }
}

impl<'de> Deserialize<'de> for MemoryBudget {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `[pipeline] synthesis_lookahead` as written: "auto" or a number of partitions (0: no limit),
/// read into the engine's [`Lookahead`].
pub fn lookahead<'de, D: Deserializer<'de>>(de: D) -> Result<Lookahead, D::Error> {
    let limit = auto_or_number(
        de,
        "a lookahead: write \"auto\" or a number of partitions (0 for no limit)",
    )?;
    Ok(limit.map_or(Lookahead::Auto, Lookahead::Limit))
}

/// A setting written as "auto" (`None`) or a number, in TOML's integer or as text; any other
/// value is refused as not being `what`.
fn auto_or_number<'de, D: Deserializer<'de>>(de: D, what: &str) -> Result<Option<usize>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(i64),
        Text(String),
    }
    let wrong =
        |shown: &dyn std::fmt::Display| serde::de::Error::custom(format!("{shown} is not {what}"));
    match Raw::deserialize(de)? {
        Raw::Number(n) => usize::try_from(n).map(Some).map_err(|_| wrong(&n)),
        Raw::Text(t) if t.eq_ignore_ascii_case("auto") => Ok(None),
        Raw::Text(t) => t.parse().map(Some).map_err(|_| wrong(&format!("{t:?}"))),
    }
}

/// `[gpus] workers_per_device`: how many partitions run their device phase on one device at
/// once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// As the device's memory allows: two on a GPU that holds two of the largest partitions'
    /// working memory beside their bases, one elsewhere (the OpenCL backend's
    /// `default_workers`).
    Auto,
    /// This many on every device (at least one).
    Fixed(usize),
}

impl Workers {
    /// Workers on a device of `kind` ("gpu", "cpu", …) with `memory_bytes` of memory, B's G2
    /// multiexp running `b_g2` (`[gpus] b_g2`).
    pub fn on(self, kind: &str, memory_bytes: u64, b_g2: G2On) -> usize {
        match self {
            Workers::Fixed(n) => n,
            #[cfg(feature = "opencl")]
            Workers::Auto => {
                snarkd_prover::backend::opencl::default_workers(kind, memory_bytes, b_g2)
            }
            #[cfg(not(feature = "opencl"))]
            Workers::Auto => {
                // Without the OpenCL backend every device is the CPU.
                let _ = (kind, memory_bytes, b_g2);
                1
            }
        }
    }
}

/// `[gpus] workers_per_device` as written: "auto" or a number of workers.
pub fn workers<'de, D: Deserializer<'de>>(de: D) -> Result<Workers, D::Error> {
    let fixed = auto_or_number(
        de,
        "a number of workers: write \"auto\" or a number (at least 1)",
    )?;
    Ok(fixed.map_or(Workers::Auto, Workers::Fixed))
}

/// Which implementation runs the device phase (FFTs and multi-exponentiations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The OpenCL GPUs if there are any, else the CPU.
    Auto,
    Cpu,
    Opencl,
    /// Not a backend: refused at startup with a pointer to `opencl` (kept so that a config
    /// written for other provers gets that message, not a parse error).
    Cuda,
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Devices as a TOML array of ordinals or name fragments (`[0, "A100"]`) or, handy in an
/// environment variable, `"0,1"`. Each entry is kept as text: a number is an ordinal of
/// `snarkd devices`, anything else a case-insensitive part of a device name.
pub fn device_list<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<String>, D::Error> {
    de.deserialize_any(DeviceListVisitor)
}

struct DeviceListVisitor;

/// One entry of the list: an ordinal or a name.
struct DeviceEntry(String);

impl<'de> Deserialize<'de> for DeviceEntry {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(DeviceListVisitor)
            .and_then(|mut v| match v.len() {
                1 => Ok(DeviceEntry(v.remove(0))),
                _ => Err(serde::de::Error::custom(
                    "a device entry is one ordinal or one name, not a list",
                )),
            })
    }
}

impl<'de> serde::de::Visitor<'de> for DeviceListVisitor {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a list of device ordinals or names such as [0, 1] or [\"A100\"] (or \"0,1\"); [] means every device",
        )
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut list = Vec::new();
        while let Some(DeviceEntry(entry)) = seq.next_element::<DeviceEntry>()? {
            list.push(entry);
        }
        Ok(list)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Vec<String>, E> {
        u32::try_from(v)
            .map(|o| vec![o.to_string()])
            .map_err(|_| E::custom(format!("{v} is not a device ordinal: use 0, 1, ...")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Vec<String>, E> {
        self.visit_i64(i64::try_from(v).unwrap_or(-1))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Vec<String>, E> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        if entries.iter().any(|s| s.is_empty()) {
            return Err(E::custom(format!(
                "{text:?} has an empty entry: write a list such as \"0,1\" or \"A100\""
            )));
        }
        Ok(entries.into_iter().map(String::from).collect())
    }
}

/// Proof kinds by their short names (`porep`, `snap`, `wpost`, `winning`), as a TOML array or,
/// handy in an environment variable, `"porep,snap"`.
pub fn kind_list<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<ProofKind>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Kinds {
        List(Vec<String>),
        Text(String),
    }
    let names = match Kinds::deserialize(de)? {
        Kinds::List(list) => list,
        Kinds::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
    };
    names
        .iter()
        .map(|n| ProofKind::from_short(n).map_err(serde::de::Error::custom))
        .collect()
}
