//! Per-CPU timer queues on the LAPIC one-shot timer.
//!
//! Each CPU keeps its pending timers in a [`TimerQueue`] ordered by expiry (ns since boot) and
//! programs its LAPIC timer, in one-shot mode, for the earliest one (and disarms it when the
//! queue is empty). The periodic tick is just a timer that re-arms itself every `1/hz` s (from
//! its previous deadline, so it does not drift) and calls the handler its starter registered
//! (the kernel's `sched::scheduler_tick`); sleeps and hrtick share the same queue (see
//! `arch::apic` for one-shot vs TSC-deadline).
//!
//! **Tickless idle** (Linux's `tick_nohz_idle_stop_tick` / `tick_nohz_restart`): an idle CPU
//! may stop its tick ([`tick_stop`]) and sleep until its earliest other timer; the kernel
//! decides when. Stopped, the tick keeps its grid (the deadline it would have fired at), and
//! [`tick_restart`] re-arms it on that grid, at the first point after now, so a CPU's ticks
//! stay on one phase whatever its idle periods. A stopped tick may still fire once at a grid
//! point the kernel asks for (`wake_by`: work the tick does that cannot wait, the RT period).
//!
//! Contract: `arm` may be called from any CPU for any CPU; arming a remote CPU earlier than what
//! it has programmed sends it a call-function IPI so it re-programs. Handlers run in interrupt
//! context on the owning CPU, with the queue lock released.
//!
//! Invariant: `programmed` is read and written only under the queue lock, together with the
//! queue it describes. A remote `arm` therefore either sees the owner's new `programmed` (and
//! kicks it if its timer is earlier) or inserts before the owner looks for its earliest timer:
//! no timer is left behind a later programmed expiry.
//!
//! The tick's state (which queue entry is the tick, whether it is stopped, its grid) is
//! changed only by its own CPU with interrupts off (the tick's expiry, [`start_tick`],
//! [`tick_stop`], [`tick_restart`]); lock order: the tick's lock, then the queue's. Other CPUs
//! only read it ([`tick_stopped`], [`pending`]).

use crate::sync::IrqLock;
use cadence_sched::timerq::{align_up, forward, hang_delay_ns, TimerQueue as Ordered, INTERRUPT_PASSES};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What happens when a timer fires.
pub type TimerFn = fn(cpu: u32, data: u64);

/// A timer's identity (to cancel it).
pub type TimerId = cadence_sched::timerq::TimerKey;

/// One CPU's pending timers.
pub struct TimerQueue {
    timers: IrqLock<Ordered<(TimerFn, u64)>>,
    /// Expiry currently programmed into the LAPIC (u64::MAX = none).
    programmed: AtomicU64,
    /// When the LAPIC should fire for it: later than `programmed` for a timer armed after its
    /// expiry (at least [`MIN_DELAY_NS`] from its programming). Lateness counts from here.
    due: AtomicU64,
    /// Timer functions run on this CPU since boot.
    pub fired: AtomicU64,
    /// When this CPU's last timer interrupt began, or ended its wait for the timer it came
    /// early for (ns since boot; `bench cyclic --split`).
    last_entry_ns: AtomicU64,
    /// Timer interrupts taken since boot.
    pub interrupts: AtomicU64,
    /// Timer interrupts that found nothing due (a timer cancelled after the LAPIC was
    /// programmed for it, or the LAPIC firing a little before the expiry).
    pub idle_interrupts: AtomicU64,
    /// LAPIC timer programmings (each an exit into the VMM under TCG).
    pub programs: AtomicU64,
    /// Interrupts taken [`LATE_NS`] or more after `due`.
    late: LateLog,
    /// [`kick_if_overdue`] raised the timer vector for the current programming (cleared by
    /// each programming and each timer interrupt): one kick per expiry.
    kicked: core::sync::atomic::AtomicBool,
    /// Timer interrupts this CPU raised itself ([`kick_if_overdue`]).
    pub kicks: AtomicU64,
    /// How much earlier than its earliest timer this CPU programs its LAPIC before it halts
    /// (ns; see [`halt_prepare`]): the average delivery delay seen by a halted CPU, up to the
    /// limit.
    advance: AtomicU64,
    /// The CPU is halted in its idle loop, between [`halt_prepare`] and [`halt_done`].
    halted: core::sync::atomic::AtomicBool,
    /// Time spent waiting in the interrupt for a timer it came early for (ns, since boot).
    pub advance_wait_ns: AtomicU64,
    /// A timer interrupt gave up catching up: no timer interrupt before this time (ns since
    /// boot; 0 = none). Linux's `hang_detected`, cleared by the next timer interrupt.
    hang_until: AtomicU64,
    /// Timer interrupts that gave up catching up (Linux's `nr_hangs`).
    pub hangs: AtomicU64,
    /// The longest of those interrupts (ns; Linux's `max_hang_time`).
    pub max_hang_ns: AtomicU64,
    /// The periodic tick (see the module doc; its own CPU changes it, interrupts off).
    tick: IrqLock<TickState>,
    /// The tick is stopped (tickless idle): a copy of `tick.stopped` for lock-free readers.
    tick_stopped: AtomicBool,
    /// Times [`tick_stop`] stopped the tick (Linux's `idle_sleeps`).
    pub tick_stops: AtomicU64,
    /// Tick periods that passed with the tick stopped (counted at [`tick_restart`]).
    pub ticks_skipped: AtomicU64,
}

/// One CPU's periodic tick.
struct TickState {
    /// The queue entry that is the tick: the periodic timer, or while stopped the single
    /// expiry asked for by [`tick_stop`]'s `wake_by` (none once it fired).
    timer: Option<TimerId>,
    /// Tickless: the entry, if any, does not re-arm itself.
    stopped: bool,
    /// A point of the tick's grid not yet run (Linux's `last_tick`): the armed tick's
    /// deadline, or while stopped the first tick that did not come.
    grid: u64,
}

/// A timer interrupt taken this long after the LAPIC was due to fire is *late* and logged
/// ([`late_interrupts`]). Either the guest held interrupts off that long or the machine did
/// not deliver it: `trace irqsoff` splits the two, and under TCG on a busy host the lateness
/// is nearly all delivery (the vCPU thread, or QEMU's thread that raises the interrupt, was
/// not running).
pub const LATE_NS: u64 = 200_000;

/// Late interrupts remembered per CPU (the newest).
const LATE_LOG_LEN: usize = 256;

/// One CPU's late timer interrupts: a ring written only by that CPU, in its interrupt handler.
struct LateLog {
    /// Entry time and lateness (ns) of each, slot `n % LATE_LOG_LEN` for the `n`th.
    entry_ns: [AtomicU64; LATE_LOG_LEN],
    late_ns: [AtomicU64; LATE_LOG_LEN],
    count: AtomicU64,
}

impl LateLog {
    const fn new() -> Self {
        Self {
            entry_ns: [const { AtomicU64::new(0) }; LATE_LOG_LEN],
            late_ns: [const { AtomicU64::new(0) }; LATE_LOG_LEN],
            count: AtomicU64::new(0),
        }
    }

    fn note(&self, entry_ns: u64, late_ns: u64) {
        let n = self.count.load(Ordering::Relaxed);
        let slot = (n % LATE_LOG_LEN as u64) as usize;
        // Lateness 0 marks the slot as being rewritten (readers skip it).
        self.late_ns[slot].store(0, Ordering::Release);
        self.entry_ns[slot].store(entry_ns, Ordering::Release);
        self.late_ns[slot].store(late_ns, Ordering::Release);
        self.count.store(n + 1, Ordering::Release);
    }
}

/// Shortest delay programmed into the LAPIC (keeps a storm of tiny timers from livelocking).
pub const MIN_DELAY_NS: u64 = 2_000;

impl TimerQueue {
    /// An empty queue with nothing programmed (`const`, for statics).
    pub const fn new() -> Self {
        Self {
            timers: IrqLock::new(Ordered::new()),
            programmed: AtomicU64::new(u64::MAX),
            due: AtomicU64::new(u64::MAX),
            fired: AtomicU64::new(0),
            last_entry_ns: AtomicU64::new(0),
            interrupts: AtomicU64::new(0),
            idle_interrupts: AtomicU64::new(0),
            programs: AtomicU64::new(0),
            late: LateLog::new(),
            kicked: core::sync::atomic::AtomicBool::new(false),
            kicks: AtomicU64::new(0),
            advance: AtomicU64::new(0),
            halted: core::sync::atomic::AtomicBool::new(false),
            advance_wait_ns: AtomicU64::new(0),
            hang_until: AtomicU64::new(0),
            hangs: AtomicU64::new(0),
            max_hang_ns: AtomicU64::new(0),
            tick: IrqLock::new(TickState { timer: None, stopped: false, grid: 0 }),
            tick_stopped: AtomicBool::new(false),
            tick_stops: AtomicU64::new(0),
            ticks_skipped: AtomicU64::new(0),
        }
    }

    /// Number of pending timers (takes the queue's `IrqLock`: any context).
    pub fn len(&self) -> usize {
        self.timers.lock().len()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Timers each CPU's queue holds without allocating (the tick, hrtick and sleepers): reserved
/// at bring-up, in task context, because timers are re-armed from interrupt handlers.
pub const RESERVED_TIMERS: usize = 1024;

/// Every CPU's timer queue (this module's per-CPU data).
static QUEUES: crate::percpu::PerCpuVar<TimerQueue> = crate::percpu::PerCpuVar::new();

/// Creates CPU `cpu`'s timer queue (bring-up, before the CPU's area is listed).
pub fn init_cpu(cpu: u32) {
    QUEUES.init(cpu, TimerQueue::new());
}

/// Reserves this CPU's timer storage (see [`RESERVED_TIMERS`]); call before its tick starts.
pub fn reserve_this_cpu() {
    QUEUES.this().timers.lock().reserve(RESERVED_TIMERS);
}

/// Timers pending on CPU `cpu` besides its tick, which is armed or not as the CPU runs or
/// idles tickless (0 for an unknown CPU).
pub fn pending(cpu: u32) -> usize {
    queue_of(cpu).map_or(0, |q| {
        let st = q.tick.lock();
        q.len().saturating_sub(st.timer.is_some() as usize)
    })
}

impl Default for TimerQueue {
    fn default() -> Self {
        Self::new()
    }
}

fn queue_of(cpu: u32) -> Option<&'static TimerQueue> {
    QUEUES.get(cpu)
}

/// Programs this CPU's LAPIC for its earliest timer. Call with the CPU's own queue.
fn reprogram_local(q: &TimerQueue) {
    let t = q.timers.lock();
    program_locked(q, t.earliest());
}

/// Programs the LAPIC (of the CPU that owns `q`, which is the caller's) for `next`, with the
/// queue lock held (see the module invariant). Not before a hang's delay ([`interrupt`]): a
/// timer armed meanwhile waits for it too, as Linux's `hrtimer_reprogram` under
/// `hang_detected`, and `programmed` says so (so [`kick_if_overdue`] does not end the delay).
fn program_locked(q: &TimerQueue, next: Option<u64>) {
    let Some(next) = next else {
        // Nothing pending (a tickless idle CPU with no timer): disarm what the LAPIC still
        // holds, or it would fire once for a timer that is gone.
        q.programmed.store(u64::MAX, Ordering::Relaxed);
        if q.due.swap(u64::MAX, Ordering::Relaxed) != u64::MAX {
            crate::arch::apic::disarm();
        }
        return;
    };
    let next = next.max(q.hang_until.load(Ordering::Relaxed));
    let now = crate::time::uptime_ns();
    let delay = next.saturating_sub(now).max(MIN_DELAY_NS);
    q.programmed.store(next, Ordering::Relaxed);
    q.due.store(now + delay, Ordering::Relaxed);
    q.kicked.store(false, Ordering::Relaxed);
    q.programs.fetch_add(1, Ordering::Relaxed);
    crate::arch::apic::arm_ns(delay);
}

/// Arms `f(cpu, data)` to run on `cpu` at `expires_ns`.
pub fn arm(cpu: u32, expires_ns: u64, f: TimerFn, data: u64) -> Option<TimerId> {
    let q = queue_of(cpu)?;
    // Interrupts off before reading our CPU id: a migration between the check and the
    // programming would program another CPU's LAPIC from this queue.
    let _irq = IrqOff::new();
    let local = cpu == crate::percpu::cpu_id();
    let (id, kick) = {
        let mut t = q.timers.lock();
        let id = t.arm(expires_ns, (f, data));
        let earlier = expires_ns < q.programmed.load(Ordering::Relaxed);
        if earlier && local {
            program_locked(q, Some(expires_ns));
        }
        (id, earlier && !local)
    };
    if kick {
        if let Some(target) = crate::percpu::get(cpu) {
            crate::interrupts::kick_timer(target);
        }
    }
    Some(id)
}

/// [`arm`] on the calling CPU; returns that CPU with the timer's id (what [`cancel`] takes).
pub fn arm_here(expires_ns: u64, f: TimerFn, data: u64) -> Option<(u32, TimerId)> {
    let cpu = crate::percpu::cpu_id();
    arm(cpu, expires_ns, f, data).map(|id| (cpu, id))
}

/// Cancels a timer; returns whether it was still pending.
pub fn cancel(cpu: u32, id: TimerId) -> bool {
    queue_of(cpu).is_some_and(|q| q.timers.lock().cancel(id).is_some())
}

/// Cancels timer `id` of `cpu` and returns its data if it was pending (it will never run);
/// `None` if it already fired or is firing.
pub fn cancel_entry(cpu: u32, id: TimerId) -> Option<u64> {
    queue_of(cpu).and_then(|q| q.timers.lock().cancel(id)).map(|(_, data)| data)
}

/// The LAPIC timer interrupt: runs every expired timer of this CPU, then re-programs.
pub fn interrupt() {
    let cpu = crate::percpu::current();
    let q = QUEUES.this();
    let entry = crate::time::uptime_ns();
    q.last_entry_ns.store(entry, Ordering::Relaxed);
    q.interrupts.fetch_add(1, Ordering::Relaxed);
    let mut ran = false;
    let (due, kicked) = {
        let _t = q.timers.lock();
        crate::trace::irqsoff::timer_entry(q.programmed.load(Ordering::Relaxed));
        q.programmed.store(u64::MAX, Ordering::Relaxed);
        (q.due.swap(u64::MAX, Ordering::Relaxed), q.kicked.swap(false, Ordering::Relaxed))
    };
    if due != u64::MAX && entry >= due + LATE_NS {
        q.late.note(entry, entry - due);
    }
    let halted = q.halted.load(Ordering::Relaxed);
    if due != u64::MAX && !kicked && halted {
        adapt_advance(q, entry.saturating_sub(due));
    }
    // A halted CPU woken early (the advance was more than this delivery took) waits for its
    // earliest timer here, interrupts off, as KVM's advanced LAPIC timer waits before it
    // injects. A busy CPU never waits: its timer was programmed without the advance. Nor does
    // one whose earliest timer is further than the advance (the timer it was programmed for
    // was cancelled): it re-programs.
    let earliest = q.timers.lock().earliest();
    let wait_limit = q.advance.load(Ordering::Relaxed) + MIN_DELAY_NS;
    if let Some(at) = earliest.filter(|&at| halted && at > entry && at - entry <= wait_limit) {
        while crate::time::uptime_ns() < at {
            core::hint::spin_loop();
        }
        let waited_until = crate::time::uptime_ns();
        q.advance_wait_ns.fetch_add(waited_until - entry, Ordering::Relaxed);
        // The interrupt's part of a latency ends here (`bench cyclic --split`).
        q.last_entry_ns.store(waited_until, Ordering::Relaxed);
    }
    // Bounded work (Linux's `hrtimer_interrupt`): each pass runs the timers expired when it
    // began, at most as many as were queued then (a timer its own function re-armed in the
    // past waits for the next pass); after [`INTERRUPT_PASSES`] passes with timers still due
    // the next interrupt is put off by as long as these took, so the CPU spends at least half
    // its time outside timer interrupts whatever its timers' periods (issue 59: a 1 ns
    // periodic timer re-armed by its own expiry held CPU 0 here for good).
    q.hang_until.store(0, Ordering::Relaxed);
    let start = crate::time::uptime_ns();
    let mut passes = 0;
    loop {
        passes += 1;
        let now = crate::time::uptime_ns();
        let budget = q.timers.lock().len();
        for _ in 0..budget {
            let due = q.timers.lock().pop_expired(now);
            let Some((_, (f, data))) = due else { break };
            q.fired.fetch_add(1, Ordering::Relaxed);
            let what = if core::ptr::fn_addr_eq(f, tick as TimerFn) { "tick" } else { "timer" };
            crate::trace::timer_expire(what, now, crate::time::uptime_ns());
            f(cpu.cpu_id, data);
            ran = true;
        }
        let t = q.timers.lock();
        let now = crate::time::uptime_ns();
        if t.earliest().is_none_or(|at| at > now) {
            program_locked(q, t.earliest());
            break;
        }
        if passes >= INTERRUPT_PASSES {
            let took = now - start;
            q.hangs.fetch_add(1, Ordering::Relaxed);
            q.max_hang_ns.fetch_max(took, Ordering::Relaxed);
            q.hang_until.store(now + hang_delay_ns(start, now).max(MIN_DELAY_NS), Ordering::Relaxed);
            program_locked(q, t.earliest());
            drop(t);
            if !HANG_REPORTED.swap(true, Ordering::Relaxed) {
                crate::klog!("hrtimer: interrupt took {} ns", took);
            }
            break;
        }
    }
    if !ran {
        q.idle_interrupts.fetch_add(1, Ordering::Relaxed);
    }
}

/// A timer interrupt gave up catching up since boot (reported once, as Linux's
/// `pr_warn_once`).
static HANG_REPORTED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `cpu`'s timer interrupts that gave up catching up since boot, and the longest of them (ns):
/// Linux's `nr_hangs` and `max_hang_time` (`/proc/timer_list`).
pub fn hangs(cpu: u32) -> (u64, u64) {
    queue_of(cpu).map_or((0, 0), |q| (q.hangs.load(Ordering::Relaxed), q.max_hang_ns.load(Ordering::Relaxed)))
}

/// Ceiling of every CPU's timer advance (ns; 0 = none): see [`set_advance_limit`].
static ADVANCE_LIMIT: AtomicU64 = AtomicU64::new(150_000);

/// Sets the ceiling of the timer advance (ns, 0 = off, at most [`MAX_ADVANCE_NS`]). A CPU about
/// to halt ([`halt_prepare`]) programs its LAPIC that much before its earliest timer: the
/// average delay with which its timer interrupts have woken it from a halt, up to the
/// ceiling; an interrupt that comes early waits for the timer, interrupts off. KVM does the
/// same for its guests (`lapic_timer_advance_ns`, adaptive by default); QEMU's TCG does not,
/// and there the delay is QEMU's main loop noticing the expiry, then waking the halted vCPU's
/// thread: 75–83 µs of a 95–106 µs idle cyclictest latency
/// (docs/results/2026-12-02-compare-smp2.md). A running CPU is left alone (its early
/// interrupt would spin on host time its busy siblings need); [`kick_if_overdue`] is for it.
pub fn set_advance_limit(ns: u64) {
    let ns = ns.min(MAX_ADVANCE_NS);
    ADVANCE_LIMIT.store(ns, Ordering::Relaxed);
    for cpu in 0..crate::percpu::nr_possible() {
        if let Some(q) = queue_of(cpu) {
            q.advance.fetch_min(ns, Ordering::Relaxed);
        }
    }
}

/// This CPU is about to halt with interrupts off (the idle loop, just before `sti; hlt`):
/// with a timer advance ([`set_advance_limit`]), its LAPIC is programmed that much before its
/// earliest timer. [`halt_done`] must follow the halt.
pub fn halt_prepare() {
    let _irq = IrqOff::new();
    let q = QUEUES.this();
    q.halted.store(true, Ordering::Relaxed);
    let limit = ADVANCE_LIMIT.load(Ordering::Relaxed);
    if limit == 0 {
        return;
    }
    let advance = q.advance.load(Ordering::Relaxed).min(limit);
    let t = q.timers.lock();
    let Some(next) = t.earliest() else { return };
    let now = crate::time::uptime_ns();
    let fire = next.saturating_sub(advance).max(q.hang_until.load(Ordering::Relaxed));
    // Programmed already for this or earlier (a previous halt's advance), or too close to move.
    if fire >= q.due.load(Ordering::Relaxed) || fire <= now + MIN_DELAY_NS {
        return;
    }
    q.due.store(fire, Ordering::Relaxed);
    q.programs.fetch_add(1, Ordering::Relaxed);
    crate::arch::apic::arm_ns(fire - now);
}

/// The halt that [`halt_prepare`] announced is over. (The LAPIC may stay programmed early: an
/// early interrupt on a running CPU finds nothing due and re-programs.)
pub fn halt_done() {
    QUEUES.this().halted.store(false, Ordering::Relaxed);
}

/// The ceiling of the timer advance (ns).
pub fn advance_limit() -> u64 {
    ADVANCE_LIMIT.load(Ordering::Relaxed)
}

/// Largest timer advance (ns): an early interrupt waits at most this long with interrupts off.
pub const MAX_ADVANCE_NS: u64 = 500_000;

/// How long `cpu`'s early timer interrupts waited for their timer since boot (ns).
pub fn advance_wait_ns(cpu: u32) -> u64 {
    queue_of(cpu).map_or(0, |q| q.advance_wait_ns.load(Ordering::Relaxed))
}

/// `cpu`'s timer advance now (ns).
pub fn advance(cpu: u32) -> u64 {
    queue_of(cpu).map_or(0, |q| q.advance.load(Ordering::Relaxed))
}

/// Moves the advance toward this halted CPU's timer interrupt's delivery delay (`delay_ns`,
/// from when the LAPIC was due to fire), an eighth of the way, within the ceiling. A delay
/// over the ceiling counts as the ceiling, so that one long stall of the host does not move
/// it far.
fn adapt_advance(q: &TimerQueue, delay_ns: u64) {
    let limit = ADVANCE_LIMIT.load(Ordering::Relaxed);
    if limit == 0 {
        q.advance.store(0, Ordering::Relaxed);
        return;
    }
    let old = q.advance.load(Ordering::Relaxed);
    let delay = delay_ns.min(limit);
    // An average: aiming higher (a quarter up, a sixteenth down, the 80th percentile) was
    // worse, idle cyclictest p50 101-135 µs against 69-101: the waits of halted vCPUs took
    // the host time QEMU's main loop needed to deliver the other vCPUs' timers.
    let new = (old * 7 + delay) / 8;
    q.advance.store(new.min(limit), Ordering::Relaxed);
}

/// Raises this CPU's timer interrupt itself if its earliest timer has expired and the
/// interrupt has not come. For the kernel's frequent paths (the context switch).
///
/// Why: under QEMU's TCG a LAPIC timer's expiry is noticed by QEMU's main-loop thread, which
/// then interrupts the vCPU. With every host core busy running vCPUs that thread waits its
/// turn, and the vCPU runs on with its timer overdue: the timer interrupt came 75–83 µs after
/// its deadline on an idle guest, 140–260 µs under hackbench, and up to tens of milliseconds
/// (docs/results/2026-12-02-compare-smp2.md). A self-IPI is delivered by the vCPU's own
/// thread. On hardware the interrupt is never this late and the check costs a clock read.
///
/// Preemption, not interrupts, is off: an `sti` ends QEMU's translation block, and this runs at
/// every switch and return to user space. A timer interrupt between the checks and the kick
/// (it clears `kicked` and re-programs) makes the kick a spurious interrupt with nothing due,
/// which the handler takes as such.
pub fn kick_if_overdue() {
    let _no_preempt = crate::preempt::preempt_disable();
    let q = QUEUES.this();
    let expires = q.programmed.load(Ordering::Relaxed);
    if expires == u64::MAX || crate::time::uptime_ns() < expires || q.kicked.swap(true, Ordering::Relaxed) {
        return;
    }
    q.kicks.fetch_add(1, Ordering::Relaxed);
    crate::arch::apic::send_self_ipi(crate::arch::apic::TIMER_VECTOR);
}

/// Timer interrupts `cpu` raised itself ([`kick_if_overdue`]) since boot.
pub fn kicks(cpu: u32) -> u64 {
    queue_of(cpu).map_or(0, |q| q.kicks.load(Ordering::Relaxed))
}

/// `cpu`'s timer counters: [interrupts, interrupts with nothing due, LAPIC programmings].
pub fn counters(cpu: u32) -> [u64; 3] {
    queue_of(cpu).map_or([0; 3], |q| [&q.interrupts, &q.idle_interrupts, &q.programs].map(|c| c.load(Ordering::Relaxed)))
}

/// How many of `cpu`'s timer interrupts were late (see [`LATE_NS`]) since boot.
pub fn late_count(cpu: u32) -> u64 {
    queue_of(cpu).map_or(0, |q| q.late.count.load(Ordering::Acquire))
}

/// `cpu`'s newest late timer interrupts still logged (see [`LATE_NS`]), as (entry ns,
/// lateness ns), oldest first.
pub fn late_interrupts(cpu: u32) -> alloc::vec::Vec<(u64, u64)> {
    let Some(q) = queue_of(cpu) else { return alloc::vec::Vec::new() };
    let l = &q.late;
    let count = l.count.load(Ordering::Acquire);
    let mut log = alloc::vec::Vec::with_capacity(LATE_LOG_LEN);
    for n in count.saturating_sub(LATE_LOG_LEN as u64)..count {
        let slot = (n % LATE_LOG_LEN as u64) as usize;
        let late = l.late_ns[slot].load(Ordering::Acquire);
        let entry = l.entry_ns[slot].load(Ordering::Acquire);
        // A slot rewritten meanwhile reads lateness 0 or a newer entry: skipped, or harmless
        // (a newer late interrupt).
        if late > 0 {
            log.push((entry, late));
        }
    }
    log
}

/// When `cpu`'s last timer interrupt began, or ended its wait for an early interrupt's timer
/// (0: none yet, or no such CPU).
pub fn last_irq_entry_ns(cpu: u32) -> u64 {
    queue_of(cpu).map_or(0, |q| q.last_entry_ns.load(Ordering::Relaxed))
}

/// Re-programs this CPU's timer (after a remote CPU armed an earlier timer here).
pub fn reprogram_this_cpu() {
    reprogram_local(QUEUES.this());
}

/// What the periodic tick runs, registered by the first [`start_tick`] (the scheduler's tick:
/// this module knows only that something runs every period).
static TICK_HANDLER: spin::Once<fn()> = spin::Once::new();

/// Starts the periodic tick on this CPU: a self re-arming timer, period `1/hz`, that calls
/// `handler` (in interrupt context, on this CPU). Every CPU runs the same handler; the first
/// call registers it.
pub fn start_tick(handler: fn()) {
    TICK_HANDLER.call_once(|| handler);
    reserve_this_cpu();
    crate::arch::apic::timer_setup_this_cpu();
    let _irq = IrqOff::new();
    let cpu = crate::percpu::cpu_id();
    let at = crate::time::uptime_ns() + tick_period_ns();
    let mut st = QUEUES.this().tick.lock();
    st.grid = at;
    st.timer = arm(cpu, at, tick, at);
}

/// The periodic tick's period in ns, `1e9 / apic::tick_hz()` (re-read at every tick, so a
/// changed rate applies from each CPU's next tick). Any context.
pub fn tick_period_ns() -> u64 {
    1_000_000_000 / crate::arch::apic::tick_hz().max(1) as u64
}

fn tick(cpu: u32, deadline: u64) {
    {
        let mut st = QUEUES.this().tick.lock();
        // Only the entry the state names is the tick (a cancelled one never fires; this keeps
        // a stray one from arming a second tick).
        if st.timer.map(|id| id.expires_ns) != Some(deadline) {
            return;
        }
        let period = tick_period_ns();
        if st.stopped {
            // A stopped tick's single expiry (`tick_stop`'s `wake_by`): the handler runs once,
            // the tick stays stopped.
            st.timer = None;
            st.grid = deadline.saturating_add(period);
        } else {
            let now = crate::time::uptime_ns();
            // Next deadline from the previous one (no drift); skip missed periods instead of
            // bursting.
            let mut next = deadline + period;
            if next <= now {
                next = now + period - (now - deadline) % period;
            }
            st.grid = next;
            st.timer = arm(cpu, next, tick, next);
        }
    }
    if let Some(handler) = TICK_HANDLER.get() {
        handler();
    }
}

/// Stops this CPU's periodic tick (tickless idle; Linux's `tick_nohz_idle_stop_tick`), for a
/// CPU about to halt with nothing to run; call with interrupts off (the idle loop, before
/// [`halt_prepare`]). Returns whether the tick is stopped now.
///
/// As Linux, the tick is left running when stopping it gains nothing: another timer of this
/// CPU, or `wake_by`, comes no later than the next tick would. Stopped, the LAPIC is
/// programmed for the earliest timer left (disarmed if none), and, with `wake_by`, the tick
/// fires once at the first point of its grid at or after `wake_by` (its handler runs; the tick
/// stays stopped). Called again while stopped, it moves that single expiry to the new
/// `wake_by` (or cancels it). [`tick_restart`] starts the tick again.
pub fn tick_stop(wake_by: Option<u64>) -> bool {
    let _irq = IrqOff::new();
    let q = QUEUES.this();
    let mut st = q.tick.lock();
    let mut t = q.timers.lock();
    if !st.stopped {
        let Some(id) = st.timer else { return false }; // no tick started here
        let next_tick = id.expires_ns;
        if wake_by.is_some_and(|w| w <= next_tick) || t.earliest().is_some_and(|e| e < next_tick) {
            return false;
        }
        t.cancel(id);
        // Another timer at the tick's very deadline: nothing to gain either.
        if t.earliest().is_some_and(|e| e <= next_tick) {
            st.timer = Some(t.arm(next_tick, (tick as TimerFn, next_tick)));
            return false;
        }
        st.timer = None;
        st.stopped = true;
        st.grid = next_tick;
        q.tick_stopped.store(true, Ordering::Relaxed);
        q.tick_stops.fetch_add(1, Ordering::Relaxed);
    }
    let want = wake_by.map(|w| align_up(st.grid, tick_period_ns(), w));
    if st.timer.map(|id| id.expires_ns) != want {
        if let Some(id) = st.timer.take() {
            t.cancel(id);
        }
        st.timer = want.map(|at| t.arm(at, (tick as TimerFn, at)));
    }
    // Programmed for the tick (or an earlier single expiry): now for what is left.
    let earliest = t.earliest();
    if earliest.map_or(u64::MAX, |e| e.max(q.hang_until.load(Ordering::Relaxed))) != q.programmed.load(Ordering::Relaxed) {
        program_locked(q, earliest);
    }
    true
}

/// Restarts this CPU's periodic tick after [`tick_stop`] (the CPU leaves idle; Linux's
/// `tick_nohz_restart`): on the stopped tick's grid, at its first point after now, so the
/// tick keeps its phase. Call with interrupts off on the CPU itself. Returns how many ticks
/// did not come while it was stopped (0 if it was running).
pub fn tick_restart() -> u64 {
    let _irq = IrqOff::new();
    let q = QUEUES.this();
    let mut st = q.tick.lock();
    if !st.stopped {
        return 0;
    }
    let now = crate::time::uptime_ns();
    let (next, skipped) = forward(st.grid, tick_period_ns(), now);
    let mut t = q.timers.lock();
    if let Some(id) = st.timer.take() {
        t.cancel(id);
    }
    st.timer = Some(t.arm(next, (tick as TimerFn, next)));
    st.grid = next;
    st.stopped = false;
    q.tick_stopped.store(false, Ordering::Relaxed);
    q.ticks_skipped.fetch_add(skipped, Ordering::Relaxed);
    if next < q.programmed.load(Ordering::Relaxed) {
        program_locked(q, Some(next));
    }
    skipped
}

/// Whether `cpu`'s periodic tick is stopped (tickless idle; false for an unknown CPU). Any
/// context; the answer may be stale by the time it is used.
pub fn tick_stopped(cpu: u32) -> bool {
    queue_of(cpu).is_some_and(|q| q.tick_stopped.load(Ordering::Relaxed))
}

/// `cpu`'s tickless counters since boot: [times its tick was stopped, tick periods that
/// passed stopped] (the second counted when the tick restarts).
pub fn tick_counters(cpu: u32) -> [u64; 2] {
    queue_of(cpu).map_or([0; 2], |q| [&q.tick_stops, &q.ticks_skipped].map(|c| c.load(Ordering::Relaxed)))
}

/// Disables interrupts for its lifetime (restoring the previous state).
struct IrqOff(bool);

impl IrqOff {
    #[track_caller]
    fn new() -> Self {
        IrqOff(crate::irqflags::save())
    }
}

impl Drop for IrqOff {
    fn drop(&mut self) {
        crate::irqflags::restore(self.0);
    }
}
