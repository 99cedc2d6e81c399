//! A map by `u64` key that is cheap to copy: its items live behind their own `Arc`s in shared
//! chunks of [`CHUNK`] consecutive keys, so a copy shares every chunk and a change copies the
//! pointers of the one chunk it touches. The snapshots' jobs are one: the writer changes the
//! views of the jobs an input touched, and a snapshot shares the rest with the one before.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Consecutive keys per chunk.
const CHUNK: u64 = 256;

/// Items by key, in key order, in shared chunks.
#[derive(Debug)]
pub struct ChunkedMap<T> {
    chunks: BTreeMap<u64, Arc<BTreeMap<u64, Arc<T>>>>,
    len: usize,
}

impl<T> Default for ChunkedMap<T> {
    fn default() -> Self {
        ChunkedMap {
            chunks: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<T> Clone for ChunkedMap<T> {
    fn clone(&self) -> Self {
        ChunkedMap {
            chunks: self.chunks.clone(),
            len: self.len,
        }
    }
}

impl<T> ChunkedMap<T> {
    /// Puts `item` at `key`; the chunk is copied (its pointers) if a copy of the map shares it.
    pub fn insert(&mut self, key: u64, item: Arc<T>) {
        let chunk = self.chunks.entry(key / CHUNK).or_default();
        if Arc::make_mut(chunk).insert(key, item).is_none() {
            self.len += 1;
        }
    }

    pub fn remove(&mut self, key: u64) {
        let Some(chunk) = self.chunks.get_mut(&(key / CHUNK)) else {
            return;
        };
        if !chunk.contains_key(&key) {
            return;
        }
        Arc::make_mut(chunk).remove(&key);
        self.len -= 1;
        if chunk.is_empty() {
            self.chunks.remove(&(key / CHUNK));
        }
    }

    pub fn get(&self, key: u64) -> Option<&T> {
        self.chunks
            .get(&(key / CHUNK))?
            .get(&key)
            .map(|item| &**item)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// In key order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.values().flat_map(|c| c.values().map(|i| &**i))
    }

    /// In key order, each item's own `Arc`: two maps holding the same `Arc` hold the same
    /// item, unchanged (a reader may keep what it made of one by its address).
    pub fn iter_shared(&self) -> impl Iterator<Item = &Arc<T>> {
        self.chunks.values().flat_map(|c| c.values())
    }

    pub fn first(&self) -> Option<&T> {
        self.iter().next()
    }

    /// Whether `self` and `other` share the chunk of `key`.
    #[cfg(test)]
    fn shares_chunk_of(&self, other: &ChunkedMap<T>, key: u64) -> bool {
        match (
            self.chunks.get(&(key / CHUNK)),
            other.chunks.get(&(key / CHUNK)),
        ) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The `index`th item in key order.
impl<T> std::ops::Index<usize> for ChunkedMap<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        self.iter()
            .nth(index)
            .expect("index within the map's length")
    }
}

impl<'a, T> IntoIterator for &'a ChunkedMap<T> {
    type Item = &'a T;
    type IntoIter = Box<dyn Iterator<Item = &'a T> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// Keyed by position.
impl<T> FromIterator<T> for ChunkedMap<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut map = ChunkedMap::default();
        for (key, item) in items.into_iter().enumerate() {
            map.insert(key as u64, Arc::new(item));
        }
        map
    }
}

/// Shared chunks and shared items are equal without being read.
impl<T: PartialEq> PartialEq for ChunkedMap<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self.chunks.len() == other.chunks.len()
            && (self.chunks.iter().zip(&other.chunks)).all(|((ka, a), (kb, b))| {
                ka == kb
                    && (Arc::ptr_eq(a, b)
                        || a.len() == b.len()
                            && (a.iter().zip(b.iter())).all(|((ka, a), (kb, b))| {
                                ka == kb && (Arc::ptr_eq(a, b) || a == b)
                            }))
            })
    }
}

impl<T: serde::Serialize> serde::Serialize for ChunkedMap<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_a_map_in_key_order_across_chunks() {
        let mut m = ChunkedMap::default();
        for key in (0..(3 * CHUNK + 7)).rev() {
            m.insert(key, Arc::new(key * 10));
        }
        m.insert(5, Arc::new(1));
        for key in CHUNK..(2 * CHUNK) {
            m.remove(key);
        }
        m.remove(10 * CHUNK);
        assert_eq!(m.len() as u64, 2 * CHUNK + 7);
        assert_eq!(
            (m.get(5), m.get(CHUNK), m.get(2 * CHUNK)),
            (Some(&1), None, Some(&(2 * CHUNK * 10)))
        );
        let keys: Vec<u64> = m.iter().map(|v| if *v == 1 { 50 } else { *v }).collect();
        let expected: Vec<u64> = (0..CHUNK)
            .chain(2 * CHUNK..3 * CHUNK + 7)
            .map(|k| k * 10)
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(m[2], 20);
        assert_eq!(m.chunks.len(), 3, "an emptied chunk is dropped");
    }

    #[test]
    fn a_copy_shares_its_chunks_and_a_change_copies_only_its_own() {
        let mut m: ChunkedMap<u64> = (0..(4 * CHUNK)).collect();
        let copy = m.clone();
        m.insert(3, Arc::new(0));
        assert!(!m.shares_chunk_of(&copy, 3), "the changed chunk is copied");
        assert!(m.shares_chunk_of(&copy, CHUNK), "the others are shared");
        assert_eq!(copy.get(3), Some(&3), "the copy is unchanged");
        assert_ne!(m, copy);
        m.insert(3, Arc::new(3));
        assert_eq!(m, copy, "equal items in a copied chunk compare equal");
    }
}
