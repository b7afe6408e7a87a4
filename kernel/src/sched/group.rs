//! Task groups: hierarchical fair group scheduling (Linux `CONFIG_FAIR_GROUP_SCHED`).
//!
//! A [`TaskGroup`] is a node of a tree rooted at the root group (id [`ROOT_GROUP`], whose
//! per-CPU queue is the run queue's own `fair`). Each non-root group has, on every CPU where it
//! has runnable tasks, its own fair queue ([`GroupRq`], in that CPU's `RqInner::group_rqs`,
//! protected by the run-queue lock) and **one entity** (`SeKey::Group(id)`) in its parent's
//! queue on that CPU. Picking descends from the root queue through group entities to a task.
//!
//! **Shares** (Linux `cpu.weight` semantics): `weight` 1..=10000, default 100, gives
//! `shares = weight × 1024 / 100`. A group's entity on CPU *c* weighs
//! `calc_group_shares(shares, total, load_c)` = `shares × load_c / total`, clamped to
//! `[MIN_SHARES, shares]` (Linux's calc_group_shares), where `total = load_total − contrib_c +
//! load_c`: this CPU's part fresh, the others' as last published. Load here is simplified to
//! the **instantaneous queued weight** (Σ weights of the group's queued entities on a CPU)
//! instead of PELT's decayed average. Each CPU publishes its part (`GroupRq::contrib`) to the
//! shared `load_total` when its queue empties or fills, and otherwise at most once a
//! millisecond (`GroupRq::sync_load`, Linux's `update_tg_load_avg` rate limit). Weights are
//! refreshed along the affected path on enqueue and dequeue (up to the first level that did
//! not change, `class::fair::propagate`) and on every level at the tick.
//!
//! **Membership**: a task's *manual* group is `Task::group` (what `group move` sets, like a
//! cgroup); with autogroup on, a fair task in the root group runs in its autogroup instead
//! (see `autogroup`). RT tasks ignore groups (Cadence has no RT group scheduling): they are
//! scheduled as if in the root group. `TaskGroup::nr_tasks` counts members; a group can be
//! destroyed only when it has none and no child groups (EBUSY).
//!
//! **Registry**: groups by id in [`GROUPS`] (what the scheduler looks up, under run-queue
//! locks: an `IrqLock` over an arena tree whose capacity is reserved before the lock is taken,
//! so creating a group allocates nothing with interrupts off), names in [`NAMES`] (a `SpinLock`:
//! only `create`, `destroy` and `by_name` take it, never an interrupt handler, and its holders
//! never sleep; `create` allocates under it with interrupts on, while `destroy` may also come
//! with interrupts off, from a task's last switch when it was an autogroup's last member),
//! and each group's count of child groups (`nr_children`). No operation scans every group: the
//! chaos stress keeps thousands alive (5,787 after 300,000 operations at -smp 8), and with a
//! scan of all names per create and of all groups per destroy under the interrupts-off lock the
//! scheduler's lookups also take, 300,000 operations took 8.4 times as long as 100,000.
//!
//! Lock order: [`NAMES`] (held across a create or destroy, which it serializes) before
//! [`GROUPS`]; `GROUPS` is a leaf lock: it may be taken under a run-queue lock, and nothing is
//! locked while holding it.

use crate::sync::{IrqLock, SpinLock};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_sched::arena::{grow_target, ArenaMap};
use cadence_sched::{Errno, FairRq};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

pub type GroupId = u32;
pub const ROOT_GROUP: GroupId = 0;
/// Linux `cpu.weight` default and range.
pub const DEFAULT_WEIGHT: u64 = 100;
pub const MAX_WEIGHT: u64 = 10_000;

/// What made the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    Root,
    Manual,
    /// An autogroup (per tty or per session).
    Auto,
}

pub struct TaskGroup {
    pub id: GroupId,
    pub name: String,
    pub parent: GroupId,
    /// Levels below the root group (1 for a child of the root): a member task's entity sits
    /// this many group entities below the root queue.
    pub depth: u32,
    pub kind: GroupKind,
    /// Shares (Linux `tg->shares`): `cpu.weight × 1024 / 100`, or a nice's weight for an
    /// autogroup whose nice was set.
    shares: AtomicU64,
    /// Σ over CPUs of the group's queued weight.
    load_total: AtomicU64,
    /// Member tasks (any state).
    pub nr_tasks: AtomicU32,
    /// Child groups (changed under [`NAMES`], by `create` and `destroy`).
    nr_children: AtomicU32,
    /// Autogroup nice (what `/proc/<pid>/autogroup` shows).
    pub nice: AtomicI32,
    /// `cpu.idle`: the group's entities weigh as a SCHED_IDLE task's (its shares kept for
    /// when it is cleared, as Linux's `tg->idle`).
    pub idle: AtomicBool,
    /// Bandwidth control (`cpu.max`): the group's runtime pool and statistics. A leaf lock,
    /// taken under run-queue locks (`sched::bandwidth`).
    pub bandwidth: IrqLock<cadence_sched::cfs_bandwidth::Pool>,
    /// The pool has a quota (read without its lock by the charging path).
    pub limited: AtomicBool,
}

impl TaskGroup {
    /// `cpu.weight` (shares × 100 / 1024, rounded).
    pub fn weight(&self) -> u64 {
        (self.shares() * DEFAULT_WEIGHT + 512) / cadence_sched::weight::NICE_0_LOAD
    }

    pub fn shares(&self) -> u64 {
        self.shares.load(Ordering::Relaxed).max(1)
    }

    /// What its entities weigh by: its shares, or SCHED_IDLE's weight while `cpu.idle` is set.
    pub fn effective_shares(&self) -> u64 {
        if self.idle.load(Ordering::Relaxed) {
            cadence_sched::weight::WEIGHT_IDLEPRIO
        } else {
            self.shares()
        }
    }

    pub fn load_total(&self) -> u64 {
        self.load_total.load(Ordering::Relaxed)
    }

    /// Its path from the root group: `/` for the root, `/<name>` for a child of the root,
    /// `/<parent's names>/<name>` below (the cgroup path `/proc/PID/cgroup` shows).
    pub fn path(&self) -> String {
        if self.id == ROOT_GROUP {
            return "/".into();
        }
        let mut parts = alloc::vec![self.name.clone()];
        let mut up = self.parent;
        // Bounded by the depth limit; a destroyed ancestor cannot be (it has a child).
        while up != ROOT_GROUP && parts.len() <= cadence_sched::fair_group::MAX_GROUP_DEPTH {
            let Some(p) = lookup(up) else { break };
            parts.push(p.name.clone());
            up = p.parent;
        }
        parts.reverse();
        alloc::format!("/{}", parts.join("/"))
    }
}

/// How often a CPU publishes a group's changed load to the shared total (Linux 6.7's
/// `update_tg_load_avg` rate limit), unless its queue emptied or filled.
pub const LOAD_SYNC_INTERVAL_NS: u64 = 1_000_000;

/// A group's queue on one CPU.
pub struct GroupRq {
    pub tg: Arc<TaskGroup>,
    pub rq: FairRq<super::SeKey>,
    /// `tg.parent` and `tg.depth` (fixed for a group's life), kept here: the fair class's
    /// walks read them at every level of every switch, and this saves a visit to the shared
    /// `TaskGroup` each time.
    pub parent: GroupId,
    pub depth: u32,
    /// The group's entity in the parent queue as `fair_group::propagate` last left it (see
    /// `GroupQueues::record_entity`); `None` until then. Only `propagate` changes that entity
    /// while this queue exists (`forget_group` detaches it along with this queue).
    pub entity: Option<cadence_sched::fair_group::EntityState>,
    /// This CPU's contribution to `tg.load_total` (its queued weight when last published).
    contrib: u64,
    /// When `contrib` was last published.
    synced_at: u64,
    /// This CPU's part of the group's bandwidth (`sched::bandwidth`); throttled queues leave
    /// their parent queue (`GroupState::empty`).
    pub bw: cadence_sched::cfs_bandwidth::Local,
    /// CPU time run here by the group's own tasks (`cpu.stat` usage sums it over CPUs and
    /// descendants).
    pub usage_ns: u64,
}

impl GroupRq {
    pub fn new(tg: Arc<TaskGroup>, tunables: cadence_sched::FairTunables) -> Self {
        let (parent, depth) = (tg.parent, tg.depth);
        GroupRq {
            tg,
            rq: FairRq::new(tunables),
            parent,
            depth,
            entity: None,
            contrib: 0,
            synced_at: 0,
            bw: Default::default(),
            usage_ns: 0,
        }
    }

    /// Publishes this CPU's queued weight to the group's total (`tg.load_total`, an atomic
    /// every CPU of the group writes): at once when the queue emptied or filled, otherwise at
    /// most every [`LOAD_SYNC_INTERVAL_NS`] (the tick syncs a running group's path), so a
    /// ping-pong inside a group does not write the shared counter at every switch.
    pub fn sync_load(&mut self, now: u64) {
        let load = self.rq.load();
        if load == self.contrib {
            return;
        }
        let transition = load == 0 || self.contrib == 0;
        if !transition && now.wrapping_sub(self.synced_at) < LOAD_SYNC_INTERVAL_NS {
            return;
        }
        if load > self.contrib {
            self.tg.load_total.fetch_add(load - self.contrib, Ordering::Relaxed);
        } else {
            self.tg.load_total.fetch_sub(self.contrib - load, Ordering::Relaxed);
        }
        self.contrib = load;
        self.synced_at = now;
    }

    /// Weight of the group's entity on this CPU: `calc_group_shares` over the group's total
    /// with this CPU's part taken fresh (`load_total − contrib + load`, as Linux's
    /// `calc_group_shares` does), so a delayed publication never skews the local share.
    pub fn entity_weight(&self) -> u64 {
        let load = self.rq.load();
        let total = self.tg.load_total().saturating_sub(self.contrib).saturating_add(load);
        cadence_sched::weight::calc_group_shares(self.tg.effective_shares(), total, load).max(2)
    }
}

/// Number of position hints [`GroupRqs`] keeps (direct-mapped by group id).
const GROUP_RQ_HINTS: usize = 8;

/// One CPU's group queues by group id (`RqInner::group_rqs`): an ordered map, plus a small
/// direct-mapped cache of positions in it. The fair class looks a group's queue up several
/// times per level per switch (charging, queueing, picking), and the searches were
/// the largest part of the group path's cost (`bench pipe -g`,
/// docs/results/2026-12-03-group-overhead.md). A hint is checked against the key it names, so a
/// stale one (after a removal moved the entry) costs only the search it would have saved.
/// Protected by the run-queue lock like the rest of `RqInner`.
pub struct GroupRqs {
    map: ArenaMap<GroupId, GroupRq>,
    hints: [core::cell::Cell<u32>; GROUP_RQ_HINTS],
}

impl Default for GroupRqs {
    fn default() -> Self {
        Self::new()
    }
}

impl GroupRqs {
    pub const fn new() -> Self {
        GroupRqs { map: ArenaMap::new(), hints: [const { core::cell::Cell::new(u32::MAX) }; GROUP_RQ_HINTS] }
    }

    fn hint(&self, gid: GroupId) -> &core::cell::Cell<u32> {
        &self.hints[gid as usize % GROUP_RQ_HINTS]
    }

    fn pos(&self, gid: GroupId) -> Option<u32> {
        let h = self.hint(gid).get();
        if self.map.key_at(h) == Some(&gid) {
            return Some(h);
        }
        self.search(gid)
    }

    /// The tree search, its result kept as `gid`'s hint.
    fn search(&self, gid: GroupId) -> Option<u32> {
        let pos = self.map.position(&gid)?;
        self.hint(gid).set(pos);
        Some(pos)
    }

    pub fn get(&self, gid: &GroupId) -> Option<&GroupRq> {
        self.map.at(self.pos(*gid)?)
    }

    pub fn get_mut(&mut self, gid: &GroupId) -> Option<&mut GroupRq> {
        let pos = self.pos(*gid)?;
        self.map.at_mut(pos)
    }

    pub fn contains_key(&self, gid: &GroupId) -> bool {
        self.pos(*gid).is_some()
    }

    /// Inserts or replaces (allocates only when full, as [`ArenaMap::insert`]).
    pub fn insert(&mut self, gid: GroupId, grq: GroupRq) -> Option<GroupRq> {
        self.map.insert(gid, grq)
    }

    pub fn remove(&mut self, gid: &GroupId) -> Option<GroupRq> {
        self.map.remove(gid)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.map.capacity()
    }

    pub fn storage_bytes(&self) -> usize {
        self.map.storage_bytes()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&GroupId, &GroupRq)> + '_ {
        self.map.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &GroupRq> + '_ {
        self.map.values()
    }

    /// As [`ArenaMap::adopt_storage`] (positions are kept).
    pub fn adopt_storage(&mut self, spare: &mut ArenaMap<GroupId, GroupRq>) -> bool {
        self.map.adopt_storage(spare)
    }
}

/// Groups by id (see the module doc: capacity reserved outside the lock, by [`reserve_ids`]).
static GROUPS: IrqLock<ArenaMap<GroupId, Arc<TaskGroup>>> = IrqLock::new(ArenaMap::new());
/// Group names by parent (a name is unique among its siblings, as a directory's entries), and
/// the lock that serializes creating and destroying groups (see the module doc for when it is
/// taken with interrupts off). Ordered: a group's children are one range.
static NAMES: SpinLock<BTreeMap<(GroupId, GroupName), GroupId>> = SpinLock::new(BTreeMap::new());
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// A group's name: at most 32 bytes (`valid_name`), so it needs no allocation as a key.
type GroupName = arrayvec::ArrayString<32>;

/// The group with id `id` (None for the root or an unknown/destroyed id).
pub fn lookup(id: GroupId) -> Option<Arc<TaskGroup>> {
    GROUPS.lock().get(&id).cloned()
}

/// Finds a group by path from the root group (`name`, `/name`, `/outer/inner`).
pub fn by_name(path: &str) -> Option<Arc<TaskGroup>> {
    let mut id = ROOT_GROUP;
    for name in path.split('/').filter(|c| !c.is_empty()) {
        id = child_named(id, name)?;
    }
    if id == ROOT_GROUP {
        return None;
    }
    lookup(id)
}

/// The child of `parent` named `name`.
pub fn child_named(parent: GroupId, name: &str) -> Option<GroupId> {
    let key = GroupName::from(name).ok()?;
    NAMES.lock().get(&(parent, key)).copied()
}

/// `gid` and every group below it that `keep` accepts (with what is below those), parents
/// before children.
pub fn subtree(gid: GroupId, keep: impl Fn(GroupId) -> bool) -> Vec<GroupId> {
    let mut all = alloc::vec![gid];
    let mut i = 0;
    while i < all.len() {
        let below = children(all[i]);
        all.extend(below.into_iter().map(|(_, id)| id).filter(|&id| keep(id)));
        i += 1;
    }
    all
}

/// The child groups of `parent`, by name.
pub fn children(parent: GroupId) -> Vec<(String, GroupId)> {
    let names = NAMES.lock();
    let from = (parent, GroupName::new());
    names.range(from..).take_while(|((p, _), _)| *p == parent).map(|((_, n), id)| (String::from(n.as_str()), *id)).collect()
}

/// All groups except the root.
pub fn all() -> Vec<Arc<TaskGroup>> {
    GROUPS.lock().values().cloned().collect()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 32 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Makes room in [`GROUPS`] for one more group, allocating outside its lock (the arena's
/// contract). Called under [`NAMES`], so nobody else inserts meanwhile.
fn reserve_ids() {
    loop {
        let (len, cap) = {
            let ids = GROUPS.lock();
            (ids.len(), ids.capacity())
        };
        let Some(target) = grow_target(len, cap) else { return };
        let mut spare = ArenaMap::with_capacity(target);
        let adopted = GROUPS.lock().adopt_storage(&mut spare);
        drop(spare); // the old buffer (or the unused new one), freed with interrupts on
        if adopted {
            return;
        }
    }
}

/// Creates a group under `parent` with `cpu.weight` `weight`. EINVAL for a bad name or weight,
/// ESRCH for an unknown parent, EBUSY for a name in use, EAGAIN past
/// `cadence_sched::fair_group::MAX_GROUP_DEPTH` levels (Linux's errno at `cgroup.max.depth`),
/// ENOMEM (injected failures).
pub fn create(name: &str, parent: GroupId, weight: u64, kind: GroupKind) -> Result<Arc<TaskGroup>, Errno> {
    let _defer = super::signal::DeferFatal::new();
    if !valid_name(name) || !(1..=MAX_WEIGHT).contains(&weight) {
        return Err(Errno::EINVAL);
    }
    let key = GroupName::from(name).map_err(|_| Errno::EINVAL)?;
    let mut names = NAMES.lock();
    let parent_tg = if parent == ROOT_GROUP { None } else { Some(lookup(parent).ok_or(Errno::ESRCH)?) };
    if names.contains_key(&(parent, key)) {
        return Err(Errno::EBUSY);
    }
    let depth = parent_tg.as_ref().map_or(1, |p| p.depth + 1);
    if depth as usize > cadence_sched::fair_group::MAX_GROUP_DEPTH {
        return Err(Errno::EAGAIN);
    }
    if crate::mm::fail_alloc::should_fail("task_group") {
        return Err(Errno::ENOMEM);
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let tg = Arc::new(TaskGroup {
        id,
        name: name.into(),
        parent,
        depth,
        kind,
        shares: AtomicU64::new(weight * cadence_sched::weight::NICE_0_LOAD / DEFAULT_WEIGHT),
        load_total: AtomicU64::new(0),
        nr_tasks: AtomicU32::new(0),
        nr_children: AtomicU32::new(0),
        nice: AtomicI32::new(0),
        idle: AtomicBool::new(false),
        bandwidth: IrqLock::new(cadence_sched::cfs_bandwidth::Pool::new(Default::default())),
        limited: AtomicBool::new(false),
    });
    names.insert((parent, key), id);
    reserve_ids();
    GROUPS.lock().insert(id, tg.clone());
    if let Some(p) = parent_tg {
        p.nr_children.fetch_add(1, Ordering::AcqRel);
    }
    Ok(tg)
}

/// Removes a group. EBUSY while it has member tasks or child groups; ESRCH if unknown.
pub fn destroy(id: GroupId) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let removed = {
        let mut names = NAMES.lock();
        let removed = {
            let mut groups = GROUPS.lock();
            let tg = groups.get(&id).ok_or(Errno::ESRCH)?;
            if tg.nr_tasks.load(Ordering::Acquire) > 0 || tg.nr_children.load(Ordering::Acquire) > 0 {
                return Err(Errno::EBUSY);
            }
            groups.remove(&id)
        };
        if let Some(tg) = &removed {
            if let Ok(key) = GroupName::from(tg.name.as_str()) {
                names.remove(&(tg.parent, key));
            }
            if let Some(parent) = lookup(tg.parent) {
                parent.nr_children.fetch_sub(1, Ordering::AcqRel);
            }
        }
        removed
    };
    drop(removed); // with no lock held: it may be the last reference
                   // Drop its (empty) per-CPU queues and their entities in the parent queues.
    for cpu in crate::percpu::online_cpus() {
        let mut g = super::rq_of(cpu.cpu_id).lock.lock();
        super::class::forget_group(&mut g, id);
    }
    Ok(())
}

/// Sets a group's `cpu.weight` (1..=10000, else EINVAL) and re-weights its entities.
pub fn set_weight(id: GroupId, weight: u64) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    if !(1..=MAX_WEIGHT).contains(&weight) {
        return Err(Errno::EINVAL);
    }
    set_shares(id, weight * cadence_sched::weight::NICE_0_LOAD / DEFAULT_WEIGHT)
}

/// Sets a group's shares directly (autogroup nice) and re-weights its entities.
pub fn set_shares(id: GroupId, shares: u64) -> Result<(), Errno> {
    let tg = lookup(id).ok_or(Errno::ESRCH)?;
    tg.shares.store(shares.max(2), Ordering::Relaxed);
    for cpu in crate::percpu::online_cpus() {
        let mut g = super::rq_of(cpu.cpu_id).lock.lock();
        let now = crate::time::uptime_ns();
        super::update_curr(&mut g, now);
        super::class::refresh_group_weights(&mut g, id);
    }
    Ok(())
}

/// Sets a group's `cpu.idle` (its entities weigh as a SCHED_IDLE task's while set) and
/// re-weights its entities.
pub fn set_idle(id: GroupId, idle: bool) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let tg = lookup(id).ok_or(Errno::ESRCH)?;
    tg.idle.store(idle, Ordering::Relaxed);
    let shares = tg.shares();
    set_shares(id, shares)
}

/// The cgroup path of a task (`/proc/PID/cgroup`): its manual group's, `/` for the root
/// (an autogroup is not a cgroup).
pub fn cgroup_path(t: &super::task::Task) -> String {
    lookup(t.group.load(Ordering::Acquire)).map(|g| g.path()).unwrap_or_else(|| "/".into())
}

/// Joins/leaves membership counts.
pub fn join(id: GroupId) {
    if let Some(tg) = lookup(id) {
        tg.nr_tasks.fetch_add(1, Ordering::AcqRel);
    }
}

pub fn leave(id: GroupId) {
    if let Some(tg) = lookup(id) {
        tg.nr_tasks.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Moves task `tid` into manual group `gid` (root = 0): Linux's `sched_move_task`. A queued
/// or running fair task leaves its old group's queue and joins the new one keeping its lag.
/// ESRCH: no such task or group; EINVAL: `gid` is an autogroup (membership there is automatic).
pub fn move_task(tid: super::Tid, gid: GroupId) -> Result<(), Errno> {
    let _defer = super::signal::DeferFatal::new();
    let t = super::task::find(tid).filter(|t| !t.is_idle && t.state() != super::task::TaskState::Dead).ok_or(Errno::ESRCH)?;
    if gid != ROOT_GROUP {
        let tg = lookup(gid).ok_or(Errno::ESRCH)?;
        if tg.kind == GroupKind::Auto {
            return Err(Errno::EINVAL);
        }
    }
    let _params = t.params.lock();
    if t.left_group.load(Ordering::Acquire) {
        return Err(Errno::ESRCH); // exited meanwhile
    }
    let old = t.group.load(Ordering::Acquire);
    if old == gid {
        return Ok(());
    }
    join(gid);
    super::with_task_rq(&t, |g, now| {
        super::requeue_locked(g, &t, now, |_| t.group.store(gid, Ordering::Release));
    });
    leave(old);
    Ok(())
}

/// The group a task runs in now (for `ps`): its effective fair group, or the root for RT tasks.
pub fn task_group_path(t: &super::task::Task) -> String {
    if t.class() != super::task::ClassId::Fair {
        return "/".into();
    }
    let gid = super::class::effective_group(t);
    lookup(gid).map(|g| g.path()).unwrap_or_else(|| "/".into())
}
