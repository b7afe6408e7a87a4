//! Tasks: kernel threads with their own guarded stacks.
//!
//! A [`Task`] is shared as `Arc<Task>`: by the task table (until reaped), by the run queue
//! it is queued on, by wait queues and timers it sleeps on. Identity: `tid` (unique); what makes
//! it a process (thread group, process group, session, tty, exit code, signals) is in
//! [`Task::process`] (see `process`), and its dirty-throttle state in [`Task::dirty`].
//!
//! States follow Linux: `Running` means runnable or running (`TASK_RUNNING`), `Sleeping` is
//! `TASK_INTERRUPTIBLE`, `Stopped`, and `Dead` once it has exited (a zombie until reaped by
//! [`wait`]). Scheduling attributes are inherited at spawn (fork-like), unless
//! `reset_on_fork` is set. Accounting follows Linux schedstat: `sum_exec_runtime`, run-queue
//! wait time (sum, max, count) and voluntary / involuntary context switches.

use super::process::{ProcIdentity, ThreadGroup};
use super::SeKey;
use crate::mm::stack::KernelStack;
use crate::sync::IrqLock;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::arena::ArenaMap;
use cadence_sched::{CpuMask, Errno, FairEntity, Policy, SeqCpuMask, ValidAttr};
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use framework::task::{Switchable, TaskContext, WakeLink, WakeListNode};

pub type Tid = u32;

/// Linux-style task states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TaskState {
    Running = 0,
    Sleeping = 1,
    Stopped = 2,
    Dead = 3,
}

impl TaskState {
    fn from_u8(v: u8) -> TaskState {
        match v {
            0 => TaskState::Running,
            1 => TaskState::Sleeping,
            2 => TaskState::Stopped,
            _ => TaskState::Dead,
        }
    }

    /// `ps`-style letter: R, S, T, Z.
    pub fn letter(self) -> char {
        match self {
            TaskState::Running => 'R',
            TaskState::Sleeping => 'S',
            TaskState::Stopped => 'T',
            TaskState::Dead => 'Z',
        }
    }
}

/// Scheduling class of a task (order: rt > fair > idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ClassId {
    Rt = 0,
    Fair = 1,
    Idle = 2,
    Dl = 3,
}

/// Linux schedstat-style counters (all ns).
#[derive(Default)]
pub struct TaskStats {
    pub sum_exec_runtime: AtomicU64,
    pub wait_sum: AtomicU64,
    pub wait_max: AtomicU64,
    pub wait_count: AtomicU64,
    pub nr_voluntary_switches: AtomicU64,
    pub nr_involuntary_switches: AtomicU64,
    pub nr_migrations: AtomicU64,
    /// When it last started or stopped running (Linux's `se.exec_start` as `task_hot` reads it
    /// for a waiting task: the balancer leaves one that ran within
    /// `sysctl_sched_migration_cost` where it is).
    pub exec_start: AtomicU64,
    pub nr_wakeups: AtomicU64,
    /// User and system time, charged a tick at a time (`sched::cputimer`; the process's
    /// totals are its `ThreadGroup`'s), ns.
    pub utime_ns: AtomicU64,
    pub stime_ns: AtomicU64,
    /// Page faults handled without and with I/O (`getrusage`'s `ru_minflt`, `ru_majflt`).
    pub min_flt: AtomicU64,
    pub maj_flt: AtomicU64,
    /// When the task last became runnable-but-waiting (0 = not waiting).
    pub(super) wait_start: AtomicU64,
    /// When the last wakeup made it runnable (0 = not since it last ran).
    pub(super) woken_at: AtomicU64,
    /// Wakeup latency (wakeup → running) of its last wakeup, and the worst one, in ns.
    pub last_wakeup_latency: AtomicU64,
    pub max_wakeup_latency: AtomicU64,
    /// When the wakeup behind `last_wakeup_latency` happened (ns since boot).
    pub last_woken_at: AtomicU64,
    /// When the wait on a run queue that ended at its last switch-in began (ns since boot; 0
    /// if it did not wait): after a wakeup, when it was queued — a wakeup that sat on a wake
    /// list was queued only when the list was drained.
    pub last_queued_at: AtomicU64,
    /// Asleep in `sleep_until` with a timer due at this time (0 = not in a timed sleep).
    pub(super) sleep_deadline: AtomicU64,
    /// Reported by the hung-task detector (once per episode).
    pub(super) hung_reported: AtomicBool,
}

/// Attributes protected by [`Task::params`] (Linux's `pi_lock` role).
#[derive(Clone, Copy, Debug)]
pub struct SchedParams {
    /// The task's own attributes (what `sched_getattr` reports).
    pub attr: ValidAttr,
    pub affinity: CpuMask,
    /// What priority inheritance lends it (`sched::pi`): its top PI waiter's RT priority or
    /// deadline parameters, while they beat its own (Linux's `pi_task`); `None` unboosted.
    pub boost: Option<ValidAttr>,
}

impl SchedParams {
    /// Own attributes with an affinity, unboosted.
    pub const fn new(attr: ValidAttr, affinity: CpuMask) -> Self {
        Self { attr, affinity, boost: None }
    }

    /// The attributes the scheduler runs the task with: the boost while it beats the own
    /// attributes (a deadline boost beats every RT or fair priority; between two deadline
    /// sets the chains already chose), else the own ones.
    pub fn effective(&self) -> ValidAttr {
        match self.boost {
            Some(b) if b.prio() <= self.attr.prio() => b,
            _ => self.attr,
        }
    }
}

pub struct Task {
    pub tid: Tid,
    pub parent: Tid,
    /// The name it was created with (kernel tasks keep it; see [`Task::comm`]).
    pub name: String,
    /// Its `comm` (Linux's `task->comm`): the name the tracer, `/proc` and `sched/debug` show,
    /// set by `execve` and `prctl(PR_SET_NAME)`. 15 bytes and a NUL in two words, so the
    /// tracer's hooks read it without a lock (a read racing a rename may mix the two names,
    /// as Linux's lockless `comm` reads may).
    comm: [AtomicU64; 2],
    state: AtomicU8,
    /// Scheduling attributes. Lock order: before any run-queue lock.
    pub params: IrqLock<SchedParams>,
    // Cached copies of `params`, written under `params` + the run-queue lock, readable anywhere.
    pub(super) class: AtomicU8,
    pub(super) policy: AtomicU8,
    pub(super) rt_priority: AtomicU8,
    pub(super) nice: AtomicI32,
    pub(super) affinity: SeqCpuMask,
    /// CPU whose run queue the task belongs to (changed only with that run queue locked).
    pub(super) cpu: AtomicU32,
    /// Queued on (or running from) `cpu`'s run queue.
    pub(super) on_rq: AtomicBool,
    /// Its context is live on some CPU (set at switch-in, cleared after switch-out).
    pub(super) on_cpu: AtomicBool,
    /// Link in a CPU's list of wakeups to finish (`sched::queue_wakeup`); owned by that list.
    pub(super) wake_link: WakeLink<Task>,
    /// On a CPU's wake list, not yet drained (`sched::queue_wakeup`): no other path may queue
    /// the task meanwhile, or it could run, sleep and be queued on a second list while still
    /// linked in the first.
    pub(super) wake_queued: AtomicBool,
    /// Fair entity while the task is not queued (a queued task's lives in the run queue).
    pub(super) parked_se: IrqLock<Option<FairEntity>>,
    /// Its PELT signal (`se.avg`) and the CPU it is attached to (`sched::pelt`; taken after
    /// a run-queue lock).
    pub(super) pelt: IrqLock<super::pelt::TaskPelt>,
    /// Its deadline-class state (`class::deadline`; taken under its run-queue lock).
    pub(super) dl: IrqLock<super::class::deadline::DlState>,
    /// Manual task group (`group move`; root = 0), like a cgroup.
    pub group: AtomicU32,
    /// Autogroup this task belongs to (0 = none; see `autogroup`).
    pub autogroup: AtomicU32,
    /// Group whose queue holds (or last held) the fair entity.
    pub(super) se_group: AtomicU32,
    /// SCHED_RR quantum left.
    pub(super) rr_remaining_ns: AtomicU64,
    /// Runs with a priority-inheritance boost (cached from `params`, like `class`).
    pub(super) pi_boosted: AtomicBool,
    /// Its saved registers and its stack (the framework's: only a run-queue lock switches to
    /// it, see `switch`).
    ctx: TaskContext,
    entry: IrqLock<Option<Entry>>,
    pub stats: TaskStats,
    /// Its state in the dirty throttle (`block::writeback::balance_dirty_pages`).
    pub dirty: super::process::WriterState,
    /// Thread group, process group, session, tty, exit code and signals.
    pub process: ProcIdentity,
    /// Core-scheduling cookie the scheduler uses (0 = none; see `coresched`).
    pub core_cookie: AtomicU64,
    /// A new cookie for a running task, applied at its next `schedule()` under the core's
    /// locks (`coresched::NO_PENDING` = none).
    /// Set (under `params`) once the task's cookie reference was dropped at exit: a cookie
    /// assigned later (a prctl racing with the exit) is dropped instead of applied.
    pub core_exited: AtomicBool,
    /// Set (under `params`) once the exiting task left its group for good (`task_dead`).
    pub left_group: AtomicBool,
    pub core_cookie_pending: AtomicU64,
    /// Forced idle charged to this task by core scheduling (ns).
    pub core_forceidle_ns: AtomicU64,
    /// How many of its core's CPUs ran a task after the last core-wide pick that chose this
    /// one (Linux's `core_occupation`; see `coresched::steal_cookie_task`).
    pub core_occupation: AtomicU8,
    /// RLIMIT_RTTIME and the watchdog's count (see `rt_limits`).
    pub watchdog: super::rt_limits::RtWatchdog,
    /// Woken when the task exits.
    pub exited: super::wait::WaitQueue,
    /// Reaped automatically at exit (nobody will `wait` for it).
    pub detached: AtomicBool,
    /// Set once the dead task's stack and entity are released (it can be reaped).
    pub(super) released: AtomicBool,
    pub is_idle: bool,
    /// A kernel thread (`kswapd0`, the flusher, `khungtaskd`): signals are ignored, as Linux's
    /// kthreads ignore them, since the kernel depends on it running.
    pub kthread: bool,
    pub created_ns: u64,
    /// Where it last went to sleep on a wait queue or mutex (the caller of the wait, through
    /// `#[track_caller]`): what the hung-task report names, as Linux's stack dump would.
    wait_site: crate::sync::AtomicLocation,
}

impl Switchable for Task {
    fn task_context(&self) -> &TaskContext {
        &self.ctx
    }
}

impl WakeListNode for Task {
    fn wake_link(&self) -> &WakeLink<Task> {
        &self.wake_link
    }
}

impl framework::task::timer::TimerTarget for Task {
    /// A sleep's timeout (`sleep_until`, a wait with a deadline): wake the task.
    fn timer_fired(self: Arc<Self>) {
        super::wake_up(&self);
    }
}

impl Task {
    /// Records where the task goes to sleep (the wait queue's `#[track_caller]` chain).
    pub fn set_wait_site(&self, site: &'static core::panic::Location<'static>) {
        self.wait_site.store(Some(site));
    }

    /// Where the task last went to sleep on a wait queue or mutex (`file:line` of the wait's
    /// caller); `None` if it never did.
    pub fn wait_site(&self) -> Option<&'static core::panic::Location<'static>> {
        self.wait_site.load()
    }

    /// Its `comm`: at most 15 bytes, NUL-padded.
    pub fn comm(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.comm[0].load(Ordering::Relaxed).to_le_bytes());
        out[8..].copy_from_slice(&self.comm[1].load(Ordering::Relaxed).to_le_bytes());
        out
    }

    /// Calls `f` with its `comm` as text (no allocation: the tracer's hooks use it). Bytes
    /// that are not UTF-8 are cut at the first bad one.
    pub fn with_comm<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        let c = self.comm();
        let n = c.iter().position(|&b| b == 0).unwrap_or(c.len());
        let text = match core::str::from_utf8(&c[..n]) {
            Ok(t) => t,
            Err(e) => core::str::from_utf8(&c[..e.valid_up_to()]).unwrap_or(""),
        };
        f(text)
    }

    /// Its `comm` as a string.
    pub fn comm_string(&self) -> String {
        self.with_comm(|s| String::from(s))
    }

    /// Renames it (`execve`, `prctl(PR_SET_NAME)`, `/proc/PID/comm`): the first 15 bytes of
    /// `name`.
    pub fn set_comm(&self, name: &[u8]) {
        let w = comm_words(name);
        self.comm[0].store(w[0].load(Ordering::Relaxed), Ordering::Relaxed);
        self.comm[1].store(w[1].load(Ordering::Relaxed), Ordering::Relaxed);
    }

    pub fn state(&self) -> TaskState {
        TaskState::from_u8(self.state.load(Ordering::SeqCst))
    }

    pub fn set_state(&self, s: TaskState) {
        self.state.store(s as u8, Ordering::SeqCst);
    }

    /// Moves the state from `from` to `to` only if it is still `from` (a waker must never
    /// overwrite a state the task itself set meanwhile, e.g. `Dead` on its way out: Linux's
    /// `ttwu_state_match` under `pi_lock`). True if it did.
    pub fn transition(&self, from: TaskState, to: TaskState) -> bool {
        self.state.compare_exchange(from as u8, to as u8, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    pub fn class(&self) -> ClassId {
        match self.class.load(Ordering::Acquire) {
            0 => ClassId::Rt,
            1 => ClassId::Fair,
            3 => ClassId::Dl,
            _ => ClassId::Idle,
        }
    }

    pub fn policy(&self) -> Policy {
        Policy::from_raw(i32::from(self.policy.load(Ordering::Acquire))).unwrap_or(Policy::Normal)
    }

    pub fn rt_priority(&self) -> u8 {
        self.rt_priority.load(Ordering::Acquire)
    }

    /// Fair weight from the cached attributes (for balancing decisions).
    pub fn attr_weight_cached(&self) -> u64 {
        self.params_snapshot().weight()
    }

    pub fn nice(&self) -> i32 {
        self.nice.load(Ordering::Acquire)
    }

    pub fn affinity(&self) -> CpuMask {
        self.affinity.load()
    }

    pub fn cpu(&self) -> u32 {
        self.cpu.load(Ordering::Acquire)
    }

    /// Is it on a CPU's wake list (a wakeup handed over, not yet queued)? For diagnostics.
    pub fn is_wake_queued(&self) -> bool {
        self.wake_queued.load(Ordering::Relaxed)
    }

    /// Exit bookkeeping for leak reports: (released by its last switch, on a CPU now,
    /// fatal-signal deferrals open, pending signals).
    pub fn exit_state(&self) -> (bool, bool, u32, u64) {
        (
            self.released.load(Ordering::Relaxed),
            self.on_cpu.load(Ordering::Relaxed),
            self.process.signals.fatal_defer.load(Ordering::Relaxed),
            self.process.signals.pending.load(Ordering::Relaxed),
        )
    }

    /// The deadline of the sleep it is in (0: none). For diagnostics.
    pub fn sleep_deadline(&self) -> u64 {
        self.stats.sleep_deadline.load(Ordering::Relaxed)
    }

    pub fn is_on_rq(&self) -> bool {
        self.on_rq.load(Ordering::Acquire)
    }

    pub fn exit_code(&self) -> i32 {
        self.process.exit_code()
    }

    /// Current attributes (takes `params`: not under a run-queue lock... except as a leaf read
    /// through the cached copies; see `params_snapshot`).
    pub fn attr(&self) -> ValidAttr {
        self.params.lock().attr
    }

    /// Attributes rebuilt from the cached copies (usable under a run-queue lock, where taking
    /// `params` would invert the lock order).
    pub fn params_snapshot(&self) -> ValidAttr {
        ValidAttr {
            policy: self.policy(),
            nice: self.nice.load(Ordering::Acquire),
            rt_priority: self.rt_priority(),
            custom_slice_ns: None,
            reset_on_fork: false,
            dl: None,
        }
    }

    pub(super) fn key(&self) -> SeKey {
        SeKey::Task(self.tid)
    }

    /// Updates the cached attribute copies (caller holds `params` and the run-queue lock).
    pub(super) fn cache_params(&self, p: &SchedParams) {
        let attr = p.effective();
        let class = if self.is_idle {
            ClassId::Idle
        } else if attr.policy.is_deadline() {
            ClassId::Dl
        } else if attr.policy.is_rt() {
            ClassId::Rt
        } else {
            ClassId::Fair
        };
        self.class.store(class as u8, Ordering::Release);
        self.policy.store(attr.policy.raw() as u8, Ordering::Release);
        self.rt_priority.store(attr.rt_priority, Ordering::Release);
        self.nice.store(attr.nice, Ordering::Release);
        self.affinity.store(p.affinity);
        self.pi_boosted.store(attr != p.attr, Ordering::Release);
    }

    /// Runs with a priority-inheritance boost.
    pub fn pi_boosted(&self) -> bool {
        self.pi_boosted.load(Ordering::Acquire)
    }

    /// The dead task's stack, once its context has switched out for good (retired: it can
    /// never run again).
    pub(super) fn take_stack(&self) -> Option<KernelStack> {
        self.ctx.retire()
    }

    /// Makes this (idle) task's context the one the calling CPU runs now: its boot stack.
    pub(super) fn adopt_running_context(&self) {
        self.ctx.adopt_running();
    }

    pub(super) fn take_entry(&self) -> Option<Entry> {
        self.entry.lock().take()
    }

    pub(super) fn set_exit_code(&self, code: i32) {
        self.process.set_exit_code(code);
    }
}

/// Linux name of a policy (as `chrt -p` prints it).
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Normal => "SCHED_OTHER",
        Policy::Fifo => "SCHED_FIFO",
        Policy::RR => "SCHED_RR",
        Policy::Batch => "SCHED_BATCH",
        Policy::Idle => "SCHED_IDLE",
        Policy::Deadline => "SCHED_DEADLINE",
    }
}

// ----- the task table -----------------------------------------------------------------

static TASKS: IrqLock<ArenaMap<Tid, Arc<Task>>> = IrqLock::new(ArenaMap::new());
static NEXT_TID: AtomicU32 = AtomicU32::new(1);

/// A tid no task has had (for [`SpawnOptions::with_tid`]).
pub fn reserve_tid() -> Tid {
    NEXT_TID.fetch_add(1, Ordering::Relaxed)
}

/// The last tid given out (`/proc/loadavg`'s last field, `/proc/stat`'s `processes`).
pub fn last_tid() -> Tid {
    NEXT_TID.load(Ordering::Relaxed) - 1
}

/// Finds a live (or zombie) task.
pub fn find(tid: Tid) -> Option<Arc<Task>> {
    TASKS.lock().get(&tid).cloned()
}

/// Snapshot of every task (for `ps` and group-wide operations).
pub fn all() -> Vec<Arc<Task>> {
    // Allocated with the table unlocked (no allocation with interrupts off).
    crate::sync::collect_unlocked(&TASKS, 16, |t| t.len(), |t, out| out.extend(t.values().cloned()))
}

/// Heap bytes the task table reserves (it keeps its peak capacity).
pub fn table_bytes() -> usize {
    TASKS.lock().storage_bytes()
}

/// Linux's `max_threads` (`kernel.threads-max`, `set_max_threads`): what the tasks' kernel
/// stacks may take, an eighth of the memory the page allocator manages (Linux's
/// `totalram_pages`: here the frames left once boot has taken the heap's reservation) at
/// Linux's THREAD_SIZE of 16 KiB (frames / 32), at least 20. `fork` is EAGAIN when there are
/// that many tasks (zombies included).
pub fn max_threads() -> usize {
    match MAX_THREADS_SET.load(Ordering::Relaxed) {
        0 => ((framework::mm::frame::managed_frames() / 32) as usize).max(20),
        n => n,
    }
}

/// `kernel.threads-max` as written (0: never written, [`max_threads`]'s default).
static MAX_THREADS_SET: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Writing `kernel.threads-max` (Linux 6.1's `sysctl_max_threads`: 1 to FUTEX_TID_MASK, else
/// EINVAL).
pub fn set_max_threads(n: u64) -> Result<(), Errno> {
    if !(1..=0x3fff_ffff).contains(&n) {
        return Err(Errno::EINVAL);
    }
    MAX_THREADS_SET.store(n as usize, Ordering::Relaxed);
    Ok(())
}

/// Number of tasks in the table (zombies included).
pub fn count() -> usize {
    TASKS.lock().len()
}

/// `Task` objects alive (in the table or not): a task reaped but still referenced somewhere
/// (a leaked `Arc`) shows here and not in [`count`].
static OBJECTS: AtomicU64 = AtomicU64::new(0);

pub fn objects() -> u64 {
    OBJECTS.load(Ordering::Relaxed)
}

impl Drop for Task {
    fn drop(&mut self) {
        OBJECTS.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(super) fn remove(tid: Tid) {
    TASKS.lock().remove(&tid);
}

/// How to create a task.
pub struct SpawnOptions {
    pub name: String,
    /// `None`: inherit the creator's attributes (fork-like; reset_on_fork honoured).
    pub attr: Option<ValidAttr>,
    /// `None`: inherit the creator's affinity.
    pub affinity: Option<CpuMask>,
    pub stack_size: usize,
    /// Join the creator's thread group instead of starting a new one.
    pub thread: bool,
    /// Reap automatically at exit (no `wait`).
    pub detached: bool,
    /// A kernel thread: ignores signals ([`Task::kthread`]).
    pub kthread: bool,
    /// The user-space layer's object for a user thread ([`ProcIdentity::user`]).
    pub user: Option<alloc::sync::Arc<dyn core::any::Any + Send + Sync>>,
    /// A tid taken beforehand with [`reserve_tid`] (`clone` stores it in user memory before
    /// the new thread can run).
    pub tid: Option<Tid>,
}

impl SpawnOptions {
    pub fn new(name: &str) -> Self {
        SpawnOptions {
            name: name.into(),
            attr: None,
            affinity: None,
            stack_size: 32 * 1024,
            thread: false,
            detached: false,
            kthread: false,
            user: None,
            tid: None,
        }
    }
    pub fn attr(mut self, attr: ValidAttr) -> Self {
        self.attr = Some(attr);
        self
    }
    pub fn policy(self, policy: Policy, rt_priority: u8, nice: i32) -> Self {
        self.attr(ValidAttr { policy, nice, rt_priority, custom_slice_ns: None, reset_on_fork: false, dl: None })
    }
    pub fn affinity(mut self, mask: CpuMask) -> Self {
        self.affinity = Some(mask);
        self
    }
    pub fn pin(self, cpu: u32) -> Self {
        self.affinity(CpuMask::single(cpu as usize))
    }
    pub fn detached(mut self) -> Self {
        self.detached = true;
        self
    }
    /// A detached kernel thread that ignores signals.
    pub fn kthread(mut self) -> Self {
        self.detached = true;
        self.kthread = true;
        self
    }
    pub fn thread(mut self) -> Self {
        self.thread = true;
        self
    }
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// The task gets `tid`, which [`reserve_tid`] gave.
    pub fn with_tid(mut self, tid: Tid) -> Self {
        self.tid = Some(tid);
        self
    }
    /// A user thread whose user-space object is `user` ([`ProcIdentity::user`]).
    pub fn user(mut self, user: alloc::sync::Arc<dyn core::any::Any + Send + Sync>) -> Self {
        self.user = Some(user);
        self
    }
}

/// `name`'s first 15 bytes, NUL-padded, as two little-endian words.
fn comm_words(name: &[u8]) -> [AtomicU64; 2] {
    let mut b = [0u8; 16];
    let n = name.iter().position(|&c| c == 0).unwrap_or(name.len()).min(15);
    b[..n].copy_from_slice(&name[..n]);
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i * 8..i * 8 + 8]);
        AtomicU64::new(u64::from_le_bytes(w))
    };
    [word(0), word(1)]
}

pub(super) fn new_task(
    opts: &SpawnOptions,
    parent: Option<&Task>,
    params: SchedParams,
    stack: Option<KernelStack>,
    is_idle: bool,
    cpu: u32,
) -> Arc<Task> {
    let tid = if is_idle { 0 } else { opts.tid.unwrap_or_else(reserve_tid) };
    let (tgid, group, ptid) = match parent {
        Some(p) if opts.thread && !is_idle => {
            p.process.group.join(tid);
            (p.process.tgid, p.process.group.clone(), p.tid)
        }
        Some(p) => {
            let g = &p.process.group;
            let group = ThreadGroup::new(tid, g.pgid.load(Ordering::Relaxed), g.sid.load(Ordering::Relaxed), g.tty.load(Ordering::Acquire));
            (tid, group, p.tid)
        }
        None => (tid, ThreadGroup::new(tid, tid, tid, 0), 0),
    };
    OBJECTS.fetch_add(1, Ordering::Relaxed);
    let task = Arc::new(Task {
        tid,
        parent: ptid,
        name: opts.name.clone(),
        comm: comm_words(opts.name.as_bytes()),
        state: AtomicU8::new(TaskState::Running as u8),
        params: IrqLock::new(params),
        class: AtomicU8::new(0),
        policy: AtomicU8::new(0),
        rt_priority: AtomicU8::new(0),
        nice: AtomicI32::new(0),
        affinity: SeqCpuMask::new(CpuMask::EMPTY),
        cpu: AtomicU32::new(cpu),
        on_rq: AtomicBool::new(false),
        on_cpu: AtomicBool::new(is_idle),
        wake_link: WakeLink::new(),
        wake_queued: AtomicBool::new(false),
        core_exited: AtomicBool::new(false),
        left_group: AtomicBool::new(false),
        parked_se: IrqLock::new(None),
        pelt: IrqLock::new(super::pelt::TaskPelt { avg: cadence_sched::pelt::SchedAvg::default(), attached: None, initialized: false }),
        dl: IrqLock::new(super::class::deadline::DlState::new()),
        group: AtomicU32::new(0),
        autogroup: AtomicU32::new(0),
        se_group: AtomicU32::new(0),
        rr_remaining_ns: AtomicU64::new(super::rr_timeslice_ns()),
        pi_boosted: AtomicBool::new(false),
        ctx: TaskContext::new(stack),
        entry: IrqLock::new(None),
        stats: TaskStats::default(),
        dirty: Default::default(),
        process: ProcIdentity::new(tgid, group, opts.user.clone()),
        core_cookie: AtomicU64::new(0),
        core_cookie_pending: AtomicU64::new(u64::MAX),
        core_forceidle_ns: AtomicU64::new(0),
        core_occupation: AtomicU8::new(0),
        watchdog: super::rt_limits::RtWatchdog::new(),
        exited: super::wait::WaitQueue::new(),
        detached: AtomicBool::new(opts.detached),
        released: AtomicBool::new(false),
        is_idle,
        kthread: opts.kthread,
        created_ns: crate::time::uptime_ns(),
        wait_site: crate::sync::AtomicLocation::new(),
    });
    task.cache_params(&params);
    if let Some(p) = parent {
        // rlimits are inherited over fork.
        let (soft, hard) = (p.watchdog.soft_us.load(Ordering::Relaxed), p.watchdog.hard_us.load(Ordering::Relaxed));
        task.watchdog.soft_us.store(soft, Ordering::Relaxed);
        task.watchdog.hard_us.store(hard, Ordering::Relaxed);
    }
    task.watchdog.reset();
    if !is_idle {
        crate::sync::lock_with_room(&TASKS, 1, |t| t).insert(tid, task.clone());
    }
    task
}

/// What a new task runs: a function generic over the body's type and the body, boxed.
/// [`run_entry`] moves the body onto the task's stack and frees its box *before* running it: a
/// body a kill ends half-way (its frame abandoned at an interrupt exit) never returns, and a
/// `Box<dyn FnOnce>` called directly frees its box only when the call returns — one leaked
/// allocation per killed task (the chaos stress: ~5,000 after 300,000 operations).
/// The caller takes the entry inside a `DeferFatal` section and hands it over, so that no kill
/// lands while the box is in its frame.
pub(super) type Entry = (fn(Box<dyn Any + Send>, super::signal::DeferFatal) -> i32, Box<dyn Any + Send>);

/// The [`Entry`] function for a body of type `F`: ends `defer` once the body is on the stack.
pub(super) fn run_entry<F: FnOnce() -> i32 + Send + 'static>(body: Box<dyn Any + Send>, defer: super::signal::DeferFatal) -> i32 {
    let Ok(body) = body.downcast::<F>() else {
        return 0; // cannot happen: `spawn` pairs `run_entry::<F>` with a boxed `F`
    };
    // The block ends the box's life (freeing it) with the body moved out onto the stack.
    let body: F = {
        let boxed = body;
        *boxed
    };
    drop(defer);
    body()
}

pub(super) fn set_entry(task: &Task, entry: Entry) {
    *task.entry.lock() = Some(entry);
}

/// Prepares the new task's first context (it starts in `start`, on its own stack).
pub(super) fn init_context(task: &Task, start: fn() -> !) {
    task.ctx.start(start);
}

/// Waits for task `tid` (a child or any task) to exit and reaps it; returns its exit code.
/// `ESRCH` if there is no such task, `EINVAL` if it is detached.
pub fn wait(tid: Tid) -> Result<i32, Errno> {
    let _defer = super::signal::DeferFatal::new();
    let task = find(tid).ok_or(Errno::ESRCH)?;
    if task.detached.load(Ordering::Acquire) {
        return Err(Errno::EINVAL);
    }
    task.exited.wait_until(|| task.released.load(Ordering::Acquire));
    remove(tid);
    Ok(task.exit_code())
}
