//! Run-queue memory, reserved ahead of use: no heap allocation under a run-queue lock.
//!
//! The queues a run queue holds ([`RqInner::tasks`], the RT array, the root fair queue, the
//! per-group fair queues and the map of them) are sorted vectors
//! ([`cadence_sched::vecmap`]): an insert below capacity does not allocate. This module keeps
//! every one of them above its headroom ([`cadence_sched::vecmap::grow_target`]: at least
//! `max(16, len / 2)` free slots) and keeps [`SPARE_GROUPS`] ready-made fair-queue storages per
//! CPU (`RqInner::spare_groups`) for the next group queues created there (a destroyed group's
//! queue gives its storage back to that pool), all **outside** the lock:
//!
//! 1. [`note_insert`] (under the lock, on every enqueue) marks the CPU after every
//!    [`CHECK_EVERY`] enqueues, and at once when the spare group storage was used, in
//!    [`PENDING`]; [`note_wakeup_queued`] does the same for wakeups handed to the CPU's wake
//!    list (drained all at once, with interrupts off), which the headroom counts as queued;
//! 2. at the next preemption point of any CPU (interrupts on, no spin lock held:
//!    [`refill_pending`]), and before `spawn` queues a task, [`refill`] takes the marked run
//!    queue's lock to list what is short (`plan`), releases it, allocates the larger
//!    storage, takes the lock again to move the elements over (a copy into memory that
//!    exists: `adopt_storage`) and frees the old buffers after releasing it.
//!
//! So the headroom absorbs the enqueues between a mark and its refill. A burst larger than the
//! headroom before any preemption point still succeeds — the containers then grow in place,
//! under the lock — and is counted by the atomic-allocation detector
//! ([`crate::mm::atomic_alloc`], `trace atomic-alloc`), which is how this contract is checked.
//!
//! Lock order: `refill` takes only the run-queue lock (and the heap's, with the run-queue lock
//! released); it runs with preemption disabled so that it neither nests nor migrates.

use super::group::{GroupId, GroupRq, ROOT_GROUP};
use super::task::{Task, Tid};
use super::{RqInner, SeKey};
use alloc::sync::Arc;
use cadence_sched::rt::RtStorage;
use cadence_sched::vecmap::{grow_target, VecMap, MIN_HEADROOM};
use cadence_sched::FairStorage;
use core::sync::atomic::{AtomicU64, Ordering};

/// Fair-queue storages each CPU keeps ready for new group queues (a task's first wakeup on a
/// CPU may need one for its group and each ancestor without one there).
pub const SPARE_GROUPS: usize = 4;

/// Enqueues on one run queue between two checks of its headroom.
pub const CHECK_EVERY: u32 = 4;

/// CPUs whose run queue may be short of headroom (bit = CPU).
static PENDING: AtomicU64 = AtomicU64::new(0);

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
    Tasks(VecMap<Tid, Arc<Task>>),
    Rt(RtStorage<Tid>),
    Fair(GroupId, FairStorage<SeKey>),
    GroupMap(VecMap<GroupId, GroupRq>),
    Group(FairStorage<SeKey>),
}

/// Wants listed per pass (more are found on the next pass).
const MAX_WANTS: usize = 8;

/// Called under the run-queue lock after every enqueue: marks the CPU for a refill every
/// [`CHECK_EVERY`] enqueues (or at once if `urgent`).
pub fn note_insert(g: &mut RqInner, urgent: bool) {
    g.inserts_since_check += 1;
    if urgent || g.inserts_since_check >= CHECK_EVERY {
        g.inserts_since_check = 0;
        PENDING.fetch_or(1 << g.cpu, Ordering::AcqRel);
    }
}

/// Called by `queue_wakeup` after handing a wakeup to `cpu` (`pending` = its wake list's
/// length now): the drain will enqueue them all at once, with interrupts off, so the headroom
/// is checked every [`CHECK_EVERY`] of them too.
pub fn note_wakeup_queued(cpu: u32, pending: u32) {
    if pending.is_multiple_of(CHECK_EVERY) {
        PENDING.fetch_or(1 << cpu, Ordering::AcqRel);
    }
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

/// Tasks that may be queued on `g` without any of its queues allocating (the least free
/// room among them): load balancing moves no more than this at once.
pub fn room(g: &RqInner) -> usize {
    let spare = |len: usize, cap: usize| cap.saturating_sub(len);
    let mut room = spare(g.tasks.len(), g.tasks.capacity())
        .min(spare(g.rt.nr_running(), g.rt.capacity()))
        .min(spare(g.fair.len(), g.fair.capacity()));
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
        let g = cpu.rq.lock.lock();
        total += g.tasks.storage_bytes() + g.rt.storage_bytes() + g.fair.storage_bytes() + g.group_rqs.storage_bytes();
        total += g.group_rqs.values().map(|q| q.rq.storage_bytes()).sum::<usize>();
        total += g.spare_groups.iter().map(|s| s.storage_bytes()).sum::<usize>();
    }
    total + super::task::table_bytes() + crate::mm::stack::list_bytes()
}

fn allocate(w: Want) -> Spare {
    match w {
        Want::Tasks(c) => Spare::Tasks(VecMap::with_capacity(c)),
        Want::Rt(c) => Spare::Rt(RtStorage::with_capacity(c)),
        Want::Fair(gid, c) => Spare::Fair(gid, FairStorage::with_capacity(c)),
        Want::GroupMap(c) => Spare::GroupMap(VecMap::with_capacity(c)),
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
/// interrupts enabled and no spin lock held.
pub fn refill(cpu: u32) {
    let Some(pc) = crate::percpu::get(cpu) else { return };
    let rq = &pc.rq;
    let me = &super::this_cpu().rq;
    // No preemption (so no nested refill from a preemption point, and no migration); the
    // count is dropped without a preemption point: our caller is one.
    me.preempt_count.fetch_add(1, Ordering::AcqRel);
    for _pass in 0..4 {
        let mut wants = [None; MAX_WANTS];
        let incoming = rq.wake_pending.load(Ordering::Acquire) as usize;
        let n = plan(&rq.lock.lock(), incoming, &mut wants);
        if n == 0 {
            break;
        }
        let mut spares: [Option<Spare>; MAX_WANTS] = Default::default();
        for (s, w) in spares.iter_mut().zip(wants.iter()) {
            *s = w.map(allocate);
        }
        {
            let mut g = rq.lock.lock();
            for s in spares.iter_mut().flatten() {
                install(&mut g, s);
            }
        }
        drop(spares); // old buffers freed with the run-queue lock released
    }
    me.preempt_count.fetch_sub(1, Ordering::AcqRel);
}

/// Refills the run queues marked by [`note_insert`]. Called at preemption points: returns at
/// once unless interrupts are on, preemption is enabled and some CPU is marked.
pub fn refill_pending() {
    if PENDING.load(Ordering::Relaxed) == 0 {
        return;
    }
    let me = &super::this_cpu().rq;
    if me.preempt_count.load(Ordering::Relaxed) != 0 || !crate::irqflags::are_enabled() {
        return;
    }
    let mut cpus = PENDING.swap(0, Ordering::AcqRel);
    while cpus != 0 {
        let cpu = cpus.trailing_zeros();
        cpus &= cpus - 1;
        refill(cpu);
    }
}
