//! `schedule()`: the pick, the context switch and its completion on the new task's side
//! ([`finish_task_switch`]), and the check that a pick never passes over a queued RT task.

use super::task::{ClassId, Task, TaskState};
use super::{
    activate_on, class, coresched, cpu_prio, dequeue_task, end_wait, hrtick, lockup, reserve, rq_of, rqlock, select_cpu, start_wait,
    task_dead, this_cpu, this_rq, ttwu_pending, update_counts, update_curr, RqInner, CURRENT,
};
use alloc::sync::Arc;
use cadence_sched::eevdf::DEQUEUE_SLEEP;
use core::sync::atomic::{AtomicU64, Ordering};

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
    // An overdue timer's wakeup should take part in this pick (`TIMER_KICK`): with interrupts
    // on, the raised interrupt runs here, before it.
    if super::timer_kick_enabled() {
        crate::timer::kick_if_overdue();
    }
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

pub(super) fn __schedule(preempted: bool) {
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
    // Leaving tickless idle (from the idle loop or an interrupt's exit): the tick restarts
    // before anything runs here.
    super::nohz::idle_exit(cpu.cpu_id);
    let rq = rq_of(cpu.cpu_id);
    let mut g = rq.lock.lock();
    // On a core where cookies are in play, pick for the whole core with every sibling's run
    // queue locked (lock order: release ours, take the core's in CPU order).
    // (One fixed array, filled in place: `__schedule` runs on 16 KiB task stacks too.)
    let mut core_guards = coresched::SiblingGuards::new();
    let mut core_locked = false;
    let cookie_change = coresched::has_pending(g.curr.as_ref().expect("curr exists"));
    // An offline CPU (`hotplug`) runs its idle task only: what runs here is moved away.
    let offline = !super::online_mask().contains(cpu.cpu_id as usize);
    if !offline && (coresched::active(cpu) || (cookie_change && coresched::enabled() && coresched::siblings(cpu.cpu_id).count() > 1)) {
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
    // `prev`'s running stretch, before a sleep dequeues it or the pick puts it.
    super::pelt::update_task(&g, &prev, now, prev.is_on_rq(), true);
    // The preemption points' flag goes first (`request_preempt_point`'s contract): a request
    // made after it is seen again, one made before is taken now.
    framework::preempt::clear_preempt_work();
    rq.need_resched.store(false, Ordering::SeqCst);
    // A wakeup handed to us after the drain at the top (its pusher saw `need_resched` set or
    // this CPU polling, and sent no IPI): reschedule again to drain it (see `queue_wakeup`).
    if !rq.wake_list.is_empty(Ordering::SeqCst) {
        super::flag_need_resched(cpu.cpu_id);
    }
    // Refills still wanted (a busy lock at the top): asked again for the next point.
    reserve::ask_again_if_pending(cpu.cpu_id);
    lockup::scheduled(cpu.cpu_id);
    // Re-read: a prctl may have given `prev` a pending cookie while our lock was dropped to
    // take the core's (a change applies only here, under the core's locks).
    let cookie_change = if core_locked { coresched::has_pending(&prev) } else { cookie_change };
    let cookie_changed = cookie_change && coresched::apply_pending(&prev, cpu.cpu_id);

    let mut migrate = false;
    // An active balance asked of this CPU (`load_balance`'s `active_balance`): taken by this
    // switch whatever it finds (Linux's stopper moves a task or reports that it could not).
    let push_to = rq.active_balance_to.swap(super::rq::NO_CPU, Ordering::AcqRel);
    let mut migrate_to = None;
    if !prev.is_idle && prev.is_on_rq() {
        if !preempted && prev.state() != TaskState::Running {
            dequeue_task(&mut g, &prev, DEQUEUE_SLEEP);
        } else if prev.state() != TaskState::Dead && (offline || !prev.affinity().contains(g.cpu as usize)) {
            // A task preempted on its way out (Dead set, its last `schedule()` not reached)
            // stays queued here, affinity or not, to finish exiting: migrated, it was
            // disposed of by `finish_task_switch` (dead, not queued) and never ran again,
            // leaking the reference in `exit`'s frame (the chaos stress, 1,000,000
            // operations: a `sched_setaffinity` IPI landing between `set_state(Dead)` and
            // `drop(me)`).
            dequeue_task(&mut g, &prev, 0);
            migrate = true;
        } else if push_to != super::rq::NO_CPU
            && prev.state() == TaskState::Running
            && prev.class() == ClassId::Fair
            && prev.affinity().contains(push_to as usize)
            && super::online_mask().contains(push_to as usize)
        {
            // Pushed by the active balance: it moves after the switch, to the CPU that asked.
            dequeue_task(&mut g, &prev, 0);
            migrate = true;
            migrate_to = Some(push_to);
        }
    }
    if push_to != super::rq::NO_CPU {
        super::load_balance::note_active_balance(cpu.cpu_id, push_to, migrate_to.is_some());
    }
    // The class's fast path (Linux's `pick_next_task_fair(rq, prev)`): it picks with `prev`
    // still current and switches only what differs (for a fair task: the group levels below
    // the common ancestor). Not on a core-wide pick, which needs every sibling's `prev` put.
    // (Moved into `next` below: a local still holding a reference across the switch would
    // keep the task alive for as long as `prev` is switched out — for ever if it exits.)
    let mut fast_next = if core_locked || prev.is_idle || offline { None } else { class::of(&prev).pick_next_task(&mut g, &prev) };
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
            let next = match offline {
                true => g.idle.clone().expect("idle task exists"),
                false => fast_next.take().unwrap_or_else(|| pick_next(&mut g)),
            };
            coresched::check_alone_pick(cpu.cpu_id, &next);
            (next, false)
        }
    };
    check_rt_pick(&g, &next, forced_idle || offline, core_locked.then_some(&core_guards[..]));
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
    if !Arc::ptr_eq(&prev, &next) {
        // `next`'s waiting stretch (Linux's `set_next_entity` updates it before it runs).
        super::pelt::update_task(&g, &next, now, true, false);
        next.stats.exec_start.store(now, Ordering::Relaxed);
        prev.stats.exec_start.store(now, Ordering::Relaxed);
        // `prev` stays queued behind `next`: an idle CPU may take it (`WC_PULL`). Not when it
        // is picked again (nothing else to run): it would be asked for a running task.
        if prev.is_on_rq() && !prev.is_idle {
            super::load_balance::note_waiting(&g, &prev);
        }
    }
    hrtick::update(&mut g, &next, now);
    end_wait(&next, now, cpu.cpu_id);
    let woken = next.stats.woken_at.swap(0, Ordering::Relaxed);
    if woken != 0 {
        let lat = now.saturating_sub(woken);
        next.stats.last_wakeup_latency.store(lat, Ordering::Relaxed);
        next.stats.last_woken_at.store(woken, Ordering::Relaxed);
        next.stats.max_wakeup_latency.fetch_max(lat, Ordering::Relaxed);
    }
    if migrate {
        g.migrate_out = Some((prev.clone(), migrate_to));
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
    // The previous current's reference goes at once: `prev` holds one until the next side's
    // `finish_switch` hands it back.
    drop(CURRENT.set(&next));
    g.exec_start = now;
    update_counts(rq, &g);
    g.curr = Some(next);
    // Interrupts are off and this CPU holds its run-queue lock; `prev` runs here; `next` is
    // queued here and runs nowhere (a queued task that is not `curr` has `on_cpu == false`).
    // The lock stays held across the switch; `next` takes it over.
    g.switch_to(prev, |g| g.curr.as_deref().expect("curr was just set"));
    // We are `prev` again, possibly on another CPU, resumed by some other task's schedule().
    finish_task_switch();
}

/// Completes a switch on the new task's side: releases the run-queue lock the switching
/// CPU kept, lets the previous task be run elsewhere, and disposes of a dead one.
pub(super) fn finish_task_switch() {
    let cpu = this_cpu();
    let rq = rq_of(cpu.cpu_id);
    // The task that switched to us kept this CPU's run-queue lock: take it over, with the task
    // that switched away.
    let (mut g, prev) = rq.lock.finish_switch();
    let migrate = g.migrate_out.take();
    // A dead task that was *preempted* on its way out (between setting Dead and its final
    // `schedule()`) is still queued and will run again to finish exiting: only one that has
    // left its run queue is gone. Decided under the lock: once it is released another CPU may
    // requeue the preempted task (`requeue_locked`, from a `sched_setattr` that looked it up
    // just before it died), and `on_rq` read then could be false for a moment, disposing of a
    // task that will still run on its stack.
    let dead = prev.state() == TaskState::Dead && !prev.is_on_rq();
    prev.on_cpu.store(false, Ordering::Release);
    // Released with interrupts still off (the guard of a taken-over lock leaves them off).
    drop(g);
    if dead {
        task_dead(prev);
    }
    if let Some((t, to)) = migrate {
        // The task left a CPU it may no longer use and is on no run queue. A wakeup may have
        // queued it meanwhile (it could have been preempted while going to sleep): both paths
        // hold its `params` lock, so whoever comes second sees it queued and leaves it.
        let _p = t.params.lock();
        // A wakeup handed to a wake list (it was still switching out) is the drain's to queue.
        if !t.is_on_rq() && t.state() != TaskState::Dead && !t.wake_queued.load(Ordering::Acquire) {
            let target = to.filter(|&c| t.affinity().contains(c as usize) && super::online_mask().contains(c as usize));
            activate_on(&t, target.unwrap_or_else(|| select_cpu(&t, cpu.cpu_id)), 0);
        }
    }
    // A preempted RT task may run elsewhere; a CPU that dropped in priority may pull.
    balance_callbacks(cpu.cpu_id, rq.level_before_switch.load(Ordering::Relaxed));
    // Wakeups handed to us while a task was switching out here (see `queue_wakeup`).
    ttwu_pending();
}

/// After a scheduling decision on `cpu` (its lock released): every class's balance hook
/// (`BalancePoint::Decision`: RT pushes waiting tasks that may run elsewhere and pulls if the
/// CPU's level fell below `level_before`; Linux's `balance_rt`/`push_rt_tasks` callbacks).
/// Cheap when there is nothing to do.
pub(super) fn balance_callbacks(cpu: u32, level_before: u8) {
    class::balance(cpu, class::BalancePoint::Decision { level_before });
}
