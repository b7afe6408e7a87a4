//! Sorted-vector map and set whose memory is reserved ahead of use.
//!
//! The run-queue structures ([`crate::FairRq`], [`crate::RtPrioArray`], the kernel's per-CPU
//! task table) are changed under run-queue locks, with interrupts off. A `BTreeMap` allocates
//! a node whenever a leaf fills up, so every enqueue could reach the heap there. These
//! containers keep their elements in one sorted ring buffer (`VecDeque`) instead:
//! * lookups are binary searches (O(log n)); inserts and removals shift the elements on the
//!   nearer side (O(n) moves of small elements at worst — a run queue holds tens to hundreds
//!   of entries — and O(1) at either end, which is where the scheduler mostly works: it takes
//!   the earliest deadline and queues behind the latest; a plain `Vec` shifted the whole tail
//!   on every pick, 30% of hackbench's time under TCG, which emulates each moved word);
//! * **an insert never allocates while `len() < capacity()`** and a removal never frees;
//! * the owner grows them *outside* its lock: it allocates an empty container of the larger
//!   capacity ([`VecMap::with_capacity`]), then, under the lock, [`VecMap::adopt_storage`]
//!   moves the elements into it (a copy into memory that is already there) and hands the old,
//!   now empty buffer back to be freed after the lock is released.
//!
//! [`grow_target`] is the headroom rule the owners use to decide when and how far to grow.
//!
//! Invariant: the elements are strictly increasing (by key for the map); a full container
//! still accepts inserts (it grows like a `Vec`), so correctness never depends on the
//! reservation, only the allocation-freedom does.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Free slots a container keeps at least (see [`grow_target`]).
pub const MIN_HEADROOM: usize = 16;

/// The capacity a container holding `len` elements in `capacity` slots should grow to, or
/// `None` if it has headroom enough: at least `max(MIN_HEADROOM, len / 2)` free slots.
/// Growth doubles (`2 × len + MIN_HEADROOM`), so it happens O(log n) times.
pub fn grow_target(len: usize, capacity: usize) -> Option<usize> {
    let headroom = MIN_HEADROOM.max(len / 2);
    (capacity.saturating_sub(len) < headroom).then(|| len.saturating_mul(2).saturating_add(MIN_HEADROOM))
}

/// A map kept as a sorted vector of `(key, value)`.
#[derive(Clone, Debug)]
pub struct VecMap<K, V> {
    items: VecDeque<(K, V)>,
}

impl<K: Ord, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord, V> VecMap<K, V> {
    /// An empty map (no memory).
    pub const fn new() -> Self {
        VecMap { items: VecDeque::new() }
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        VecMap { items: VecDeque::with_capacity(n) }
    }

    fn find(&self, key: &K) -> Result<usize, usize> {
        self.items.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entries it holds without allocating.
    pub fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// Bytes of memory reserved (capacity × element size).
    pub fn storage_bytes(&self) -> usize {
        self.items.capacity() * core::mem::size_of::<(K, V)>()
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.items[i].1)
    }

    /// The value of `key`, mutable.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.items[i].1)
    }

    /// Is `key` present?
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Where `key` sits (its rank), for [`VecMap::at`]: valid until the next insert or removal.
    pub fn position(&self, key: &K) -> Option<usize> {
        self.find(key).ok()
    }

    /// The entry at `pos` (see [`VecMap::position`]), without a search.
    pub fn at(&self, pos: usize) -> Option<(&K, &V)> {
        self.items.get(pos).map(|(k, v)| (k, v))
    }

    /// The entry at `pos`, its value mutable.
    pub fn at_mut(&mut self, pos: usize) -> Option<(&K, &mut V)> {
        self.items.get_mut(pos).map(|(k, v)| (&*k, v))
    }

    /// Inserts or replaces; returns the old value. Allocates only when full.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(core::mem::replace(&mut self.items[i].1, value)),
            Err(i) => {
                self.items.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`, returning its value. Never frees memory.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.find(key).ok().and_then(|i| self.items.remove(i)).map(|(_, v)| v)
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + ExactSizeIterator + '_ {
        self.items.iter().map(|(k, v)| (k, v))
    }

    /// Keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator + '_ {
        self.items.iter().map(|(k, _)| k)
    }

    /// Values in key order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator + '_ {
        self.items.iter().map(|(_, v)| v)
    }

    /// Values in key order, mutable (keys cannot change, so the order holds).
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator + '_ {
        self.items.iter_mut().map(|(_, v)| v)
    }

    /// Entries with keys `>= from`, in order.
    pub fn range_from(&self, from: &K) -> impl Iterator<Item = (&K, &V)> + '_ {
        let start = self.find(from).unwrap_or_else(|i| i);
        self.items.range(start..).map(|(k, v)| (k, v))
    }

    /// Entries with keys `< to`, in order.
    pub fn range_before(&self, to: &K) -> impl Iterator<Item = (&K, &V)> + '_ {
        let end = self.find(to).unwrap_or_else(|i| i);
        self.items.range(..end).map(|(k, v)| (k, v))
    }

    /// Keeps the entries for which `f` is true (never allocates).
    pub fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        self.items.retain_mut(|(k, v)| f(k, v));
    }

    /// Moves every entry into `spare`'s memory and swaps buffers: afterwards `self` holds the
    /// entries in `spare`'s (larger) buffer and `spare` is empty with `self`'s old buffer, to
    /// be dropped by the caller (outside its lock). Allocates nothing. Refused (false, nothing
    /// changed) unless `spare` is empty with room for all the entries.
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || spare.capacity() < self.len() {
            return false;
        }
        spare.items.append(&mut self.items);
        core::mem::swap(&mut self.items, &mut spare.items);
        true
    }
}

/// A map for larger values: the values sit in a dense vector in no particular order, and a
/// [`VecMap`] from key to position keeps the key order. An insert or removal shifts only the
/// small `(key, position)` pairs (a removal moves the last value into the hole), so a value's
/// size does not multiply the cost. Same reservation contract as [`VecMap`].
#[derive(Clone, Debug)]
pub struct SlabMap<K, V> {
    index: VecMap<K, u32>,
    values: Vec<(K, V)>,
}

impl<K: Ord + Copy, V> Default for SlabMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Copy, V> SlabMap<K, V> {
    /// An empty map (no memory).
    pub const fn new() -> Self {
        SlabMap { index: VecMap::new(), values: Vec::new() }
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        SlabMap { index: VecMap::with_capacity(n), values: Vec::with_capacity(n) }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Entries it holds without allocating.
    pub fn capacity(&self) -> usize {
        self.index.capacity().min(self.values.capacity())
    }

    /// Bytes of memory reserved.
    pub fn storage_bytes(&self) -> usize {
        self.index.storage_bytes() + self.values.capacity() * core::mem::size_of::<(K, V)>()
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.index.get(key).map(|&i| &self.values[i as usize].1)
    }

    /// The value of `key`, mutable.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = *self.index.get(key)?;
        Some(&mut self.values[i as usize].1)
    }

    /// Is `key` present?
    pub fn contains_key(&self, key: &K) -> bool {
        self.index.contains_key(key)
    }

    /// Where `key`'s value sits: a position for [`SlabMap::at`], valid until the next
    /// [`SlabMap::remove`] (which moves the last value into the hole). Inserts and
    /// [`SlabMap::adopt_storage`] keep positions.
    pub fn position(&self, key: &K) -> Option<u32> {
        self.index.get(key).copied()
    }

    /// The key at `pos` (see [`SlabMap::position`]).
    pub fn key_at(&self, pos: u32) -> Option<&K> {
        self.values.get(pos as usize).map(|(k, _)| k)
    }

    /// The value at `pos` (see [`SlabMap::position`]), without a search.
    pub fn at(&self, pos: u32) -> Option<&V> {
        self.values.get(pos as usize).map(|(_, v)| v)
    }

    /// The value at `pos`, mutable.
    pub fn at_mut(&mut self, pos: u32) -> Option<&mut V> {
        self.values.get_mut(pos as usize).map(|(_, v)| v)
    }

    /// Inserts or replaces; returns the old value. Allocates only when full.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(v) = self.get_mut(&key) {
            return Some(core::mem::replace(v, value));
        }
        self.index.insert(key, self.values.len() as u32);
        self.values.push((key, value));
        None
    }

    /// Removes `key`, returning its value. Never frees memory.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.index.remove(key)? as usize;
        let (_, v) = self.values.swap_remove(i);
        if let Some(&(moved, _)) = self.values.get(i) {
            if let Some(pos) = self.index.get_mut(&moved) {
                *pos = i as u32;
            }
        }
        Some(v)
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.index.iter().map(|(k, &i)| (k, &self.values[i as usize].1))
    }

    /// Every value, mutable, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.values.iter_mut().map(|(_, v)| v)
    }

    /// As [`VecMap::adopt_storage`] (positions are kept: the values move in order).
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || spare.index.capacity() < self.len() || spare.values.capacity() < self.len() {
            return false;
        }
        self.index.adopt_storage(&mut spare.index);
        spare.values.append(&mut self.values);
        core::mem::swap(&mut self.values, &mut spare.values);
        true
    }
}

/// A set kept as a sorted vector.
#[derive(Clone, Debug)]
pub struct VecSet<T> {
    items: VecDeque<T>,
}

impl<T: Ord> Default for VecSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord> VecSet<T> {
    /// An empty set (no memory).
    pub const fn new() -> Self {
        VecSet { items: VecDeque::new() }
    }

    /// An empty set with room for `n` elements.
    pub fn with_capacity(n: usize) -> Self {
        VecSet { items: VecDeque::with_capacity(n) }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Elements it holds without allocating.
    pub fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// Bytes of memory reserved (capacity × element size).
    pub fn storage_bytes(&self) -> usize {
        self.items.capacity() * core::mem::size_of::<T>()
    }

    /// Is `x` present?
    pub fn contains(&self, x: &T) -> bool {
        self.items.binary_search(x).is_ok()
    }

    /// Inserts `x`; false if it was present. Allocates only when full.
    pub fn insert(&mut self, x: T) -> bool {
        match self.items.binary_search(&x) {
            Ok(_) => false,
            Err(i) => {
                self.items.insert(i, x);
                true
            }
        }
    }

    /// Removes `x`; false if it was absent. Never frees memory.
    pub fn remove(&mut self, x: &T) -> bool {
        match self.items.binary_search(x) {
            Ok(i) => {
                self.items.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// The smallest element.
    pub fn first(&self) -> Option<&T> {
        self.items.front()
    }

    /// Elements in order.
    pub fn iter(&self) -> alloc::collections::vec_deque::Iter<'_, T> {
        self.items.iter()
    }

    /// Elements `>= from`, in order.
    pub fn range_from(&self, from: &T) -> alloc::collections::vec_deque::Iter<'_, T> {
        let start = self.items.binary_search(from).unwrap_or_else(|i| i);
        self.items.range(start..)
    }

    /// Number of leading elements for which `pred` holds (`pred` must be true for a prefix
    /// and false after it, as for `slice::partition_point`): O(log n).
    pub fn partition_point(&self, pred: impl FnMut(&T) -> bool) -> usize {
        self.items.partition_point(pred)
    }

    /// Number of elements in `lo..hi` (half-open).
    pub fn count_range(&self, lo: &T, hi: &T) -> usize {
        let a = self.items.partition_point(|x| x < lo);
        let b = self.items.partition_point(|x| x < hi);
        b.saturating_sub(a)
    }

    /// Rewrites every element with `f` and restores the order (in place, no allocation).
    /// Elements that become equal are kept once.
    pub fn map_in_place(&mut self, mut f: impl FnMut(&T) -> T) {
        let v = self.items.make_contiguous();
        for x in v.iter_mut() {
            *x = f(x);
        }
        v.sort_unstable();
        // Dedup in place: keep the first of each run of equal elements.
        let mut kept = 0;
        for i in 0..v.len() {
            if kept == 0 || v[i] != v[kept - 1] {
                v.swap(kept, i);
                kept += 1;
            }
        }
        self.items.truncate(kept);
    }

    /// As [`VecMap::adopt_storage`].
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || spare.capacity() < self.len() {
            return false;
        }
        spare.items.append(&mut self.items);
        core::mem::swap(&mut self.items, &mut spare.items);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::{BTreeMap, BTreeSet};
    use proptest::prelude::*;

    #[test]
    fn grow_target_keeps_headroom_and_doubles() {
        assert_eq!(grow_target(0, 0), Some(MIN_HEADROOM));
        assert_eq!(grow_target(0, MIN_HEADROOM), None);
        assert_eq!(grow_target(1, MIN_HEADROOM), Some(2 + MIN_HEADROOM));
        assert_eq!(grow_target(100, 150), None);
        assert_eq!(grow_target(100, 149), Some(216));
        assert_eq!(grow_target(usize::MAX, 0), Some(usize::MAX));
    }

    #[test]
    fn adopt_storage_moves_entries_and_returns_the_old_buffer() {
        let mut m = VecMap::with_capacity(2);
        m.insert(2, "b");
        m.insert(1, "a");
        let mut small = VecMap::with_capacity(1);
        assert!(!m.adopt_storage(&mut small), "too small");
        let mut busy = VecMap::with_capacity(10);
        busy.insert(7, "x");
        assert!(!m.adopt_storage(&mut busy), "not empty");
        let mut spare = VecMap::with_capacity(64);
        assert!(m.adopt_storage(&mut spare));
        assert!(m.capacity() >= 64 && spare.is_empty() && spare.capacity() >= 2);
        assert_eq!(m.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>(), [(1, "a"), (2, "b")]);
        let mut s: VecSet<u32> = [3, 1].into_iter().fold(VecSet::with_capacity(2), |mut s, x| {
            s.insert(x);
            s
        });
        let mut spare = VecSet::with_capacity(8);
        assert!(s.adopt_storage(&mut spare));
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn inserts_within_capacity_keep_the_buffer() {
        let mut s = VecSet::with_capacity(32);
        let ptr = s.items.as_slices().0.as_ptr();
        for x in (0..32u32).rev() {
            s.insert(x);
        }
        assert_eq!(s.items.capacity(), 32, "no reallocation below capacity");
        let _ = ptr;
        s.map_in_place(|x| x / 2);
        assert_eq!(s.len(), 16);
        assert_eq!(s.count_range(&3, &7), 4);
        assert_eq!(s.range_from(&14).copied().collect::<Vec<_>>(), [14, 15]);
    }

    proptest! {
        /// Random inserts and removals agree with the standard B-tree map and set.
        #[test]
        fn behaves_like_btree(ops in proptest::collection::vec((any::<bool>(), 0u8..40, any::<u16>()), 0..300)) {
            let (mut m, mut bm) = (VecMap::new(), BTreeMap::new());
            let (mut s, mut bs) = (VecSet::new(), BTreeSet::new());
            for (ins, k, v) in ops {
                if ins {
                    prop_assert_eq!(m.insert(k, v), bm.insert(k, v));
                    prop_assert_eq!(s.insert(k), bs.insert(k));
                } else {
                    prop_assert_eq!(m.remove(&k), bm.remove(&k));
                    prop_assert_eq!(s.remove(&k), bs.remove(&k));
                }
                prop_assert_eq!(m.len(), bm.len());
                prop_assert_eq!(m.get(&k), bm.get(&k));
                prop_assert_eq!(s.first(), bs.first());
                prop_assert_eq!(s.contains(&k), bs.contains(&k));
            }
            prop_assert!(m.iter().map(|(k, v)| (*k, *v)).eq(bm.iter().map(|(k, v)| (*k, *v))));
            prop_assert!(s.iter().eq(bs.iter()));
            prop_assert!(m.range_from(&20).map(|(k, _)| *k).eq(bm.range(20..).map(|(k, _)| *k)));
            prop_assert!(m.range_before(&20).map(|(k, _)| *k).eq(bm.range(..20).map(|(k, _)| *k)));
        }

        /// The slab map agrees with the standard B-tree map, through an adoption too.
        #[test]
        fn slab_map_behaves_like_btree(ops in proptest::collection::vec((0u8..3, 0u8..40, any::<u16>()), 0..300)) {
            let (mut m, mut bm) = (SlabMap::new(), BTreeMap::new());
            for (op, k, v) in ops {
                match op {
                    0 => prop_assert_eq!(m.insert(k, v), bm.insert(k, v)),
                    1 => prop_assert_eq!(m.remove(&k), bm.remove(&k)),
                    _ => {
                        let mut spare = SlabMap::with_capacity(m.len() + 3);
                        prop_assert!(m.adopt_storage(&mut spare));
                        prop_assert!(spare.is_empty());
                    }
                }
                prop_assert_eq!(m.len(), bm.len());
                prop_assert_eq!(m.get(&k), bm.get(&k));
                if let Some(x) = m.get_mut(&k) {
                    *x = x.wrapping_add(1);
                    *bm.get_mut(&k).unwrap() = bm[&k].wrapping_add(1);
                }
            }
            prop_assert!(m.iter().map(|(k, v)| (*k, *v)).eq(bm.iter().map(|(k, v)| (*k, *v))));
        }
    }
}
