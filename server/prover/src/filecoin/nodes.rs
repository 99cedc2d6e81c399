//! A check of every hash node and Merkle path element inside a decoded vanilla proof, before
//! filecoin's verifiers see it. bincode fills a `PoseidonDomain` or `Sha256Domain` from any 32
//! bytes and a path element's index from any integer; the verifiers then turn each node into a
//! field element with `expect` and insert at the index with `Vec::insert`, so a non-canonical
//! node or an index past its siblings would panic inside them (both found by the fuzz targets).
//!
//! The proofs of all kinds are deeply nested generic structures; rather than walk each one by
//! hand, the check serializes the value through a serde `Serializer` that looks only at the
//! domain newtypes and at `PathElement { hashes, index }`, and writes nothing.

use serde::ser::{self, Serialize};

use crate::error::{ProverError, Result};

/// Refuses `value` (named `what` in the error) if a hash node in it is not a canonical
/// BLS12-381 field element or a Merkle path element's index does not fit its siblings.
pub(crate) fn check_nodes<T: Serialize>(what: &str, value: &T) -> Result<()> {
    let mut walker = Walker::default();
    value.serialize(&mut walker).map_err(|e| {
        ProverError::InvalidRequest(format!(
            "{what} holds {}; send the unmodified output of the step that produced it",
            e.0
        ))
    })
}

/// A Merkle path element as the circuits' `AuthPath` takes it: the siblings and the index of
/// the node among them.
pub(crate) type PathElement = (Vec<Option<blstrs::Scalar>>, Option<usize>);

/// The Merkle path elements inside `value` in the order they are serialized (for an inclusion
/// proof of a tree with sub- and top-trees: base, sub, top), each checked as [`check_nodes`]
/// checks them: what `MerkleProofTrait::as_options` gives, for proofs whose inclusion proof
/// storage-proofs keeps private (a column proof's).
pub(crate) fn path_elements<T: Serialize>(what: &str, value: &T) -> Result<Vec<PathElement>> {
    let mut walker = Walker {
        collected: Some(Default::default()),
        ..Walker::default()
    };
    value
        .serialize(&mut walker)
        .map_err(|e| ProverError::InvalidRequest(format!("{what} holds {}", e.0)))?;
    Ok(walker.collected.map(|(done, _)| done).unwrap_or_default())
}

/// The node types filecoin's hashers serialize as a newtype around their 32 bytes.
const DOMAINS: [&str; 2] = ["PoseidonDomain", "Sha256Domain"];

#[derive(Default)]
struct Walker {
    /// Compound values entered and not yet ended.
    depth: usize,
    /// When collecting ([`path_elements`]): the path elements ended so far, and the siblings
    /// of the one being walked.
    collected: Option<(Vec<PathElement>, Vec<blstrs::Scalar>)>,
    /// Inside a `PathElement`: the siblings seen so far, its index, and its depth.
    element: Option<(usize, Option<u64>, usize)>,
    /// Inside a domain newtype: its bytes so far.
    node: Option<NodeBytes>,
}

/// A domain node's bytes as they are serialized, without a heap allocation per node.
#[derive(Default)]
struct NodeBytes {
    bytes: [u8; 32],
    len: usize,
}

impl NodeBytes {
    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
        }
        self.len += 1;
    }

    /// The 32 bytes, if exactly 32 were written.
    fn repr(&self) -> Option<[u8; 32]> {
        (self.len == 32).then_some(self.bytes)
    }
}

#[derive(Debug)]
struct Bad(String);

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Bad {}

impl ser::Error for Bad {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Bad(msg.to_string())
    }
}

impl Walker {
    fn node_done(&mut self, node: NodeBytes) -> Result<(), Bad> {
        use ff::PrimeField;
        let canonical = node
            .repr()
            .and_then(|repr| Option::<blstrs::Scalar>::from(blstrs::Scalar::from_repr(repr)));
        let Some(node) = canonical else {
            return Err(Bad(
                "a hash node that is not a BLS12-381 field element".to_string()
            ));
        };
        if let Some((siblings, _, _)) = &mut self.element {
            *siblings += 1;
            if let Some((_, hashes)) = &mut self.collected {
                hashes.push(node);
            }
        }
        Ok(())
    }

    fn enter(&mut self) -> &mut Self {
        self.depth += 1;
        self
    }

    /// The end of a compound value; a `PathElement` is judged when its own struct ends.
    fn leave(&mut self) -> Result<(), Bad> {
        let ended = self.depth;
        self.depth -= 1;
        match self.element {
            Some((_, _, depth)) if depth == ended => self.element_done(),
            _ => Ok(()),
        }
    }

    fn element_done(&mut self) -> Result<(), Bad> {
        let Some((siblings, index, _)) = self.element.take() else {
            return Ok(());
        };
        // A node has 1, 3, 7 or 15 siblings (arity 2, 4, 8 or 16) and sits at index <= siblings.
        let arity_ok = matches!(siblings + 1, 2 | 4 | 8 | 16);
        match index {
            Some(i) if arity_ok && i <= siblings as u64 => {
                if let Some((done, hashes)) = &mut self.collected {
                    let hashes = std::mem::take(hashes).into_iter().map(Some).collect();
                    done.push((hashes, Some(i as usize)));
                }
                Ok(())
            }
            _ => Err(Bad(format!(
                "a Merkle path element with {siblings} sibling(s) and index {}",
                index.map_or("none".to_string(), |i| i.to_string())
            ))),
        }
    }

    fn integer(&mut self, v: u64) {
        if let Some(node) = &mut self.node {
            node.push(v as u8);
        } else if let Some((_, index, _)) = &mut self.element {
            *index = Some(v);
        }
    }
}

macro_rules! integers {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result<(), Bad> {
            self.integer(v as u64);
            Ok(())
        }
    )*};
}

impl ser::Serializer for &mut Walker {
    type Ok = ();
    type Error = Bad;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    integers!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
              serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64);

    fn serialize_bool(self, _: bool) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_f64(self, _: f64) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Bad> {
        if let Some(node) = &mut self.node {
            v.iter().for_each(|b| node.push(*b));
        }
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), Bad> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Bad> {
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Bad> {
        if !DOMAINS.contains(&name) {
            return value.serialize(self);
        }
        self.node = Some(NodeBytes::default());
        value.serialize(&mut *self)?;
        let bytes = self.node.take().unwrap_or_default();
        self.node_done(bytes)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Bad> {
        value.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Bad> {
        Ok(self.enter())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Bad> {
        Ok(self.enter())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Bad> {
        Ok(self.enter())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Bad> {
        Ok(self.enter())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Bad> {
        Ok(self.enter())
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Self, Bad> {
        let walker = self.enter();
        if name == "PathElement" {
            walker.element = Some((0, None, walker.depth));
            if let Some((_, hashes)) = &mut walker.collected {
                hashes.clear();
            }
        }
        Ok(walker)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Bad> {
        Ok(self.enter())
    }
}

/// Compound values: visit every element; a `PathElement` is judged when it ends.
macro_rules! compound {
    ($($trait:ident :: $method:ident ($($key:ty)?)),*) => {$(
        impl ser::$trait for &mut Walker {
            type Ok = ();
            type Error = Bad;
            fn $method<T: ?Sized + Serialize>(&mut self, $(_: $key,)? value: &T) -> Result<(), Bad> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Bad> {
                self.leave()
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element(),
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeTupleVariant::serialize_field(),
    SerializeStruct::serialize_field(&'static str),
    SerializeStructVariant::serialize_field(&'static str)
);

impl ser::SerializeMap for &mut Walker {
    type Ok = ();
    type Error = Bad;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Bad> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), Bad> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Bad> {
        self.leave()
    }
}

#[cfg(test)]
mod tests {
    use filecoin_hashers::poseidon::PoseidonDomain;
    use filecoin_hashers::sha256::Sha256Domain;
    use serde::Serialize;

    use super::check_nodes;

    /// Serializes as storage-proofs-core's path element does (its name and fields).
    #[derive(Serialize)]
    struct PathElement {
        hashes: Vec<PoseidonDomain>,
        index: usize,
    }

    fn node(byte: u8) -> PoseidonDomain {
        PoseidonDomain::from([byte; 32])
    }

    #[test]
    fn canonical_nodes_and_fitting_indices_pass() {
        let path = vec![
            PathElement {
                hashes: vec![node(1); 7],
                index: 7,
            },
            PathElement {
                hashes: vec![node(2); 1],
                index: 0,
            },
        ];
        check_nodes("path", &(path, node(3), Sha256Domain::from([4; 32]))).unwrap();
    }

    #[test]
    fn a_node_at_or_above_the_modulus_is_refused() {
        let err = check_nodes("vanilla_proofs[0]", &vec![node(1), node(0xff)]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("vanilla_proofs[0]"), "{msg}");
        assert!(msg.contains("not a BLS12-381 field element"), "{msg}");
        assert!(check_nodes("x", &Sha256Domain::from([0xff; 32])).is_err());
    }

    #[test]
    fn an_index_past_the_siblings_or_an_odd_arity_is_refused() {
        for (siblings, index) in [(7, 8), (7, 14849), (2, 0), (0, 0)] {
            let element = PathElement {
                hashes: vec![node(1); siblings],
                index,
            };
            let err = check_nodes("proof", &element).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{siblings} sibling(s) and index {index}")),
                "{err}"
            );
        }
    }
}
