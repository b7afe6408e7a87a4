//! The scheduler: per-CPU run queues, the scheduling classes, `schedule()`, wakeups,
//! preemption, load balancing and migration.
//!
//! # Shape (Linux's)
//! Each CPU has one [`Rq`] (the scheduler's per-CPU data, a `percpu::PerCpuVar`: [`rq_of`],
//! [`this_rq`]), holding the classes' queues in fixed order: **dl > rt > fair > idle** (see
//! [`class`]). Policy decisions (EEVDF math, RT priority arrays,
//! CPU selection, imbalance) come from the pure `cadence-sched` crate; this module owns the
//! mechanism: locks, context switches, IPIs, timers.
//!
//! # Invariants
//! * A task is on at most one run queue: `task.cpu` names it, `task.on_rq` says it is queued
//!   (the running task counts as queued while it is runnable).
//! * `rq.curr` is the task whose context is live on that CPU; `task.on_cpu` is set from
//!   switch-in until *after* switch-out completes (`finish_task_switch`), so no other CPU can
//!   resume a task whose stack is still in use.
//! * A fair task's EEVDF entity lives in its run queue's `FairRq` while queued, and in
//!   `task.parked_se` while it is not (sleeping, migrating).
//! * SCHED_FIFO/RR tasks stay in the RT priority array while they run (like Linux).
//!
//! # Lock order
//! 1. `task.params` (Linux `pi_lock`)
//! 2. run-queue locks, two of them always in ascending CPU order ([`rqlock::lock_two`])
//! 3. leaf locks: `task.parked_se`, wait-queue lists, timer queues, the task table.
//!
//! Interrupts are disabled while any of these is held.
//!
//! # Preemption
//! `need_resched` is per CPU. It is acted upon at preemption points: the end of an interrupt
//! handler (timer, reschedule IPI) and whenever an interrupt-disabling lock is released back
//! to interrupts-enabled with `preempt_count == 0` (see [`preempt_point`]).

pub mod api;
pub mod autogroup;
pub mod balance;
pub mod class;
pub mod coresched;
pub mod group;
pub mod hrtick;
pub mod lockup;
pub mod pipe;
pub mod reserve;
pub mod rqlock;
pub mod rt_limits;
pub mod signal;
pub mod task;
pub mod wait;

#[cfg(test)]
mod coresched_tests;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod tests;

use crate::percpu::{self, PerCpu};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use cadence_sched::eevdf::{DEQUEUE_SLEEP, ENQUEUE_INITIAL, ENQUEUE_WAKEUP};
use cadence_sched::rt::RrTimeslice;
use cadence_sched::vecmap::VecMap;
use cadence_sched::{CpuMask, FairRq, FairTunables, RtPrioArray, ValidAttr};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use rqlock::RqLock;
use task::{ClassId, SchedParams, SpawnOptions, Task, TaskState, Tid};

pub use task::{find, wait};

/// Key of a schedulable entity in a fair queue: a task, or (with group scheduling) a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SeKey {
    Task(Tid),
    Group(group::GroupId),
}

/// The locked part of a run queue.
pub struct RqInner {
    pub cpu: u32,
    pub curr: Option<Arc<Task>>,
    pub idle: Option<Arc<Task>>,
    pub rt: RtPrioArray<Tid>,
    /// The deadline class's queue (`class::deadline`).
    pub dl: class::deadline::DlRq,
    pub fair: FairRq<SeKey>,
    /// Every task queued here (every class, throttled deadline tasks included), by tid.
    pub tasks: VecMap<Tid, Arc<Task>>,
    /// Non-root task groups' queues on this CPU (see `group`).
    pub group_rqs: group::GroupRqs,
    /// Fair tasks queued on this CPU at any level of the group tree.
    pub nr_fair_tasks: usize,
    /// Execution time of the running fair task not yet charged to its group entities above
    /// its own level (the fair class charges those lazily: `class::fair` module doc).
    pub fair_pending_ns: u64,
    /// When `curr` last had its runtime accounted.
    pub exec_start: u64,
    /// Storage for the next group queues created on this CPU (see `reserve`).
    pub spare_groups: arrayvec::ArrayVec<cadence_sched::FairStorage<SeKey>, { reserve::SPARE_GROUPS }>,
    /// Candidate lists of the core-wide pick (`coresched::pick`), allocated with the queue.
    pub core_lists: alloc::boxed::Box<[coresched::CandList]>,
    /// Where the next load-balancing scan of this queue starts (a tid).
    pub balance_cursor: Tid,
    /// The pending hrtick timer, if armed.
    pub hrtick_timer: Option<crate::timer::TimerId>,
    /// Sequence number of the last hrtick timer armed (its `data`), so a stale one is ignored.
    pub hrtick_seq: u64,
    /// RT throttling: RT time charged in the current period, the period, throttled flag.
    pub rt_bw: cadence_sched::rt_bandwidth::RtBandwidth,
    /// Forced idle by core scheduling since (0 = not forced idle).
    pub forced_since: u64,
    /// The task switched away from, for `finish_task_switch` on the next task.
    prev: Option<Arc<Task>>,
    /// A runnable task switched out because it may no longer run here (affinity change):
    /// moved to an allowed CPU after the switch.
    migrate_out: Option<Arc<Task>>,
}

impl RqInner {
    /// Tasks queued in the class queues (Linux `rq->nr_running`): RT, fair at every group
    /// level, and deadline tasks not throttled (a throttled deadline task is out of its queue
    /// until its replenishment, as in Linux, though still in `tasks`).
    pub fn nr_queued(&self) -> usize {
        self.rt.nr_running() + self.nr_fair_tasks + self.dl.nr_running()
    }
}

/// One CPU's run queue.
pub struct Rq {
    pub lock: RqLock<RqInner>,
    /// Runnable RT + fair tasks (running one included); lock-free snapshot for balancing.
    pub nr_running: AtomicU32,
    /// Sum of the fair weights queued here.
    pub fair_load: AtomicU64,
    /// Priority of what runs: 0 idle, 1 fair, 2 + rt_priority for RT (see [`cpu_prio`]).
    pub curr_prio: AtomicU8,
    /// Core-scheduling cookie of what runs (published with `curr_prio`; read by RT placement,
    /// `balance::core_excluded`).
    pub curr_cookie: AtomicU64,
    /// RT tasks queued here that are not running.
    pub rt_waiting: AtomicU32,
    /// Level ([`cpu_prio`] encoding) of the most important waiting RT task that may run on
    /// another CPU (Linux's head of `pushable_tasks`); 0 if none. Non-zero exactly when this
    /// CPU's bit is set in `RT_OVERLOAD`.
    pub rt_pushable: AtomicU8,
    /// This CPU's level for RT placement (Linux's cpupri value): the higher of what runs and
    /// the most important queued RT task (unless RT-throttled), so a CPU about to switch to a
    /// queued RT task is not taken for one running something less important.
    pub rt_level: AtomicU8,
    /// `rt_level` when the last `__schedule` on this CPU began: `finish_task_switch` pulls RT
    /// work when the switch lowered it.
    level_before_switch: AtomicU8,
    pub need_resched: AtomicBool,
    /// Set once the CPU runs its idle task under the scheduler.
    pub ready: AtomicBool,
    /// The running task (same as `curr`), readable without the lock.
    pub current: AtomicPtr<Task>,
    pub nr_switches: AtomicU64,
    pub ticks: AtomicU64,
    /// Balancing passes to skip (back-off after fruitless passes) and the current back-off.
    pub balance_skip: AtomicU32,
    pub balance_backoff: AtomicU32,
    /// A periodic balance is due (set by the tick at each balance interval, cleared when one
    /// runs: it waits for a tick with no reschedule pending).
    balance_due: AtomicBool,
    /// Wakeups other CPUs handed to this one (Linux `ttwu_queue_wakelist`): a lock-free stack
    /// through `Task::wake_next`, each entry holding one `Arc` reference (see `queue_wakeup`).
    wake_list: AtomicPtr<Task>,
    /// Entries on `wake_list` not yet queued: a CPU with pending wakeups is not idle for
    /// placement (Linux `idle_cpu()` checks `rq->ttwu_pending`), or every waker would pick it.
    pub wake_pending: AtomicU32,
    /// The least free room of this queue's structures at its last enqueue (see
    /// `reserve::note_wakeup_queued`).
    pub spare_hint: AtomicU32,
    /// An `RT_PUSH_IPI` request to this CPU is in flight (see `balance::pull_rt`).
    pub push_ipi_pending: AtomicBool,
    /// Tick count at the last new-idle balance (at most one per tick).
    pub last_idle_balance: AtomicU64,
    /// The idle loop is polling `need_resched` (no IPI needed to wake it).
    pub polling: AtomicBool,
    /// This CPU's RT class is throttled (lock-free copy of `RqInner::rt_bw.throttled`).
    pub rt_throttled: AtomicBool,
    /// Queued tasks with a core-scheduling cookie (see `core::active`).
    pub nr_cookied: AtomicU32,
    /// This CPU waits for a sibling to leave an incompatible task (core scheduling).
    pub core_wait: AtomicBool,
    /// Time this CPU was forced idle by core scheduling (ns).
    pub forced_idle_ns: AtomicU64,
    /// The idle loop's current poll limit (ns), adapted by `cadence_sched::haltpoll`.
    pub idle_poll_limit: AtomicU64,
}

/// Ceiling of the adaptive poll-before-halt of idle CPUs (Linux's haltpoll governor, see
/// `cadence_sched::haltpoll`: under virtualization a halted vCPU is slow to wake).
/// `kernel.sched_idle_poll_ns`, 0 = never poll. The default is chosen by measurement
/// (docs/design/wakeups.md, *Idle polling*).
static IDLE_POLL_NS: AtomicU64 = AtomicU64::new(0);

pub fn idle_poll_ns() -> u64 {
    IDLE_POLL_NS.load(Ordering::Relaxed)
}

pub fn set_idle_poll_ns(ns: u64) {
    IDLE_POLL_NS.store(ns.min(10_000_000), Ordering::Relaxed);
}

impl Rq {
    pub fn new(cpu: u32) -> Self {
        Rq {
            lock: RqLock::new(RqInner {
                cpu,
                curr: None,
                idle: None,
                rt: RtPrioArray::new(),
                dl: class::deadline::DlRq::new(),
                fair: FairRq::new(FairTunables::default()),
                tasks: VecMap::new(),
                group_rqs: group::GroupRqs::new(),
                spare_groups: arrayvec::ArrayVec::new_const(),
                core_lists: coresched::new_core_lists(),
                nr_fair_tasks: 0,
                fair_pending_ns: 0,
                exec_start: 0,
                balance_cursor: 0,
                hrtick_timer: None,
                hrtick_seq: 0,
                rt_bw: cadence_sched::rt_bandwidth::RtBandwidth::new(),
                forced_since: 0,
                prev: None,
                migrate_out: None,
            }),
            nr_running: AtomicU32::new(0),
            fair_load: AtomicU64::new(0),
            curr_prio: AtomicU8::new(0),
            curr_cookie: AtomicU64::new(0),
            rt_waiting: AtomicU32::new(0),
            rt_pushable: AtomicU8::new(0),
            rt_level: AtomicU8::new(0),
            level_before_switch: AtomicU8::new(0),
            need_resched: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            current: AtomicPtr::new(core::ptr::null_mut()),
            nr_switches: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            balance_skip: AtomicU32::new(0),
            balance_backoff: AtomicU32::new(0),
            balance_due: AtomicBool::new(false),
            wake_list: AtomicPtr::new(core::ptr::null_mut()),
            wake_pending: AtomicU32::new(0),
            spare_hint: AtomicU32::new(0),
            push_ipi_pending: AtomicBool::new(false),
            last_idle_balance: AtomicU64::new(u64::MAX),
            polling: AtomicBool::new(false),
            rt_throttled: AtomicBool::new(false),
            nr_cookied: AtomicU32::new(0),
            core_wait: AtomicBool::new(false),
            forced_idle_ns: AtomicU64::new(0),
            idle_poll_limit: AtomicU64::new(0),
        }
    }
}

// ----- tunables ---------------------------------------------------------------------------

static RR_TIMESLICE_MS: AtomicU64 = AtomicU64::new(cadence_sched::rt::RR_TIMESLICE_MS);
static WAKEUP_GRANULARITY_NS: AtomicU64 = AtomicU64::new(cadence_sched::eevdf::SCHED_WAKEUP_GRANULARITY_NS);
static BASE_SLICE_NS: AtomicU64 = AtomicU64::new(cadence_sched::eevdf::SCHED_BASE_SLICE_NS);

pub fn rr_timeslice_ns() -> u64 {
    RR_TIMESLICE_MS.load(Ordering::Relaxed) * 1_000_000
}

pub fn rr_timeslice_ms() -> u64 {
    RR_TIMESLICE_MS.load(Ordering::Relaxed)
}

/// `kernel.sched_rr_timeslice_ms`: values ≤ 0 reset to the default (100 ms), as in Linux.
pub fn set_rr_timeslice_ms(ms: i64) {
    let mut t = RrTimeslice::default();
    t.set_ms(ms);
    RR_TIMESLICE_MS.store(t.ms(), Ordering::Relaxed);
}

/// Fair tunables in force (base slice scaled for the CPU count, tick from `hz`).
pub fn fair_tunables() -> FairTunables {
    FairTunables {
        base_slice_ns: BASE_SLICE_NS.load(Ordering::Relaxed),
        tick_nsec: crate::timer::tick_period_ns(),
        wakeup_granularity_ns: WAKEUP_GRANULARITY_NS.load(Ordering::Relaxed),
        ..FairTunables::default()
    }
}

pub fn set_wakeup_granularity_ns(ns: u64) {
    WAKEUP_GRANULARITY_NS.store(ns, Ordering::Relaxed);
    refresh_tunables();
}

pub fn set_base_slice_ns(ns: u64) {
    BASE_SLICE_NS.store(ns, Ordering::Relaxed);
    refresh_tunables();
}

fn refresh_tunables() {
    let t = fair_tunables();
    for cpu in percpu::online_cpus() {
        rq_of(cpu.cpu_id).lock.lock().fair.set_tunables(t);
    }
}

// ----- helpers ----------------------------------------------------------------------------

/// Encodes what a CPU runs for RT placement: 0 idle, 1 fair, 2 + rt_priority (the task's
/// class says: `SchedClass::cpupri_level`).
pub fn cpu_prio(task: &Task) -> u8 {
    class::of(task).cpupri_level(task)
}

fn this_cpu() -> &'static PerCpu {
    percpu::current()
}

/// Every CPU's run queue (the scheduler's per-CPU data, created at bring-up: [`init_cpu`]).
static RQS: percpu::PerCpuVar<Rq> = percpu::PerCpuVar::new();

/// Creates CPU `cpu`'s run queue (bring-up, before the CPU's area is listed).
pub fn init_cpu(cpu: u32) {
    RQS.init(cpu, Rq::new(cpu));
}

/// CPU `cpu`'s run queue (any CPU listed by `percpu` has one).
pub fn rq_of(cpu: u32) -> &'static Rq {
    RQS.get(cpu).expect("run queue of an existing CPU")
}

/// The calling CPU's run queue.
#[inline]
pub fn this_rq() -> &'static Rq {
    RQS.this()
}

/// This CPU's `current` pointer, read with interrupts off (`f` runs before they come back):
/// between finding this CPU and reading its run queue, a preemption could move the caller,
/// and the old CPU's `current` would be another task, free to exit.
pub(super) fn with_current_ptr<R>(f: impl FnOnce(*mut Task) -> R) -> R {
    let irqs = crate::irqflags::save();
    let r = f(this_rq().current.load(Ordering::Acquire));
    crate::irqflags::restore(irqs);
    r
}

/// Whether the running task is in the RT class (Linux `rt_task(current)`: its effective
/// priority, so a fair task boosted by priority inheritance counts). False before the
/// scheduler runs on this CPU.
pub fn current_is_rt() -> bool {
    with_current_ptr(|ptr| {
        // SAFETY: `current` points at the task running on this CPU (the caller, read with
        // interrupts off), alive while it runs; only an atomic field is read.
        !ptr.is_null() && unsafe { (*ptr).class() } == ClassId::Rt
    })
}

/// The calling task's CPU time so far, ns (Linux `CLOCK_THREAD_CPUTIME_ID`): what has been
/// charged to it plus the stretch it is running now, as the scheduler counts it (so time the
/// host took its vCPU away counts too, as a deadline task's runtime does). Takes this CPU's
/// run-queue lock: poll it, do not spin on it.
pub fn current_cputime_ns() -> u64 {
    let irqs = crate::irqflags::save();
    let rq = this_rq();
    let g = rq.lock.lock();
    let now = crate::time::uptime_ns();
    let t = g.curr.as_ref().map_or(0, |c| c.stats.sum_exec_runtime.load(Ordering::Relaxed) + now.saturating_sub(g.exec_start));
    drop(g);
    crate::irqflags::restore(irqs);
    t
}

/// The running task.
pub fn current() -> Arc<Task> {
    let ptr = with_current_ptr(|ptr| {
        if !ptr.is_null() {
            // SAFETY: `current` points at the task running on this CPU (the caller, read with
            // interrupts off); the run queue holds an Arc to it (as `curr`), so it is alive; we
            // add one reference for the returned Arc.
            unsafe { Arc::increment_strong_count(ptr) };
        }
        ptr
    });
    assert!(!ptr.is_null(), "current() before the scheduler runs on this CPU");
    // SAFETY: the reference counted above.
    unsafe { Arc::from_raw(ptr) }
}

/// The running task's id (0 for idle or before the scheduler runs).
pub fn current_tid() -> Tid {
    let ptr = with_current_ptr(|ptr| ptr);
    if ptr.is_null() {
        0
    } else {
        // SAFETY: the caller's own task (see `with_current_ptr`), alive while it runs.
        unsafe { (*ptr).tid }
    }
}

fn set_need_resched(cpu: u32) {
    let rq = rq_of(cpu);
    // Already pending: the CPU acts on it at its next preemption point (it is cleared only by
    // `__schedule` under the run-queue lock, after which any new work is visible), so no IPI.
    if rq.need_resched.swap(true, Ordering::SeqCst) {
        return;
    }
    // A CPU polling in its idle loop sees the flag without an IPI (Linux's TIF_POLLING_NRFLAG).
    if cpu != percpu::cpu_id() && !rq.polling.load(Ordering::SeqCst) {
        let to_idle = rq.curr_prio.load(Ordering::Relaxed) == 0; // `cpu_prio` of the idle task
        RESCHED_IPIS_SENT[if to_idle { 1 } else { 0 }].fetch_add(1, Ordering::Relaxed);
        send_reschedule_ipi(cpu);
    }
}

/// Reschedule IPIs sent, by reason: [a running task is to be preempted, an idle CPU is to
/// wake, a wakeup was handed to the CPU's wake list] (`trace irqsoff` reports them).
static RESCHED_IPIS_SENT: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// [`RESCHED_IPIS_SENT`]: [to preempt, to wake an idle CPU, for the wake list].
pub fn resched_ipis_sent() -> [u64; 3] {
    RESCHED_IPIS_SENT.each_ref().map(|c| c.load(Ordering::Relaxed))
}

/// Sends `cpu` a reschedule IPI (traced as `ipi_raise`).
fn send_reschedule_ipi(cpu: u32) {
    if let Some(c) = percpu::get(cpu) {
        crate::trace::ipi_send(cpu, crate::arch::apic::RESCHEDULE_VECTOR, crate::time::uptime_ns());
        crate::arch::apic::send_ipi(c.apic_id, crate::arch::apic::RESCHEDULE_VECTOR);
    }
}

/// Publishes `g`'s counts for lock-free readers (balancing, RT placement). Called with `g`
/// locked after every change of its queues or of `curr`.
///
/// RT placement reads `rt_level` and `RT_OVERLOAD` without locks, from both sides: a CPU that
/// queues a pushable task sets its overload bit and then reads the others' levels (push),
/// while a CPU whose level drops stores it and then reads the overload mask (pull). Both use
/// `SeqCst`, so at least one side sees the other (store-load ordering), and the task is moved.
fn update_counts(rq: &Rq, g: &RqInner) {
    rq.nr_running.store(g.nr_queued() as u32, Ordering::Release);
    rq.fair_load.store(g.fair.load(), Ordering::Release);
    let curr = g.curr.as_ref();
    let running_rt = curr.is_some_and(|c| c.class() == ClassId::Rt && c.is_on_rq());
    let waiting = g.rt.nr_running().saturating_sub(running_rt as usize);
    rq.rt_waiting.store(waiting as u32, Ordering::Release);
    // The most important waiting RT task that is allowed elsewhere. Pinned tasks are never
    // push or pull candidates, so they do not mark the CPU overloaded (Linux's
    // `rt_nr_migratory`): otherwise every switch anywhere would lock this queue for nothing.
    let mut pushable = 0u8;
    if waiting > 0 {
        let online = online_mask();
        for (tid, prio) in g.rt.iter() {
            let Some(t) = g.tasks.get(&tid) else { continue };
            let running = curr.is_some_and(|c| Arc::ptr_eq(c, t));
            if cadence_sched::rt_smp::is_pushable(t.affinity(), online, running) {
                pushable = 2 + prio;
                break;
            }
        }
    }
    rq.rt_level.store(balance::locked_level(g), Ordering::SeqCst);
    rq.rt_pushable.store(pushable, Ordering::SeqCst);
    let bit = 1u64 << g.cpu;
    let overloaded = RT_OVERLOAD.load(Ordering::SeqCst) & bit != 0;
    if pushable != 0 && !overloaded {
        RT_OVERLOAD.fetch_or(bit, Ordering::SeqCst);
    } else if pushable == 0 && overloaded {
        RT_OVERLOAD.fetch_and(!bit, Ordering::SeqCst);
    }
}

/// Run-queue accounting, for stress tests (the chaos stress): on every CPU, under its lock, the
/// published `nr_running` equals the queues' counts and the queued-task map, every queued task
/// is on the run queue of its own CPU, and no task is queued on two CPUs. Returns one line per
/// problem (empty: consistent). Wakeups still on a wake list are neither queued nor counted.
pub fn check_accounting() -> alloc::vec::Vec<alloc::string::String> {
    use alloc::format;
    let mut problems = alloc::vec::Vec::new();
    let mut seen: BTreeMap<Tid, u32> = BTreeMap::new();
    for cpu in percpu::online_cpus() {
        let g = rq_of(cpu.cpu_id).lock.lock();
        let queued = g.nr_queued();
        let published = rq_of(cpu.cpu_id).nr_running.load(Ordering::Acquire) as usize;
        let throttled = g.tasks.values().filter(|t| t.class() == ClassId::Dl && class::deadline::is_throttled(t)).count();
        if queued != published || queued + throttled != g.tasks.len() {
            problems.push(format!(
                "cpu {}: nr_running {} published, {} in the class queues, {} throttled, {} queued tasks",
                cpu.cpu_id,
                published,
                queued,
                throttled,
                g.tasks.len()
            ));
        }
        for (tid, t) in g.tasks.iter() {
            if !t.is_on_rq() || t.cpu() != cpu.cpu_id {
                problems.push(format!("cpu {}: task {} queued here, on_rq {} cpu {}", cpu.cpu_id, tid, t.is_on_rq(), t.cpu()));
            }
            if let Some(other) = seen.insert(*tid, cpu.cpu_id) {
                problems.push(format!("task {} queued on cpus {} and {}", tid, other, cpu.cpu_id));
            }
        }
    }
    problems
}

/// CPUs with a waiting RT task that may run elsewhere (Linux's `rto_mask`): pull sources.
static RT_OVERLOAD: AtomicU64 = AtomicU64::new(0);

/// After a scheduling decision on `cpu` (its lock released): every class's balance hook
/// (`BalancePoint::Decision`: RT pushes waiting tasks that may run elsewhere and pulls if the
/// CPU's level fell below `level_before`; Linux's `balance_rt`/`push_rt_tasks` callbacks).
/// Cheap when there is nothing to do.
fn balance_callbacks(cpu: u32, level_before: u8) {
    class::balance(cpu, class::BalancePoint::Decision { level_before });
}

/// Accounts the running task's time up to `now`. Returns true if the fair class wants a
/// reschedule (slice used up with others waiting).
fn update_curr(g: &mut RqInner, now: u64) -> bool {
    let delta = now.saturating_sub(g.exec_start);
    g.exec_start = now;
    let Some(curr) = g.curr.clone() else { return false };
    if curr.is_idle {
        return false;
    }
    curr.stats.sum_exec_runtime.fetch_add(delta, Ordering::Relaxed);
    class::of(&curr).update_curr(g, &curr, delta, now)
}

/// The task starts waiting on a run queue, unless it already was (a requeue or migration
/// while it waits does not restart its wait).
fn start_wait(task: &Task, now: u64) {
    let _ = task.stats.wait_start.compare_exchange(0, now.max(1), Ordering::Relaxed, Ordering::Relaxed);
}

fn end_wait(task: &Task, now: u64) {
    let start = task.stats.wait_start.swap(0, Ordering::Relaxed);
    task.stats.last_queued_at.store(start, Ordering::Relaxed);
    if start != 0 {
        let w = now.saturating_sub(start);
        task.stats.wait_sum.fetch_add(w, Ordering::Relaxed);
        task.stats.wait_max.fetch_max(w, Ordering::Relaxed);
        task.stats.wait_count.fetch_add(1, Ordering::Relaxed);
    }
}

/// Enqueues that found `on_rq` other than their kind expects (see [`dequeue_task`]): a plain
/// enqueue of a task already marked queued — a task on two run queues — or the second half of
/// a requeue or migration of one not marked queued; and enqueues a class refused because the
/// task was already in its queue. 0 unless a bug; the chaos stress counts it
/// as a violation and every in-kernel test asserts it.
static BAD_ENQUEUES: AtomicU64 = AtomicU64::new(0);

/// A class found a task it was asked to queue already queued (its policy's `EBUSY`): the
/// same bug as a wrong `on_rq`, counted with it.
fn note_bad_enqueue() {
    BAD_ENQUEUES.fetch_add(1, Ordering::Relaxed);
}

/// How many enqueues found `on_rq` wrong ([`BAD_ENQUEUES`]).
pub fn bad_enqueues() -> u64 {
    BAD_ENQUEUES.load(Ordering::Relaxed)
}

/// The enqueue halves of a requeue (`ENQUEUE_RESTORE`) or migration (`ENQUEUE_MIGRATING`): the
/// task kept `on_rq` through its dequeue.
const ENQUEUE_KEEPS_ON_RQ: u32 = cadence_sched::eevdf::ENQUEUE_RESTORE | cadence_sched::eevdf::ENQUEUE_MIGRATING;
/// The dequeue halves of the same (`DEQUEUE_SAVE`, `DEQUEUE_MIGRATING`).
const DEQUEUE_KEEPS_ON_RQ: u32 = cadence_sched::eevdf::DEQUEUE_SAVE | cadence_sched::eevdf::DEQUEUE_MIGRATING;

/// Puts a runnable task on `g`'s queues (Linux `activate_task` → class `enqueue`).
fn enqueue_task(g: &mut RqInner, task: &Arc<Task>, flags: u32, now: u64) {
    task.cpu.store(g.cpu, Ordering::Release);
    class::of(task).enqueue(g, task, flags);
    let was_queued = task.on_rq.swap(true, Ordering::AcqRel);
    if was_queued != (flags & ENQUEUE_KEEPS_ON_RQ != 0) {
        BAD_ENQUEUES.fetch_add(1, Ordering::Relaxed);
    }
    if task.core_cookie.load(Ordering::Relaxed) != 0 {
        rq_of(g.cpu).nr_cookied.fetch_add(1, Ordering::SeqCst);
    }
    g.tasks.insert(task.tid, task.clone());
    reserve::note_insert(g, Some(task));
    if !g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, task)) {
        start_wait(task, now);
    }
}

/// Takes a task off `g`'s queues (Linux `deactivate_task`).
///
/// `on_rq` is cleared only when the task really leaves the queues (it sleeps, exits, or leaves
/// a CPU its affinity forbids, to be queued again under its `params` lock). A requeue around an
/// attribute change (`DEQUEUE_SAVE` … `ENQUEUE_RESTORE`) and a migration between two run
/// queues (`DEQUEUE_MIGRATING` … `ENQUEUE_MIGRATING`) keep it set, as Linux keeps `p->on_rq`
/// non-zero there (`TASK_ON_RQ_MIGRATING`): [`try_to_wake_up`] reads `on_rq` without a
/// run-queue lock and, finding it clear, takes the task for one on no queue and enqueues it
/// itself. The balancer's move and autogroup's toggle requeue tasks without their `params`
/// lock, and a task that set itself Sleeping and was preempted before switching out is still
/// queued: cleared for the move, a waker that read it then queued the task a second time, on
/// another CPU. It ran on both, and once it had exited on one, the other switched back into it
/// ("a dead task was scheduled again": the chaos stress at -smp 8, 300,000 operations). Kept
/// set, the waker locks the task's run queue, which the mover holds, and follows the task.
fn dequeue_task(g: &mut RqInner, task: &Arc<Task>, flags: u32) {
    class::of(task).dequeue(g, task, flags);
    if flags & DEQUEUE_KEEPS_ON_RQ == 0 {
        task.on_rq.store(false, Ordering::Release);
    }
    if task.core_cookie.load(Ordering::Relaxed) != 0 {
        rq_of(g.cpu).nr_cookied.fetch_sub(1, Ordering::SeqCst);
    }
    g.tasks.remove(&task.tid);
}

/// Takes `t` (on `g`'s CPU) off its queue — and off the CPU's "current" bookkeeping if it is
/// running — lets `change` alter it, and puts it back: Linux's DEQUEUE_SAVE / ENQUEUE_RESTORE
/// dance (`__sched_setscheduler`, `sched_move_task`), which keeps a fair task's lag, so it
/// keeps its place fairly wherever it lands (another class, group or weight).
pub(super) fn requeue_locked(g: &mut RqInner, t: &Arc<Task>, now: u64, change: impl FnOnce(&mut RqInner)) {
    let queued = t.is_on_rq();
    let running = g.curr.as_ref().is_some_and(|c| Arc::ptr_eq(c, t));
    // Siblings read the queued-cookie count without our lock (`coresched::active`): it must
    // not dip to 0 while the task is briefly off the queue, or a sibling could pick alone and
    // start a cookie-0 task beside a cookied one that keeps running here.
    let hold = queued && t.core_cookie.load(Ordering::Acquire) != 0;
    if hold {
        rq_of(g.cpu).nr_cookied.fetch_add(1, Ordering::SeqCst);
    }
    if queued {
        dequeue_task(g, t, cadence_sched::eevdf::DEQUEUE_SAVE | cadence_sched::eevdf::DEQUEUE_MOVE);
    }
    if running {
        class::of(t).put_prev(g, t);
    }
    if queued || running {
        class::park_entity(g, t);
    }
    change(g);
    if queued {
        enqueue_task(g, t, cadence_sched::eevdf::ENQUEUE_RESTORE | cadence_sched::eevdf::ENQUEUE_MOVE, now);
    }
    if running {
        class::of(t).set_next(g, t);
        rq_of(g.cpu).curr_cookie.store(t.core_cookie.load(Ordering::Relaxed), Ordering::Release);
        rq_of(g.cpu).curr_prio.store(cpu_prio(t), Ordering::Release);
    }
    if hold {
        rq_of(g.cpu).nr_cookied.fetch_sub(1, Ordering::SeqCst);
    }
    update_counts(rq_of(g.cpu), g);
}

/// Runs `f` with `t`'s run queue locked (retrying if the task moves meanwhile) and its runtime
/// accounted up to now, then reschedules that CPU.
///
/// The caller holds `t.params` (Linux's `task_rq_lock` takes `pi_lock` first): a sleeping
/// task's CPU changes only in a wakeup, which holds `params` from the state check to the
/// enqueue. Without it a wakeup could queue the task on another CPU while `f` runs here, and
/// `f` would see it queued on a run queue that is not the one it holds.
pub(super) fn with_task_rq<R>(t: &Arc<Task>, f: impl FnOnce(&mut RqInner, u64) -> R) -> R {
    debug_assert!(t.params.is_locked(), "with_task_rq without the task's params lock");
    let (cpu, mut g) = lock_task_rq(t);
    let rq = rq_of(cpu);
    let now = crate::time::uptime_ns();
    let level_before = rq.rt_level.load(Ordering::SeqCst);
    update_curr(&mut g, now);
    let r = f(&mut g, now);
    drop(g);
    set_need_resched(cpu);
    // A priority, policy or affinity change may have lowered that CPU's level (pull) or
    // made a waiting task pushable (Linux `prio_changed_rt` / `switched_from_rt`).
    balance_callbacks(cpu, level_before);
    r
}

/// Locks the run queue `t` is on, retrying if it moves meanwhile (a wakeup stores the task's
/// new CPU before queueing it there): its CPU and the guard. Without `t.params` held (see
/// [`with_task_rq`]) the task may move as soon as the guard drops.
pub(super) fn lock_task_rq(t: &Task) -> (u32, rqlock::RqGuard<'static, RqInner>) {
    loop {
        let cpu = t.cpu();
        let g = rq_of(cpu).lock.lock();
        if t.cpu() == cpu {
            return (cpu, g);
        }
    }
}

/// Should `task`, just queued on `g`, preempt what runs there?
fn wakeup_preempt(g: &mut RqInner, task: &Arc<Task>) -> bool {
    let Some(curr) = g.curr.clone() else { return false };
    if Arc::ptr_eq(&curr, task) {
        return false;
    }
    // Linux's `wakeup_preempt`: the class decides within itself, class order across.
    if task.class() == curr.class() {
        class::of(task).wakeup_preempt(g, &curr, task)
    } else {
        class::preempts_by_class(task.class(), curr.class())
    }
}

// ----- schedule -----------------------------------------------------------------------------

fn pick_next(g: &mut RqInner) -> Arc<Task> {
    for c in class::CLASSES {
        if let Some(t) = c.pick_next(g) {
            return t;
        }
    }
    g.idle.clone().expect("idle task exists")
}

/// Gives the CPU to the best runnable task (the current one may keep it).
///
/// Loops while a reschedule is pending (Linux's `schedule()`): the switch itself may request
/// one that no interrupt will act on soon (a pull or a wakeup in `finish_task_switch`, on the
/// CPU's own queue, sends no IPI).
pub fn schedule() {
    __schedule(false);
    // The CPU is re-read each time: the switch may resume us on another one.
    while this_rq().need_resched.load(Ordering::Acquire) && this_cpu().preempt_count.load(Ordering::Relaxed) == 0 {
        // Wakeups that did not fit this CPU's queues keep `need_resched` set until a refill
        // makes room (see `ttwu_pending`); a loop of switches alone would never make it.
        reserve::refill_pending();
        __schedule(true);
    }
}

/// Picks that left a queued RT task waiting behind a fair or idle task on its own CPU (the RT
/// class not throttled, the pick not forced idle by core scheduling): 0 unless a bug.
static RT_PASSED_OVER: AtomicU64 = AtomicU64::new(0);
/// The last such pick, for the report: `cpu << 56 | core-wide << 55 | waiting RT tid << 27 |
/// picked tid` (tids in 27 bits, 0 = idle).
static RT_PASSED_OVER_LAST: AtomicU64 = AtomicU64::new(0);

/// Picks that passed over a queued RT task ([`check_rt_pick`]), and the last one.
#[derive(Clone, Copy, Debug)]
pub struct RtPassedOver {
    pub count: u64,
    pub cpu: u32,
    pub core_wide: bool,
    pub rt_tid: u32,
    /// 0: the idle task.
    pub picked_tid: u32,
}

pub fn rt_passed_over() -> RtPassedOver {
    let last = RT_PASSED_OVER_LAST.load(Ordering::Relaxed);
    let tid_mask = (1u64 << 27) - 1;
    RtPassedOver {
        count: RT_PASSED_OVER.load(Ordering::Relaxed),
        cpu: (last >> 56) as u32,
        core_wide: last & (1 << 55) != 0,
        rt_tid: ((last >> 27) & tid_mask) as u32,
        picked_tid: (last & tid_mask) as u32,
    }
}

/// The RT class's promise on one CPU: a pick that is not forced idle never prefers a fair or
/// idle task to a queued RT task (unless RT is throttled here). In a core-wide pick (`others`:
/// the siblings' locked queues) the core's most important task sets the cookie, so a local RT
/// task may wait behind a matching lower task while a sibling's queue holds an RT task at
/// least as important (Linux's core scheduling does the same); only a local RT task above
/// every sibling's counts. Counted, not asserted: the chaos stress reports it.
fn check_rt_pick(g: &RqInner, next: &Task, forced_idle: bool, others: Option<&[(u32, rqlock::RqGuard<'static, RqInner>)]>) {
    // A deadline task outranks every RT task (class order).
    if forced_idle || g.rt_bw.throttled || matches!(next.class(), ClassId::Rt | ClassId::Dl) {
        return;
    }
    let (Some(tid), Some(prio)) = (g.rt.pick_highest(), g.rt.highest_prio()) else { return };
    if let Some(others) = others {
        let outranks = |og: &RqInner| {
            !og.rt_bw.throttled
                && (og.rt.highest_prio().is_some_and(|p| p >= prio)
                    || og.curr.as_ref().is_some_and(|c| c.class() == ClassId::Rt && c.rt_priority() >= prio))
        };
        if others.iter().any(|(_, og)| outranks(og)) {
            return;
        }
    }
    RT_PASSED_OVER.fetch_add(1, Ordering::Relaxed);
    let tid_mask = (1u64 << 27) - 1;
    let picked = if next.is_idle { 0 } else { next.tid as u64 };
    let last = (g.cpu as u64) << 56 | (others.is_some() as u64) << 55 | (tid as u64 & tid_mask) << 27 | (picked & tid_mask);
    RT_PASSED_OVER_LAST.store(last, Ordering::Relaxed);
}

fn __schedule(preempted: bool) {
    let irq_was_enabled = crate::irqflags::save();
    __schedule_irqs_off(preempted);
    // Only now, with the pick's task references (`prev`, `next`) dropped: the interrupt that
    // may come in the moment interrupts are back on can end this task at its exit (a fatal
    // signal), and a frame it abandons never drops what it holds. Restoring inside the pick's
    // frame leaked the task itself, once per such kill (the chaos stress's "task objects:
    // 7 alive, 6 before", about one run in six).
    crate::irqflags::restore(irq_was_enabled);
}

/// [`__schedule`]'s body: interrupts are off throughout and stay off.
fn __schedule_irqs_off(preempted: bool) {
    // With interrupts off: the locks it takes must not end in a preemption point here (a
    // nested `__schedule` inside this one).
    ttwu_pending();
    let cpu = this_cpu();
    let rq = rq_of(cpu.cpu_id);
    let mut g = rq.lock.lock();
    // On a core where cookies are in play, pick for the whole core with every sibling's run
    // queue locked (lock order: release ours, take the core's in CPU order).
    // (One fixed array, filled in place: `__schedule` runs on 16 KiB task stacks too.)
    let mut core_guards = coresched::SiblingGuards::new();
    let mut core_locked = false;
    let cookie_change = coresched::has_pending(g.curr.as_ref().expect("curr exists"));
    if coresched::active(cpu) || (cookie_change && coresched::enabled() && coresched::siblings(cpu.cpu_id).count() > 1) {
        drop(g);
        g = coresched::lock_core(cpu.cpu_id, &mut core_guards);
        core_locked = true;
    }
    let now = crate::time::uptime_ns();
    let prev = g.curr.clone().expect("curr exists");
    let level_before = rq.rt_level.load(Ordering::SeqCst);
    if prev.is_idle {
        // The idle loop may have been interrupted while polling: once it switches away, remote
        // CPUs must send IPIs again (Linux keeps the polling flag on the idle task for this).
        rq.polling.store(false, Ordering::SeqCst);
    }
    update_curr(&mut g, now);
    rq.need_resched.store(false, Ordering::SeqCst);
    // A wakeup handed to us after the drain at the top (its pusher saw `need_resched` set or
    // this CPU polling, and sent no IPI): reschedule again to drain it (see `queue_wakeup`).
    if !rq.wake_list.load(Ordering::SeqCst).is_null() {
        rq.need_resched.store(true, Ordering::SeqCst);
    }
    lockup::scheduled(cpu.cpu_id);
    // Re-read: a prctl may have given `prev` a pending cookie while our lock was dropped to
    // take the core's (a change applies only here, under the core's locks).
    let cookie_change = if core_locked { coresched::has_pending(&prev) } else { cookie_change };
    let cookie_changed = cookie_change && coresched::apply_pending(&prev, cpu.cpu_id);

    let mut migrate = false;
    if !prev.is_idle && prev.is_on_rq() {
        if !preempted && prev.state() != TaskState::Running {
            dequeue_task(&mut g, &prev, DEQUEUE_SLEEP);
        } else if prev.state() != TaskState::Dead && !prev.affinity().contains(g.cpu as usize) {
            // A task preempted on its way out (Dead set, its last `schedule()` not reached)
            // stays queued here, affinity or not, to finish exiting: migrated, it was
            // disposed of by `finish_task_switch` (dead, not queued) and never ran again,
            // leaking the reference in `exit`'s frame (the chaos stress, 1,000,000
            // operations: a `sched_setaffinity` IPI landing between `set_state(Dead)` and
            // `drop(me)`).
            dequeue_task(&mut g, &prev, 0);
            migrate = true;
        }
    }
    // The class's fast path (Linux's `pick_next_task_fair(rq, prev)`): it picks with `prev`
    // still current and switches only what differs (for a fair task: the group levels below
    // the common ancestor). Not on a core-wide pick, which needs every sibling's `prev` put.
    // (Moved into `next` below: a local still holding a reference across the switch would
    // keep the task alive for as long as `prev` is switched out — for ever if it exits.)
    let mut fast_next = if core_locked || prev.is_idle { None } else { class::of(&prev).pick_next_task(&mut g, &prev) };
    let fast = fast_next.is_some();
    if !fast {
        class::of(&prev).put_prev(&mut g, &prev);
    }
    if prev.is_on_rq() && !prev.is_idle {
        start_wait(&prev, now);
    }
    let (next, forced_idle) = match core_locked {
        true => coresched::pick(cpu.cpu_id, &mut g, &mut core_guards),
        false => {
            let next = fast_next.take().unwrap_or_else(|| pick_next(&mut g));
            coresched::check_alone_pick(cpu.cpu_id, &next);
            (next, false)
        }
    };
    check_rt_pick(&g, &next, forced_idle, core_locked.then_some(&core_guards[..]));
    if forced_idle {
        if g.forced_since == 0 {
            g.forced_since = now;
        }
    } else {
        coresched::account_forced_idle(cpu.cpu_id, &mut g, core_locked.then_some(&core_guards[..]), now);
    }
    // Every switch, cookies or not (the event costs a load while tracing is off): the checker
    // replays each CPU's state from these, and a switch left out while no cookie existed left
    // it a stale state, reported as an overlap once cookies came back (the chaos stress did
    // this about one run in five once its cookie leaks, which kept cookies alive, were fixed).
    if !Arc::ptr_eq(&prev, &next) || cookie_changed {
        let pid = if next.is_idle { 0 } else { next.tid };
        crate::trace::sched_core_switch(pid, next.core_cookie.load(Ordering::Relaxed), forced_idle);
    }
    if coresched::cookies_exist() || core_locked {
        coresched::kick_waiters(cpu.cpu_id);
    }
    debug_assert!(fast_next.is_none(), "the fast path's pick must move into `next`");
    core_guards.clear(); // the siblings' locks, released
    if !fast {
        class::of(&next).set_next(&mut g, &next);
    }
    hrtick::update(&mut g, &next, now);
    end_wait(&next, now);
    let woken = next.stats.woken_at.swap(0, Ordering::Relaxed);
    if woken != 0 {
        let lat = now.saturating_sub(woken);
        next.stats.last_wakeup_latency.store(lat, Ordering::Relaxed);
        next.stats.last_woken_at.store(woken, Ordering::Relaxed);
        next.stats.max_wakeup_latency.fetch_max(lat, Ordering::Relaxed);
    }
    if migrate {
        g.migrate_out = Some(prev.clone());
    }
    rq.curr_cookie.store(next.core_cookie.load(Ordering::Relaxed), Ordering::Release);
    rq.curr_prio.store(cpu_prio(&next), Ordering::Release);

    if Arc::ptr_eq(&prev, &next) {
        update_counts(rq, &g);
        drop(g);
        balance_callbacks(cpu.cpu_id, level_before);
        return;
    }
    rq.level_before_switch.store(level_before, Ordering::Relaxed);
    if prev.is_on_rq() || prev.is_idle {
        prev.stats.nr_involuntary_switches.fetch_add(1, Ordering::Relaxed);
    } else {
        prev.stats.nr_voluntary_switches.fetch_add(1, Ordering::Relaxed);
    }
    rq.nr_switches.fetch_add(1, Ordering::Relaxed);
    crate::trace::sched_switch(&prev, prev.state(), &next, now);
    next.on_cpu.store(true, Ordering::Release);
    rq.current.store(Arc::as_ptr(&next) as *mut Task, Ordering::Release);
    let prev_ctx = prev.ctx.get();
    let next_ctx = next.ctx.get();
    g.curr = Some(next);
    g.prev = Some(prev);
    g.exec_start = now;
    update_counts(rq, &g);
    let _ = g.keep_locked();
    // Interrupts are off and this CPU holds its run-queue lock; `prev` runs here; `next` is
    // queued here and runs nowhere (a queued task that is not `curr` has `on_cpu == false`).
    // SAFETY: as above; both stay alive: the run queue holds Arcs to them (`curr`, `prev`).
    unsafe { crate::arch::context::switch_to(prev_ctx, next_ctx) };
    // We are `prev` again, possibly on another CPU, resumed by some other task's schedule().
    finish_task_switch();
}

/// Completes a switch on the new task's side: releases the run-queue lock the switching
/// CPU kept, lets the previous task be run elsewhere, and disposes of a dead one.
fn finish_task_switch() {
    let cpu = this_cpu();
    let rq = rq_of(cpu.cpu_id);
    // SAFETY: the task that switched to us kept this CPU's run-queue lock (`keep_locked`);
    // nothing else references the data until we release it below.
    let g = unsafe { rq.lock.data_while_held() };
    let prev = g.prev.take();
    let migrate = g.migrate_out.take();
    // A dead task that was *preempted* on its way out (between setting Dead and its final
    // `schedule()`) is still queued and will run again to finish exiting: only one that has
    // left its run queue is gone. Decided under the lock: once it is released another CPU may
    // requeue the preempted task (`requeue_locked`, from a `sched_setattr` that looked it up
    // just before it died), and `on_rq` read then could be false for a moment, disposing of a
    // task that will still run on its stack.
    let dead = prev.as_ref().is_some_and(|p| p.state() == TaskState::Dead && !p.is_on_rq());
    if let Some(p) = &prev {
        p.on_cpu.store(false, Ordering::Release);
    }
    // SAFETY: held since before the switch (see above); no guard exists.
    unsafe { rq.lock.unlock_after_switch() };
    if let Some(p) = prev.filter(|_| dead) {
        task_dead(p);
    }
    if let Some(t) = migrate {
        // The task left a CPU it may no longer use and is on no run queue. A wakeup may have
        // queued it meanwhile (it could have been preempted while going to sleep): both paths
        // hold its `params` lock, so whoever comes second sees it queued and leaves it.
        let _p = t.params.lock();
        // A wakeup handed to a wake list (it was still switching out) is the drain's to queue.
        if !t.is_on_rq() && t.state() != TaskState::Dead && !t.wake_queued.load(Ordering::Acquire) {
            activate_on(&t, select_cpu(&t, cpu.cpu_id), 0);
        }
    }
    // A preempted RT task may run elsewhere; a CPU that dropped in priority may pull.
    balance_callbacks(cpu.cpu_id, rq.level_before_switch.load(Ordering::Relaxed));
    // Wakeups handed to us while a task was switching out here (see `queue_wakeup`).
    ttwu_pending();
}

/// The first code a new task runs (from `cadence_task_entry`).
extern "C" fn task_start(arg: u64) -> ! {
    finish_task_switch();
    crate::irqflags::enable();
    // The switch may have left a reschedule pending (see `schedule`).
    preempt_point();
    // SAFETY: `arg` is the task's own address (see `task::init_context`); the task is alive
    // while it runs (its run queue holds it).
    let task = unsafe { &*(arg as *const Task) };
    let defer = signal::DeferFatal::new();
    let code = match task.take_entry() {
        Some((run, body)) => run(body, defer),
        None => {
            drop(defer);
            0
        }
    };
    exit(code)
}

/// Ends the calling task with `code`.
pub fn exit(code: i32) -> ! {
    // A kill arriving meanwhile must not start a second `exit` from the interrupt exit,
    // abandoning this frame and its reference (a leaked `Task`). Never dropped: the task does
    // not come back.
    let _defer = signal::DeferFatal::new();
    let me = current();
    me.set_exit_code(code);
    crate::trace::sched_process_exit(&me, crate::time::uptime_ns());
    drop(me);
    // Dead is set with no reference left in this frame (through `current`, which the run
    // queue keeps alive): from here on the frame may be abandoned at any instruction.
    signal::with_current(|t| t.set_state(TaskState::Dead));
    schedule();
    unreachable!("a dead task was scheduled again");
}

/// A task finished switching out for the last time.
fn task_dead(task: Arc<Task>) {
    // The parked entity (if any) goes with the task; its class lets go of what it kept (a
    // deadline task's bandwidth and timer).
    let _ = task.parked_se.lock().take();
    autogroup::exit(&task);
    // Under `params`, with `left_group` set, so that a `group::move_task` racing with the
    // exit cannot join the task to a group after it left its last one. The cookie reference
    // is dropped under `params` too: `coresched::apply` (a racing prctl's) moves the pending
    // cookie to the effective one under it; dropping the reference in between would drop the
    // old cookie a second time and leak the new one (found by the chaos stress at 100,000
    // ops). The cookie registry's lock comes first (see `coresched::exit`).
    {
        let mut cookies = coresched::COOKIES.lock();
        let _params = task.params.lock();
        coresched::exit(&mut cookies, &task);
        task.left_group.store(true, Ordering::Release);
        // Under `params` too: a `sched_setattr` racing with the exit either changed the class
        // before (its bandwidth is what this releases) or sees `left_group` and fails.
        class::of(&task).task_dead(&task);
        group::leave(task.group.swap(group::ROOT_GROUP, Ordering::AcqRel));
    }
    crate::tty::task_exit(&task);
    drop(task.take_stack());
    task.released.store(true, Ordering::Release);
    if task.detached.load(Ordering::Acquire) {
        task::remove(task.tid);
    }
    task.exited.wake_all();
}

// ----- wakeups --------------------------------------------------------------------------------

/// Queues a runnable (not queued) task on `cpu` and preempts if it should. Caller holds
/// `task.params`.
fn activate_on(task: &Arc<Task>, cpu: u32, flags: u32) {
    activate_on_if(task, cpu, flags, |_| true);
}

/// [`activate_on`] if `admit` approves of `cpu`'s run queue (looked at under its lock, the
/// one the enqueue then holds); false, nothing done, if not.
fn activate_on_if(task: &Arc<Task>, cpu: u32, flags: u32, admit: impl FnOnce(&RqInner) -> bool) -> bool {
    // Wait until the task's context is off every CPU (it may still be switching out).
    while task.on_cpu.load(Ordering::Acquire) {
        core::hint::spin_loop();
    }
    let g = rq_of(cpu).lock.lock();
    if !admit(&g) {
        return false;
    }
    activate_locked(task, cpu, flags, g);
    true
}

/// [`activate_on`] with `cpu`'s run queue locked by the caller (`g`, released here) and
/// `task` off every CPU.
fn activate_locked(task: &Arc<Task>, cpu: u32, flags: u32, mut g: rqlock::RqGuard<'_, RqInner>) {
    let rq = rq_of(cpu);
    let now = crate::time::uptime_ns();
    let orig = task.cpu();
    if orig != cpu {
        task.stats.nr_migrations.fetch_add(1, Ordering::Relaxed);
        if flags & ENQUEUE_INITIAL == 0 {
            crate::trace::sched_migrate_task(task, orig, cpu, now);
        }
    }
    // The running task is charged up to now once, here: its class may want the CPU back
    // already (a slice ended with others waiting), and the wakeup preemption check below
    // relies on the charge (Linux's `check_preempt_wakeup_fair` calls `update_curr` first).
    let curr_done = update_curr(&mut g, now);
    enqueue_task(&mut g, task, flags, now);
    if flags & (ENQUEUE_WAKEUP | ENQUEUE_INITIAL) != 0 {
        crate::trace::sched_wakeup(task, cpu, flags & ENQUEUE_INITIAL != 0, now);
    }
    let preempt = curr_done || wakeup_preempt(&mut g, task);
    if !preempt {
        // The running task may now share its CPU: end its slice on time.
        if let Some(curr) = g.curr.clone() {
            hrtick::update(&mut g, &curr, now);
        }
    }
    update_counts(rq, &g);
    drop(g);
    if preempt {
        set_need_resched(cpu);
    }
    // A woken RT task that waits (or that waits elsewhere after the snapshot went stale)
    // moves to a CPU running something less important now; one that preempts is pushed, if
    // still waiting, by the switch it causes.
    if !preempt {
        class::balance(cpu, class::BalancePoint::Woken);
    }
}

/// Linux `try_to_wake_up`: makes a sleeping task runnable. Returns false if it already was.
pub fn try_to_wake_up(task: &Arc<Task>) -> bool {
    let _params = task.params.lock();
    if task.state() != TaskState::Sleeping {
        return false;
    }
    // Still queued (it set itself Sleeping but has not switched out yet)? Then just mark it
    // running, under its run queue's lock, which `schedule()` holds when it decides to dequeue.
    // Only a Sleeping task is woken: it may have woken itself meanwhile (a wait whose condition
    // came true) and even exited, and `Dead` must never turn back into `Running`.
    //
    // `on_rq` is read first without the lock (Linux `READ_ONCE(p->on_rq)`): it is cleared
    // only when a task really leaves the queues, and then set again only under `params` (by
    // wakers, or the migration in `finish_task_switch`), so `false` here stays `false`, and a
    // dequeued task's run queue (often another CPU's) need not be locked at all. Requeues and
    // migrations, some made without `params`, keep it set throughout (see `dequeue_task`).
    while task.is_on_rq() {
        let cpu = task.cpu();
        let rq = rq_of(cpu);
        let g = rq.lock.lock();
        if task.cpu() != cpu {
            continue;
        }
        if task.is_on_rq() {
            if !task.transition(TaskState::Sleeping, TaskState::Running) {
                return false;
            }
            crate::trace::sched_wakeup(task, cpu, false, crate::time::uptime_ns());
            drop(g);
            task.stats.nr_wakeups.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        break;
    }
    // Off every run queue: only wakers (serialized by `params`) change its state now.
    if !task.transition(TaskState::Sleeping, TaskState::Running) {
        return false;
    }
    task.watchdog.reset();
    task.stats.nr_wakeups.fetch_add(1, Ordering::Relaxed);
    task.stats.woken_at.store(crate::time::uptime_ns().max(1), Ordering::Relaxed);
    let this = percpu::cpu_id();
    if ttwu_queue_enabled() {
        // Still switching out over there: hand the wakeup to that CPU rather than spin here
        // (interrupts off, `params` held) until it is done.
        let prev_cpu = task.cpu();
        if task.on_cpu.load(Ordering::Acquire) && prev_cpu != this {
            queue_wakeup(task, prev_cpu);
            return true;
        }
        // A remote run queue is locked only if it is free right now: a busy one may be held
        // by a CPU whose vCPU the host descheduled, and the wakeup goes to its wake list.
        // Linux queues only across caches; queueing every remote wakeup made the target's
        // drain (10 to 16 wakeups, ~300 µs under TCG) a delay in front of its RT wakeups.
        let target = select_cpu(task, this);
        if target != this {
            match rq_of(target).lock.try_lock() {
                Some(g) if reserve::fits(&g, task) => activate_locked(task, target, ENQUEUE_WAKEUP, g),
                busy_or_full => {
                    drop(busy_or_full);
                    queue_wakeup(task, target);
                }
            }
            return true;
        }
    }
    let target = select_cpu(task, this);
    activate_wakeup(task, target);
    true
}

/// Queues the woken `task` on `cpu` if it fits that CPU's queues without allocating
/// ([`reserve::fits`], checked under the lock the enqueue then holds); otherwise hands it to
/// that CPU's wake list, whose drain waits for the refill ([`ttwu_pending`]). An enqueue into a
/// full queue would grow it here, with interrupts off (`params` is held): a burst of wakeups
/// onto one CPU (hackbench's 320 tasks at -smp 4 SMT) outran the headroom before any
/// preemption point could refill it, in 2 of 40 runs of `tests/bench.rs`'s workload.
fn activate_wakeup(task: &Arc<Task>, cpu: u32) {
    if !activate_on_if(task, cpu, ENQUEUE_WAKEUP, |g| reserve::fits(g, task)) {
        queue_wakeup(task, cpu);
    }
}

/// Remote wakeups whose target run queue is busy go through the target CPU's wake list
/// (`TTWU_QUEUE` in `kernel.sched_features`; default on, by measurement: docs/design/wakeups.md,
/// *Remote wakeups*).
static TTWU_QUEUE: AtomicBool = AtomicBool::new(true);

/// A CPU whose RT level dropped asks overloaded CPUs to push instead of pulling from them
/// (`RT_PUSH_IPI` in `kernel.sched_features`; default by measurement: docs/design/wakeups.md,
/// *RT_PUSH_IPI*).
static RT_PUSH_IPI: AtomicBool = AtomicBool::new(false);

pub fn rt_push_ipi_enabled() -> bool {
    RT_PUSH_IPI.load(Ordering::Relaxed)
}

pub fn set_rt_push_ipi(on: bool) {
    RT_PUSH_IPI.store(on, Ordering::Relaxed);
}

pub fn ttwu_queue_enabled() -> bool {
    TTWU_QUEUE.load(Ordering::Relaxed)
}

pub fn set_ttwu_queue(on: bool) {
    TTWU_QUEUE.store(on, Ordering::Relaxed);
}

/// Hands the wakeup of `task` (now `Running`, on no run queue) to `cpu` (Linux
/// `ttwu_queue_wakelist`): pushes it on that CPU's wake list and sends a reschedule IPI, whose
/// handler queues it there ([`ttwu_pending`]) and decides on preemption locally. The waker
/// never locks the remote run queue, so it never spins, preemption off, behind a holder whose
/// vCPU the host descheduled (measured under TCG at -smp 4: up to 2.7 ms in a pipe wakeup,
/// holding up an RT task woken on the waker's CPU meanwhile).
///
/// A task is on at most one wake list, once: only the waker that moved it from `Sleeping` to
/// `Running` queues it, no other path queues it while `wake_queued` is set (the migration in
/// `finish_task_switch` checks it), so it cannot run, sleep and be woken onto a second list
/// before the first one is drained. (The coresched stress found this: a task that changed its
/// own affinity and was preempted while going to sleep was queued by that migration while on a
/// wake list, ran, slept, and was pushed on another list, cross-linking the two.)
fn queue_wakeup(task: &Arc<Task>, cpu: u32) {
    debug_assert!(!task.wake_queued.load(Ordering::Relaxed), "a task on two wake lists");
    task.wake_queued.store(true, Ordering::Release);
    push_wakeup(task, cpu);
}

/// Pushes `task` (its wakeup taken, `wake_queued` set, off every wake list) on `cpu`'s wake
/// list with a reference of its own, counts it in `wake_pending` there and tells the CPU.
fn push_wakeup(task: &Arc<Task>, cpu: u32) {
    let rq = rq_of(cpu);
    let raw = Arc::into_raw(task.clone()) as *mut Task;
    let pending = rq.wake_pending.fetch_add(1, Ordering::SeqCst) + 1;
    reserve::note_wakeup_queued(cpu, pending);
    let mut head = rq.wake_list.load(Ordering::SeqCst);
    loop {
        task.wake_next.store(head, Ordering::Relaxed);
        match rq.wake_list.compare_exchange_weak(head, raw, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(h) => head = h,
        }
    }
    // Only the wakeup that found the list empty tells the CPU (Linux's `llist_add` in
    // `__smp_call_single_queue`): the later ones join a list whose drain is already asked for
    // and takes them all (a drain detaches the whole list, so a push after it finds it empty).
    // Under `bench hackbench` this was an IPI per remote wakeup, ~6000 a second per CPU.
    if !head.is_null() {
        return;
    }
    // A polling idle CPU sees `need_resched` (its `__schedule` drains the list first); any
    // other gets the IPI. `__schedule` re-checks the list after clearing `need_resched`, so
    // an entry pushed while it runs is not left behind.
    if rq.polling.load(Ordering::SeqCst) {
        set_need_resched(cpu);
    } else {
        RESCHED_IPIS_SENT[2].fetch_add(1, Ordering::Relaxed);
        send_reschedule_ipi(cpu);
    }
}

/// Queues the tasks whose wakeups other CPUs handed to this one (Linux `sched_ttwu_pending`),
/// oldest first. Called with no lock held and interrupts off: from the reschedule IPI, at the
/// start of `__schedule` and after a switch.
///
/// Only wakeups that fit the target's queues without allocating ([`reserve::fits`]): at the
/// first that does not fit here, it and the rest go back on the wake list (still counted in
/// `wake_pending`, still `wake_queued`) and the CPU is marked for a refill, after which
/// [`reserve`] makes it drain again (a reschedule of its own, or an IPI); one whose target is
/// another CPU with full queues moves to that CPU's wake list. A burst of wakeups larger than
/// the headroom (hackbench's 320 tasks) therefore waits for one refill instead of allocating
/// with interrupts off. Every wakeup path ends here or in a checked enqueue
/// ([`activate_wakeup`]), so no wakeup allocates.
pub fn ttwu_pending() {
    if !percpu::gs_ready() {
        return;
    }
    let cpu = this_cpu();
    if rq_of(cpu.cpu_id).wake_list.load(Ordering::Relaxed).is_null() {
        return;
    }
    let mut next = rq_of(cpu.cpu_id).wake_list.swap(core::ptr::null_mut(), Ordering::SeqCst);
    // The list is newest first: reverse it so that wakeups are queued in the order they came.
    let mut oldest_first: *mut Task = core::ptr::null_mut();
    while !next.is_null() {
        // SAFETY: every entry was pushed by `queue_wakeup` with one leaked `Arc` reference,
        // which taking the list (the swap above) made ours; `wake_next` is only written by
        // the pusher before the push and by us now.
        let after = unsafe { (*next).wake_next.load(Ordering::Relaxed) };
        // SAFETY: as above.
        unsafe { (*next).wake_next.store(oldest_first, Ordering::Relaxed) };
        oldest_first = next;
        next = after;
    }
    let mut next = oldest_first;
    while !next.is_null() {
        // SAFETY: as above: one leaked reference per entry, now owned here.
        let task = unsafe { Arc::from_raw(next as *const Task) };
        next = task.wake_next.swap(core::ptr::null_mut(), Ordering::Relaxed);
        let _p = task.params.lock();
        // Another path may have queued it meanwhile (a migration after an affinity change,
        // which also holds `params`); a signal may have changed its state.
        let mut queued = true;
        if !task.is_on_rq() && task.state() == TaskState::Running {
            let here = cpu.cpu_id;
            let target = if task.affinity().contains(here as usize) && online_mask().contains(here as usize) {
                here
            } else {
                select_cpu(&task, here)
            };
            // Only if it fits the queues without allocating (checked under the lock the enqueue
            // then uses).
            queued = activate_on_if(&task, target, ENQUEUE_WAKEUP, |g| reserve::fits(g, &task));
            if !queued && target != here {
                // Another CPU's queues are full: the wakeup moves to its wake list (still
                // `wake_queued`), whose drain waits for that CPU's refill.
                rq_of(here).wake_pending.fetch_sub(1, Ordering::SeqCst);
                push_wakeup(&task, target);
                drop(_p);
                continue;
            }
        }
        if !queued {
            // It and the rest wait for the refill: back on the list, still `wake_queued` (so no
            // other path queues it) and still counted in `wake_pending`.
            task.wake_next.store(next, Ordering::Relaxed);
            drop(_p);
            requeue_wake_list(rq_of(cpu.cpu_id), Arc::into_raw(task) as *mut Task);
            reserve::note_wakeup_deferred(cpu.cpu_id);
            return;
        }
        // Unlinked: from here other paths may queue it again (under `params`, as here).
        task.wake_queued.store(false, Ordering::Release);
        drop(_p);
        rq_of(cpu.cpu_id).wake_pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Puts a chain of wake-list entries taken by [`ttwu_pending`] (linked through `wake_next`,
/// each holding its leaked reference) back on `rq`'s wake list, in front of what was pushed
/// since.
fn requeue_wake_list(rq: &Rq, first: *mut Task) {
    let mut last = first;
    loop {
        // SAFETY: `first`..`last` are entries this drain took off the list (see
        // `ttwu_pending`): alive through their leaked references, linked only by us.
        let after = unsafe { (*last).wake_next.load(Ordering::Relaxed) };
        if after.is_null() {
            break;
        }
        last = after;
    }
    let mut head = rq.wake_list.load(Ordering::SeqCst);
    loop {
        // SAFETY: as above; `last` ends the chain, so its link is ours to set.
        unsafe { (*last).wake_next.store(head, Ordering::Relaxed) };
        match rq.wake_list.compare_exchange_weak(head, first, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// Makes `task`'s CPU reschedule if it is running there, so it reaches a preemption point
/// (where pending signals are acted upon).
pub fn kick_task(task: &Arc<Task>) {
    if task.on_cpu.load(Ordering::Acquire) {
        set_need_resched(task.cpu());
    }
}

/// Wakes a task (no-op if it is runnable).
pub fn wake_up(task: &Arc<Task>) {
    try_to_wake_up(task);
}

/// Picks the CPU a waking or new task should run on (affinity first).
fn select_cpu(task: &Task, waker_cpu: u32) -> u32 {
    balance::select_cpu(task, waker_cpu)
}

// ----- task creation -------------------------------------------------------------------------

/// Why a task could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpawnError {
    NoMemory,
    /// The affinity mask names no online CPU (or, for a deadline task, not all of them).
    BadAffinity,
    /// A deadline task's bandwidth is not admitted (`EBUSY`).
    Busy,
    /// The parent is a deadline task and the child would inherit its policy (Linux's
    /// `sched_fork`: `EAGAIN` unless reset-on-fork).
    Again,
}

/// A new task's [`task::Entry`] for body `f` (a helper: `spawn`'s `impl FnOnce` type has no
/// name to instantiate `run_entry` with).
fn entry_of<F: FnOnce() -> i32 + Send + 'static>(f: F) -> task::Entry {
    (task::run_entry::<F>, Box::new(f))
}

/// Creates and starts a kernel task running `f`; its return value is the exit code.
pub fn spawn(opts: SpawnOptions, f: impl FnOnce() -> i32 + Send + 'static) -> Result<Arc<Task>, SpawnError> {
    let _defer = signal::DeferFatal::new();
    let parent = current();
    let inherited = *parent.params.lock();
    let mut attr = opts.attr.unwrap_or(inherited.attr);
    if opts.attr.is_none() && inherited.attr.reset_on_fork {
        // Linux: reset-on-fork children get SCHED_NORMAL (and nice 0 if the parent's was < 0).
        attr = ValidAttr { nice: attr.nice.max(0), ..ValidAttr::default() };
    }
    let online = online_mask();
    let affinity = opts.affinity.unwrap_or(inherited.affinity) & online;
    if affinity.is_empty() {
        return Err(SpawnError::BadAffinity);
    }
    // A deadline child: only explicitly, within the root domain's bandwidth, on every CPU.
    if attr.dl.is_some() {
        if opts.attr.is_none() {
            return Err(SpawnError::Again);
        }
        if !class::deadline::spans_root_domain(affinity) {
            return Err(SpawnError::BadAffinity);
        }
        class::deadline::admit(None, attr.dl).map_err(|_| SpawnError::Busy)?;
    }
    // Admitted bandwidth goes back if the spawn fails below.
    let unadmit = |e: SpawnError| {
        if attr.dl.is_some() {
            let _ = class::deadline::admit(attr.dl, None);
        }
        e
    };
    crate::mm::stack::reclaim_if_needed();
    let stack = crate::mm::stack::KernelStack::allocate(opts.stack_size).map_err(|_| unadmit(SpawnError::NoMemory))?;
    // Before anything is registered: a failure here leaves nothing behind (the stack goes back
    // to the cache as it drops).
    if crate::mm::fail_alloc::should_fail("task") {
        return Err(unadmit(SpawnError::NoMemory));
    }
    let params = SchedParams { attr, affinity };
    let task = task::new_task(&opts, Some(&parent), params, Some(stack), false, parent.cpu());
    crate::trace::task_affinity(task.tid, affinity.0);
    task::set_entry(&task, entry_of(f));
    // Groups, like cgroups and autogroups, are inherited.
    let manual = parent.group.load(Ordering::Acquire);
    if manual != group::ROOT_GROUP && group::lookup(manual).is_some() {
        group::join(manual);
        task.group.store(manual, Ordering::Release);
    }
    autogroup::inherit(&task, &parent);
    coresched::fork(&task, &parent);
    task.tty.store(parent.tty.load(Ordering::Acquire), Ordering::Release);
    task::init_context(&task, task_start);
    {
        let p = task.params.lock();
        // Under `params`: a `sched_setattr` by tid may already have changed the attributes.
        class::of(&task).task_new(&task, &p.attr);
    }
    // Queued only where it fits without allocating: other CPUs' wakeups may have used up the
    // target's headroom, and this enqueue runs with interrupts off (`params`). A full queue is
    // refilled here, where interrupts are on and no lock is held, and the placement is made
    // again; should wakeups fill it again each time, the enqueue after `SPAWN_REFILLS` refills
    // grows the queue under the lock (counted by `trace atomic-alloc`).
    for tries in 1.. {
        let _p = task.params.lock();
        let cpu = select_cpu(&task, percpu::cpu_id());
        if activate_on_if(&task, cpu, ENQUEUE_INITIAL, |g| tries > SPAWN_REFILLS || reserve::fits(g, &task)) {
            break;
        }
        drop(_p);
        reserve::refill_waiting(cpu);
    }
    Ok(task)
}

/// Refills `spawn` makes for a target queue with no room before it enqueues anyway.
const SPAWN_REFILLS: u32 = 8;

/// A task started by [`spawn_result`]: its tid, and the value its body returns.
pub struct JoinHandle<T> {
    pub tid: Tid,
    slot: Arc<spin::Mutex<Option<T>>>,
}

impl<T> JoinHandle<T> {
    /// Waits for the task and takes its value; `Err` with its exit code if it did not return
    /// one (killed), or the errno of `wait`.
    pub fn join(self) -> Result<T, Result<i32, cadence_sched::Errno>> {
        let code = wait(self.tid);
        self.slot.lock().take().ok_or(code)
    }
}

/// [`spawn`] for a body that returns a value rather than an exit code (exit code 0): the
/// caller gets it from [`JoinHandle::join`], with no shared state of its own.
pub fn spawn_result<T: Send + 'static>(opts: SpawnOptions, f: impl FnOnce() -> T + Send + 'static) -> Result<JoinHandle<T>, SpawnError> {
    let slot = Arc::new(spin::Mutex::new(None));
    let s2 = slot.clone();
    let t = spawn(opts, move || {
        let v = f();
        *s2.lock() = Some(v);
        0
    })?;
    Ok(JoinHandle { tid: t.tid, slot })
}

/// Mask of the CPUs that run the scheduler.
pub fn online_mask() -> CpuMask {
    CpuMask(ONLINE_MASK.load(Ordering::Acquire))
}

static ONLINE_MASK: AtomicU64 = AtomicU64::new(0);

/// Turns the calling context into this CPU's idle task and starts scheduling on it.
pub fn init_this_cpu() {
    let cpu = this_cpu();
    let mut opts = SpawnOptions::new("swapper");
    opts.name = alloc::format!("swapper/{}", cpu.cpu_id);
    // The idle task is never queued, so its mask only matters as what its children inherit.
    let params = SchedParams { attr: ValidAttr::default(), affinity: CpuMask(u64::MAX) };
    let idle = task::new_task(&opts, None, params, None, true, cpu.cpu_id);
    {
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        g.fair.set_tunables(fair_tunables());
        g.curr = Some(idle.clone());
        g.idle = Some(idle.clone());
        g.exec_start = crate::time::uptime_ns();
        rq_of(cpu.cpu_id).current.store(Arc::as_ptr(&idle) as *mut Task, Ordering::Release);
    }
    reserve::refill(cpu.cpu_id); // the queues' first storage, before anything is queued
    ONLINE_MASK.fetch_or(1 << cpu.cpu_id, Ordering::AcqRel);
    rq_of(cpu.cpu_id).ready.store(true, Ordering::Release);
}

/// Sets the base slice from the number of CPUs (Linux: 0.75 ms × (1 + ilog2(ncpus))).
pub fn init_tunables(ncpus: u32) {
    set_base_slice_ns(cadence_sched::eevdf::scaled_base_slice(ncpus));
}

/// The idle loop of every CPU (never returns).
pub fn idle_loop() -> ! {
    let cpu = this_cpu();
    loop {
        crate::irqflags::disable();
        if rq_of(cpu.cpu_id).need_resched.load(Ordering::Acquire) {
            schedule();
            continue;
        }
        crate::irqflags::enable();
        if balance::idle_balance(cpu.cpu_id) {
            continue;
        }
        let ceiling = idle_poll_ns();
        let limit = rq_of(cpu.cpu_id).idle_poll_limit.load(Ordering::Relaxed).min(ceiling);
        let idle_start = crate::time::uptime_ns();
        if limit > 0 {
            rq_of(cpu.cpu_id).polling.store(true, Ordering::SeqCst);
            let until = idle_start + limit;
            while !rq_of(cpu.cpu_id).need_resched.load(Ordering::SeqCst) && crate::time::uptime_ns() < until {
                core::hint::spin_loop();
            }
            rq_of(cpu.cpu_id).polling.store(false, Ordering::SeqCst);
        }
        crate::irqflags::disable();
        if !rq_of(cpu.cpu_id).need_resched.load(Ordering::SeqCst) {
            // `sti; hlt`: a wakeup IPI cannot slip in between the check and the halt.
            crate::arch::wait_for_interrupt();
        }
        if ceiling > 0 {
            let block_ns = crate::time::uptime_ns().saturating_sub(idle_start);
            let next = cadence_sched::haltpoll::adjust(limit, block_ns, ceiling);
            rq_of(cpu.cpu_id).idle_poll_limit.store(next, Ordering::Relaxed);
        }
    }
}

// ----- tick and preemption --------------------------------------------------------------------

/// The scheduler tick (from the periodic timer, interrupts off).
pub fn scheduler_tick() {
    let cpu = this_cpu();
    if !rq_of(cpu.cpu_id).ready.load(Ordering::Acquire) {
        return;
    }
    let ticks = rq_of(cpu.cpu_id).ticks.fetch_add(1, Ordering::Relaxed);
    let resched = {
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        let mut resched = update_curr(&mut g, now);
        resched |= rt_limits::check_throttle(&mut g, now);
        if let Some(curr) = g.curr.clone() {
            resched |= class::of(&curr).task_tick(&mut g, &curr);
        }
        resched
    };
    if resched {
        rq_of(cpu.cpu_id).need_resched.store(true, Ordering::Release);
    }
    lockup::tick(cpu);
    if ticks % balance::BALANCE_INTERVAL_TICKS == (cpu.cpu_id as u64 % balance::BALANCE_INTERVAL_TICKS) {
        rq_of(cpu.cpu_id).balance_due.store(true, Ordering::Relaxed);
    }
    // Not while a reschedule is pending: whatever woke here (an RT task, typically, from the
    // timer that fired with this tick) runs first; a later tick balances.
    if rq_of(cpu.cpu_id).balance_due.load(Ordering::Relaxed) && !rq_of(cpu.cpu_id).need_resched.load(Ordering::Acquire) {
        rq_of(cpu.cpu_id).balance_due.store(false, Ordering::Relaxed);
        balance::periodic_balance(cpu.cpu_id);
    }
}

/// At the end of an interrupt: preempt the interrupted task if a reschedule is due.
pub fn irq_exit() {
    if preemptible_with_resched() {
        // Loop (Linux `preempt_schedule_irq`): the switch may request another reschedule.
        // The CPU is re-read each time: a resumed task may be on another CPU.
        while preemptible_with_resched() {
            __schedule(true);
        }
        // Back in the interrupted task: act on its signals before returning to it.
        signal::handle_pending_at_irq_exit();
    }
    let rq = this_rq();
    // Only where preemption is allowed: the action may end the task, and a task ended inside
    // a preemption-disabled section would leave this CPU's count raised for good.
    if rq.ready.load(Ordering::Acquire) && this_cpu().preempt_count.load(Ordering::Relaxed) == 0 {
        rt_limits::act_on_current();
    }
}

/// A preemption point in task context (called when interrupts are re-enabled and when
/// preemption is re-enabled).
///
/// Like Linux's `preemptible()`, it schedules only with interrupts enabled: a `PreemptGuard`
/// dropped with interrupts off (in `finish_task_switch`, for instance, which wakes a dead
/// task's waiters) must not switch from there, or every task resumed in that nested switch
/// could nest another one on its stack. The pending reschedule happens at the next interrupt
/// exit or preemption point instead.
pub fn preempt_point() {
    if !percpu::gs_ready() || !crate::irqflags::are_enabled() {
        return;
    }
    reserve::refill_pending();
    while preemptible_with_resched() {
        __schedule(true);
    }
}

/// A reschedule is pending on this CPU and may happen now (preemption enabled, scheduler
/// running). The count first: it is one GS load away, and usually decides.
fn preemptible_with_resched() -> bool {
    if this_cpu().preempt_count.load(Ordering::Relaxed) != 0 {
        return false;
    }
    let rq = this_rq();
    rq.ready.load(Ordering::Acquire) && rq.need_resched.load(Ordering::Acquire)
}

/// Disables preemption on this CPU until the guard drops.
pub struct PreemptGuard(());

pub fn preempt_disable() -> PreemptGuard {
    preempt_count_inc();
    PreemptGuard(())
}

/// Raises this CPU's preemption count, with no guard (the caller lowers it). Interrupts are
/// off from finding this CPU to counting on it: a preemption in between could move the task,
/// which would then count on the CPU it left (and uncount on the new one). Once counted the
/// task stays here, so lowering needs no such care.
pub(super) fn preempt_count_inc() {
    let irqs = crate::irqflags::save();
    this_cpu().preempt_count.fetch_add(1, Ordering::AcqRel);
    crate::irqflags::restore(irqs);
}

impl Drop for PreemptGuard {
    fn drop(&mut self) {
        if this_cpu().preempt_count.fetch_sub(1, Ordering::AcqRel) == 1 {
            preempt_point();
        }
    }
}

/// `sched_yield()`: gives up the CPU to tasks of equal priority.
pub fn yield_now() {
    {
        let cpu = this_cpu();
        let mut g = rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        update_curr(&mut g, now);
        if let Some(curr) = g.curr.clone() {
            class::of(&curr).yield_task(&mut g, &curr);
        }
    }
    schedule();
}

/// Sleeps until `uptime_ns() >= deadline_ns`.
pub fn sleep_until(deadline_ns: u64) {
    // Holds `me` and a timer's reference: a fatal signal is acted on at the loop's check.
    let _defer = signal::DeferFatal::new();
    let me = current();
    while crate::time::uptime_ns() < deadline_ns {
        me.set_state(TaskState::Sleeping);
        if signal::fatal_pending(&me) {
            me.set_state(TaskState::Running);
            drop(me);
            signal::handle_pending();
            unreachable!("a fatal signal ends the task");
        }
        let raw = Arc::into_raw(me.clone()) as u64;
        let cpu = percpu::cpu_id();
        me.stats.sleep_deadline.store(deadline_ns, Ordering::Relaxed);
        let Some(timer) = crate::timer::arm(cpu, deadline_ns, wake_from_timer, raw) else {
            // SAFETY: not handed to a timer: take the reference back.
            drop(unsafe { Arc::from_raw(raw as *const Task) });
            me.set_state(TaskState::Running);
            return;
        };
        schedule();
        // Woken early (a signal, a spurious wakeup)? Cancel the timer so it neither wakes us
        // later for nothing nor keeps our task alive in its queue.
        if crate::timer::cancel(cpu, timer) {
            // SAFETY: the cancelled timer will never run, so its reference is ours again.
            drop(unsafe { Arc::from_raw(raw as *const Task) });
        }
    }
    me.set_state(TaskState::Running);
    me.stats.sleep_deadline.store(0, Ordering::Relaxed);
}

/// Sleeps for `ns` nanoseconds.
pub fn sleep_ns(ns: u64) {
    sleep_until(crate::time::uptime_ns().saturating_add(ns));
}

fn wake_from_timer(_cpu: u32, data: u64) {
    // SAFETY: `data` is an `Arc<Task>` leaked by `sleep_until` for this timer alone.
    let task = unsafe { Arc::from_raw(data as *const Task) };
    wake_up(&task);
}
