//! A lock-free list of tasks other CPUs push wakeups onto, drained by its owner (Linux's
//! `llist`, as `__smp_call_single_queue` / `sched_ttwu_pending` use it).

use alloc::sync::Arc;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The link a [`WakeList`] node embeds (one per list a node can be on: it is on at most one at
/// a time).
pub struct WakeLink<T> {
    next: AtomicPtr<T>,
    linked: AtomicBool,
}

impl<T> Default for WakeLink<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WakeLink<T> {
    /// An unlinked link.
    pub const fn new() -> Self {
        Self { next: AtomicPtr::new(core::ptr::null_mut()), linked: AtomicBool::new(false) }
    }
}

/// A type whose values can be on a [`WakeList`].
pub trait WakeListNode: Send + Sync + Sized + 'static {
    /// The node's link.
    fn wake_link(&self) -> &WakeLink<Self>;
}

/// A multi-producer, single-consumer list of reference-counted nodes. Any CPU pushes
/// ([`push`](Self::push), lock-free, no allocation); the owner takes everything at once
/// ([`take_all`](Self::take_all)), oldest first. Each node on the list holds one reference.
pub struct WakeList<T> {
    head: AtomicPtr<T>,
    _owns: PhantomData<Arc<T>>,
}

impl<T: WakeListNode> Default for WakeList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: WakeListNode> WakeList<T> {
    /// An empty list.
    pub const fn new() -> Self {
        Self { head: AtomicPtr::new(core::ptr::null_mut()), _owns: PhantomData }
    }

    /// Is the list empty? (`order` as the caller's protocol needs: a reader that must see a
    /// push ordered before its own store uses `SeqCst`.)
    pub fn is_empty(&self, order: Ordering) -> bool {
        self.head.load(order).is_null()
    }

    /// Pushes `node` (the list keeps the reference) and returns whether the list was empty
    /// before: only that push needs to tell the owner (the later ones join a drain already
    /// asked for). Panics if `node` is on a list already.
    pub fn push(&self, node: Arc<T>) -> bool {
        let link = node.wake_link();
        let was = link.linked.swap(true, Ordering::AcqRel);
        assert!(!was, "a node pushed on a wake list while on one");
        let raw = Arc::into_raw(node) as *mut T;
        // SAFETY: `raw` is the reference just leaked, alive while on the list.
        let link = unsafe { (*raw).wake_link() };
        let mut head = self.head.load(Ordering::SeqCst);
        loop {
            link.next.store(head, Ordering::Relaxed);
            match self.head.compare_exchange_weak(head, raw, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return head.is_null(),
                Err(h) => head = h,
            }
        }
    }

    /// Takes every node off the list, to be yielded oldest first.
    pub fn take_all(&self) -> WakeListDrain<'_, T> {
        let mut next = self.head.swap(core::ptr::null_mut(), Ordering::SeqCst);
        // Newest first on the list: reverse the chain.
        let mut oldest_first: *mut T = core::ptr::null_mut();
        while !next.is_null() {
            // SAFETY: every node on the list holds the reference `push` leaked; taking the
            // list (the swap) made the chain ours alone, so its links are ours to rewrite.
            let link = unsafe { (*next).wake_link() };
            let after = link.next.load(Ordering::Relaxed);
            link.next.store(oldest_first, Ordering::Relaxed);
            oldest_first = next;
            next = after;
        }
        WakeListDrain { list: self, next: oldest_first }
    }
}

/// The nodes taken by [`WakeList::take_all`], oldest first. Each yielded node is off the list
/// (it may be pushed again); the ones not yet yielded are dropped with the drain, or put back
/// by [`requeue`](Self::requeue).
pub struct WakeListDrain<'a, T: WakeListNode> {
    list: &'a WakeList<T>,
    /// The oldest node not yet yielded (a chain this drain owns, each with its reference).
    next: *mut T,
}

impl<T: WakeListNode> Iterator for WakeListDrain<'_, T> {
    type Item = Arc<T>;

    fn next(&mut self) -> Option<Arc<T>> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: the chain is this drain's (see `take_all`): `next` holds its leaked reference.
        let node = unsafe { Arc::from_raw(self.next as *const T) };
        let link = node.wake_link();
        self.next = link.next.swap(core::ptr::null_mut(), Ordering::Relaxed);
        link.linked.store(false, Ordering::Release);
        Some(node)
    }
}

impl<T: WakeListNode> WakeListDrain<'_, T> {
    /// Puts `first` and every node not yet yielded back at the front of the list, in order
    /// (before whatever was pushed since the drain began). Panics if `first` is on a list.
    pub fn requeue(mut self, first: Arc<T>) {
        let rest = core::mem::replace(&mut self.next, core::ptr::null_mut());
        let link = first.wake_link();
        assert!(!link.linked.swap(true, Ordering::AcqRel), "a node requeued on a wake list while on one");
        link.next.store(rest, Ordering::Relaxed);
        let first = Arc::into_raw(first) as *mut T;
        let mut last = first;
        loop {
            // SAFETY: `first` and the rest of the chain are this drain's (references leaked,
            // links ours) until published below.
            let after = unsafe { (*last).wake_link() }.next.load(Ordering::Relaxed);
            if after.is_null() {
                break;
            }
            last = after;
        }
        // SAFETY: as above; `last` ends the chain, so its link is ours to set.
        let last_link = unsafe { (*last).wake_link() };
        let mut head = self.list.head.load(Ordering::SeqCst);
        loop {
            last_link.next.store(head, Ordering::Relaxed);
            match self.list.head.compare_exchange_weak(head, first, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }
}

impl<T: WakeListNode> Drop for WakeListDrain<'_, T> {
    fn drop(&mut self) {
        // Nodes never yielded lose their reference and their place on the list.
        for node in self.by_ref() {
            drop(node);
        }
    }
}
