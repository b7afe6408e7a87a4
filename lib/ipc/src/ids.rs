//! Linux's ipc identifiers (`ipc/util.c`, `ipc_addid` / `ipc_idr_alloc` / `ipc_rmid`), one
//! table per kind of object (Cadence has semaphore sets).
//!
//! An object sits in a slot (`index`, below [`IPCMNI`]); its id is `seq * IPCMNI + index`, so a
//! stale id of a removed object does not name the next object put in the same slot. Slots are
//! handed out cyclically (`idr_alloc_cyclic` over `[0, max(in_use * 3 / 2, 64))`): the cursor
//! moves past the last slot given, and the sequence number goes up each time a slot at or below
//! the last one is given (the cursor wrapped), as Linux's.

use alloc::boxed::Box;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// Slots (Linux's `IPCMNI`, without `ipcmni_extend`): the id's multiplier.
pub const IPCMNI: i32 = 1 << 15;
/// The cursor cycles through at least this many slots (`ipc_min_cycle`, `RADIX_TREE_MAP_SIZE`).
pub const MIN_CYCLE: usize = 64;
/// The largest sequence number (`ipcid_seq_max()`: `INT_MAX >> 15`).
pub const SEQ_MAX: i32 = i32::MAX >> 15;
/// `IPC_PRIVATE`: a key no lookup finds.
pub const IPC_PRIVATE: i32 = 0;

struct Slot<T> {
    seq: i32,
    key: i32,
    obj: T,
}

/// One kind's table.
pub struct Ids<T> {
    slots: Vec<Option<Box<Slot<T>>>>,
    in_use: usize,
    seq: i32,
    last_idx: i32,
    /// `idr_next`: where the next search starts.
    next: usize,
}

impl<T> Default for Ids<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Ids<T> {
    /// An empty table (`ipc_init_ids`).
    pub const fn new() -> Self {
        Ids { slots: Vec::new(), in_use: 0, seq: 0, last_idx: -1, next: 0 }
    }

    /// Objects in the table (`in_use`).
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The highest slot in use, -1 if none (`ipc_get_maxidx`).
    pub fn max_idx(&self) -> i32 {
        self.slots.iter().rposition(Option::is_some).map_or(-1, |i| i as i32)
    }

    fn free(&self, i: usize) -> bool {
        self.slots.get(i).is_none_or(Option::is_none)
    }

    /// Adds `obj` under `key` (`ipc_addid`): its id, or ENOSPC when `limit` objects exist (or
    /// every slot of the cycle is taken).
    pub fn add(&mut self, key: i32, obj: T, limit: usize) -> Result<i32, Errno> {
        if self.in_use >= limit.min(IPCMNI as usize) {
            return Err(Errno::ENOSPC);
        }
        let end = (self.in_use * 3 / 2).max(MIN_CYCLE).min(IPCMNI as usize);
        let idx = (self.next..end).find(|&i| self.free(i)).or_else(|| (0..end).find(|&i| self.free(i))).ok_or(Errno::ENOSPC)?;
        self.next = idx + 1;
        if idx as i32 <= self.last_idx {
            self.seq += 1;
            if self.seq >= SEQ_MAX {
                self.seq = 0;
            }
        }
        self.last_idx = idx as i32;
        if idx >= self.slots.len() {
            self.slots.resize_with(idx + 1, || None);
        }
        self.slots[idx] = Some(Box::new(Slot { seq: self.seq, key, obj }));
        self.in_use += 1;
        Ok(self.seq * IPCMNI + idx as i32)
    }

    fn slot_of(&self, id: i32) -> Option<usize> {
        if id < 0 {
            return None;
        }
        let idx = (id % IPCMNI) as usize;
        match self.slots.get(idx) {
            Some(Some(s)) if s.seq == id / IPCMNI => Some(idx),
            _ => None,
        }
    }

    /// The object `id` names (`ipc_obtain_object_check`): None for a free slot or a stale id.
    pub fn get(&self, id: i32) -> Option<&T> {
        self.slot_of(id).and_then(|i| self.slots[i].as_ref()).map(|s| &s.obj)
    }

    /// The object `id` names, to change.
    pub fn get_mut(&mut self, id: i32) -> Option<&mut T> {
        self.slot_of(id).and_then(|i| self.slots[i].as_mut()).map(|s| &mut s.obj)
    }

    /// The object in slot `idx` and its id (`SEM_STAT`'s index argument).
    pub fn by_index(&self, idx: i32) -> Option<(i32, &T)> {
        let s = self.slots.get(usize::try_from(idx).ok()?)?.as_ref()?;
        Some((s.seq * IPCMNI + idx, &s.obj))
    }

    /// The live object with `key` and its id (`ipc_findkey`; never for [`IPC_PRIVATE`]).
    pub fn find_key(&self, key: i32) -> Option<(i32, &T)> {
        if key == IPC_PRIVATE {
            return None;
        }
        self.slots.iter().enumerate().find_map(|(i, s)| match s {
            Some(s) if s.key == key => Some((s.seq * IPCMNI + i as i32, &s.obj)),
            _ => None,
        })
    }

    /// The key of `id`'s object.
    pub fn key_of(&self, id: i32) -> Option<i32> {
        self.slot_of(id).and_then(|i| self.slots[i].as_ref()).map(|s| s.key)
    }

    /// Takes `id`'s object out (`ipc_rmid`): its slot is free, the id stale.
    pub fn remove(&mut self, id: i32) -> Option<T> {
        let i = self.slot_of(id)?;
        let s = self.slots[i].take()?;
        self.in_use -= 1;
        while self.slots.last().is_some_and(Option::is_none) {
            self.slots.pop();
        }
        // The table gives back what a burst of objects grew it to (a program that made
        // thousands of sets and removed them leaves a pointer's worth per slot at most twice
        // over, not the burst's table for the rest of the boot).
        if self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to(self.slots.len() * 2);
        }
        Some(s.obj)
    }

    /// Every object, with its id.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (i32, &mut T)> {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| s.as_mut().map(|s| (s.seq * IPCMNI + i as i32, &mut s.obj)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cycle_through_the_slots_and_the_sequence_moves_on_wrap() {
        let mut ids = Ids::new();
        let a = ids.add(0, 'a', 100).unwrap();
        let b = ids.add(7, 'b', 100).unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(ids.remove(a), Some('a'));
        // The cursor moved on: slot 2, not the freed slot 0.
        assert_eq!(ids.add(0, 'c', 100).unwrap(), 2);
        assert_eq!(ids.get(a), None);
        assert_eq!(ids.find_key(7), Some((1, &'b')));
        assert_eq!(ids.find_key(IPC_PRIVATE), None);
        assert_eq!(ids.max_idx(), 2);
        assert_eq!(ids.get(-1), None);
    }

    #[test]
    fn the_table_shrinks_after_a_burst() {
        let mut ids = Ids::new();
        let made: Vec<i32> = (0..4096).map(|i| ids.add(0, [i as u8; 64], 32000).unwrap()).collect();
        assert!(ids.slots.capacity() >= 4096);
        for id in made {
            ids.remove(id).unwrap();
        }
        assert_eq!((ids.in_use(), ids.max_idx()), (0, -1));
        assert!(ids.slots.capacity() <= 8, "capacity {} left after the burst", ids.slots.capacity());
    }

    #[test]
    fn a_wrapped_cursor_bumps_the_sequence() {
        // One object at a time: the cycle is 64 slots, then slot 0 comes back as sequence 1.
        let mut ids = Ids::new();
        for i in 0..64 {
            let id = ids.add(0, i, 100).unwrap();
            assert_eq!(id, i);
            ids.remove(id).unwrap();
        }
        let w = ids.add(0, 99, 100).unwrap();
        assert_eq!(w, IPCMNI);
        assert_eq!(ids.get(w), Some(&99));
        assert_eq!(ids.get(0), None, "the stale id of slot 0");
        assert_eq!(ids.by_index(0), Some((IPCMNI, &99)));
        assert_eq!(ids.get(-1), None);
    }

    #[test]
    fn the_limit_is_enforced() {
        let mut ids = Ids::new();
        ids.add(0, (), 1).unwrap();
        assert_eq!(ids.add(0, (), 1), Err(Errno::ENOSPC));
        assert_eq!(ids.in_use(), 1);
    }
}
