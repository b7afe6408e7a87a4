//! The fair class's timeline as Linux keeps it: a balanced search tree of the queued entities
//! ordered by virtual deadline, each subtree augmented with the least vruntime in it, so that
//! the EEVDF pick (the eligible entity with the earliest deadline, Linux `pick_eevdf`) is one
//! descent: O(log n) always, where a walk in deadline order to the first eligible entity is
//! O(n) in the worst case.
//!
//! # Representation
//! An AVL tree whose nodes live in an arena (`Vec`) reserved ahead: [`Timeline::try_insert`]
//! never allocates (it fails with [`Full`] when the arena has no free node: the caller grows it
//! outside its lock, [`Timeline::adopt_storage`]), so every operation may run under an
//! interrupts-off lock; [`Timeline::insert`] grows a full arena instead (as a `Vec` would). Free nodes form a list through their `left` link. Heights differ by at
//! most one between siblings, so the depth is at most 1.44·log2(n+2): 46 for 2^32 entities.
//!
//! # Invariants
//! * In-order traversal yields `(deadline, key)` strictly increasing (keys break ties).
//! * Each node's `min_vruntime` is the least `vruntime` in its subtree.
//! * `height` of a node is 1 + the greater height of its children (0 for none).
//!
//! # The pick
//! Eligibility is monotone in vruntime (`v` is eligible iff `v <= V`, the queue's virtual time;
//! the caller's predicate): descending from the root, if the left subtree (earlier deadlines)
//! holds an eligible vruntime the answer is there; else the node itself if eligible; else the
//! answer is in the right subtree. Pure, `#![forbid(unsafe_code)]`, proptested against a sorted
//! model and the brute-force EEVDF choice (`tests/timeline.rs`).

use alloc::vec::Vec;

const NIL: u32 = u32::MAX;

/// [`Timeline::insert`] found no free node: grow the arena first ([`Timeline::adopt_storage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

#[derive(Clone, Debug)]
struct Node<K> {
    deadline: u64,
    key: K,
    vruntime: u64,
    min_vruntime: u64,
    left: u32,
    right: u32,
    height: u8,
}

/// The deadline-ordered, min-vruntime-augmented tree of queued entities (module docs).
#[derive(Clone, Debug)]
pub struct Timeline<K> {
    nodes: Vec<Node<K>>,
    root: u32,
    /// Head of the free-node list (linked through `left`).
    free: u32,
    len: usize,
}

impl<K: Copy + Ord> Default for Timeline<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Copy + Ord> Timeline<K> {
    /// An empty timeline with no memory (every insert fails until storage is adopted).
    pub const fn new() -> Self {
        Timeline { nodes: Vec::new(), root: NIL, free: NIL, len: 0 }
    }

    /// An empty timeline with room for `n` entities.
    pub fn with_capacity(n: usize) -> Self {
        Timeline { nodes: Vec::with_capacity(n), root: NIL, free: NIL, len: 0 }
    }

    /// Entities in the tree.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No entities.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entities the arena holds without growing.
    pub fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// Bytes of node storage reserved.
    pub fn storage_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node<K>>()
    }

    fn node(&self, i: u32) -> &Node<K> {
        &self.nodes[i as usize]
    }

    fn node_mut(&mut self, i: u32) -> &mut Node<K> {
        &mut self.nodes[i as usize]
    }

    fn height(&self, i: u32) -> u8 {
        if i == NIL {
            0
        } else {
            self.node(i).height
        }
    }

    fn min_of(&self, i: u32) -> u64 {
        if i == NIL {
            u64::MAX
        } else {
            self.node(i).min_vruntime
        }
    }

    /// Recomputes `i`'s height and subtree minimum from its children.
    fn fix(&mut self, i: u32) {
        let (l, r, v) = {
            let n = self.node(i);
            (n.left, n.right, n.vruntime)
        };
        let h = 1 + self.height(l).max(self.height(r));
        let m = v.min(self.min_of(l)).min(self.min_of(r));
        let n = self.node_mut(i);
        n.height = h;
        n.min_vruntime = m;
    }

    fn rotate_right(&mut self, i: u32) -> u32 {
        let l = self.node(i).left;
        let lr = self.node(l).right;
        self.node_mut(i).left = lr;
        self.fix(i);
        self.node_mut(l).right = i;
        self.fix(l);
        l
    }

    fn rotate_left(&mut self, i: u32) -> u32 {
        let r = self.node(i).right;
        let rl = self.node(r).left;
        self.node_mut(i).right = rl;
        self.fix(i);
        self.node_mut(r).left = i;
        self.fix(r);
        r
    }

    /// Fixes `i` and restores the AVL balance at it; returns the subtree's new root.
    fn balance(&mut self, i: u32) -> u32 {
        self.fix(i);
        let (l, r) = (self.node(i).left, self.node(i).right);
        let (hl, hr) = (self.height(l) as i16, self.height(r) as i16);
        if hl > hr + 1 {
            let (ll, lr) = (self.node(l).left, self.node(l).right);
            if self.height(lr) > self.height(ll) {
                let nl = self.rotate_left(l);
                self.node_mut(i).left = nl;
            }
            self.rotate_right(i)
        } else if hr > hl + 1 {
            let (rl, rr) = (self.node(r).left, self.node(r).right);
            if self.height(rl) > self.height(rr) {
                let nr = self.rotate_right(r);
                self.node_mut(i).right = nr;
            }
            self.rotate_left(i)
        } else {
            i
        }
    }

    fn new_node(&mut self, deadline: u64, key: K, vruntime: u64, may_grow: bool) -> Result<u32, Full> {
        let node = Node { deadline, key, vruntime, min_vruntime: vruntime, left: NIL, right: NIL, height: 1 };
        if self.free != NIL {
            let i = self.free;
            self.free = self.node(i).left;
            *self.node_mut(i) = node;
            return Ok(i);
        }
        if (!may_grow && self.nodes.len() == self.nodes.capacity()) || self.nodes.len() >= NIL as usize {
            return Err(Full);
        }
        self.nodes.push(node); // within capacity unless `may_grow`: no allocation
        Ok((self.nodes.len() - 1) as u32)
    }

    fn release(&mut self, i: u32) {
        self.node_mut(i).left = self.free;
        self.free = i;
    }

    /// Inserts the entity `key` with `deadline` and `vruntime`. False (and nothing changes) if
    /// `(deadline, key)` is already in the tree; [`Full`] if the arena has no free node.
    /// O(log n), no allocation.
    pub fn try_insert(&mut self, deadline: u64, key: K, vruntime: u64) -> Result<bool, Full> {
        self.insert_with(deadline, key, vruntime, false)
    }

    /// [`try_insert`](Self::try_insert) that grows the arena when it is full (an allocation:
    /// callers under an interrupts-off lock keep [`len`](Self::len) below
    /// [`capacity`](Self::capacity) first, as the run-queue reserve does).
    pub fn insert(&mut self, deadline: u64, key: K, vruntime: u64) -> bool {
        self.insert_with(deadline, key, vruntime, true).unwrap_or(false)
    }

    fn insert_with(&mut self, deadline: u64, key: K, vruntime: u64, may_grow: bool) -> Result<bool, Full> {
        // One descent: a duplicate is found on the way down, the node is made at the leaf.
        let (root, inserted) = self.insert_at(self.root, deadline, key, vruntime, may_grow)?;
        self.root = root;
        self.len += usize::from(inserted);
        Ok(inserted)
    }

    /// Inserts into the subtree at `at`: its new root and whether a node was added. On an
    /// error or a duplicate nothing changed.
    fn insert_at(&mut self, at: u32, deadline: u64, key: K, vruntime: u64, may_grow: bool) -> Result<(u32, bool), Full> {
        if at == NIL {
            return Ok((self.new_node(deadline, key, vruntime, may_grow)?, true));
        }
        let here = (self.node(at).deadline, self.node(at).key);
        let inserted = match (deadline, key).cmp(&here) {
            core::cmp::Ordering::Equal => return Ok((at, false)),
            core::cmp::Ordering::Less => {
                let (l, inserted) = self.insert_at(self.node(at).left, deadline, key, vruntime, may_grow)?;
                self.node_mut(at).left = l;
                inserted
            }
            core::cmp::Ordering::Greater => {
                let (r, inserted) = self.insert_at(self.node(at).right, deadline, key, vruntime, may_grow)?;
                self.node_mut(at).right = r;
                inserted
            }
        };
        Ok((if inserted { self.balance(at) } else { at }, inserted))
    }

    /// The vruntime stored with `(deadline, key)`, if it is in the tree.
    pub fn vruntime_of(&self, deadline: u64, key: K) -> Option<u64> {
        self.find(deadline, key).map(|i| self.node(i).vruntime)
    }

    fn find(&self, deadline: u64, key: K) -> Option<u32> {
        let mut i = self.root;
        while i != NIL {
            let n = self.node(i);
            match (deadline, key).cmp(&(n.deadline, n.key)) {
                core::cmp::Ordering::Less => i = n.left,
                core::cmp::Ordering::Greater => i = n.right,
                core::cmp::Ordering::Equal => return Some(i),
            }
        }
        None
    }

    /// Removes `(deadline, key)`; its vruntime, or `None` if it was not there. O(log n).
    pub fn remove(&mut self, deadline: u64, key: K) -> Option<u64> {
        let (root, removed) = self.remove_at(self.root, deadline, key);
        self.root = root;
        let i = removed?;
        let v = self.node(i).vruntime;
        self.release(i);
        self.len -= 1;
        Some(v)
    }

    /// Removes `(deadline, key)` from the subtree at `at` (one descent): the subtree's new root
    /// and the unlinked node, if it was there (nothing changes otherwise).
    fn remove_at(&mut self, at: u32, deadline: u64, key: K) -> (u32, Option<u32>) {
        if at == NIL {
            return (NIL, None);
        }
        let here = (self.node(at).deadline, self.node(at).key);
        match (deadline, key).cmp(&here) {
            core::cmp::Ordering::Less => {
                let (l, removed) = self.remove_at(self.node(at).left, deadline, key);
                if removed.is_none() {
                    return (at, None);
                }
                self.node_mut(at).left = l;
                (self.balance(at), removed)
            }
            core::cmp::Ordering::Greater => {
                let (r, removed) = self.remove_at(self.node(at).right, deadline, key);
                if removed.is_none() {
                    return (at, None);
                }
                self.node_mut(at).right = r;
                (self.balance(at), removed)
            }
            core::cmp::Ordering::Equal => {
                let (l, r) = (self.node(at).left, self.node(at).right);
                if l == NIL {
                    return (r, Some(at));
                }
                if r == NIL {
                    return (l, Some(at));
                }
                // Replace by the successor: the least node of the right subtree.
                let (r, succ) = self.detach_min(r);
                self.node_mut(succ).left = l;
                self.node_mut(succ).right = r;
                (self.balance(succ), Some(at))
            }
        }
    }

    /// Unlinks the least node of the subtree at `at`: (the subtree's new root, that node).
    fn detach_min(&mut self, at: u32) -> (u32, u32) {
        let l = self.node(at).left;
        if l == NIL {
            return (self.node(at).right, at);
        }
        let (nl, min) = self.detach_min(l);
        self.node_mut(at).left = nl;
        (self.balance(at), min)
    }

    /// The earliest deadline's `(deadline, key)`.
    pub fn first(&self) -> Option<(u64, K)> {
        let mut i = self.root;
        if i == NIL {
            return None;
        }
        while self.node(i).left != NIL {
            i = self.node(i).left;
        }
        let n = self.node(i);
        Some((n.deadline, n.key))
    }

    /// The least vruntime in the tree (Linux's `min_vruntime` augmentation at the root).
    pub fn min_vruntime(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.node(self.root).min_vruntime)
    }

    /// The EEVDF pick: `(deadline, key, vruntime)` of the entity with the earliest deadline
    /// among those whose vruntime satisfies `eligible`, which must be monotone (if `v` is
    /// eligible, so is every `u <= v`: Linux's `vruntime_eligible`). O(log n).
    pub fn pick(&self, eligible: impl Fn(u64) -> bool) -> Option<(u64, K, u64)> {
        let mut i = self.root;
        while i != NIL {
            let n = self.node(i);
            if n.left != NIL && eligible(self.node(n.left).min_vruntime) {
                i = n.left;
                continue;
            }
            if eligible(n.vruntime) {
                return Some((n.deadline, n.key, n.vruntime));
            }
            i = n.right;
        }
        None
    }

    /// Every `(deadline, key, vruntime)` in deadline order.
    pub fn iter(&self) -> Iter<'_, K> {
        let mut it = Iter { tree: self, stack: [NIL; 64], depth: 0 };
        it.push_left(self.root);
        it
    }

    /// Applies `f` to every deadline and `g` to every vruntime; both must preserve order (the
    /// rebase subtracts one shift from all). O(n).
    pub fn map_in_place(&mut self, f: impl Fn(u64) -> u64, g: impl Fn(u64) -> u64) {
        for n in self.nodes.iter_mut() {
            n.deadline = f(n.deadline);
            n.vruntime = g(n.vruntime);
            n.min_vruntime = g(n.min_vruntime);
        }
    }

    /// Moves the tree into `spare`'s memory (empty, with room for every entity; no
    /// allocation) and leaves `spare` with the old memory, empty. False (nothing moved) if
    /// `spare` is not empty or too small.
    pub fn adopt_storage(&mut self, spare: &mut Self) -> bool {
        if !spare.is_empty() || !spare.nodes.is_empty() || spare.nodes.capacity() < self.len {
            return false;
        }
        // Copy the live nodes in order into the spare arena (within its capacity: no
        // allocation) and link them into a perfectly balanced tree; the new arena is dense.
        let items = self.len;
        for (d, k, v) in self.iter() {
            spare.nodes.push(Node { deadline: d, key: k, vruntime: v, min_vruntime: v, left: NIL, right: NIL, height: 1 });
        }
        spare.root = spare.build(0, items);
        spare.len = items;
        spare.free = NIL;
        core::mem::swap(self, spare);
        spare.nodes.clear();
        spare.root = NIL;
        spare.free = NIL;
        spare.len = 0;
        true
    }

    /// Links `nodes[lo..hi]` (in order) into a balanced subtree; its root.
    fn build(&mut self, lo: usize, hi: usize) -> u32 {
        if lo >= hi {
            return NIL;
        }
        let mid = lo + (hi - lo) / 2;
        let l = self.build(lo, mid);
        let r = self.build(mid + 1, hi);
        let m = mid as u32;
        self.node_mut(m).left = l;
        self.node_mut(m).right = r;
        self.fix(m);
        m
    }

    /// Checks every invariant (module docs); for tests. Panics with what is wrong.
    pub fn check(&self) {
        fn walk<K: Copy + Ord>(t: &Timeline<K>, i: u32, prev: &mut Option<(u64, K)>, count: &mut usize) -> (u8, u64) {
            if i == NIL {
                return (0, u64::MAX);
            }
            let n = t.node(i);
            let (hl, ml) = walk(t, n.left, prev, count);
            assert!(prev.is_none_or(|p| p < (n.deadline, n.key)), "in-order keys not increasing");
            *prev = Some((n.deadline, n.key));
            *count += 1;
            let (hr, mr) = walk(t, n.right, prev, count);
            assert!((hl as i16 - hr as i16).abs() <= 1, "unbalanced node");
            assert_eq!(n.height, 1 + hl.max(hr), "stale height");
            assert_eq!(n.min_vruntime, n.vruntime.min(ml).min(mr), "stale subtree minimum");
            (n.height, n.min_vruntime)
        }
        let mut prev = None;
        let mut count = 0;
        walk(self, self.root, &mut prev, &mut count);
        assert_eq!(count, self.len, "len disagrees with the tree");
    }
}

/// In-order iterator of a [`Timeline`] (an explicit stack: the depth is at most 46 for 2^32
/// entities, within the 64 slots).
pub struct Iter<'a, K> {
    tree: &'a Timeline<K>,
    stack: [u32; 64],
    depth: usize,
}

impl<K: Copy + Ord> Iter<'_, K> {
    fn push_left(&mut self, mut i: u32) {
        while i != NIL && self.depth < self.stack.len() {
            self.stack[self.depth] = i;
            self.depth += 1;
            i = self.tree.node(i).left;
        }
    }
}

impl<K: Copy + Ord> Iterator for Iter<'_, K> {
    type Item = (u64, K, u64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.depth == 0 {
            return None;
        }
        self.depth -= 1;
        let i = self.stack[self.depth];
        let n = self.tree.node(i);
        self.push_left(n.right);
        Some((n.deadline, n.key, n.vruntime))
    }
}
