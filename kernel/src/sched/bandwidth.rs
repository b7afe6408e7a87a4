//! CFS bandwidth control (`cpu.max`, `cpu.cfs_quota_us`): the kernel side of
//! `cadence_sched::cfs_bandwidth`, Linux's `account_cfs_rq_runtime`, `throttle_cfs_rq` and
//! `unthrottle_cfs_rq`.
//!
//! * **Charging** (`class::fair::update_curr_fair`, run-queue lock held): every ns the running
//!   fair task runs is charged to the `Local` of each group on its path that has a quota
//!   ([`account`]); a `Local` out of runtime that the pool cannot top up asks for a
//!   reschedule and marks the queue (`RqInner::bw_check`).
//! * **Throttling** (`FairClass::put_prev`, the switch's full path, which the fast path leaves
//!   to while a throttle is due or in force): [`throttle_due`] throttles those queues; a
//!   throttled queue reads as empty to `fair_group::propagate` (`GroupState::empty`), so its
//!   entity leaves the parent queue and the pick no longer descends into it. Its tasks stay
//!   queued in it (still counted in `nr_fair_tasks`).
//! * **Unthrottling** (the tick, every CPU, idle or not: [`tick`]): a throttled queue asks its
//!   pool, which refills at each period boundary (the period starting at the group's first
//!   grant, as Linux's period timer); given runtime, it is put back in its parent queue.
//! * **Load balancing** leaves a task below a throttled queue where it is
//!   ([`throttled_hierarchy`], Linux's `throttled_lb_pair` for the source side): moved, it would
//!   spend another CPU's part of the group's runtime. (Linux also refuses a throttled
//!   destination; here the task would wait in the destination's throttled queue.)
//!
//! Lock order: run-queue lock, then the group's `bandwidth` pool lock (a leaf).

use super::group::{self, GroupId, ROOT_GROUP};
use super::RqInner;
use cadence_sched::cfs_bandwidth::{Limit, DEFAULT_SLICE_NS};
use cadence_sched::fair_group::{self, Propagate};
use cadence_sched::Errno;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Groups with a quota: the charging path walks nothing while there are none.
static LIMITED_GROUPS: AtomicU32 = AtomicU32::new(0);
/// `kernel.sched_cfs_bandwidth_slice_us`, in ns.
static SLICE_NS: AtomicU64 = AtomicU64::new(DEFAULT_SLICE_NS);

fn slice() -> u64 {
    SLICE_NS.load(Ordering::Relaxed)
}

/// `kernel.sched_cfs_bandwidth_slice_us` (Linux: at least 1).
pub fn slice_us() -> u64 {
    slice() / 1_000
}

pub fn set_slice_us(us: u64) -> Result<(), Errno> {
    if us == 0 || us > 1_000_000 {
        return Err(Errno::EINVAL);
    }
    SLICE_NS.store(us * 1_000, Ordering::Relaxed);
    Ok(())
}

/// Charges `delta` ns, run at `now` by a task whose entity is in group `gid`'s queue, to
/// every group on the path with a quota. True if one of them is out of runtime (reschedule:
/// the switch throttles it).
pub fn account(rq: &mut RqInner, gid: GroupId, delta: u64, now: u64) -> bool {
    if LIMITED_GROUPS.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let mut out = false;
    let mut id = gid;
    // Bounded by the depth limit (each queue names its parent).
    for _ in 0..=cadence_sched::fair_group::MAX_GROUP_DEPTH {
        if id == ROOT_GROUP {
            break;
        }
        let Some(grq) = rq.group_rqs.get_mut(&id) else { break };
        if grq.tg.limited.load(Ordering::Relaxed) && grq.bw.throttled_since.is_none() {
            let mut pool = grq.tg.bandwidth.lock();
            if !grq.bw.account(&mut pool, delta, slice(), now) {
                out = true;
            }
        }
        id = grq.parent;
    }
    if out {
        rq.bw_check = true;
    }
    out
}

/// Throttles the queues on `gid`'s path that ran out (`bw_check`), before the switch puts the
/// running task: their entities leave their parent queues.
pub fn throttle_due(rq: &mut RqInner, gid: GroupId, now: u64) {
    if !core::mem::take(&mut rq.bw_check) {
        return;
    }
    let mut id = gid;
    for _ in 0..=cadence_sched::fair_group::MAX_GROUP_DEPTH {
        if id == ROOT_GROUP {
            break;
        }
        let Some(grq) = rq.group_rqs.get_mut(&id) else { break };
        let parent = grq.parent;
        if grq.tg.limited.load(Ordering::Relaxed) && grq.bw.throttled_since.is_none() {
            let throttle = {
                let mut pool = grq.tg.bandwidth.lock();
                let out = !grq.bw.has_runtime(&mut pool, slice(), now);
                if out {
                    grq.bw.throttle(&mut pool, now);
                }
                out
            };
            if throttle {
                rq.bw_nr_throttled += 1;
                crate::trace::cfs_throttle(id, true);
                fair_group::propagate(rq, id, false, Propagate::Changes);
            }
        }
        id = parent;
    }
}

/// Is `task`'s fair entity below a throttled group queue of `rq` (Linux's
/// `throttled_hierarchy`)? Load balancing leaves such a task where it is: moved, it would run on
/// another CPU's share of its group's runtime while its own queue waits for the next period.
pub fn throttled_hierarchy(rq: &RqInner, task: &super::task::Task) -> bool {
    if rq.bw_nr_throttled == 0 {
        return false;
    }
    let mut id = task.se_group.load(Ordering::Relaxed);
    // Bounded by the group depth limit.
    for _ in 0..=cadence_sched::fair_group::MAX_GROUP_DEPTH {
        let Some(grq) = rq.group_rqs.get(&id) else { return false };
        if grq.bw.throttled_since.is_some() {
            return true;
        }
        id = grq.parent;
    }
    false
}

/// At every tick: throttled queues here that their pools can serve again go back into their
/// parent queues. True if one did (reschedule).
pub fn tick(rq: &mut RqInner, now: u64) -> bool {
    if rq.bw_nr_throttled == 0 {
        return false;
    }
    let mut ready: arrayvec::ArrayVec<GroupId, 32> = arrayvec::ArrayVec::new();
    for (id, grq) in rq.group_rqs.iter() {
        if grq.bw.throttled_since.is_some() && !ready.is_full() {
            ready.push(*id);
        }
    }
    let mut resched = false;
    for id in ready {
        let Some(grq) = rq.group_rqs.get_mut(&id) else { continue };
        let back = {
            let mut pool = grq.tg.bandwidth.lock();
            grq.bw.try_unthrottle(&mut pool, slice(), now)
        };
        if back {
            rq.bw_nr_throttled = rq.bw_nr_throttled.saturating_sub(1);
            crate::trace::cfs_throttle(id, false);
            fair_group::propagate(rq, id, true, Propagate::Changes);
            resched = true;
        }
    }
    resched
}

/// A destroyed group's queue here goes (`class::forget_group`): it no longer counts as
/// throttled.
pub fn forget(rq: &mut RqInner, gid: GroupId, now: u64) {
    if let Some(grq) = rq.group_rqs.get_mut(&gid) {
        let mut pool = grq.tg.bandwidth.lock();
        if grq.bw.reset(&mut pool, now) {
            rq.bw_nr_throttled = rq.bw_nr_throttled.saturating_sub(1);
        }
    }
}

/// Sets group `gid`'s limit (`cpu.max`, `cpu.cfs_quota_us` ...): the pool restarts full,
/// every CPU's part of it is zeroed and throttled queues go back (Linux's
/// `tg_set_cfs_bandwidth`). ESRCH for an unknown group, EINVAL for the root (no limit there).
pub fn set_limit(gid: GroupId, limit: Limit) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let tg = group::lookup(gid).ok_or(if gid == ROOT_GROUP { Errno::EINVAL } else { Errno::ESRCH })?;
    {
        let mut pool = tg.bandwidth.lock();
        let was = pool.limited();
        pool.set_limit(limit);
        let now = pool.limited();
        tg.limited.store(now, Ordering::Relaxed);
        match (was, now) {
            (false, true) => {
                LIMITED_GROUPS.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                LIMITED_GROUPS.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }
    for cpu in crate::percpu::online_cpus() {
        let rq = super::rq_of(cpu.cpu_id);
        let resched = {
            let mut g = rq.lock.lock();
            let now = crate::time::uptime_ns();
            super::update_curr(&mut g, now);
            let back = match g.group_rqs.get_mut(&gid) {
                Some(grq) => {
                    let mut pool = grq.tg.bandwidth.lock();
                    grq.bw.reset(&mut pool, now)
                }
                None => false,
            };
            if back {
                g.bw_nr_throttled = g.bw_nr_throttled.saturating_sub(1);
                crate::trace::cfs_throttle(gid, false);
                fair_group::propagate(&mut *g, gid, true, Propagate::Changes);
            }
            back
        };
        if resched {
            // With an IPI: a tickless idle CPU has no next tick to notice the flag.
            super::set_need_resched(cpu.cpu_id);
        }
    }
    Ok(())
}

/// A group's limit now.
pub fn limit(gid: GroupId) -> Limit {
    group::lookup(gid).map(|tg| tg.bandwidth.lock().limit).unwrap_or_default()
}

/// What `cpu.stat` shows of a group.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    /// CPU time of the group's tasks and its descendants', ns.
    pub usage_ns: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
    pub nr_bursts: u64,
    pub burst_ns: u64,
}

/// Group `gid`'s `cpu.stat` (the root: the CPU time of every task, Linux's root
/// `usage_usec`).
pub fn stat(gid: GroupId) -> Stat {
    let mut st = Stat::default();
    if gid == ROOT_GROUP {
        st.usage_ns = super::task::all().iter().filter(|t| !t.is_idle).map(|t| t.stats.sum_exec_runtime.load(Ordering::Relaxed)).sum();
        return st;
    }
    let Some(tg) = group::lookup(gid) else { return st };
    {
        let pool = tg.bandwidth.lock();
        st.nr_periods = pool.nr_periods;
        st.nr_throttled = pool.nr_throttled;
        st.throttled_ns = pool.throttled_ns;
        st.nr_bursts = pool.nr_bursts;
        st.burst_ns = pool.burst_ns;
    }
    // The subtree's usage: its queues' on every CPU, plus the running task's time not yet
    // charged (update_curr first).
    let subtree = group::subtree(gid, |_| true);
    for cpu in crate::percpu::online_cpus() {
        let mut g = super::rq_of(cpu.cpu_id).lock.lock();
        super::update_curr(&mut g, crate::time::uptime_ns());
        for id in &subtree {
            if let Some(grq) = g.group_rqs.get(id) {
                st.usage_ns += grq.usage_ns;
            }
        }
    }
    st
}
