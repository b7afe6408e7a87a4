//! The deadline class (SCHED_DEADLINE): earliest deadline first per CPU, each task a constant
//! bandwidth server (CBS). The rules — parameter checks, admission, the CBS wakeup rule,
//! charging, replenishment, `cpudl` — are `cadence_sched::deadline`'s, host-tested; this file
//! keeps the per-CPU queue, the per-task state and the replenishment timer.
//!
//! # State and locks
//! * Per CPU, `RqInner::dl` ([`DlRq`]): the tasks that may run now, ordered by absolute
//!   deadline; under the run-queue lock. Its storage is reserved at boot for
//!   [`DL_MAX_TASKS`], the most deadline tasks the system admits (so queueing never
//!   allocates).
//! * Per task, `Task::dl` ([`DlState`]): the CBS entity, whether it is in its CPU's queue,
//!   and its pending replenishment timer. Lock order: run queue, then `Task::dl`.
//! * Global: [`DL_BW`], the admitted bandwidth (one root domain: every online CPU), and
//!   `CPUDL`, each CPU's earliest queued deadline (`cadence_sched::deadline::CpuDl`) for
//!   placing waking tasks (`select_cpu`).
//!
//! # Life of a deadline task
//! * `sched_setattr`/`chrt -d` admit it ([`admit`]: `EBUSY` past
//!   `kernel.sched_rt_runtime_us / sched_rt_period_us × CPUs`, or past [`DL_MAX_TASKS`]);
//!   leaving the class or exiting gives its bandwidth back.
//! * Its first enqueue starts a period (`deadline = now + dl_deadline`, full runtime); each
//!   wakeup applies the CBS wakeup rule.
//! * Running time is charged in `update_curr` (the hrtick arms at the runtime left, so the
//!   charge is exact). At runtime 0 the task is **throttled**: out of the queue (still
//!   `on_rq` for the core, as in Linux) until its replenishment timer fires at the start of
//!   its next period, which replenishes it and queues it back if it is still runnable.
//!   `sched_yield` gives up the rest of the period the same way (Linux `dl_yielded`).
//! * A waking task preempts a running one of this class with a later deadline; every class
//!   below is preempted (`CLASSES` order).
//!
//! # Across CPUs (global EDF, Linux's push/pull)
//! A waking task goes where `cpudl` says (a CPU with no deadline task, else the one whose
//! earliest deadline is latest, if later than the task's). A CPU with more than one queued
//! deadline task is overloaded (`DL_OVERLOAD`): after a wakeup that did not preempt and after
//! each scheduling decision it pushes its earliest waiting task to such a CPU; a CPU going
//! idle, or no longer running a deadline task, pulls the earliest waiting task that beats its
//! own from every overloaded CPU. Run-queue pairs are only try-locked (a busy one is retried
//! at the next balance point).
//!
//! `SCHED_FLAG_DL_OVERRUN`: a task that runs out of runtime also gets SIGXCPU. Not yet: GRUB
//! (`SCHED_FLAG_RECLAIM` is refused with `EOPNOTSUPP`), priority inheritance.

use super::{lookup, HrtickSlice, SchedClass};
use crate::sched::task::{self, ClassId, Task, Tid};
use crate::sched::{rq_of, set_need_resched, RqInner};
use crate::sync::IrqLock;
use crate::timer::TimerId;
use alloc::sync::Arc;
use cadence_sched::arena::ArenaSet;
use cadence_sched::deadline::{time_before, CpuDl, DlAdmission, DlEntity, DlParams};
use cadence_sched::{CpuMask, Errno, ValidAttr};
use core::sync::atomic::Ordering;

pub struct DlClass;
pub static DL: DlClass = DlClass;

/// Most deadline tasks admitted at once (the per-CPU queues are reserved for this many).
pub const DL_MAX_TASKS: usize = 64;

/// One CPU's runnable deadline tasks, by absolute deadline.
pub struct DlRq {
    queue: ArenaSet<(u64, Tid)>,
}

impl DlRq {
    /// An empty queue with room for [`DL_MAX_TASKS`].
    pub fn new() -> DlRq {
        DlRq { queue: ArenaSet::with_capacity(DL_MAX_TASKS) }
    }

    /// Tasks queued (throttled ones are not).
    pub fn nr_running(&self) -> usize {
        self.queue.len()
    }

    /// The earliest queued deadline.
    pub fn earliest(&self) -> Option<u64> {
        self.queue.first().map(|&(d, _)| d)
    }

    /// The queued tasks, earliest deadline first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, Tid)> + '_ {
        self.queue.iter().copied()
    }
}

impl Default for DlRq {
    fn default() -> Self {
        Self::new()
    }
}

/// A task's deadline-class state.
pub struct DlState {
    /// The CBS entity (`None` outside the class).
    pub entity: Option<DlEntity>,
    /// Its key in its CPU's queue, if queued there.
    queued: Option<(u64, Tid)>,
    /// The pending replenishment timer: (CPU, id).
    timer: Option<(u32, TimerId)>,
    /// Generation of the last timer armed: a handler whose timer was cancelled after it
    /// fired (it waited for the run-queue lock meanwhile) finds another number and does
    /// nothing.
    timer_gen: u32,
    /// Times it was throttled (runtime used up) and replenished by the timer.
    pub nr_throttled: u64,
}

impl Default for DlState {
    fn default() -> Self {
        Self::new()
    }
}

impl DlState {
    pub const fn new() -> DlState {
        DlState { entity: None, queued: None, timer: None, timer_gen: 0, nr_throttled: 0 }
    }

    fn cancel_timer(&mut self) {
        if let Some((cpu, id)) = self.timer.take() {
            crate::timer::cancel(cpu, id);
        }
    }
}

// ----- admission --------------------------------------------------------------------------

/// The admitted bandwidth (`total_bw`) and task count.
static DL_BW: IrqLock<(u64, usize)> = IrqLock::new((0, 0));

/// The root domain's per-CPU deadline bandwidth limit (`None`: no limit) and the bandwidth
/// admitted tasks use, in Linux's `BW_SHIFT` fixed point (`sched/debug`'s `dl_bw->bw` and
/// `dl_bw->total_bw`).
pub fn bandwidth() -> (Option<u64>, u64) {
    let adm = DlAdmission::new(crate::sched::rt_limits::rt_runtime_us(), crate::sched::rt_limits::rt_period_us(), 1);
    (adm.bw, DL_BW.lock().0)
}

/// Admits a task's change from `old` to `new` deadline parameters (`None`: not in the class)
/// in the one root domain, every online CPU (Linux `sched_dl_overflow`): `EBUSY` past the
/// limit `sched_rt_runtime_us / sched_rt_period_us` per CPU or past [`DL_MAX_TASKS`]. Leaving
/// always succeeds.
pub fn admit(old: Option<DlParams>, new: Option<DlParams>) -> Result<(), Errno> {
    let bw = |p: Option<DlParams>| p.map_or(0, |p| p.bandwidth());
    let mut g = DL_BW.lock();
    // Read under the lock: `without_one_cpu` takes a CPU away under it.
    let cpus = crate::sched::online_mask().count();
    let mut adm = DlAdmission::new(crate::sched::rt_limits::rt_runtime_us(), crate::sched::rt_limits::rt_period_us(), cpus);
    adm.total_bw = g.0;
    adm.change(bw(old), bw(new))?;
    let count = g.1.saturating_sub(old.is_some() as usize) + new.is_some() as usize;
    if count > DL_MAX_TASKS {
        return Err(Errno::EBUSY);
    }
    *g = (adm.total_bw, count);
    Ok(())
}

/// Takes a CPU out of the root domain (`take_out`, which clears it from the online mask) if
/// the deadline bandwidth admitted still fits on the CPUs left (Linux's `dl_bw_check_overflow`
/// before a CPU goes offline), else `EBUSY`. Under the admission lock: no task is admitted
/// against the CPUs of before meanwhile.
pub fn without_one_cpu(take_out: impl FnOnce()) -> Result<(), Errno> {
    let g = DL_BW.lock();
    let cpus = crate::sched::online_mask().count().saturating_sub(1);
    let mut adm = DlAdmission::new(crate::sched::rt_limits::rt_runtime_us(), crate::sched::rt_limits::rt_period_us(), cpus);
    adm.total_bw = g.0;
    if adm.overflows(0, 0) {
        return Err(Errno::EBUSY);
    }
    take_out();
    Ok(())
}

/// The admitted deadline bandwidth (`BW_SHIFT` fixed point) and task count.
pub fn admitted() -> (u64, usize) {
    *DL_BW.lock()
}

/// Times `task` was throttled and replenished (0 outside the class).
pub fn nr_throttled(task: &Task) -> u64 {
    task.dl.lock().nr_throttled
}

/// `task`'s CBS server now: (absolute deadline, runtime left) ns; `None` outside the class
/// (deadline 0 before its first period).
pub fn server_of(task: &Task) -> Option<(u64, i64)> {
    task.dl.lock().entity.map(|e| (e.deadline, e.runtime))
}

/// Whether `task` is throttled (out of its queue until its replenishment timer).
pub fn is_throttled(task: &Task) -> bool {
    task.dl.lock().entity.as_ref().is_some_and(|e| e.throttled)
}

/// Whether `mask` spans the root domain (every online CPU), as a deadline task's affinity
/// must (Linux: `EPERM` from `sched_setattr`, `EBUSY` from `sched_setaffinity`).
pub fn spans_root_domain(mask: CpuMask) -> bool {
    let online = crate::sched::online_mask();
    mask & online == online
}

// ----- the queue and cpudl ------------------------------------------------------------------

static CPUDL: IrqLock<Option<CpuDl>> = IrqLock::new(None);

/// CPUs with more than one queued deadline task (Linux's `dlo_mask`): push and pull sources.
static DL_OVERLOAD: cadence_sched::AtomicCpuMask = cadence_sched::AtomicCpuMask::new();

/// Publishes `rq`'s earliest deadline in `CPUDL` and whether it is overloaded.
fn update_cpudl(rq: &RqInner) {
    if rq.dl.queue.len() > 1 {
        DL_OVERLOAD.set(rq.cpu as usize, Ordering::SeqCst);
    } else {
        DL_OVERLOAD.clear(rq.cpu as usize, Ordering::SeqCst);
    }
    let mut g = CPUDL.lock();
    let cpudl = g.get_or_insert_with(|| CpuDl::new(crate::percpu::nr_possible()));
    match rq.dl.earliest() {
        Some(d) => cpudl.set(rq.cpu, d),
        None => cpudl.clear(rq.cpu),
    }
}

fn queue(rq: &mut RqInner, task: &Task, st: &mut DlState) {
    let Some(e) = st.entity.as_ref() else { return };
    if st.queued.is_some() || e.throttled {
        return;
    }
    let key = (e.deadline, task.tid);
    if rq.dl.queue.insert(key) {
        st.queued = Some(key);
        update_cpudl(rq);
    } else {
        crate::sched::note_bad_enqueue();
    }
}

fn unqueue(rq: &mut RqInner, st: &mut DlState) {
    if let Some(key) = st.queued.take() {
        let removed = rq.dl.queue.remove(&key);
        debug_assert!(removed, "deadline task queued under a key its queue does not hold");
        update_cpudl(rq);
    }
}

/// Runtime used up (or given up by a yield): out of the queue until the replenishment timer,
/// armed here on `rq`'s CPU for the start of the next period.
fn throttle(rq: &mut RqInner, task: &Task, st: &mut DlState) {
    unqueue(rq, st);
    let Some(e) = st.entity.as_mut() else { return };
    e.throttled = true;
    let (at, runtime, deadline) = (e.next_period(), e.runtime, e.deadline);
    if st.timer.is_none() {
        st.timer_gen = st.timer_gen.wrapping_add(1);
        let data = u64::from(st.timer_gen) << 32 | u64::from(task.tid);
        st.timer = crate::timer::arm(rq.cpu, at, replenish_timer, data).map(|id| (rq.cpu, id));
        if st.timer.is_none() {
            // No timer slot: replenish now rather than leave the task throttled for good.
            if let Some(e) = st.entity.as_mut() {
                e.replenish(crate::time::uptime_ns());
            }
            queue(rq, task, st);
            return;
        }
    }
    crate::trace::dl_throttle(task, runtime, deadline);
}

/// A replenishment timer fired: `data` is its generation (high half) and the task's tid.
fn replenish_timer(_cpu: u32, data: u64) {
    let (gen, tid) = ((data >> 32) as u32, data as u32 as Tid);
    let Some(task) = task::find(tid) else { return };
    // `params` first, as a wakeup holds it from choosing the task's CPU to queueing it there
    // (Linux's `dl_task_timer` takes `pi_lock`): without it a throttled task woken onto
    // another CPU meanwhile could be queued here, on a queue that is not its CPU's, or be
    // left runnable in no queue.
    let _params = task.params.lock();
    let (cpu, mut g) = crate::sched::lock_task_rq(&task);
    let now = crate::time::uptime_ns();
    let mut st = task.dl.lock();
    if st.timer_gen != gen {
        return; // cancelled after it fired; a newer timer (if any) is the task's
    }
    st.timer = None;
    let Some(e) = st.entity.as_mut() else { return };
    if !e.throttled {
        return;
    }
    e.replenish(now);
    let (runtime, deadline) = (e.runtime, e.deadline);
    st.nr_throttled += 1;
    crate::trace::dl_replenish(&task, runtime, deadline);
    if task.is_on_rq() && task.class() == ClassId::Dl {
        queue(&mut g, &task, &mut st);
        drop(st);
        let preempt = match g.curr.as_ref() {
            Some(c) if c.class() == ClassId::Dl && !Arc::ptr_eq(c, &task) => {
                c.dl.lock().entity.is_some_and(|ce| cadence_sched::deadline::time_before(deadline, ce.deadline))
            }
            Some(c) => !Arc::ptr_eq(c, &task),
            None => true,
        };
        drop(g);
        if preempt {
            set_need_resched(cpu);
        } else {
            // It waits behind an earlier deadline: another CPU may run it now (Linux's
            // `dl_task_timer` pushes too).
            push(cpu);
        }
    }
}

// ----- push and pull (global EDF across CPUs) -------------------------------------------------

/// The earliest queued task of `g` that is not running there and (with `dst`) may run on
/// `dst`, with its deadline.
fn earliest_movable(g: &RqInner, dst: Option<u32>) -> Option<(u64, Arc<Task>)> {
    let waiting = |t: &Arc<Task>| match dst {
        Some(dst) => crate::sched::balance::movable(g, t, dst),
        None => !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t)) && !t.on_cpu.load(Ordering::Acquire),
    };
    g.dl.iter().filter_map(|(d, tid)| lookup(g, tid).map(|t| (d, t))).find(|(_, t)| waiting(t))
}

/// Whether a task with deadline `d` should run on `g`'s CPU rather than what is there: it has
/// no deadline task, or only later ones (Linux `dl_time_before(d, earliest)`).
fn beats(g: &RqInner, d: u64) -> bool {
    g.dl.earliest().is_none_or(|e| time_before(d, e))
}

/// Moves the earliest waiting task of `src` to `dst` (locked together) if it beats what `dst`
/// has; true if it moved.
fn move_earliest(src: &mut RqInner, dst: &mut RqInner) -> bool {
    let Some((d, t)) = earliest_movable(src, Some(dst.cpu)) else { return false };
    if !beats(dst, d) {
        return false;
    }
    crate::sched::balance::move_task(src, dst, &t);
    crate::sched::update_counts(rq_of(src.cpu), src);
    crate::sched::update_counts(rq_of(dst.cpu), dst);
    true
}

/// Linux `push_dl_task`: the earliest waiting task of an overloaded `cpu` goes to the CPU
/// `cpudl` names (one with no deadline task, or whose earliest deadline is latest and later
/// than the task's), until none can go.
fn push(cpu: u32) {
    for _ in 0..8 {
        if !DL_OVERLOAD.contains(cpu as usize, Ordering::SeqCst) {
            return;
        }
        let target = {
            let g = rq_of(cpu).lock.lock();
            let Some((d, t)) = earliest_movable(&g, None) else { return };
            let allowed = t.affinity() & crate::sched::online_mask() & !CpuMask::single(cpu as usize);
            drop(g);
            match CPUDL.lock().as_ref().and_then(|c| c.find(allowed, d)) {
                Some(target) if target != cpu => target,
                _ => return,
            }
        };
        let (a, b) = (rq_of(cpu), rq_of(target));
        let Some(mut guards) = crate::sched::rqlock::try_lock_two(&a.lock, cpu, &b.lock, target) else { return };
        let (src, dst) = guards.pair();
        let moved = move_earliest(src, dst);
        drop(guards);
        if !moved {
            return;
        }
        set_need_resched(target);
    }
}

/// Linux `pull_dl_task`: `cpu` takes, from every overloaded CPU, a waiting task whose deadline
/// beats its own earliest. True if one came.
fn pull(cpu: u32) -> bool {
    let mut pulled = false;
    let sources = DL_OVERLOAD.load(Ordering::SeqCst).without(cpu as usize);
    for src_cpu in sources.iter() {
        let src_cpu = src_cpu as u32;
        let (a, b) = (rq_of(cpu), rq_of(src_cpu));
        // Never spin here (as the fair pull): a busy source is tried at the next point.
        let Some(mut guards) = crate::sched::rqlock::try_lock_two(&a.lock, cpu, &b.lock, src_cpu) else { continue };
        let (dst, src) = guards.pair();
        pulled |= move_earliest(src, dst);
    }
    if pulled {
        set_need_resched(cpu);
    }
    pulled
}

impl SchedClass for DlClass {
    fn name(&self) -> &'static str {
        "dl"
    }

    /// A new period at the first enqueue, the CBS wakeup rule at each wakeup; a throttled
    /// task stays out of the queue (its timer queues it).
    fn enqueue(&self, rq: &mut RqInner, task: &Arc<Task>, flags: u32) {
        let now = crate::time::uptime_ns();
        let mut st = task.dl.lock();
        let Some(e) = st.entity.as_mut() else { return };
        if e.deadline == 0 {
            e.new_period(now);
        } else if flags & cadence_sched::eevdf::ENQUEUE_WAKEUP != 0 && !e.throttled {
            e.wakeup(now);
        }
        queue(rq, task, &mut st);
    }

    fn dequeue(&self, rq: &mut RqInner, task: &Arc<Task>, _flags: u32) {
        unqueue(rq, &mut task.dl.lock());
    }

    fn pick_next(&self, rq: &mut RqInner) -> Option<Arc<Task>> {
        rq.dl.queue.first().and_then(|&(_, tid)| lookup(rq, tid))
    }

    fn put_prev(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    fn set_next(&self, _rq: &mut RqInner, _task: &Arc<Task>) {}

    /// CBS charging (Linux `update_curr_dl`): at runtime 0, throttled until the next period;
    /// with `SCHED_FLAG_DL_OVERRUN`, the task also gets SIGXCPU (Linux sends it at the next
    /// tick, to the thread group; here at once, to the task).
    fn update_curr(&self, rq: &mut RqInner, task: &Arc<Task>, delta_ns: u64, now: u64) -> bool {
        let mut st = task.dl.lock();
        let Some(e) = st.entity.as_mut() else { return false };
        if e.throttled {
            return true;
        }
        if e.charge(delta_ns) && task.pi_boosted() {
            // A task boosted by priority inheritance is never throttled (it holds a lock a
            // deadline task waits for): replenished at once, its deadline postponed (Linux's
            // `is_dl_boosted` in `update_curr_dl`).
            unqueue(rq, &mut st);
            if let Some(e) = st.entity.as_mut() {
                e.replenish(now);
            }
            queue(rq, task, &mut st);
            return true;
        }
        let Some(e) = st.entity.as_mut() else { return false };
        if e.throttled {
            let signal = e.params.flags & cadence_sched::consts::SCHED_FLAG_DL_OVERRUN != 0;
            throttle(rq, task, &mut st);
            drop(st);
            if signal {
                // Only marks it pending (SIGXCPU is not fatal): fine under the run-queue lock.
                crate::sched::signal::send_under_rq_lock(task, crate::sched::signal::SIGXCPU);
            }
            return true;
        }
        false
    }

    fn task_tick(&self, _rq: &mut RqInner, _task: &Arc<Task>) -> bool {
        // Charged in `update_curr`, which the tick calls first.
        false
    }

    /// An earlier absolute deadline preempts (Linux `dl_entity_preempt`).
    fn wakeup_preempt(&self, _rq: &mut RqInner, curr: &Arc<Task>, waking: &Arc<Task>) -> bool {
        let Some(w) = waking.dl.lock().entity else { return false };
        let Some(c) = curr.dl.lock().entity else { return true };
        c.throttled || w.preempts(&c)
    }

    /// The runtime left: the hrtick throttles the task exactly when it runs out.
    fn hrtick_slice(&self, _rq: &mut RqInner, task: &Task) -> HrtickSlice {
        match task.dl.lock().entity {
            Some(e) if e.runtime > 0 && !e.throttled => HrtickSlice::Left(e.runtime as u64),
            Some(_) => HrtickSlice::Expired,
            None => HrtickSlice::None,
        }
    }

    /// Gives up the rest of the period (Linux `yield_task_dl`).
    fn yield_task(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let mut st = task.dl.lock();
        if let Some(e) = st.entity.as_mut() {
            e.runtime = 0;
            throttle(rq, task, &mut st);
        }
    }

    /// A CPU with no deadline task, or the one whose earliest deadline is latest and later
    /// than the task's (`cpudl_find`); else where it ran.
    fn select_cpu(&self, task: &Task, prev: u32, _waker_cpu: u32, allowed: CpuMask) -> u32 {
        let now = crate::time::uptime_ns();
        let deadline = match task.dl.lock().entity {
            Some(e) if e.deadline != 0 && !cadence_sched::deadline::time_before(e.deadline, now) => e.deadline,
            Some(e) => now.wrapping_add(e.params.deadline),
            None => return super::stay_or_first(prev, allowed),
        };
        let found = CPUDL.lock().as_ref().and_then(|c| c.find(allowed, deadline));
        match found {
            Some(cpu) if allowed.contains(cpu as usize) => cpu,
            _ => super::stay_or_first(prev, allowed),
        }
    }

    /// New parameters: a new entity, which starts a period at its next enqueue (the requeue
    /// around the change).
    fn prio_changed(&self, _rq: &mut RqInner, task: &Arc<Task>, old: &ValidAttr, new: &ValidAttr) {
        if old.dl != new.dl {
            let mut st = task.dl.lock();
            st.cancel_timer();
            st.entity = new.dl.map(DlEntity::new);
        }
    }

    fn switched_from(&self, rq: &mut RqInner, task: &Arc<Task>) {
        let mut st = task.dl.lock();
        unqueue(rq, &mut st);
        st.cancel_timer();
        st.entity = None;
    }

    fn switched_to(&self, _rq: &mut RqInner, task: &Arc<Task>, attr: &ValidAttr) {
        let mut st = task.dl.lock();
        st.cancel_timer();
        st.entity = attr.dl.map(DlEntity::new);
    }

    fn task_new(&self, task: &Task, attr: &ValidAttr) {
        task.dl.lock().entity = attr.dl.map(DlEntity::new);
    }

    /// Its bandwidth goes back to the root domain; its timer is cancelled. The bandwidth is
    /// its own parameters' (a task boosted into the class by priority inheritance runs with
    /// its donor's, and was never admitted).
    fn task_dead(&self, task: &Task, own: &ValidAttr) {
        let mut st = task.dl.lock();
        st.cancel_timer();
        st.entity = None;
        if let Some(dl) = own.dl {
            let _ = admit(Some(dl), None);
        }
    }

    /// Push and pull as Linux's deadline class: a CPU with waiting deadline tasks pushes
    /// them where they would run now (after a wakeup that did not preempt, and after each
    /// scheduling decision); a CPU that goes idle, or whose level dropped, pulls.
    fn balance(&self, cpu: u32, at: super::BalancePoint) -> bool {
        use super::BalancePoint;
        if DL_OVERLOAD.is_empty(Ordering::SeqCst) {
            return false;
        }
        match at {
            BalancePoint::Tick { .. } => false,
            BalancePoint::Woken => {
                push(cpu);
                false
            }
            BalancePoint::NewIdle => pull(cpu),
            BalancePoint::Decision { level_before } => {
                push(cpu);
                let level = rq_of(cpu).rt_level.load(Ordering::SeqCst);
                (level < level_before || level < DL_CPUPRI_LEVEL) && pull(cpu)
            }
        }
    }

    /// Above every RT level: no RT task is placed on a CPU running a deadline task.
    fn cpupri_level(&self, _task: &Task) -> u8 {
        DL_CPUPRI_LEVEL
    }

    fn prio(&self, _task: &Task) -> i32 {
        cadence_sched::consts::MAX_DL_PRIO - 1
    }

    fn fits(&self, rq: &RqInner, _task: &Task) -> bool {
        rq.dl.queue.capacity() > rq.dl.queue.len()
    }
}

/// The cpupri level of a CPU running a deadline task: above RT priority 99 (2 + 99).
pub const DL_CPUPRI_LEVEL: u8 = 102;
