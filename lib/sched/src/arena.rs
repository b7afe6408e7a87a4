//! Ordered maps and sets whose memory is reserved ahead of use: balanced (AVL) search trees
//! whose nodes live in one dense vector, the arena.
//!
//! The run-queue structures ([`crate::FairRq`]'s entities and timeline, [`crate::RtPrioArray`],
//! the kernel's per-CPU task table and group queues) are changed under run-queue locks, with
//! interrupts off, and hold up to tens of thousands of entries. A `BTreeMap` allocates a node
//! whenever a leaf fills up, so every enqueue could reach the heap there; a sorted vector never
//! allocates but moves O(n) elements per insert or removal in the middle (at 10,000 tasks that
//! was most of a switch under TCG). These trees do neither:
//! * lookups, inserts and removals are O(log n): the depth of an AVL tree is at most
//!   1.44·log2(n+2), 46 for 2^32 entries; in-order iteration is O(1) amortized per entry;
//! * **an insert never allocates while `len() < capacity()`** ([`ArenaMap::try_insert`] fails
//!   with [`Full`] instead; [`ArenaMap::insert`] grows a full arena, as a `Vec` would), and a
//!   removal never frees: the last node moves into the hole, so the arena stays dense;
//! * the owner grows them *outside* its lock: it allocates an empty map of the larger
//!   capacity ([`ArenaMap::with_capacity`]), then, under the lock, [`ArenaMap::adopt_storage`]
//!   moves the nodes into it (a copy into memory that is already there, the links unchanged)
//!   and hands the old, now empty buffer back to be freed after the lock is released.
//!
//! Rotations relink nodes and never move them, so a value's size does not multiply the cost of
//! rebalancing. A node's index in the arena (its [`Pos`]) is a handle to its entry without a
//! search: inserts and [`ArenaMap::adopt_storage`] keep every position; a removal moves the
//! last node into the hole, changing that one node's position (callers that cache positions
//! check them with [`ArenaMap::key_at`]).
//!
//! # Augmentation
//! Each node may carry an aggregate of its subtree ([`Augment`]: the fair timeline keeps the
//! least vruntime there, Linux's `min_vruntime` augmented rbtree), recomputed on the way back
//! up from every change, so a search can prune whole subtrees ([`ArenaMap::descend`]).
//!
//! # Invariants (checked by [`ArenaMap::check`])
//! * In-order traversal yields strictly increasing keys.
//! * `height` of a node is 1 + the greater height of its children (0 for none), and siblings'
//!   heights differ by at most one.
//! * Each node's `aug` is its own entry's merged with its children's.
//! * The arena holds exactly `len` nodes, all reachable from the root.
//!
//! [`grow_target`] is the headroom rule the owners use to decide when and how far to grow.

use alloc::vec::Vec;
use core::cmp::Ordering;

/// Free slots a container keeps at least (see [`grow_target`]).
pub const MIN_HEADROOM: usize = 16;

/// The capacity a container holding `len` elements in `capacity` slots should grow to, or
/// `None` if it has headroom enough: at least `max(MIN_HEADROOM, len / 2)` free slots.
/// Growth doubles (`2 × len + MIN_HEADROOM`), so it happens O(log n) times.
pub fn grow_target(len: usize, capacity: usize) -> Option<usize> {
    let headroom = MIN_HEADROOM.max(len / 2);
    (capacity.saturating_sub(len) < headroom).then(|| len.saturating_mul(2).saturating_add(MIN_HEADROOM))
}

/// [`ArenaMap::try_insert`] found the arena full: grow it first ([`ArenaMap::adopt_storage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// A node's index in the arena: a handle to its entry (module docs).
pub type Pos = u32;

const NIL: u32 = u32::MAX;

/// A subtree aggregate kept in every node (module docs). `()` keeps none.
pub trait Augment<K, V>: Copy + PartialEq {
    /// The aggregate of one entry.
    fn of(key: &K, value: &V) -> Self;
    /// Combines an aggregate with a child subtree's.
    fn merge(self, child: Self) -> Self;
}

impl<K, V> Augment<K, V> for () {
    fn of(_: &K, _: &V) -> Self {}
    fn merge(self, _: Self) -> Self {}
}

#[derive(Clone, Debug)]
struct Node<K, V, A> {
    key: K,
    value: V,
    aug: A,
    left: u32,
    right: u32,
    /// The node linking to this one (`NIL` for the root): a removal moves the last node into
    /// the hole and redirects this link without a search.
    parent: u32,
    height: u8,
}

/// Where [`ArenaMap::descend`] goes from a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Into the left subtree (smaller keys).
    Left,
    /// Stop here: this node is the answer.
    Here,
    /// Into the right subtree (greater keys).
    Right,
}

/// An ordered map in an arena (module docs), optionally augmented.
#[derive(Clone, Debug)]
pub struct ArenaMap<K, V, A = ()> {
    nodes: Vec<Node<K, V, A>>,
    root: u32,
}

impl<K: Ord, V, A: Augment<K, V>> Default for ArenaMap<K, V, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord, V, A: Augment<K, V>> ArenaMap<K, V, A> {
    /// An empty map with no memory.
    pub const fn new() -> Self {
        ArenaMap { nodes: Vec::new(), root: NIL }
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        ArenaMap { nodes: Vec::with_capacity(n), root: NIL }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Entries it holds without allocating.
    pub fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// Makes room for `additional` more entries (an allocation: outside any lock that forbids
    /// one).
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// Bytes of memory reserved (capacity × node size).
    pub fn storage_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node<K, V, A>>()
    }

    #[inline]
    fn node(&self, i: u32) -> &Node<K, V, A> {
        &self.nodes[i as usize]
    }

    #[inline]
    fn node_mut(&mut self, i: u32) -> &mut Node<K, V, A> {
        &mut self.nodes[i as usize]
    }

    #[inline]
    fn height(&self, i: u32) -> u8 {
        if i == NIL {
            0
        } else {
            self.node(i).height
        }
    }

    /// Recomputes `i`'s height and aggregate from its children.
    #[inline]
    fn fix(&mut self, i: u32) {
        let n = self.node(i);
        let (l, r) = (n.left, n.right);
        let mut aug = A::of(&n.key, &n.value);
        if l != NIL {
            aug = aug.merge(self.node(l).aug);
        }
        if r != NIL {
            aug = aug.merge(self.node(r).aug);
        }
        let h = 1 + self.height(l).max(self.height(r));
        let n = self.node_mut(i);
        n.height = h;
        n.aug = aug;
    }

    #[inline]
    fn set_left(&mut self, i: u32, child: u32) {
        self.node_mut(i).left = child;
        if child != NIL {
            self.node_mut(child).parent = i;
        }
    }

    #[inline]
    fn set_right(&mut self, i: u32, child: u32) {
        self.node_mut(i).right = child;
        if child != NIL {
            self.node_mut(child).parent = i;
        }
    }

    fn set_root(&mut self, root: u32) {
        self.root = root;
        if root != NIL {
            self.node_mut(root).parent = NIL;
        }
    }

    /// Rotations return the subtree's new root; the caller links it where `i` was.
    fn rotate_right(&mut self, i: u32) -> u32 {
        let l = self.node(i).left;
        self.set_left(i, self.node(l).right);
        self.fix(i);
        self.set_right(l, i);
        self.fix(l);
        l
    }

    fn rotate_left(&mut self, i: u32) -> u32 {
        let r = self.node(i).right;
        self.set_right(i, self.node(r).left);
        self.fix(i);
        self.set_left(r, i);
        self.fix(r);
        r
    }

    /// Fixes `i` and restores the AVL balance at it; returns the subtree's new root.
    fn balance(&mut self, i: u32) -> u32 {
        self.fix(i);
        let (l, r) = (self.node(i).left, self.node(i).right);
        let (hl, hr) = (self.height(l) as i16, self.height(r) as i16);
        if hl > hr + 1 {
            if self.height(self.node(l).right) > self.height(self.node(l).left) {
                let nl = self.rotate_left(l);
                self.set_left(i, nl);
            }
            self.rotate_right(i)
        } else if hr > hl + 1 {
            if self.height(self.node(r).left) > self.height(self.node(r).right) {
                let nr = self.rotate_right(r);
                self.set_right(i, nr);
            }
            self.rotate_left(i)
        } else {
            i
        }
    }

    /// [`balance`](Self::balance) that also says whether the subtree's root, height or
    /// aggregate changed: if not, no ancestor needs fixing either.
    fn rebalance(&mut self, i: u32) -> (u32, bool) {
        let (height, aug) = (self.node(i).height, self.node(i).aug);
        let root = self.balance(i);
        (root, root != i || self.node(root).height != height || self.node(root).aug != aug)
    }

    fn find(&self, key: &K) -> Option<u32> {
        let mut i = self.root;
        while i != NIL {
            let n = self.node(i);
            match key.cmp(&n.key) {
                Ordering::Less => i = n.left,
                Ordering::Greater => i = n.right,
                Ordering::Equal => return Some(i),
            }
        }
        None
    }

    /// The value of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).map(|i| &self.node(i).value)
    }

    /// Is `key` present?
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_some()
    }

    /// Where `key`'s entry sits (module docs: kept by inserts, changed for one node by each
    /// removal).
    pub fn position(&self, key: &K) -> Option<Pos> {
        self.find(key)
    }

    /// The key at `pos` (see [`ArenaMap::position`]).
    pub fn key_at(&self, pos: Pos) -> Option<&K> {
        self.nodes.get(pos as usize).map(|n| &n.key)
    }

    /// The value at `pos`, without a search.
    pub fn at(&self, pos: Pos) -> Option<&V> {
        self.nodes.get(pos as usize).map(|n| &n.value)
    }

    /// Inserts `key` with `value`, replacing (and returning) an old value; [`Full`] (nothing
    /// changed) if the key is new and the arena has no free node. O(log n), no allocation.
    pub fn try_insert(&mut self, key: K, value: V) -> Result<Option<V>, (Full, V)> {
        self.insert_with(key, value, false, true)
    }

    /// Inserts `key` with `value` unless `key` is present: true if inserted; false (and
    /// nothing changed) if present; [`Full`] if the key is new and the arena has no free node.
    /// One descent, no allocation.
    pub fn try_insert_new(&mut self, key: K, value: V) -> Result<bool, Full> {
        self.insert_with(key, value, false, false).map(|present| present.is_none()).map_err(|(full, _)| full)
    }

    /// [`try_insert_new`](Self::try_insert_new) that grows a full arena (see
    /// [`insert`](Self::insert)).
    pub fn insert_new(&mut self, key: K, value: V) -> bool {
        self.insert_with(key, value, true, false).is_ok_and(|present| present.is_none())
    }

    /// [`try_insert`](Self::try_insert) that grows a full arena (an allocation: callers under
    /// an interrupts-off lock keep [`len`](Self::len) below [`capacity`](Self::capacity)
    /// first, as the run-queue reserve does).
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        // `Full` only at 2^32 - 1 entries: unreachable in a kernel's memory.
        self.insert_with(key, value, true, true).unwrap_or_default()
    }

    fn insert_with(&mut self, key: K, value: V, may_grow: bool, replace: bool) -> Result<Option<V>, (Full, V)> {
        let full = self.nodes.len() == self.nodes.capacity();
        if (full && !may_grow) || self.nodes.len() >= NIL as usize {
            // No node to spare: only a present key succeeds.
            return match self.find(&key) {
                Some(i) if replace => Ok(Some(self.replace_value(i, value))),
                Some(_) => Ok(Some(value)),
                None => Err((Full, value)),
            };
        }
        // One descent: an equal key is found on the way down, else the node is made at the leaf.
        let mut slot = Some(value);
        let (root, old, _) = self.insert_at(self.root, key, &mut slot, replace);
        self.set_root(root);
        Ok(old)
    }

    /// Inserts into the subtree at `at` (a node is free): its new root, what was there under
    /// `key` (a replaced value, or the refused one when `!replace`), and whether the subtree
    /// changed (else the ancestors are left as they are).
    fn insert_at(&mut self, at: u32, key: K, value: &mut Option<V>, replace: bool) -> (u32, Option<V>, bool) {
        if at == NIL {
            let value = value.take().expect("the value is placed once");
            let aug = A::of(&key, &value);
            self.nodes.push(Node { key, value, aug, left: NIL, right: NIL, parent: NIL, height: 1 });
            return ((self.nodes.len() - 1) as u32, None, true);
        }
        let ord = key.cmp(&self.node(at).key);
        if ord == Ordering::Equal {
            let value = value.take().expect("the value is placed once");
            let old = if replace { self.replace_value(at, value) } else { value };
            return (at, Some(old), false);
        }
        let child = if ord == Ordering::Less { self.node(at).left } else { self.node(at).right };
        let (c, old, changed) = self.insert_at(child, key, value, replace);
        if !changed {
            return (at, old, false);
        }
        if ord == Ordering::Less {
            self.set_left(at, c);
        } else {
            self.set_right(at, c);
        }
        let (root, changed) = self.rebalance(at);
        (root, old, changed)
    }

    /// Replaces node `i`'s value and refreshes the aggregates from it up to the root.
    fn replace_value(&mut self, i: u32, value: V) -> V {
        let old = core::mem::replace(&mut self.node_mut(i).value, value);
        let mut at = i;
        while at != NIL {
            self.fix(at);
            at = self.node(at).parent;
        }
        old
    }

    /// Removes `key`, returning its value. O(log n); never frees memory.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (root, removed, _) = self.remove_at(self.root, key);
        let i = removed?;
        self.set_root(root);
        Some(self.take_out(i))
    }

    /// Unlinks `key`'s node from the subtree at `at` (one descent): the subtree's new root,
    /// the unlinked node if it was there (nothing changes otherwise), and whether the subtree
    /// changed.
    fn remove_at(&mut self, at: u32, key: &K) -> (u32, Option<u32>, bool) {
        if at == NIL {
            return (NIL, None, false);
        }
        let ord = key.cmp(&self.node(at).key);
        if ord == Ordering::Equal {
            let (l, r) = (self.node(at).left, self.node(at).right);
            if l == NIL {
                return (r, Some(at), true);
            }
            if r == NIL {
                return (l, Some(at), true);
            }
            // Replaced by its successor, the least node of the right subtree.
            let (r, succ) = self.detach_min(r);
            self.set_left(succ, l);
            self.set_right(succ, r);
            return (self.balance(succ), Some(at), true);
        }
        let child = if ord == Ordering::Less { self.node(at).left } else { self.node(at).right };
        let (c, removed, changed) = self.remove_at(child, key);
        if !changed {
            return (at, removed, false);
        }
        if ord == Ordering::Less {
            self.set_left(at, c);
        } else {
            self.set_right(at, c);
        }
        let (root, changed) = self.rebalance(at);
        (root, removed, changed)
    }

    /// Unlinks the least node of the subtree at `at`: (the subtree's new root, that node).
    fn detach_min(&mut self, at: u32) -> (u32, u32) {
        let l = self.node(at).left;
        if l == NIL {
            return (self.node(at).right, at);
        }
        let (nl, min) = self.detach_min(l);
        self.set_left(at, nl);
        (self.balance(at), min)
    }

    /// Takes the unlinked node `i` out of the arena: the last node moves into its slot and the
    /// links to it (its parent's, its children's) are redirected, so the arena stays dense.
    fn take_out(&mut self, i: u32) -> V {
        let last = (self.nodes.len() - 1) as u32;
        if i != last {
            let (left, right, parent) = {
                let n = self.node(last);
                (n.left, n.right, n.parent)
            };
            if parent == NIL {
                self.root = i;
            } else if self.node(parent).left == last {
                self.node_mut(parent).left = i;
            } else {
                self.node_mut(parent).right = i;
            }
            for c in [left, right] {
                if c != NIL {
                    self.node_mut(c).parent = i;
                }
            }
        }
        self.nodes.swap_remove(i as usize).value
    }

    fn extreme(&self, leftmost: bool) -> Option<u32> {
        let mut i = self.root;
        if i == NIL {
            return None;
        }
        loop {
            let n = self.node(i);
            let next = if leftmost { n.left } else { n.right };
            if next == NIL {
                return Some(i);
            }
            i = next;
        }
    }

    /// The entry with the least key.
    pub fn first(&self) -> Option<(&K, &V)> {
        self.extreme(true).map(|i| (&self.node(i).key, &self.node(i).value))
    }

    /// Removes the entry with the least key (one descent along the left spine).
    pub fn pop_first(&mut self) -> Option<(K, V)>
    where
        K: Copy,
    {
        if self.root == NIL {
            return None;
        }
        let (root, i) = self.detach_min(self.root);
        self.set_root(root);
        let key = self.node(i).key;
        Some((key, self.take_out(i)))
    }

    /// The entry with the greatest key.
    pub fn last(&self) -> Option<(&K, &V)> {
        self.extreme(false).map(|i| (&self.node(i).key, &self.node(i).value))
    }

    /// The whole map's aggregate (`None` when empty).
    pub fn aug(&self) -> Option<A> {
        (self.root != NIL).then(|| self.node(self.root).aug)
    }

    /// One root-to-leaf search guided by `f(key, value, left subtree's aggregate)`: the entry
    /// where `f` said [`Step::Here`], or `None` if it fell off the tree. O(log n).
    pub fn descend(&self, mut f: impl FnMut(&K, &V, Option<A>) -> Step) -> Option<(&K, &V)> {
        let mut i = self.root;
        while i != NIL {
            let n = self.node(i);
            let left = (n.left != NIL).then(|| self.node(n.left).aug);
            i = match f(&n.key, &n.value, left) {
                Step::Left => n.left,
                Step::Right => n.right,
                Step::Here => return Some((&n.key, &n.value)),
            };
        }
        None
    }

    /// Entries in key order.
    pub fn iter(&self) -> Iter<'_, K, V, A> {
        let mut it = Iter { map: self, stack: [NIL; STACK], depth: 0 };
        it.push_left(self.root);
        it
    }

    /// Entries with keys `>= from`, in key order.
    pub fn range_from(&self, from: &K) -> Iter<'_, K, V, A> {
        let mut it = Iter { map: self, stack: [NIL; STACK], depth: 0 };
        let mut i = self.root;
        while i != NIL && it.depth < STACK {
            let n = self.node(i);
            if n.key >= *from {
                it.stack[it.depth] = i;
                it.depth += 1;
                i = n.left;
            } else {
                i = n.right;
            }
        }
        it
    }

    /// Entries with keys `< to`, in key order.
    pub fn range_before<'a>(&'a self, to: &'a K) -> impl Iterator<Item = (&'a K, &'a V)> + 'a {
        self.iter().take_while(move |(k, _)| *k < to)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Moves the entries into `spare`'s memory (empty, with room for all; no allocation) and
    /// leaves `spare` with the old memory, empty. Positions are kept. False (nothing moved) if
    /// `spare` is not empty or too small.
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || spare.capacity() < self.len() {
            return false;
        }
        spare.nodes.append(&mut self.nodes); // within capacity: no allocation
        core::mem::swap(&mut self.nodes, &mut spare.nodes);
        spare.root = NIL;
        true
    }

    /// Checks every invariant (module docs); for tests. Panics with what is wrong.
    pub fn check(&self)
    where
        A: core::fmt::Debug,
    {
        fn walk<K: Ord, V, A: Augment<K, V> + core::fmt::Debug>(
            m: &ArenaMap<K, V, A>,
            i: u32,
            prev: &mut Option<u32>,
            count: &mut usize,
        ) -> u8 {
            if i == NIL {
                return 0;
            }
            let n = m.node(i);
            let hl = walk(m, n.left, prev, count);
            assert!(prev.is_none_or(|p| m.node(p).key < n.key), "in-order keys not increasing");
            *prev = Some(i);
            *count += 1;
            let hr = walk(m, n.right, prev, count);
            assert!((hl as i16 - hr as i16).abs() <= 1, "unbalanced node");
            assert_eq!(n.height, 1 + hl.max(hr), "stale height");
            let mut aug = A::of(&n.key, &n.value);
            for c in [n.left, n.right] {
                if c != NIL {
                    aug = aug.merge(m.node(c).aug);
                }
            }
            assert_eq!(n.aug, aug, "stale aggregate");
            for c in [n.left, n.right] {
                assert!(c == NIL || m.node(c).parent == i, "stale parent link");
            }
            n.height
        }
        let mut count = 0;
        assert!(self.root == NIL || self.node(self.root).parent == NIL, "the root has a parent");
        walk(self, self.root, &mut None, &mut count);
        assert_eq!(count, self.len(), "nodes unreachable from the root");
    }
}

impl<K: Ord, V> ArenaMap<K, V, ()> {
    /// The value of `key`, mutable (only without an aggregate, which a change would stale).
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = self.find(key)?;
        Some(&mut self.node_mut(i).value)
    }

    /// The value at `pos`, mutable.
    pub fn at_mut(&mut self, pos: Pos) -> Option<&mut V> {
        self.nodes.get_mut(pos as usize).map(|n| &mut n.value)
    }

    /// Every value, mutable, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.nodes.iter_mut().map(|n| &mut n.value)
    }
}

impl<K: Ord, V: Copy, A: Augment<K, V>> ArenaMap<K, V, A> {
    /// Rewrites every key with `f` and every value with `g` in place; `f` must preserve the
    /// key order (the fair class's rebase subtracts one shift from all). O(n).
    pub fn map_in_place(&mut self, f: impl Fn(&K) -> K, g: impl Fn(V) -> V) {
        for n in self.nodes.iter_mut() {
            n.key = f(&n.key);
            n.value = g(n.value);
        }
        // Aggregates bottom-up: children are fixed before parents in post order.
        let root = self.root;
        self.refix_all(root);
    }

    fn refix_all(&mut self, i: u32) {
        if i == NIL {
            return;
        }
        let (l, r) = (self.node(i).left, self.node(i).right);
        self.refix_all(l);
        self.refix_all(r);
        self.fix(i);
    }
}

/// Depth bound of the iterators' stacks: an AVL tree of 2^32 entries is at most 46 deep.
const STACK: usize = 48;

/// In-order iterator of an [`ArenaMap`].
pub struct Iter<'a, K, V, A> {
    map: &'a ArenaMap<K, V, A>,
    stack: [u32; STACK],
    depth: usize,
}

impl<K: Ord, V, A: Augment<K, V>> Iter<'_, K, V, A> {
    fn push_left(&mut self, mut i: u32) {
        while i != NIL && self.depth < STACK {
            self.stack[self.depth] = i;
            self.depth += 1;
            i = self.map.node(i).left;
        }
    }
}

impl<'a, K: Ord, V, A: Augment<K, V>> Iterator for Iter<'a, K, V, A> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        if self.depth == 0 {
            return None;
        }
        self.depth -= 1;
        let map = self.map;
        let n = map.node(self.stack[self.depth]);
        self.push_left(n.right);
        Some((&n.key, &n.value))
    }
}

/// A map for larger values: the values sit in a dense vector in no particular order, and a
/// small [`ArenaMap`] from key to position keeps the key order, so a search reads compact
/// index nodes instead of nodes holding the values (the fair class's entities: a lookup per
/// enqueue, dequeue and wakeup). Positions work as [`ArenaMap`]'s: inserts and
/// [`SlabMap::adopt_storage`] keep them; a removal moves the last value into the hole. Same
/// reservation contract as [`ArenaMap`].
#[derive(Clone, Debug)]
pub struct SlabMap<K, V> {
    index: ArenaMap<K, Pos>,
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
        SlabMap { index: ArenaMap::new(), values: Vec::new() }
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        SlabMap { index: ArenaMap::with_capacity(n), values: Vec::with_capacity(n) }
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

    /// Is `key` present?
    pub fn contains_key(&self, key: &K) -> bool {
        self.index.contains_key(key)
    }

    /// Where `key`'s value sits (see the type's docs).
    pub fn position(&self, key: &K) -> Option<Pos> {
        self.index.get(key).copied()
    }

    /// The key at `pos`.
    pub fn key_at(&self, pos: Pos) -> Option<&K> {
        self.values.get(pos as usize).map(|(k, _)| k)
    }

    /// The value at `pos`, without a search.
    pub fn at(&self, pos: Pos) -> Option<&V> {
        self.values.get(pos as usize).map(|(_, v)| v)
    }

    /// The value at `pos`, mutable.
    pub fn at_mut(&mut self, pos: Pos) -> Option<&mut V> {
        self.values.get_mut(pos as usize).map(|(_, v)| v)
    }

    /// Inserts or replaces; returns the old value. Allocates only when full.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if let Some(p) = self.position(&key) {
            return Some(core::mem::replace(&mut self.values[p as usize].1, value));
        }
        self.index.insert(key, self.values.len() as Pos);
        self.values.push((key, value));
        None
    }

    /// Removes `key`, returning its value. Never frees memory.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.index.remove(key)? as usize;
        let (_, v) = self.values.swap_remove(i);
        if let Some(&(moved, _)) = self.values.get(i) {
            if let Some(pos) = self.index.get_mut(&moved) {
                *pos = i as Pos;
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

    /// As [`ArenaMap::adopt_storage`] (positions are kept: the values move in order).
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || spare.index.capacity() < self.len() || spare.values.capacity() < self.len() {
            return false;
        }
        self.index.adopt_storage(&mut spare.index);
        spare.values.append(&mut self.values); // within capacity: no allocation
        core::mem::swap(&mut self.values, &mut spare.values);
        true
    }

    /// Checks the invariants (the index's, and that it maps every key to its value's
    /// position); for tests.
    pub fn check(&self) {
        self.index.check();
        assert_eq!(self.index.len(), self.values.len(), "index and values disagree");
        for (k, &p) in self.index.iter() {
            assert!(self.key_at(p) == Some(k), "index entry points at another key");
        }
    }
}

/// An ordered set in an arena: an [`ArenaMap`] without values.
#[derive(Clone, Debug)]
pub struct ArenaSet<T> {
    map: ArenaMap<T, ()>,
}

impl<T: Ord> Default for ArenaSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord> ArenaSet<T> {
    /// An empty set (no memory).
    pub const fn new() -> Self {
        ArenaSet { map: ArenaMap::new() }
    }

    /// An empty set with room for `n` elements.
    pub fn with_capacity(n: usize) -> Self {
        ArenaSet { map: ArenaMap::with_capacity(n) }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Elements it holds without allocating.
    pub fn capacity(&self) -> usize {
        self.map.capacity()
    }

    /// Bytes of memory reserved.
    pub fn storage_bytes(&self) -> usize {
        self.map.storage_bytes()
    }

    /// Is `x` present?
    pub fn contains(&self, x: &T) -> bool {
        self.map.contains_key(x)
    }

    /// Inserts `x`; false if it was present. Allocates only when full.
    pub fn insert(&mut self, x: T) -> bool {
        self.map.insert(x, ()).is_none()
    }

    /// Removes `x`; false if it was absent.
    pub fn remove(&mut self, x: &T) -> bool {
        self.map.remove(x).is_some()
    }

    /// The least element.
    pub fn first(&self) -> Option<&T> {
        self.map.first().map(|(k, _)| k)
    }

    /// Elements in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.map.keys()
    }

    /// Elements `>= from`, in order.
    pub fn range_from(&self, from: &T) -> impl Iterator<Item = &T> + '_ {
        self.map.range_from(from).map(|(k, _)| k)
    }

    /// As [`ArenaMap::adopt_storage`].
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        self.map.adopt_storage(&mut spare.map)
    }

    /// Checks the tree's invariants; for tests.
    pub fn check(&self) {
        self.map.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_iterate() {
        let mut m: ArenaMap<u32, u32> = ArenaMap::with_capacity(4);
        for k in [5, 1, 9, 3] {
            assert_eq!(m.try_insert(k, k * 10), Ok(None));
        }
        assert!(matches!(m.try_insert(7, 70), Err((Full, 70))));
        assert_eq!(m.try_insert(5, 55), Ok(Some(50)), "a replacement needs no node");
        assert_eq!(m.insert(7, 70), None, "insert grows");
        m.check();
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        assert_eq!(m.range_from(&4).map(|(k, _)| *k).collect::<Vec<_>>(), [5, 7, 9]);
        assert_eq!(m.range_from(&5).map(|(k, _)| *k).collect::<Vec<_>>(), [5, 7, 9]);
        assert_eq!(m.range_before(&5).map(|(k, _)| *k).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(m.remove(&1), Some(10));
        assert_eq!(m.remove(&1), None);
        m.check();
        assert_eq!((m.first(), m.last()), (Some((&3, &30)), Some((&9, &90))));
        let p = m.position(&9).unwrap();
        assert_eq!(m.key_at(p), Some(&9));
        *m.at_mut(p).unwrap() += 1;
        assert_eq!(m.get(&9), Some(&91));
    }

    #[test]
    fn adopt_keeps_positions_and_order() {
        let mut m: ArenaMap<u32, u32> = ArenaMap::new();
        for k in 0..100 {
            m.insert(k * 7 % 101, k);
        }
        let p = m.position(&14).unwrap();
        let mut spare = ArenaMap::with_capacity(10);
        assert!(!m.adopt_storage(&mut spare), "too small");
        let mut spare = ArenaMap::with_capacity(200);
        assert!(m.adopt_storage(&mut spare));
        assert_eq!((m.capacity() >= 200, spare.len()), (true, 0));
        assert_eq!(m.position(&14), Some(p));
        m.check();
    }
}
