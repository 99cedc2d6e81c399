//! A queue that is cheap to copy: its items live in shared chunks, so a copy shares every chunk
//! and a change copies at most the one chunk it touches. The history uses it for the jobs and
//! stints of the last hour, which snapshots share while the writer adds to them.

use std::collections::VecDeque;
use std::sync::Arc;

/// Items per chunk.
const CHUNK: usize = 512;

/// A first-in first-out sequence in shared chunks of [`CHUNK`] items.
#[derive(Debug, Clone)]
pub struct Chunked<T> {
    /// Each chunk and how many of its first items were popped.
    chunks: VecDeque<(Arc<Vec<T>>, usize)>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T: Clone> Chunked<T> {
    pub fn push_back(&mut self, item: T) {
        match self.chunks.back_mut() {
            Some((chunk, _)) if chunk.len() < CHUNK => Arc::make_mut(chunk).push(item),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(item);
                self.chunks.push_back((Arc::new(chunk), 0));
            }
        }
        self.len += 1;
    }

    /// Drops the oldest item; the chunk it was in is not copied.
    pub fn pop_front(&mut self) {
        let Some((chunk, popped)) = self.chunks.front_mut() else {
            return;
        };
        *popped += 1;
        self.len -= 1;
        if *popped == chunk.len() {
            self.chunks.pop_front();
        }
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn front(&self) -> Option<&T> {
        self.chunks.front().map(|(chunk, popped)| &chunk[*popped])
    }

    /// Oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks
            .iter()
            .flat_map(|(chunk, popped)| chunk[*popped..].iter())
    }

    /// Whether `self` and `other` share the chunk holding their oldest items.
    #[cfg(test)]
    fn shares_front_with(&self, other: &Chunked<T>) -> bool {
        match (self.chunks.front(), other.chunks.front()) {
            (Some((a, _)), Some((b, _))) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl<T: PartialEq> PartialEq for Chunked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<T: Eq> Eq for Chunked<T> {}

impl<T: serde::Serialize> serde::Serialize for Chunked<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_a_queue_across_chunks() {
        let mut q = Chunked::default();
        for i in 0..(3 * CHUNK + 7) {
            q.push_back(i);
        }
        for _ in 0..(CHUNK + 3) {
            q.pop_front();
        }
        assert_eq!(q.len(), 2 * CHUNK + 4);
        assert_eq!(q.front(), Some(&(CHUNK + 3)));
        let items: Vec<usize> = q.iter().copied().collect();
        assert_eq!(items, ((CHUNK + 3)..(3 * CHUNK + 7)).collect::<Vec<_>>());
        while q.len() > 0 {
            q.pop_front();
        }
        assert_eq!((q.front(), q.iter().count()), (None, 0));
    }

    #[test]
    fn a_copy_shares_its_chunks_and_a_change_copies_only_the_last() {
        let mut q = Chunked::default();
        for i in 0..(10 * CHUNK) {
            q.push_back(i);
        }
        let copy = q.clone();
        q.push_back(10 * CHUNK);
        q.pop_front();
        assert!(q.shares_front_with(&copy), "the oldest chunk is not copied");
        assert_eq!(copy.len(), 10 * CHUNK, "the copy is unchanged");
        assert_eq!(q.len(), 10 * CHUNK);
        assert_ne!(q, copy);
    }
}
