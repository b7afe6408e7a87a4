//! The fair class's timeline as Linux keeps it: a balanced search tree of the queued entities
//! ordered by virtual deadline, each subtree augmented with the least vruntime in it, so that
//! the EEVDF pick (the eligible entity with the earliest deadline, Linux `pick_eevdf`) is one
//! descent: O(log n) always, where a walk in deadline order to the first eligible entity is
//! O(n) in the worst case.
//!
//! # Representation
//! An [`ArenaMap`] from `(deadline, key)` to vruntime, augmented with [`MinVruntime`]: nodes in
//! an arena reserved ahead, so [`Timeline::try_insert`] never allocates (it fails with
//! [`Full`] when the arena is full: the caller grows it outside its lock,
//! [`Timeline::adopt_storage`]) and every operation may run under an interrupts-off lock;
//! [`Timeline::insert`] grows a full arena instead (as a `Vec` would).
//!
//! # Invariants
//! Those of [`ArenaMap`]: in-order traversal yields `(deadline, key)` strictly increasing (keys
//! break ties), and each node's aggregate is the least `vruntime` in its subtree.
//!
//! # The pick
//! Eligibility is monotone in vruntime (`v` is eligible iff `v <= V`, the queue's virtual time;
//! the caller's predicate): descending from the root, if the left subtree (earlier deadlines)
//! holds an eligible vruntime the answer is there; else the node itself if eligible; else the
//! answer is in the right subtree. Pure, `#![forbid(unsafe_code)]`, proptested against a sorted
//! model and the brute-force EEVDF choice (`tests/timeline.rs`).

pub use crate::arena::Full;
use crate::arena::{ArenaMap, Augment, Step};

/// The subtree aggregate: the least vruntime in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinVruntime(u64);

impl<K> Augment<(u64, K), u64> for MinVruntime {
    fn of(_: &(u64, K), vruntime: &u64) -> Self {
        MinVruntime(*vruntime)
    }
    fn merge(self, child: Self) -> Self {
        MinVruntime(self.0.min(child.0))
    }
}

/// The deadline-ordered, min-vruntime-augmented tree of queued entities (module docs).
#[derive(Clone, Debug)]
pub struct Timeline<K> {
    tree: ArenaMap<(u64, K), u64, MinVruntime>,
}

impl<K: Copy + Ord> Default for Timeline<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Ord> Timeline<K> {
    /// An empty timeline with no memory (every insert fails until storage is adopted).
    pub const fn new() -> Self {
        Timeline { tree: ArenaMap::new() }
    }

    /// An empty timeline with room for `n` entities.
    pub fn with_capacity(n: usize) -> Self {
        Timeline { tree: ArenaMap::with_capacity(n) }
    }

    /// Entities in the tree.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// No entities.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Entities the arena holds without growing.
    pub fn capacity(&self) -> usize {
        self.tree.capacity()
    }

    /// Bytes of node storage reserved.
    pub fn storage_bytes(&self) -> usize {
        self.tree.storage_bytes()
    }

    /// Inserts the entity `key` with `deadline` and `vruntime`. False (and nothing changes) if
    /// `(deadline, key)` is already in the tree; [`Full`] if the arena has no free node.
    /// O(log n), no allocation.
    pub fn try_insert(&mut self, deadline: u64, key: K, vruntime: u64) -> Result<bool, Full> {
        self.tree.try_insert_new((deadline, key), vruntime)
    }

    /// [`try_insert`](Self::try_insert) that grows the arena when it is full (an allocation:
    /// callers under an interrupts-off lock keep [`len`](Self::len) below
    /// [`capacity`](Self::capacity) first, as the run-queue reserve does).
    pub fn insert(&mut self, deadline: u64, key: K, vruntime: u64) -> bool {
        self.tree.insert_new((deadline, key), vruntime)
    }

    /// The vruntime stored with `(deadline, key)`, if it is in the tree.
    pub fn vruntime_of(&self, deadline: u64, key: K) -> Option<u64> {
        self.tree.get(&(deadline, key)).copied()
    }

    /// Removes `(deadline, key)`; its vruntime, or `None` if it was not there. O(log n).
    pub fn remove(&mut self, deadline: u64, key: K) -> Option<u64> {
        self.tree.remove(&(deadline, key))
    }

    /// The earliest deadline's `(deadline, key)`.
    pub fn first(&self) -> Option<(u64, K)> {
        self.tree.first().map(|(&dk, _)| dk)
    }

    /// The least vruntime in the tree (Linux's `min_vruntime` augmentation at the root).
    pub fn min_vruntime(&self) -> Option<u64> {
        self.tree.aug().map(|m| m.0)
    }

    /// The EEVDF pick: `(deadline, key, vruntime)` of the entity with the earliest deadline
    /// among those whose vruntime satisfies `eligible`, which must be monotone (if `v` is
    /// eligible, so is every `u <= v`: Linux's `vruntime_eligible`). O(log n).
    pub fn pick(&self, eligible: impl Fn(u64) -> bool) -> Option<(u64, K, u64)> {
        self.tree
            .descend(|_, &v, left| {
                if left.is_some_and(|m| eligible(m.0)) {
                    Step::Left
                } else if eligible(v) {
                    Step::Here
                } else {
                    Step::Right
                }
            })
            .map(|(&(d, k), &v)| (d, k, v))
    }

    /// Every `(deadline, key, vruntime)` in deadline order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, K, u64)> + '_ {
        self.tree.iter().map(|(&(d, k), &v)| (d, k, v))
    }

    /// Applies `f` to every deadline and `g` to every vruntime; both must preserve order (the
    /// rebase subtracts one shift from all). O(n).
    pub fn map_in_place(&mut self, f: impl Fn(u64) -> u64, g: impl Fn(u64) -> u64) {
        self.tree.map_in_place(|&(d, k)| (f(d), k), g);
    }

    /// Moves the tree into `spare`'s memory (empty, with room for every entity; no
    /// allocation) and leaves `spare` with the old memory, empty. False (nothing moved) if
    /// `spare` is not empty or too small.
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        self.tree.adopt_storage(&mut spare.tree)
    }

    /// Checks every invariant (module docs); for tests. Panics with what is wrong.
    pub fn check(&self) {
        self.tree.check()
    }
}
