//! A System V semaphore set's state (Linux `ipc/sem.c`), without locks or sleeping: the kernel
//! holds the set's lock around every call and sleeps on what a pending operation's `W` stands
//! for.
//!
//! **Atomicity.** A `semop` array is applied in order and undone if an operation would block or
//! overflow (Linux's `perform_atomic_semop_slow`, which gives the same answer as the fast path
//! when no semaphore repeats): either every operation happens or none.
//!
//! **Pending operations** wait in arrival order; after every change ([`Set::update`]) each is
//! tried again, first to last, and a successful one is applied on its waiter's behalf (the
//! waiter wakes with its operation done, as Linux's `update_queue` does); one that now
//! overflows (ERANGE) fails. A success that changed values starts the scan again, so a
//! later operation sees what an earlier one did.
//!
//! **SEM_UNDO.** Each undo owner (a process) has an adjustment per semaphore, the negation of
//! what its SEM_UNDO operations added, within [-32768, 32767] (ERANGE beyond, as Linux); its
//! [`Set::exit`] adds them back, each value clamped to [0, SEMVMX]. SETVAL and SETALL zero the
//! adjustments of the semaphores they set, for every owner.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// Semaphores per set at most (`SEMMSL`).
pub const SEMMSL: i32 = 32000;
/// Sets at most (`SEMMNI`).
pub const SEMMNI: i32 = 32000;
/// Semaphores in all sets at most (`SEMMNS`).
pub const SEMMNS: i32 = SEMMNI * SEMMSL;
/// Operations per `semop` call at most (`SEMOPM`).
pub const SEMOPM: i32 = 500;
/// A semaphore's largest value (`SEMVMX`).
pub const SEMVMX: i32 = 32767;
/// The largest undo adjustment (`SEMAEM`).
pub const SEMAEM: i32 = SEMVMX;
/// `sem_flg`: fail with EAGAIN instead of waiting.
pub const IPC_NOWAIT: i16 = 0o4000;
/// `sem_flg`: undo the operation when the process exits.
pub const SEM_UNDO: i16 = 0x1000;

/// One operation (`struct sembuf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemBuf {
    /// `sem_num`.
    pub num: u16,
    /// `sem_op`.
    pub op: i16,
    /// `sem_flg`.
    pub flg: i16,
}

impl SemBuf {
    /// From the 6 bytes of a user `struct sembuf`.
    pub fn from_bytes(b: [u8; 6]) -> SemBuf {
        SemBuf { num: u16::from_le_bytes([b[0], b[1]]), op: i16::from_le_bytes([b[2], b[3]]), flg: i16::from_le_bytes([b[4], b[5]]) }
    }
}

/// Does any operation change a value (Linux's `alter`)?
pub fn alters(ops: &[SemBuf]) -> bool {
    ops.iter().any(|o| o.op != 0)
}

struct Pending<W> {
    ops: Vec<SemBuf>,
    pid: i32,
    owner: u64,
    /// The operation it waits on (`q->blocking`), for GETNCNT / GETZCNT.
    blocking: usize,
    w: W,
}

/// One set.
pub struct Set<W> {
    vals: Vec<i32>,
    pids: Vec<i32>,
    undos: BTreeMap<u64, Vec<i32>>,
    pending: VecDeque<Pending<W>>,
}

/// Applies `ops` to `vals` atomically; `Ok(None)` done, `Ok(Some(i))` operation `i` would block
/// (nothing changed), ERANGE for a value above SEMVMX or an adjustment out of range (nothing
/// changed).
fn apply(vals: &mut [i32], pids: &mut [i32], mut undo: Option<&mut Vec<i32>>, ops: &[SemBuf], pid: i32) -> Result<Option<usize>, Errno> {
    let mut failed = None;
    let mut done = 0;
    for (i, o) in ops.iter().enumerate() {
        let n = usize::from(o.num);
        let cur = vals[n];
        let op = i32::from(o.op);
        if op == 0 && cur != 0 || cur + op < 0 {
            failed = Some(Ok(Some(i)));
            break;
        }
        if cur + op > SEMVMX {
            failed = Some(Err(Errno::ERANGE));
            break;
        }
        if o.flg & SEM_UNDO != 0 {
            let u = undo.as_deref_mut().expect("an undo entry exists for SEM_UNDO operations");
            let adj = u[n] - op;
            if !(-SEMAEM - 1..=SEMAEM).contains(&adj) {
                failed = Some(Err(Errno::ERANGE));
                break;
            }
            u[n] = adj;
        }
        vals[n] = cur + op;
        done = i + 1;
    }
    if let Some(r) = failed {
        for o in ops[..done].iter().rev() {
            let n = usize::from(o.num);
            vals[n] -= i32::from(o.op);
            if o.flg & SEM_UNDO != 0 {
                if let Some(u) = undo.as_deref_mut() {
                    u[n] += i32::from(o.op);
                }
            }
        }
        return r;
    }
    for o in ops {
        pids[usize::from(o.num)] = pid;
    }
    Ok(None)
}

impl<W> Set<W> {
    /// A set of `n` semaphores, all 0.
    pub fn new(n: usize) -> Self {
        Set { vals: vec![0; n], pids: vec![0; n], undos: BTreeMap::new(), pending: VecDeque::new() }
    }

    /// Semaphores in the set.
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// Never true: a set has at least one semaphore.
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// Semaphore `n`'s value (`GETVAL`; `n` in range).
    pub fn val(&self, n: usize) -> i32 {
        self.vals[n]
    }

    /// Every value (`GETALL`).
    pub fn vals(&self) -> &[i32] {
        &self.vals
    }

    /// The process that last changed semaphore `n` (`GETPID`).
    pub fn pid(&self, n: usize) -> i32 {
        self.pids[n]
    }

    /// `semop`'s attempt (the array checked: `num` in range): `Ok(true)` done, `Ok(false)` it
    /// must wait ([`Set::wait`]); EAGAIN if the blocking operation has IPC_NOWAIT, ERANGE. An
    /// `owner` with SEM_UNDO operations gets its adjustments here, even if the call then fails
    /// (Linux allocates them first).
    pub fn semop(&mut self, ops: &[SemBuf], pid: i32, owner: u64) -> Result<Option<usize>, Errno> {
        let undo = if ops.iter().any(|o| o.flg & SEM_UNDO != 0) {
            let n = self.vals.len();
            Some(self.undos.entry(owner).or_insert_with(|| vec![0; n]))
        } else {
            None
        };
        match apply(&mut self.vals, &mut self.pids, undo, ops, pid)? {
            Some(i) if ops[i].flg & IPC_NOWAIT != 0 => Err(Errno::EAGAIN),
            r => Ok(r),
        }
    }

    /// Queues an operation that must wait, `blocking` being what [`Set::semop`] returned.
    pub fn wait(&mut self, ops: Vec<SemBuf>, pid: i32, owner: u64, blocking: usize, w: W) {
        self.pending.push_back(Pending { ops, pid, owner, blocking, w });
    }

    /// Takes the pending operation `is` matches off the queue (a timeout or a signal): false if
    /// it is not there (an update completed it, or failed it, already).
    pub fn cancel(&mut self, mut is: impl FnMut(&W) -> bool) -> bool {
        match self.pending.iter().position(|p| is(&p.w)) {
            Some(i) => {
                self.pending.remove(i);
                true
            }
            None => false,
        }
    }

    /// After a change: completes every pending operation that can now proceed, in arrival
    /// order (again from the first after each that changed a value), and fails those that
    /// would overflow. The waiters to wake, with their results.
    pub fn update(&mut self) -> Vec<(W, Result<(), Errno>)> {
        let mut woken = Vec::new();
        'again: loop {
            let mut i = 0;
            while i < self.pending.len() {
                let p = &self.pending[i];
                let n = self.vals.len();
                let undo = if p.ops.iter().any(|o| o.flg & SEM_UNDO != 0) {
                    Some(self.undos.entry(p.owner).or_insert_with(|| vec![0; n]))
                } else {
                    None
                };
                match apply(&mut self.vals, &mut self.pids, undo, &p.ops, p.pid) {
                    Ok(Some(b)) => {
                        self.pending[i].blocking = b;
                        i += 1;
                    }
                    Ok(None) => {
                        let p = self.pending.remove(i).expect("in range");
                        let changed = alters(&p.ops);
                        woken.push((p.w, Ok(())));
                        if changed {
                            continue 'again;
                        }
                    }
                    Err(e) => {
                        let p = self.pending.remove(i).expect("in range");
                        woken.push((p.w, Err(e)));
                    }
                }
            }
            return woken;
        }
    }

    /// How many pending operations wait on semaphore `n` (`GETNCNT`: for it to grow;
    /// `GETZCNT`, `zero`: for it to be 0). Only the operation each is blocked on counts.
    pub fn waiting(&self, n: usize, zero: bool) -> usize {
        self.pending
            .iter()
            .filter(|p| {
                let o = p.ops[p.blocking];
                usize::from(o.num) == n && if zero { o.op == 0 } else { o.op < 0 }
            })
            .count()
    }

    /// `SETVAL` (`val` in range; the caller then runs [`Set::update`]).
    pub fn set_val(&mut self, n: usize, val: i32, pid: i32) {
        for u in self.undos.values_mut() {
            u[n] = 0;
        }
        self.vals[n] = val;
        self.pids[n] = pid;
    }

    /// `SETALL` (`vals` in range, one per semaphore).
    pub fn set_all(&mut self, vals: &[i32], pid: i32) {
        for u in self.undos.values_mut() {
            u.fill(0);
        }
        self.vals.copy_from_slice(vals);
        self.pids.fill(pid);
    }

    /// `owner` exits: its adjustments are added back, each value clamped to [0, SEMVMX] (Linux's
    /// `exit_sem`). True if a value changed (the caller runs [`Set::update`]).
    pub fn exit(&mut self, owner: u64, pid: i32) -> bool {
        let Some(adj) = self.undos.remove(&owner) else { return false };
        let mut changed = false;
        for (n, a) in adj.into_iter().enumerate() {
            if a != 0 {
                self.vals[n] = (self.vals[n] + a).clamp(0, SEMVMX);
                self.pids[n] = pid;
                changed = true;
            }
        }
        changed
    }

    /// Does `owner` have adjustments here?
    pub fn has_undo(&self, owner: u64) -> bool {
        self.undos.contains_key(&owner)
    }

    /// The set is removed (`IPC_RMID`): every pending operation's waiter, to wake with EIDRM.
    pub fn remove(self) -> Vec<W> {
        self.pending.into_iter().map(|p| p.w).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn op(num: u16, op: i16, flg: i16) -> SemBuf {
        SemBuf { num, op, flg }
    }

    #[test]
    fn an_array_applies_whole_or_not_at_all() {
        let mut s: Set<u32> = Set::new(3);
        assert_eq!(s.semop(&[op(0, 2, 0), op(1, 1, 0)], 10, 1), Ok(None));
        assert_eq!(s.vals(), &[2, 1, 0]);
        // The third operation blocks: the first two are undone.
        assert_eq!(s.semop(&[op(0, -1, 0), op(1, -1, 0), op(2, -1, 0)], 11, 1), Ok(Some(2)));
        assert_eq!(s.vals(), &[2, 1, 0]);
        assert_eq!(s.pid(0), 10);
        assert_eq!(s.semop(&[op(0, -1, 0), op(2, -1, IPC_NOWAIT)], 11, 1), Err(Errno::EAGAIN));
        // Past SEMVMX: ERANGE, nothing changed.
        assert_eq!(s.semop(&[op(1, 5, 0), op(0, i16::MAX, 0)], 11, 1), Err(Errno::ERANGE));
        assert_eq!(s.vals(), &[2, 1, 0]);
        // A repeated semaphore sees the earlier operation's result.
        assert_eq!(s.semop(&[op(1, -1, 0), op(1, 0, 0)], 12, 1), Ok(None));
        assert_eq!(s.vals(), &[2, 0, 0]);
        assert_eq!(s.pid(1), 12);
    }

    #[test]
    fn pending_operations_complete_in_order_and_count() {
        let mut s: Set<&str> = Set::new(2);
        let a = [op(0, -2, 0)];
        let b = [op(0, -1, 0)];
        let z = [op(1, 0, 0)];
        s.semop(&[op(1, 1, 0)], 1, 1).unwrap();
        let ia = s.semop(&a, 2, 2).unwrap().unwrap();
        s.wait(a.to_vec(), 2, 2, ia, "a");
        let ib = s.semop(&b, 3, 3).unwrap().unwrap();
        s.wait(b.to_vec(), 3, 3, ib, "b");
        let iz = s.semop(&z, 4, 4).unwrap().unwrap();
        s.wait(z.to_vec(), 4, 4, iz, "z");
        assert_eq!((s.waiting(0, false), s.waiting(0, true), s.waiting(1, true)), (2, 0, 1));
        // 1: not enough for a (first), enough for b.
        assert_eq!(s.semop(&[op(0, 1, 0)], 5, 5), Ok(None));
        assert_eq!(s.update(), vec![("b", Ok(()))]);
        // 2: a now.
        s.semop(&[op(0, 2, 0)], 5, 5).unwrap();
        assert_eq!(s.update(), vec![("a", Ok(()))]);
        s.set_val(1, 0, 6);
        assert_eq!(s.update(), vec![("z", Ok(()))]);
        assert_eq!(s.waiting(1, true), 0);
        assert_eq!(s.pid(0), 2);
    }

    #[test]
    fn undo_on_exit_and_its_range() {
        let mut s: Set<()> = Set::new(2);
        s.set_val(0, 5, 1);
        assert_eq!(s.semop(&[op(0, -3, SEM_UNDO), op(1, 4, SEM_UNDO)], 7, 70), Ok(None));
        assert_eq!(s.vals(), &[2, 4]);
        assert!(s.has_undo(70));
        // Another owner's operation does not touch 70's adjustments.
        s.semop(&[op(1, -4, 0)], 8, 80).unwrap();
        assert!(s.exit(70, 7));
        // 2 + 3 = 5; 0 - 4 clamped to 0.
        assert_eq!(s.vals(), &[5, 0]);
        assert!(!s.exit(70, 7));
        // An adjustment beyond -32768: ERANGE, nothing changed.
        let mut s: Set<()> = Set::new(1);
        assert_eq!(s.semop(&[op(0, i16::MAX, SEM_UNDO)], 1, 1), Ok(None));
        assert_eq!(s.semop(&[op(0, -i16::MAX, 0)], 1, 2), Ok(None));
        assert_eq!(s.semop(&[op(0, 2, SEM_UNDO)], 1, 1), Err(Errno::ERANGE));
        assert_eq!(s.val(0), 0);
        // SETVAL forgets the adjustments.
        s.set_val(0, 3, 1);
        assert!(!s.exit(1, 1));
        assert_eq!(s.val(0), 3);
    }

    #[test]
    fn removal_returns_every_waiter() {
        let mut s: Set<u8> = Set::new(1);
        s.wait(vec![op(0, -1, 0)], 1, 1, 0, 1);
        s.wait(vec![op(0, 0, 0)], 1, 1, 0, 2);
        assert!(s.cancel(|w| *w == 2));
        assert!(!s.cancel(|w| *w == 2));
        assert_eq!(s.remove(), vec![1]);
    }

    proptest! {
        /// Whatever the operations, values stay in [0, SEMVMX], a failed or blocked array
        /// changes nothing, and an owner's exit restores what its SEM_UNDO operations changed
        /// (when no clamp applied).
        #[test]
        fn semop_is_atomic(arrays in proptest::collection::vec(proptest::collection::vec((0u16..3, -3i16..4, any::<bool>()), 1..4), 1..20)) {
            let mut s: Set<()> = Set::new(3);
            let mut net = [0i32; 3];
            for ops in arrays {
                let ops: Vec<SemBuf> = ops.into_iter().map(|(n, o, u)| op(n, o, if u { SEM_UNDO } else { 0 })).collect();
                let before = s.vals().to_vec();
                match s.semop(&ops, 1, 9) {
                    Ok(None) => {
                        for o in &ops {
                            if o.flg & SEM_UNDO != 0 { net[usize::from(o.num)] += i32::from(o.op); }
                        }
                    }
                    _ => prop_assert_eq!(s.vals(), &before[..]),
                }
                prop_assert!(s.vals().iter().all(|&v| (0..=SEMVMX).contains(&v)));
            }
            let vals = s.vals().to_vec();
            s.exit(9, 1);
            for n in 0..3 {
                prop_assert_eq!(s.val(n), (vals[n] - net[n]).clamp(0, SEMVMX));
            }
        }
    }
}
