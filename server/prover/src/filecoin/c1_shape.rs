//! A C1 output's JSON is walked once, building nothing, before it is decoded: decoding makes a
//! `Vec` (24 bytes, more with its spare capacity) for every array, so 16 MiB of `[],` made
//! about 180 MiB of empty vectors. The walk counts arrays and objects and refuses JSON that
//! holds more of them than a C1 output does for its size.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::{ProverError, Result};

/// Fewest JSON bytes per array or object. A C1 output is mostly 32-byte hashes written as
/// arrays of 32 decimal numbers, about 79 bytes per array or object at 2 KiB (the committed
/// fuzz seeds) and the same make-up at every sector size. Decoding costs at most about 48
/// bytes per array (its `Vec` and spare capacity) and less than a byte per JSON byte for what
/// arrays hold, so at this bound the decoded output stays within about twice the JSON.
pub(crate) const MIN_BYTES_PER_CONTAINER: usize = 40;

/// Refuses `json` when it holds more arrays and objects than one per
/// [`MIN_BYTES_PER_CONTAINER`] bytes. Nesting deeper than serde_json's limit (128) and JSON
/// that is not JSON are refused here too, before anything is built.
pub(crate) fn check(json: &[u8]) -> Result<()> {
    let decode_err = |reason: String| ProverError::Decode {
        what: "porep c1 output (SealCommitPhase1Output json)".into(),
        reason,
    };
    let mut walk = Walk {
        containers: 0,
        allowed: json.len() / MIN_BYTES_PER_CONTAINER + 1,
        len: json.len(),
    };
    let mut de = serde_json::Deserializer::from_slice(json);
    (&mut walk)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| decode_err(e.to_string()))?;
    Ok(())
}

/// Counts arrays and objects down the whole value; stops at the first one past `allowed`.
struct Walk {
    containers: usize,
    allowed: usize,
    /// The JSON's size, for the message.
    len: usize,
}

impl Walk {
    fn enter<E: serde::de::Error>(&mut self) -> std::result::Result<(), E> {
        self.containers += 1;
        if self.containers > self.allowed {
            return Err(E::custom(format_args!(
                "more than {} arrays and objects in {} bytes: a C1 output has at most one per \
                 {MIN_BYTES_PER_CONTAINER} bytes (one per about 79); send the C1 output \
                 filecoin-proofs wrote",
                self.allowed, self.len
            )));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for &mut Walk {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for &mut Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        self.enter()?;
        while seq.next_element_seed(&mut *self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        self.enter()?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(&mut *self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(json: &[u8]) -> String {
        match check(json) {
            Err(ProverError::Decode { reason, .. }) => reason,
            other => panic!("expected a decode error, got {other:?}"),
        }
    }

    #[test]
    fn json_of_empty_arrays_is_refused_before_it_is_built() {
        let mut json = br#"{"vanilla_proofs":{"StackedDrg2KiBV1":["#.to_vec();
        for _ in 0..1_000_000 {
            json.extend_from_slice(b"[],");
        }
        json.extend_from_slice(b"[]]}}");
        let why = reason(&json);
        assert!(
            why.contains("arrays and objects") && why.contains("one per 40 bytes"),
            "{why}"
        );
    }

    #[test]
    fn arrays_of_hashes_pass_and_nesting_past_the_limit_is_refused() {
        // The make-up of a real C1 output: objects of 32-number arrays.
        let hash = format!("[{}]", vec!["137"; 32].join(","));
        let element = format!(r#"{{"hashes":[{hash},{hash}],"index":1}}"#);
        let json = format!(r#"{{"path":[{}]}}"#, vec![element; 1000].join(","));
        check(json.as_bytes()).expect("a C1-shaped document passes");

        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(reason(deep.as_bytes()).contains("recursion limit"));
        assert!(reason(b"{\"a\":").contains("EOF"));
        assert!(reason(b"{} trailing").contains("trailing"));
    }
}
