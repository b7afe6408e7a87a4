//! Run-queue memory, reserved ahead of use: no heap allocation under a run-queue lock.
//!
//! The queues a run queue holds ([`RqInner::tasks`], the RT array, the root fair queue, the
//! per-group fair queues and the map of them) are balanced trees in arenas
//! ([`cadence_sched::arena`]): an insert below capacity does not allocate. This module keeps
//! every one of them above its headroom ([`cadence_sched::arena::grow_target`]: at least
//! `max(16, len / 2)` free slots) and keeps [`SPARE_GROUPS`] ready-made fair-queue storages per
//! CPU (`RqInner::spare_groups`) for the next group queues created there (a destroyed group's
//! queue gives its storage back to that pool), all **outside** the lock:
//!
//! 1. [`note_insert`] (under the lock, on every enqueue) checks the headroom of the queues
//!    the enqueue touched and marks the CPU in [`PENDING`] if one is short (so refills happen
//!    O(log n) times as a queue grows, not per enqueue); [`note_wakeup_queued`] marks it when
//!    wakeups handed to its wake list (drained all at once, with interrupts off, and counted
//!    by the refill as queued) would use half of its least headroom;
//! 2. at the next preemption point of any CPU (interrupts on, no spin lock held:
//!    [`refill_pending`]), and when `spawn` finds its target queue full ([`refill_waiting`]),
//!    [`refill`] takes the run queue's lock to list what is short (`plan`), releases it,
//!    allocates the larger storage, takes the lock again to move the elements over (a copy
//!    into memory that exists: `adopt_storage`) and frees the old buffers after releasing it.
//!
//! So the headroom absorbs the enqueues between a mark and its refill. Wakeups never go past
//! it: one that does not [`fits`] its target's queues goes to that CPU's wake list and waits
//! for the refill (`sched::activate_wakeup`, `sched::ttwu_pending`); nor do new tasks (`spawn`
//! refills a full target first). Any other enqueue (a migration, a class or group change) into
//! a full queue still succeeds — the containers then grow in place, under the lock — and is
//! counted by the atomic-allocation detector ([`crate::mm::atomic_alloc`], `trace
//! atomic-alloc`), which is how this contract is checked.
//!
//! Lock order: `refill` takes only the run-queue lock (and the heap's, with the run-queue lock
//! released); it runs with preemption disabled so that it neither nests nor migrates.

use super::group::{GroupId, GroupRq, ROOT_GROUP};
use super::task::{Task, Tid};
use super::{RqInner, SeKey};
use alloc::sync::Arc;
use cadence_sched::arena::{grow_target, ArenaMap, MIN_HEADROOM};
use cadence_sched::rt::RtStorage;
use cadence_sched::FairStorage;
use core::sync::atomic::{AtomicU64, Ordering};

/// Fair-queue storages each CPU keeps ready for new group queues (a task's first wakeup on a
/// CPU may need one for its group and each ancestor without one there).
pub const SPARE_GROUPS: usize = 4;

/// CPUs whose run queue may be short of headroom (bit = CPU).
static PENDING: cadence_sched::AtomicCpuMask = cadence_sched::AtomicCpuMask::new();
/// Refill passes run (a plan made under the lock) and structures grown.
static PASSES: AtomicU64 = AtomicU64::new(0);
static GROWN: AtomicU64 = AtomicU64::new(0);
/// Wake-list drains that stopped for want of room (`note_wakeup_deferred`).
static DEFERRED: AtomicU64 = AtomicU64::new(0);

/// Test hook: while set, preemption points refill nothing ([`refill_pending`]), so that a test
/// can fill a run queue past its headroom and see what the wakeups beyond it do.
#[cfg(test)]
pub static HOLD_REFILLS: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `(passes, grown, deferred)`: refill passes run, structures grown and wake-list drains
/// stopped for want of room since boot (the cost of the reservation; `trace atomic-alloc`).
pub fn stats() -> (u64, u64, u64) {
    (PASSES.load(Ordering::Relaxed), GROWN.load(Ordering::Relaxed), DEFERRED.load(Ordering::Relaxed))
}

/// `ttwu_pending` on `cpu` left wakeups on its wake list for want of room: marks the CPU
/// for a refill (after which it drains again) and counts it.
pub fn note_wakeup_deferred(cpu: u32) {
    DEFERRED.fetch_add(1, Ordering::Relaxed);
    note_short(cpu);
}

/// Something a run queue is short of, found under its lock.
#[derive(Clone, Copy)]
enum Want {
    Tasks(usize),
    Rt(usize),
    /// A fair queue (`ROOT_GROUP`: the run queue's own).
    Fair(GroupId, usize),
    GroupMap(usize),
    SpareGroup,
}

/// Memory allocated for a [`Want`], outside the lock.
enum Spare {
    Tasks(ArenaMap<Tid, Arc<Task>>),
    Rt(RtStorage<Tid>),
    Fair(GroupId, FairStorage<SeKey>),
    GroupMap(ArenaMap<GroupId, GroupRq>),
    Group(FairStorage<SeKey>),
}

/// Wants listed per pass (more are found on the next pass).
const MAX_WANTS: usize = 8;

/// Called under the run-queue lock after every enqueue of `task` (or creation of a group
/// queue): checks the headroom of the queues an enqueue touches (the task map, the RT array,
/// the root fair queue, the task's own group queue, the map of group queues and the spare
/// group storages: O(log n), no allocation) and marks the CPU for a refill if one is short.
/// Publishes the least headroom found in `Rq::spare_hint` for [`note_wakeup_queued`].
pub fn note_insert(g: &mut RqInner, task: Option<&Task>) {
    let spare = |len: usize, cap: usize| cap.saturating_sub(len);
    let mut short = grow_target(g.tasks.len(), g.tasks.capacity()).is_some()
        || g.rt.grow_target().is_some()
        || g.fair.grow_target().is_some()
        || grow_target(g.group_rqs.len(), g.group_rqs.capacity()).is_some()
        || g.spare_groups.len() < SPARE_GROUPS;
    let mut least =
        spare(g.tasks.len(), g.tasks.capacity()).min(spare(g.rt.nr_running(), g.rt.capacity())).min(spare(g.fair.len(), g.fair.capacity()));
    if let Some(grq) = task.and_then(|t| g.group_rqs.get(&t.se_group.load(Ordering::Relaxed))) {
        short |= grq.rq.grow_target().is_some();
        least = least.min(spare(grq.rq.len(), grq.rq.capacity()));
    }
    super::rq_of(g.cpu).spare_hint.store(least.min(u32::MAX as usize) as u32, Ordering::Relaxed);
    if short {
        mark(g.cpu);
    }
}

/// Called by `queue_wakeup` after handing a wakeup to `cpu` (`pending` = its wake list's
/// length now): the drain will enqueue them all at once, with interrupts off, so the CPU is
/// marked once they would use half of its least headroom (`Rq::spare_hint`).
pub fn note_wakeup_queued(cpu: u32, pending: u32) {
    if pending.saturating_mul(2) >= super::rq_of(cpu).spare_hint.load(Ordering::Relaxed) {
        mark(cpu);
    }
}

/// Marks `cpu` for a refill at the next preemption point (its queues are short of room: load
/// balancing found less than it wanted to move).
pub fn note_short(cpu: u32) {
    mark(cpu);
}

/// What `g` is short of (at most `MAX_WANTS` items), counting `incoming` wakeups still on its
/// wake list as already queued.
fn plan(g: &RqInner, incoming: usize, out: &mut [Option<Want>; MAX_WANTS]) -> usize {
    let mut n = 0;
    let mut push = |w: Want| {
        if n < MAX_WANTS {
            out[n] = Some(w);
            n += 1;
        }
    };
    if let Some(c) = grow_target(g.tasks.len() + incoming, g.tasks.capacity()) {
        push(Want::Tasks(c));
    }
    if let Some(c) = g.rt.grow_target_for(incoming) {
        push(Want::Rt(c));
    }
    if let Some(c) = g.fair.grow_target_for(incoming) {
        push(Want::Fair(ROOT_GROUP, c));
    }
    if let Some(c) = grow_target(g.group_rqs.len(), g.group_rqs.capacity()) {
        push(Want::GroupMap(c));
    }
    for _ in g.spare_groups.len()..SPARE_GROUPS {
        push(Want::SpareGroup);
    }
    for (&gid, grq) in g.group_rqs.iter() {
        if let Some(c) = grq.rq.grow_target_for(incoming) {
            push(Want::Fair(gid, c));
        }
    }
    n
}

/// Can `task` be queued on `g` without any queue it would touch allocating? The task map,
/// then its class's queues (`SchedClass::fits`: an RT task's priority array, [`fair_fits`]).
/// The wake-list drain asks this before each wakeup it queues.
pub fn fits(g: &RqInner, task: &Task) -> bool {
    let free = |len: usize, cap: usize| cap > len;
    if !free(g.tasks.len(), g.tasks.capacity()) {
        return false;
    }
    super::class::of(task).fits(g, task)
}

/// [`fits`] for a fair task (`FairClass::fits`): room in the root queue, and in the queue of
/// its group and every ancestor here, or for levels with no queue here yet, a spare storage
/// each and room in the map of group queues.
pub fn fair_fits(g: &RqInner, task: &Task) -> bool {
    let free = |len: usize, cap: usize| cap > len;
    if !free(g.fair.len(), g.fair.capacity()) {
        return false;
    }
    let (mut gid, mut missing) = (super::class::effective_group(task), 0usize);
    while gid != ROOT_GROUP {
        match g.group_rqs.get(&gid) {
            Some(grq) if missing == 0 && !free(grq.rq.len(), grq.rq.capacity()) => return false,
            Some(grq) => gid = grq.parent,
            None => {
                missing += 1;
                match super::group::lookup(gid) {
                    Some(tg) => gid = tg.parent,
                    None => break, // gone: the task joins the root group
                }
            }
        }
    }
    missing == 0 || (g.spare_groups.len() >= missing && g.group_rqs.capacity() - g.group_rqs.len() >= missing)
}

/// Tasks that may be queued on `g` without any of its queues allocating (the least free
/// room among them): load balancing moves no more than this at once.
pub fn room(g: &RqInner) -> usize {
    let spare = |len: usize, cap: usize| cap.saturating_sub(len);
    let mut room =
        spare(g.tasks.len(), g.tasks.capacity()).min(spare(g.rt.nr_running(), g.rt.capacity())).min(spare(g.fair.len(), g.fair.capacity()));
    for grq in g.group_rqs.values() {
        room = room.min(spare(grq.rq.len(), grq.rq.capacity()));
    }
    if g.spare_groups.is_empty() || g.group_rqs.len() == g.group_rqs.capacity() {
        room = room.min(1); // a new group queue here would allocate: one at a time
    }
    room
}

/// Heap bytes the run queues hold as storage (capacity, used or not), for memory accounting:
/// it grows to a workload's peak and stays (tests subtract it from heap growth).
pub fn reserved_bytes() -> usize {
    let mut total = 0;
    for cpu in crate::percpu::online_cpus() {
        let g = super::rq_of(cpu.cpu_id).lock.lock();
        total += g.tasks.storage_bytes() + g.rt.storage_bytes() + g.fair.storage_bytes() + g.group_rqs.storage_bytes();
        total += g.group_rqs.values().map(|q| q.rq.storage_bytes()).sum::<usize>();
        total += g.spare_groups.iter().map(|s| s.storage_bytes()).sum::<usize>();
    }
    total + super::task::table_bytes() + crate::mm::stack::list_bytes()
}

fn allocate(w: Want) -> Spare {
    match w {
        Want::Tasks(c) => Spare::Tasks(ArenaMap::with_capacity(c)),
        Want::Rt(c) => Spare::Rt(RtStorage::with_capacity(c)),
        Want::Fair(gid, c) => Spare::Fair(gid, FairStorage::with_capacity(c)),
        Want::GroupMap(c) => Spare::GroupMap(ArenaMap::with_capacity(c)),
        Want::SpareGroup => Spare::Group(FairStorage::with_capacity(MIN_HEADROOM)),
    }
}

/// Installs `s` into `g` if still useful; afterwards `s` holds what is to be freed (the old
/// buffers, or the unused spare) once the lock is released.
fn install(g: &mut RqInner, s: &mut Spare) {
    match s {
        Spare::Tasks(m) => {
            if m.capacity() > g.tasks.capacity() {
                g.tasks.adopt_storage(m);
            }
        }
        Spare::Rt(r) => {
            if r.capacity() > g.rt.capacity() {
                g.rt.adopt_storage(r);
            }
        }
        Spare::Fair(gid, f) => {
            if let Some(frq) = super::class::fair_rq_mut(g, *gid) {
                if f.capacity() > frq.capacity() {
                    frq.adopt_storage(f);
                }
            }
        }
        Spare::GroupMap(m) => {
            if m.capacity() > g.group_rqs.capacity() {
                g.group_rqs.adopt_storage(m);
            }
        }
        Spare::Group(f) => {
            if !g.spare_groups.is_full() {
                // `with_capacity(0)` allocates nothing.
                let _ = g.spare_groups.try_push(core::mem::replace(f, FairStorage::with_capacity(0)));
            }
        }
    }
}

/// Brings `cpu`'s run queue back above its headroom (see the module doc). Call with
/// interrupts enabled and no spin lock held. Gives up when the queue's lock is busy (the CPU
/// stays marked): it runs at preemption points, with preemption off.
#[inline(never)]
pub fn refill(cpu: u32) {
    refill_locking(cpu, false);
}

/// [`refill`] that waits for the queue's lock when it is busy (interrupts on while it
/// waits, preemption off), for a caller that must have the room before it goes on: `spawn`,
/// whose target may be a CPU that reschedules in a loop while its wakeups wait for room.
#[inline(never)]
pub fn refill_waiting(cpu: u32) {
    refill_locking(cpu, true);
}

fn refill_locking(cpu: u32, wait: bool) {
    let Some(pc) = crate::percpu::get(cpu) else { return };
    let rq = super::rq_of(pc.cpu_id);
    // No preemption (so no nested refill from a preemption point, and no migration); the
    // count is dropped without a preemption point: our caller is one.
    super::preempt_count_inc();
    for _pass in 0..4 {
        let mut wants = [None; MAX_WANTS];
        let incoming = rq.wake_pending.load(Ordering::Acquire) as usize;
        // Never spin here unless asked to (preemption is off, and the holder's vCPU may be
        // descheduled by the host): a busy queue is marked again and refilled at a later
        // preemption point.
        let lock = || if wait { Some(rq.lock.lock()) } else { rq.lock.try_lock() };
        let Some(g) = lock() else {
            mark(cpu);
            break;
        };
        let n = plan(&g, incoming, &mut wants);
        drop(g);
        PASSES.fetch_add(1, Ordering::Relaxed);
        GROWN.fetch_add(n as u64, Ordering::Relaxed);
        if n == 0 {
            break;
        }
        // One want at a time: this runs at preemption points, on whatever stack is there
        // (16 KiB for some tasks), so its frame stays small.
        for w in wants.iter().flatten() {
            let mut spare = allocate(*w);
            match lock() {
                Some(mut g) => install(&mut g, &mut spare),
                None => {
                    mark(cpu);
                }
            }
            drop(spare); // the old buffers (or the unused spare), freed with the lock released
        }
    }
    super::preempt_count_dec();
}

/// Marks `cpu`'s run queue for a refill at the next preemption point of any CPU, and asks
/// this CPU's preemption points to call up (`framework::preempt::request_preempt_point`).
fn mark(cpu: u32) {
    PENDING.set(cpu as usize, Ordering::AcqRel);
    framework::preempt::request_preempt_point(crate::percpu::cpu_id());
}

/// `schedule()` on `cpu`, having cleared its preemption points' flag: asks again if refills
/// are still wanted (see [`mark`]).
pub fn ask_again_if_pending(cpu: u32) {
    if !PENDING.is_empty(Ordering::SeqCst) {
        framework::preempt::request_preempt_point(cpu);
    }
}

/// Refills the run queues marked by [`note_insert`]. Called at preemption points: returns at
/// once unless interrupts are on, preemption is enabled and some CPU is marked.
pub fn refill_pending() {
    if PENDING.is_empty(Ordering::Relaxed) {
        return;
    }
    #[cfg(test)]
    if HOLD_REFILLS.load(Ordering::Acquire) {
        return;
    }
    if framework::preempt::preempt_count() != 0 || !crate::irqflags::are_enabled() {
        return;
    }
    refill_marked();
}

/// Refills every online CPU's run queue until none is short (at most 8 rounds). Called once
/// at boot, in init before the tests and commands: the first enqueues on each CPU (idle,
/// the detectors' threads, init) find empty structures and ask for headroom, and without this
/// the refills would go on in the background, at other CPUs' preemption points, while the
/// first tests measure the heap (`mm::heap`'s baseline test saw another CPU free a replaced
/// 600-byte buffer between its two readings). Interrupts on, no spin lock held.
pub fn settle() {
    for _ in 0..8 {
        for c in crate::percpu::online_cpus() {
            mark(c.cpu_id);
        }
        refill_marked();
        if PENDING.is_empty(Ordering::Acquire) {
            break;
        }
    }
}

#[inline(never)]
fn refill_marked() {
    for cpu in PENDING.take(Ordering::AcqRel).iter() {
        let cpu = cpu as u32;
        refill(cpu);
        // Wakeups `ttwu_pending` left for want of room: that CPU drains again (its own
        // `__schedule`, at this preemption point if it is ours; never a nested drain here).
        if !super::rq_of(cpu).wake_list.is_empty(Ordering::Acquire) {
            super::set_need_resched(cpu);
        }
    }
}
