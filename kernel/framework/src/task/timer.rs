//! Timers that hand a reference-counted object to their handler: a sleeping task's wakeup
//! holds the task alive until the timer fires or is cancelled, without the caller leaking and
//! recovering the reference by hand.

use alloc::sync::Arc;
use core::marker::PhantomData;

/// What a [`Timer`] calls when it fires (interrupt context, interrupts off, on the CPU it was
/// armed on).
pub trait TimerTarget: Send + Sync + 'static {
    /// The timer fired; it hands over the reference it held.
    fn timer_fired(self: Arc<Self>);
}

/// A pending timer holding a reference to its target. Dropping it leaves the timer pending
/// (the reference goes with the firing); [`cancel`](Self::cancel) stops it.
pub struct Timer<T> {
    cpu: u32,
    id: crate::timer::TimerId,
    _target: PhantomData<fn(Arc<T>)>,
}

fn fire<T: TimerTarget>(_cpu: u32, data: u64) {
    // SAFETY: `data` is the reference `arm` leaked for this timer alone (the `fire::<T>` it
    // was armed with names the type), and a timer fires at most once, and never once
    // cancelled.
    let target = unsafe { Arc::from_raw(data as *const T) };
    target.timer_fired();
}

/// Arms a timer on `cpu`'s queue firing at `expires_ns` (`time::uptime_ns`) that calls
/// `target.timer_fired()`. `None` (the reference dropped) if no timer could be armed.
pub fn arm<T: TimerTarget>(cpu: u32, expires_ns: u64, target: Arc<T>) -> Option<Timer<T>> {
    let raw = Arc::into_raw(target) as u64;
    match crate::timer::arm(cpu, expires_ns, fire::<T>, raw) {
        Some(id) => Some(Timer { cpu, id, _target: PhantomData }),
        None => {
            // SAFETY: not handed to a timer: the reference leaked above is ours again.
            drop(unsafe { Arc::from_raw(raw as *const T) });
            None
        }
    }
}

impl<T: TimerTarget> Timer<T> {
    /// Cancels the timer: true if it will never fire (its reference is dropped here), false if
    /// it fired or is firing.
    pub fn cancel(self) -> bool {
        // The id and the leaked reference: recover it only if the timer queue gave the entry
        // back, i.e. it will never run.
        match crate::timer::cancel_entry(self.cpu, self.id) {
            Some(data) => {
                // SAFETY: the cancelled entry will never run, so the reference `arm` leaked
                // into it is ours again.
                drop(unsafe { Arc::from_raw(data as *const T) });
                true
            }
            None => false,
        }
    }
}
