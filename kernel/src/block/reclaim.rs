//! Page reclaim: the reclaim thread (`kswapd0`, Linux's `mm/vmscan.c` role) and direct reclaim.
//!
//! * An allocation that leaves fewer than `low` pages free wakes `kswapd0` ([`wake_kswapd`]);
//!   it frees clean page-cache pages ([`pagecache::shrink`]) until `high` pages are free
//!   (`Watermarks::reclaim_target`), and wakes the flusher when what is left is dirty (dirty
//!   pages become reclaimable once written).
//! * A task whose allocation fails the slow path reclaims directly ([`direct`]): the pages it
//!   needs plus a batch (`RECLAIM_BATCH`), then retries once (`frame::alloc`).
//!
//! Waking from an allocation: with interrupts on the caller holds no `IrqLock`, so the wait
//! queue and the run queues can be taken; with interrupts off (atomic context, possibly inside
//! the scheduler) only a flag is set: `kswapd0` finds it at the next wakeup with interrupts
//! on, or, while memory stays below `low`, within its 1 s period.

use super::pagecache;
use crate::sched::wait::WaitQueue;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static KSWAPD_WAIT: WaitQueue = WaitQueue::new();
static KSWAPD_KICK: AtomicBool = AtomicBool::new(false);
static STARTED: AtomicBool = AtomicBool::new(false);
/// Pages freed by `kswapd0` and by direct reclaim since boot (vmstat's `pgsteal_*`).
static STEAL_KSWAPD: AtomicU64 = AtomicU64::new(0);
static STEAL_DIRECT: AtomicU64 = AtomicU64::new(0);
/// How often `kswapd0` looks even unwoken while memory is below `low` (a wakeup from atomic
/// context is only a flag).
const PERIOD_NS: u64 = 1_000_000_000;
/// The pause after a pass that freed nothing.
const BACKOFF_NS: u64 = 100_000_000;

/// Wakes the reclaim thread (module doc: only a flag with interrupts off).
pub fn wake_kswapd() {
    if !STARTED.load(Ordering::Relaxed) {
        return;
    }
    KSWAPD_KICK.store(true, Ordering::Release);
    // Every time with interrupts on: a flag set from atomic context wakes nobody by itself.
    if crate::irqflags::are_enabled() {
        KSWAPD_WAIT.wake_all();
    }
}

/// Direct reclaim of `pages` by the allocating task; returns how many were freed.
pub fn direct(pages: u64) -> u64 {
    let freed = pagecache::shrink(pages);
    STEAL_DIRECT.fetch_add(freed, Ordering::Relaxed);
    freed
}

/// Pages freed by `kswapd0` and by direct reclaim since boot.
pub fn stolen() -> (u64, u64) {
    (STEAL_KSWAPD.load(Ordering::Relaxed), STEAL_DIRECT.load(Ordering::Relaxed))
}

/// Starts `kswapd0` (at boot).
pub fn start() {
    let opts = crate::sched::task::SpawnOptions::new("kswapd0").kthread();
    match crate::sched::spawn(opts, kswapd) {
        Ok(_) => STARTED.store(true, Ordering::Relaxed),
        Err(e) => crate::kprintln!("cadence: warning: no reclaim thread: {:?}", e),
    }
}

fn kswapd() -> i32 {
    loop {
        // Under pressure (fewer than `low` pages free) it looks every period even unwoken, as a
        // wakeup from atomic context is only a flag. Otherwise it sleeps until woken, as Linux's
        // kswapd sleeps until `wakeup_kswapd`: the allocation that takes memory below `low`
        // sets the flag, and the first one with interrupts on wakes it. A periodic look on an
        // idle machine cost the CPU it slept on a timer interrupt a second, which tickless
        // idle exists to avoid (the nohz scenario's idle CPU at 2.3 interrupts a second).
        let kicked = || KSWAPD_KICK.load(Ordering::Acquire);
        if crate::mm::frame::watermarks().0.wakes_reclaim(crate::mm::frame::free_frames()) {
            KSWAPD_WAIT.wait_until_uninterruptible_deadline(kicked, crate::time::uptime_ns().saturating_add(PERIOD_NS));
        } else {
            KSWAPD_WAIT.wait_until_uninterruptible(kicked);
        }
        let kicked = KSWAPD_KICK.swap(false, Ordering::AcqRel);
        let wm = crate::mm::frame::watermarks().0;
        let free = crate::mm::frame::free_frames();
        if !kicked && !wm.wakes_reclaim(free) {
            continue;
        }
        let target = wm.reclaim_target(free);
        if target == 0 {
            continue;
        }
        let freed = pagecache::shrink(target);
        STEAL_KSWAPD.fetch_add(freed, Ordering::Relaxed);
        if freed < target && pagecache::counts().dirty > 0 {
            super::writeback::kick_flusher();
        }
        if freed == 0 {
            // Nothing reclaimable: rest instead of answering every allocation's wakeup
            // (Linux stops kswapd after `MAX_RECLAIM_RETRIES` fruitless passes).
            // An uninterruptible timed wait (a kernel thread; the condition never holds).
            let until = crate::time::uptime_ns().saturating_add(BACKOFF_NS);
            KSWAPD_WAIT.wait_until_uninterruptible_deadline(|| false, until);
        }
    }
}
