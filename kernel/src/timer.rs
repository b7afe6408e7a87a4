//! Per-CPU timer queues on the LAPIC one-shot timer.
//!
//! Each CPU keeps its pending timers in a [`TimerQueue`] ordered by expiry (ns since boot) and
//! programs its LAPIC timer, in one-shot mode, for the earliest one. The periodic scheduler tick
//! is just a timer that re-arms itself every `1/hz` s (from its previous deadline, so it does
//! not drift); sleeps and (later) hrtick share the same queue. With TSC-deadline support the
//! same queue would program IA32_TSC_DEADLINE instead (TCG has none; see `arch::cpuid`).
//!
//! Contract: `arm` may be called from any CPU for any CPU; arming a remote CPU earlier than what
//! it has programmed sends it a call-function IPI so it re-programs. Handlers run in interrupt
//! context on the owning CPU, with the queue lock released.

use crate::sync::IrqLock;
use cadence_sched::timerq::TimerQueue as Ordered;
use core::sync::atomic::{AtomicU64, Ordering};

/// What happens when a timer fires.
pub type TimerFn = fn(cpu: u32, data: u64);

/// A timer's identity (to cancel it).
pub type TimerId = cadence_sched::timerq::TimerKey;

/// One CPU's pending timers.
pub struct TimerQueue {
    timers: IrqLock<Ordered<(TimerFn, u64)>>,
    /// Expiry currently programmed into the LAPIC (u64::MAX = none).
    programmed: AtomicU64,
    pub fired: AtomicU64,
}

/// Shortest delay programmed into the LAPIC (keeps a storm of tiny timers from livelocking).
pub const MIN_DELAY_NS: u64 = 2_000;

impl TimerQueue {
    pub const fn new() -> Self {
        Self { timers: IrqLock::new(Ordered::new()), programmed: AtomicU64::new(u64::MAX), fired: AtomicU64::new(0) }
    }

    fn earliest(&self) -> Option<u64> {
        self.timers.lock().earliest()
    }

    pub fn len(&self) -> usize {
        self.timers.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for TimerQueue {
    fn default() -> Self {
        Self::new()
    }
}

fn queue_of(cpu: u32) -> Option<&'static TimerQueue> {
    crate::percpu::get(cpu).map(|c| &c.timers)
}

/// Programs this CPU's LAPIC for its earliest timer. Call with the CPU's own queue.
fn reprogram_local(q: &TimerQueue) {
    let Some(next) = q.earliest() else {
        q.programmed.store(u64::MAX, Ordering::Relaxed);
        return;
    };
    let now = crate::time::uptime_ns();
    let delay = next.saturating_sub(now).max(MIN_DELAY_NS);
    q.programmed.store(next, Ordering::Relaxed);
    crate::arch::apic::arm_ns(delay);
}

/// Arms `f(cpu, data)` to run on `cpu` at `expires_ns`.
pub fn arm(cpu: u32, expires_ns: u64, f: TimerFn, data: u64) -> Option<TimerId> {
    let q = queue_of(cpu)?;
    let id = q.timers.lock().arm(expires_ns, (f, data));
    if expires_ns < q.programmed.load(Ordering::Relaxed) {
        if cpu == crate::percpu::cpu_id() {
            let _irq = IrqOff::new();
            reprogram_local(q);
        } else if let Some(target) = crate::percpu::get(cpu) {
            crate::interrupts::kick_timer(target);
        }
    }
    Some(id)
}

/// Cancels a timer; returns whether it was still pending.
pub fn cancel(cpu: u32, id: TimerId) -> bool {
    queue_of(cpu).is_some_and(|q| q.timers.lock().cancel(id).is_some())
}

/// The LAPIC timer interrupt: runs every expired timer of this CPU, then re-programs.
pub fn interrupt() {
    let cpu = crate::percpu::current();
    let q = &cpu.timers;
    q.programmed.store(u64::MAX, Ordering::Relaxed);
    loop {
        let now = crate::time::uptime_ns();
        let due = q.timers.lock().pop_expired(now);
        let Some((_, (f, data))) = due else { break };
        q.fired.fetch_add(1, Ordering::Relaxed);
        let what = if core::ptr::fn_addr_eq(f, tick as TimerFn) { "tick" } else { "timer" };
        crate::trace::timer_expire(what, now, crate::time::uptime_ns());
        f(cpu.cpu_id, data);
    }
    reprogram_local(q);
}

/// Re-programs this CPU's timer (after a remote CPU armed an earlier timer here).
pub fn reprogram_this_cpu() {
    reprogram_local(&crate::percpu::current().timers);
}

/// Starts the periodic tick on this CPU (a self re-arming timer, period `1/hz`).
pub fn start_tick() {
    let cpu = crate::percpu::cpu_id();
    arm(cpu, crate::time::uptime_ns() + tick_period_ns(), tick, crate::time::uptime_ns() + tick_period_ns());
}

pub fn tick_period_ns() -> u64 {
    1_000_000_000 / crate::arch::apic::tick_hz().max(1) as u64
}

fn tick(cpu: u32, deadline: u64) {
    let period = tick_period_ns();
    let now = crate::time::uptime_ns();
    // Next deadline from the previous one (no drift); skip missed periods instead of bursting.
    let mut next = deadline + period;
    if next <= now {
        next = now + period - (now - deadline) % period;
    }
    arm(cpu, next, tick, next);
    crate::interrupts::timer_tick();
}

/// Disables interrupts for its lifetime (restoring the previous state).
struct IrqOff(bool);

impl IrqOff {
    fn new() -> Self {
        let was = x86_64::instructions::interrupts::are_enabled();
        x86_64::instructions::interrupts::disable();
        IrqOff(was)
    }
}

impl Drop for IrqOff {
    fn drop(&mut self) {
        if self.0 {
            x86_64::instructions::interrupts::enable();
        }
    }
}

#[cfg(test)]
mod tests {
    use core::sync::atomic::{AtomicU64, Ordering};

    static FIRED_AT: AtomicU64 = AtomicU64::new(0);

    fn record(_cpu: u32, _data: u64) {
        FIRED_AT.store(crate::time::uptime_ns(), Ordering::SeqCst);
    }

    #[test_case]
    fn oneshot_timer_fires_after_its_deadline() {
        FIRED_AT.store(0, Ordering::SeqCst);
        let cpu = crate::percpu::cpu_id();
        let at = crate::time::uptime_ns() + 1_500_000;
        super::arm(cpu, at, record, 0).expect("armed");
        let give_up = at + 200_000_000;
        while FIRED_AT.load(Ordering::SeqCst) == 0 && crate::time::uptime_ns() < give_up {
            core::hint::spin_loop();
        }
        let fired = FIRED_AT.load(Ordering::SeqCst);
        assert!(fired >= at, "fired at {} before its deadline {}", fired, at);
    }

    #[test_case]
    fn cancelled_timer_does_not_fire() {
        FIRED_AT.store(0, Ordering::SeqCst);
        let cpu = crate::percpu::cpu_id();
        let id = super::arm(cpu, crate::time::uptime_ns() + 1_000_000, record, 0).expect("armed");
        assert!(super::cancel(cpu, id));
        assert!(!super::cancel(cpu, id));
        crate::time::delay_us(3_000);
        assert_eq!(FIRED_AT.load(Ordering::SeqCst), 0);
    }
}
