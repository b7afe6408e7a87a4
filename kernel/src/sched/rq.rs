//! The per-CPU run queues ([`Rq`], its locked part [`RqInner`], the fair queues' key
//! [`SeKey`]), where they live ([`rq_of`], [`this_rq`]) and the running task read from them
//! ([`current`], [`current_tid`]).

use super::rqlock::RqLock;
use super::task::{ClassId, Task, Tid};
use super::{class, coresched, group, reserve};
use crate::percpu::{self, PerCpu};
use alloc::sync::Arc;
use cadence_sched::arena::ArenaMap;
use cadence_sched::{FairRq, FairTunables, RtPrioArray};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use framework::task::{Current, WakeList};

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
    pub tasks: ArenaMap<Tid, Arc<Task>>,
    /// Non-root task groups' queues on this CPU (see `group`).
    pub group_rqs: group::GroupRqs,
    /// Fair tasks queued on this CPU at any level of the group tree.
    pub nr_fair_tasks: usize,
    /// Execution time of the running fair task not yet charged to its group entities above
    /// its own level (the fair class charges those lazily: `class::fair` module doc).
    pub fair_pending_ns: u64,
    /// When `curr` last had its runtime accounted.
    pub exec_start: u64,
    /// This CPU's PELT signal of fair work (Linux's root `cfs_rq->avg`; see `sched::pelt`):
    /// `util_avg` is the decayed share of time the fair tasks attached here ran, blocked ones
    /// included; a task's part moves with it when it migrates.
    pub cpu_avg: cadence_sched::pelt::SchedAvg,
    /// The time RT tasks ran here, as a PELT signal (Linux's `rq->avg_rt`).
    pub avg_rt: cadence_sched::pelt::SchedAvg,
    /// The time DEADLINE tasks ran here (Linux's `rq->avg_dl`).
    pub avg_dl: cadence_sched::pelt::SchedAvg,
    /// The work-conservation monitor's state and counters (`sched::wc`).
    pub wc: super::wc::WcState,
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
    /// How many of the core's CPUs were to run a task after the last core-wide pick that
    /// left this CPU idle (Linux's `rq->idle->core_occupation`).
    pub idle_occupation: u8,
    /// The root fair queue's `V` when its core went forced idle (Linux's `min_vruntime_fi`):
    /// the base of this queue's keys in core-wide picks while a sibling is forced idle
    /// (`coresched::pick`); `None` otherwise.
    pub core_fi_v: Option<u64>,
    /// A group queue on the running task's path ran out of bandwidth: the switch throttles it
    /// (`bandwidth::throttle_due`).
    pub bw_check: bool,
    /// Group queues throttled here (`bandwidth`); the tick unthrottles them.
    pub bw_nr_throttled: u32,
    /// A runnable task switched out because it may no longer run here (affinity change, the
    /// CPU offline) or is pushed (active balance): moved after the switch, to the CPU given or
    /// else to one `select_cpu` picks.
    pub(super) migrate_out: Option<(Arc<Task>, Option<u32>)>,
}

impl RqInner {
    /// Tasks queued in the class queues (Linux `rq->nr_running`): RT, fair at every group
    /// level, and deadline tasks not throttled (a throttled deadline task is out of its queue
    /// until its replenishment, as in Linux, though still in `tasks`).
    pub fn nr_queued(&self) -> usize {
        self.rt.nr_running() + self.nr_fair_tasks + self.dl.nr_running()
    }
}

/// "No CPU" in a CPU-valued atomic ([`Rq::active_balance_to`]).
pub const NO_CPU: u32 = u32::MAX;

/// One CPU's run queue.
pub struct Rq {
    pub lock: RqLock<RqInner, Task>,
    /// Runnable RT + fair tasks (running one included); lock-free snapshot for balancing.
    pub nr_running: AtomicU32,
    /// Sum of the fair weights queued here.
    pub fair_load: AtomicU64,
    /// Priority of what runs: 0 idle, 1 fair, 2 + rt_priority for RT (see [`cpu_prio`]).
    pub curr_prio: AtomicU8,
    /// Core-scheduling cookie of what runs (published with `curr_prio`; read by placement,
    /// `balance::running_now`).
    pub curr_cookie: AtomicU64,
    /// The cookie of the tasks the last core-wide pick on this CPU's core chose (Linux's
    /// `rq->core->core_cookie`; 0 if it chose none), published by `coresched::pick` on every
    /// sibling. Fair placement reads it for a forced-idle CPU, whose `curr_cookie` is the idle
    /// task's (`balance::running_for_fair`).
    pub core_cookie: AtomicU64,
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
    pub(super) level_before_switch: AtomicU8,
    /// This CPU is to call `schedule()` at its next preemption point. Set only through
    /// `flag_need_resched` (or `set_need_resched`, which adds the IPI), which also asks the
    /// CPU's preemption points to act: without that, lock releases skip the preemption point
    /// and the switch waits for an interrupt. Cleared only by `__schedule`.
    pub need_resched: AtomicBool,
    /// Set once the CPU runs its idle task under the scheduler.
    pub ready: AtomicBool,
    pub nr_switches: AtomicU64,
    pub ticks: AtomicU64,
    /// Balancing passes to skip (back-off after fruitless passes) and the current back-off.
    pub balance_skip: AtomicU32,
    pub balance_backoff: AtomicU32,
    /// A periodic balance is due (set by the tick at each balance interval, cleared when one
    /// runs: it waits for a tick with no reschedule pending).
    pub(super) balance_due: AtomicBool,
    /// Wakeups other CPUs handed to this one (Linux `ttwu_queue_wakelist`): a lock-free list
    /// through `Task::wake_link`, each entry holding one `Arc` reference (see `queue_wakeup`).
    pub(super) wake_list: WakeList<Task>,
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
    /// A work-conservation pull was asked of this idle CPU (`load_balance::note_waiting`):
    /// its idle loop runs a new-idle balance, whatever the tick.
    pub wc_kick: AtomicBool,
    /// The CPU whose queue the last [`Rq::wc_kick`] was for.
    pub wc_src: AtomicU32,
    /// This idle CPU's last pull of a waiting task found a queue's lock held past its wait
    /// (its holder's vCPU descheduled by the host, typically): its tick keeps running so the
    /// next tick tries again, instead of halting tickless until a busy CPU's kick
    /// (`balance::idle_balance`, `nohz::idle_stop_tick`).
    pub lb_retry: AtomicBool,
    /// Active balance (Linux's stopper, `active_load_balance_cpu_stop`): the CPU the task
    /// running here is to be pushed to at this CPU's next switch ([`NO_CPU`]: none), set by
    /// `load_balance`'s `active_balance` when the balancer found only running tasks to move.
    pub active_balance_to: AtomicU32,
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
    /// Time this CPU ran its idle task (ns), charged by `update_curr`.
    pub idle_ns: AtomicU64,
    /// This CPU's fair utilization (`RqInner::cpu_avg.util_avg`, out of 1024) and the time
    /// it was last brought up to (`last_update_time`, ns), for lock-free readers, which decay
    /// it over the time since (`balance::cpu_util`).
    pub util_avg: AtomicU64,
    pub util_stamp: AtomicU64,
    /// The same signal's `runnable_avg` (published with `util_avg`).
    pub runnable_avg: AtomicU64,
    /// Fair tasks queued here at any group level, running one included (Linux's
    /// `cfs.h_nr_running`; published by `update_counts`).
    pub h_nr_running: AtomicU32,
    /// Capacity left to fair tasks (Linux's `capacity_of`): 1024 less the RT and DEADLINE
    /// signals' utilization, at least 1 (published by `pelt::update_cpu`).
    pub capacity: AtomicU64,
    /// `RqInner::cpu_avg.last_update_time` at every update: a task leaving without the lock
    /// brings its signal to it before handing it to `pelt_removed` (`sched::pelt`).
    pub pelt_stamp: AtomicU64,
    /// What left this CPU's fair signal without its lock, subtracted at its next update
    /// (Linux's `cfs_rq->removed`; a leaf lock).
    pub pelt_removed: crate::sync::IrqLock<cadence_sched::pelt::Removed>,
    /// Removals pending in `pelt_removed` (Linux's `removed.nr`): the update's lock-free check.
    pub pelt_removed_nr: AtomicU32,
    /// When this CPU came online (ns of uptime): `/proc/stat` counts its time from there.
    pub online_at_ns: AtomicU64,
    /// Ticks that found a task in user mode here, as ns (Linux's `CPUTIME_USER`, sampled by
    /// the tick as Linux's tick-based accounting samples it): `/proc/stat`'s user column; the
    /// rest of the non-idle time is its system column.
    pub user_ns: AtomicU64,
    /// Time tasks waited on this queue before running here (ns; `/proc/schedstat`'s
    /// `run_delay`, Linux's `rq->rq_sched_info.run_delay`), and how many times a task began
    /// running here (`pcount`).
    pub run_delay_ns: AtomicU64,
    pub pcount: AtomicU64,
    /// The idle loop's current poll limit (ns), adapted by `cadence_sched::haltpoll`.
    pub idle_poll_limit: AtomicU64,
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
                tasks: ArenaMap::new(),
                group_rqs: group::GroupRqs::new(),
                spare_groups: arrayvec::ArrayVec::new_const(),
                core_lists: coresched::new_core_lists(),
                nr_fair_tasks: 0,
                bw_check: false,
                bw_nr_throttled: 0,
                fair_pending_ns: 0,
                exec_start: 0,
                cpu_avg: cadence_sched::pelt::SchedAvg::default(),
                avg_rt: cadence_sched::pelt::SchedAvg::default(),
                wc: super::wc::WcState::default(),
                avg_dl: cadence_sched::pelt::SchedAvg::default(),
                balance_cursor: 0,
                hrtick_timer: None,
                hrtick_seq: 0,
                rt_bw: cadence_sched::rt_bandwidth::RtBandwidth::new(),
                forced_since: 0,
                idle_occupation: 0,
                core_fi_v: None,
                migrate_out: None,
            }),
            nr_running: AtomicU32::new(0),
            fair_load: AtomicU64::new(0),
            curr_prio: AtomicU8::new(0),
            curr_cookie: AtomicU64::new(0),
            core_cookie: AtomicU64::new(0),
            rt_waiting: AtomicU32::new(0),
            rt_pushable: AtomicU8::new(0),
            rt_level: AtomicU8::new(0),
            level_before_switch: AtomicU8::new(0),
            need_resched: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            nr_switches: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            balance_skip: AtomicU32::new(0),
            balance_backoff: AtomicU32::new(0),
            balance_due: AtomicBool::new(false),
            wake_list: WakeList::new(),
            wake_pending: AtomicU32::new(0),
            spare_hint: AtomicU32::new(0),
            push_ipi_pending: AtomicBool::new(false),
            last_idle_balance: AtomicU64::new(u64::MAX),
            wc_kick: AtomicBool::new(false),
            lb_retry: AtomicBool::new(false),
            active_balance_to: AtomicU32::new(NO_CPU),
            wc_src: AtomicU32::new(0),
            polling: AtomicBool::new(false),
            rt_throttled: AtomicBool::new(false),
            nr_cookied: AtomicU32::new(0),
            core_wait: AtomicBool::new(false),
            forced_idle_ns: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
            util_avg: AtomicU64::new(0),
            pelt_stamp: AtomicU64::new(0),
            runnable_avg: AtomicU64::new(0),
            h_nr_running: AtomicU32::new(0),
            capacity: AtomicU64::new(cadence_sched::pelt::SCHED_CAPACITY_SCALE),
            pelt_removed: crate::sync::IrqLock::new(cadence_sched::pelt::Removed { load_avg: 0, util_avg: 0, runnable_avg: 0 }),
            pelt_removed_nr: AtomicU32::new(0),
            util_stamp: AtomicU64::new(0),
            online_at_ns: AtomicU64::new(0),
            user_ns: AtomicU64::new(0),
            run_delay_ns: AtomicU64::new(0),
            pcount: AtomicU64::new(0),
            idle_poll_limit: AtomicU64::new(0),
        }
    }
}

/// Encodes what a CPU runs for RT placement: 0 idle, 1 fair, 2 + rt_priority (the task's
/// class says: `SchedClass::cpupri_level`).
pub fn cpu_prio(task: &Task) -> u8 {
    class::of(task).cpupri_level(task)
}

pub(super) fn this_cpu() -> &'static PerCpu {
    percpu::current()
}

/// Every CPU's run queue (the scheduler's per-CPU data, created at bring-up: [`init_cpu`]).
static RQS: percpu::PerCpuVar<Rq> = percpu::PerCpuVar::new();

/// Creates CPU `cpu`'s run queue (bring-up, before the CPU's area is listed).
pub fn init_cpu(cpu: u32) {
    RQS.init(cpu, Rq::new(cpu));
    super::balance::init_cpu(cpu);
    super::nohz::init_cpu(cpu);
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

/// Every CPU's running task (same as its run queue's `curr`), readable without the lock: set
/// at each switch (`__schedule`) and when a CPU starts its idle task.
pub(super) static CURRENT: Current<Task> = Current::new();

/// Runs `f` on the running task (`None` before the scheduler runs on this CPU), interrupts
/// off meanwhile (`f` runs before they come back): keep it short.
pub(crate) fn with_current<R>(f: impl FnOnce(Option<&Task>) -> R) -> R {
    CURRENT.with(f)
}

/// [`with_current`] with preemption, not interrupts, off (`None` also before this CPU's
/// per-CPU area is installed): for `f`s that need only the task to stay.
pub(crate) fn with_current_preemption_off<R>(f: impl FnOnce(Option<&Task>) -> R) -> R {
    CURRENT.with_preemption_off(f)
}

/// Whether the running task is in the RT class (Linux `rt_task(current)`: its effective
/// priority, so a fair task boosted by priority inheritance counts). False before the
/// scheduler runs on this CPU.
pub fn current_is_rt() -> bool {
    with_current(|t| t.is_some_and(|t| t.class() == ClassId::Rt))
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
    CURRENT.get().expect("current() before the scheduler runs on this CPU")
}

/// The running task's id (0 for idle or before the scheduler runs).
pub fn current_tid() -> Tid {
    with_current(|t| t.map_or(0, |t| t.tid))
}
