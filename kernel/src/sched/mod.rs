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
//! The core is split by concern, each file's items re-exported here (`crate::sched::X`):
//! * `rq.rs`: [`Rq`], [`RqInner`], [`SeKey`], the per-CPU queues ([`rq_of`], [`this_rq`],
//!   [`init_cpu`]) and the running task ([`current`], [`current_tid`], [`cpu_prio`]);
//! * `tunables.rs`: the `kernel.sched_*` tunables ([`fair_tunables`], RR timeslice, idle poll);
//! * `enqueue.rs`: the class queues' glue (`requeue_locked`, `with_task_rq`,
//!   `enqueue_task`, `dequeue_task`, `update_curr`, `wakeup_preempt`);
//! * `accounting.rs`: counts for lock-free readers (`update_counts`, `RT_OVERLOAD`), wait
//!   times, and the stress tests' checks ([`check_accounting`], [`bad_enqueues`]);
//! * `switch.rs`: [`schedule`], the pick and the context switch (`__schedule`,
//!   `finish_task_switch`), [`rt_passed_over`];
//! * `wakeup.rs`: [`try_to_wake_up`], the remote wake lists ([`ttwu_pending`]), reschedule
//!   requests and IPIs (`set_need_resched`), the `TTWU_QUEUE` and `RT_PUSH_IPI` switches;
//! * `spawn.rs`: [`spawn`], [`spawn_result`], a new task's first code, [`exit`] and the
//!   disposal of a dead task;
//! * `preempt.rs`: [`scheduler_tick`], [`irq_exit`], preemption points and [`PreemptGuard`],
//!   [`yield_now`], [`sleep_until`];
//! * `idle.rs`: [`init_this_cpu`], [`online_mask`], [`idle_loop`];
//! * `nohz.rs`: tickless idle (the tick stopped on idle CPUs, the timekeeping duty, the nohz
//!   idle-balance kick).
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
//! 3. leaf locks: `task.parked_se`, `task.pelt` then `Rq::pelt_removed` (`pelt`), wait-queue
//!    lists, timer queues (a CPU's tick state, then its queue), the task table.
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
pub mod bandwidth;
pub mod class;
pub mod coresched;
pub mod cputimer;
pub mod debug;
pub mod features;
pub mod group;
pub mod hotplug;
pub mod hrtick;
pub mod load_balance;
pub mod lockup;
pub mod nohz;
pub mod pelt;
pub mod pi;
pub mod pipe;
pub mod process;
pub mod reserve;
pub mod rqlock;
pub mod rt_limits;
pub mod rusage;
pub mod signal;
pub mod task;
pub mod topology;
pub mod wait;
pub mod wc;

mod accounting;
mod enqueue;
mod idle;
mod preempt;
mod rq;
mod spawn;
mod switch;
mod tunables;
mod wakeup;

#[cfg(test)]
mod coresched_tests;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod tests;

use task::{ClassId, Tid};

pub use accounting::{bad_enqueues, check_accounting, cpu_times, fair_snapshot, idle_ns, idle_ns_total, loadavg};
pub use idle::{idle_loop, init_this_cpu, online_mask, possible_mask};
pub use preempt::{
    irq_exit, preempt_disable, preempt_point, scheduler_tick, sleep_ns, sleep_until, sleep_until_interruptible, yield_now, Interrupted,
    PreemptGuard,
};
pub use rq::{cpu_prio, current, current_cputime_ns, current_is_rt, current_tid, init_cpu, rq_of, this_rq, Rq, RqInner, SeKey};
pub use spawn::{exit, set_exit_notifier, spawn, spawn_result, JoinHandle, SpawnError};
pub use switch::{rt_passed_over, schedule, RtPassedOver};
pub use task::{find, wait};
pub use tunables::{
    fair_tunables, idle_poll_ns, init_tunables, rr_timeslice_ms, rr_timeslice_ns, set_base_slice_ns, set_idle_poll_ns, set_rr_timeslice_ms,
    set_timer_kick, set_wakeup_granularity_ns, timer_kick_enabled,
};
pub use wakeup::{
    kick_task, resched_ipis_sent, rt_push_ipi_enabled, set_rt_push_ipi, set_ttwu_queue, try_to_wake_up, ttwu_pending, ttwu_queue_enabled,
    wake_up,
};

// Shared between the files above and the scheduler's other modules (paths `super::X`).
use accounting::{end_wait, note_bad_enqueue, start_wait, update_counts, BAD_ENQUEUES, RT_OVERLOAD};
use enqueue::{dequeue_task, enqueue_task, update_curr, wakeup_preempt};
pub(super) use enqueue::{lock_task_rq, requeue_locked, with_task_rq};
pub(super) use preempt::{preempt_count_dec, preempt_count_inc};
pub(super) use rq::with_current;
use rq::{this_cpu, CURRENT};
use spawn::task_dead;
use switch::{__schedule, balance_callbacks, finish_task_switch};
use wakeup::{activate_on, activate_on_if, flag_need_resched, select_cpu, send_reschedule_ipi, set_need_resched};
