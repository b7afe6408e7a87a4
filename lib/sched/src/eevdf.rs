//! The fair run queue: EEVDF ("Earliest Eligible Virtual Deadline First") as in Linux
//! >= 6.6 kernel/sched/fair.c, for one CPU (or, later, one task group on one CPU).
//!
//! # Model
//! Every entity `i` has a weight `w_i`, a virtual runtime `v_i` (ns of service scaled by
//! `NICE_0_LOAD / w_i`) and a virtual deadline `d_i = v_i + slice_i * NICE_0_LOAD / w_i`.
//! The queue's virtual time is the weighted average `V = Σ w_i v_i / Σ w_i` over the
//! queued entities *including the running one*. An entity's lag is `lag_i = V - v_i`
//! (stored, like Linux's `se->vlag`, in virtual ns, i.e. not multiplied by `w_i`).
//! An entity is *eligible* iff `lag_i >= 0`; [`FairRq::pick_next`] returns the eligible
//! entity with the earliest deadline. Because `Σ w_i lag_i = 0`, some entity is always
//! eligible; if rounding ever says otherwise the earliest deadline runs (Linux does the same).
//!
//! # Representation and invariants
//! * `timeline` ([`Timeline`]) holds `(deadline, key)` and the vruntime of every queued
//!   entity except `curr` (Linux: `set_next_entity` removes the running entity from the tree
//!   and `put_prev_entity` puts it back): a balanced tree ordered by deadline, each subtree
//!   augmented with its least vruntime, as Linux's rbtree with `min_vruntime`. Picking the
//!   eligible entity with the earliest deadline is one descent, O(log n) always.
//! * `avg_vruntime = Σ (v_i - min_vruntime) * w_i` and `avg_load = Σ w_i` over `timeline`
//!   (i128 / u64: no overflow for any realistic population). `curr`, when `on_rq`, is
//!   added on the fly by [`FairRq::avg_vruntime`] and eligibility checks, exactly as Linux.
//!   Eligibility avoids division: `v` is eligible iff
//!   `avg_vruntime >= (v - min_vruntime) * load`.
//! * `load` / `nr_queued` count every `on_rq` entity, `curr` included.
//! * `min_vruntime` only moves forward: it follows the minimum vruntime of the queue
//!   (`curr` included) and is the base that keeps the sums small.
//! * Vruntimes start at [`VRUNTIME_ORIGIN`] (2^48) so entities placed with positive lag
//!   never go below zero; once `min_vruntime` passes 2^62 every vruntime/deadline is
//!   shifted back down by the same amount (O(n), at most once per ~146 years of virtual
//!   time at nice 0). Relative order, lags and `avg_vruntime` are unchanged by the shift;
//!   it is the only time `min_vruntime` decreases.
//!
//! # Operations (Linux names)
//! * [`FairRq::enqueue`] → `enqueue_entity`: [`place_entity`](FairRq) puts the entity at
//!   `V - lag'` where `lag' = vlag * (W + w) / W` (`W` = load already queued; the scaling
//!   compensates for the entity itself moving `V` when it joins) and sets
//!   `deadline = vruntime + vslice`, halved for `ENQUEUE_INITIAL` (PLACE_DEADLINE_INITIAL).
//!   An entity dequeued without `DEQUEUE_SLEEP` (save/restore, migration, reweight) keeps
//!   its deadline relative to its vruntime instead (PLACE_REL_DEADLINE, Linux 6.12).
//! * [`FairRq::dequeue`] → `dequeue_entity`: saves `vlag = V - v`, clamped to
//!   `±calc_delta_fair(max(2 * slice, TICK_NSEC), w)`; the lag survives sleep and migration.
//! * [`FairRq::update_curr`] → `update_curr` + `update_deadline`: charges `delta` ns to
//!   `curr` (`v += delta * 1024 / w`); once `v >= deadline` a new slice is requested
//!   (`deadline = v + slice * 1024 / w`) and a reschedule is needed if others are queued.
//! * [`FairRq::reweight`] → `reweight_entity`: keeps `w * vlag` and the relative deadline
//!   scaled by `old_w / new_w`, then re-places the entity so its lag is unchanged.
//! * [`FairRq::check_preempt_wakeup`] → `check_preempt_wakeup_fair` plus Cadence's
//!   wakeup-granularity rule (see [`FairTunables::wakeup_granularity_ns`]).
//!
//! Time is never read here: the caller passes elapsed execution time to `update_curr`
//! and must call it (charging `curr` up to "now") before `enqueue`, `dequeue`,
//! `put_prev`, `reweight` and `check_preempt_wakeup`, as Linux does internally.
//!
//! Not implemented (yet): DELAY_DEQUEUE (Linux 6.12 keeps sleeping entities with negative
//! lag queued until eligible), next/last buddies, PELT load tracking.

use crate::arena::{grow_target, SlabMap};
use crate::timeline::Timeline;
use core::cmp::Ordering;

use crate::attr::{Policy, SCHED_SLICE_MAX_NS, SCHED_SLICE_MIN_NS};
use crate::consts::NSEC_PER_MSEC;
use crate::errno::Errno;
use crate::weight::calc_delta_fair;

/// Task woke up (`try_to_wake_up`).
pub const ENQUEUE_WAKEUP: u32 = 0x01;
/// Re-enqueue after a `DEQUEUE_SAVE` (attribute change while queued).
pub const ENQUEUE_RESTORE: u32 = 0x02;
/// Entity moves within/between queues (accounting only).
pub const ENQUEUE_MOVE: u32 = 0x04;
/// Caller already updated the clock (accepted, no effect here).
pub const ENQUEUE_NOCLOCK: u32 = 0x08;
/// RT: queue at the head of the priority list (accepted, no effect on the fair class).
pub const ENQUEUE_HEAD: u32 = 0x10;
/// Task was migrated from another CPU before this enqueue.
pub const ENQUEUE_MIGRATED: u32 = 0x40;
/// Newly forked task: gets half a slice of deadline (PLACE_DEADLINE_INITIAL).
pub const ENQUEUE_INITIAL: u32 = 0x80;
/// Enqueue half of an active migration (pairs with `DEQUEUE_MIGRATING`).
pub const ENQUEUE_MIGRATING: u32 = 0x100;
const ENQUEUE_ALL: u32 = ENQUEUE_WAKEUP
    | ENQUEUE_RESTORE
    | ENQUEUE_MOVE
    | ENQUEUE_NOCLOCK
    | ENQUEUE_HEAD
    | ENQUEUE_MIGRATED
    | ENQUEUE_INITIAL
    | ENQUEUE_MIGRATING;

/// Task goes to sleep: its deadline is dropped (a fresh one is computed on wakeup).
pub const DEQUEUE_SLEEP: u32 = 0x01;
/// Temporary dequeue around an attribute change (pairs with `ENQUEUE_RESTORE`);
/// without `DEQUEUE_MOVE` it does not advance `min_vruntime`.
pub const DEQUEUE_SAVE: u32 = 0x02;
/// Entity moves (pairs with `ENQUEUE_MOVE`).
pub const DEQUEUE_MOVE: u32 = 0x04;
/// Caller already updated the clock (accepted, no effect here).
pub const DEQUEUE_NOCLOCK: u32 = 0x08;
/// Dequeue half of an active migration (load balancing).
pub const DEQUEUE_MIGRATING: u32 = 0x100;
const DEQUEUE_ALL: u32 = DEQUEUE_SLEEP | DEQUEUE_SAVE | DEQUEUE_MOVE | DEQUEUE_NOCLOCK | DEQUEUE_MIGRATING;

/// Linux's unscaled base slice, 0.75 ms (`sysctl_sched_base_slice` for one CPU).
pub const SCHED_BASE_SLICE_NS: u64 = 750_000;
/// Default wakeup granularity (Cadence extension, after CFS's `sched_wakeup_granularity_ns`).
pub const SCHED_WAKEUP_GRANULARITY_NS: u64 = NSEC_PER_MSEC;
/// Default tick length used for the lag clamp (HZ = 1000).
pub const DEFAULT_TICK_NSEC: u64 = NSEC_PER_MSEC;
/// Largest accepted entity weight (Linux nice -20 scaled by `<< 10` still fits).
pub const MAX_WEIGHT: u64 = 1 << 30;
/// Virtual time at which an empty queue starts; see the module docs.
pub const VRUNTIME_ORIGIN: u64 = 1 << 48;
const VRUNTIME_REBASE_AT: u64 = 1 << 62;

/// Linux's log-scaled base slice (`sysctl_sched_tunable_scaling = log`):
/// `0.75 ms * (1 + ilog2(min(ncpus, 8)))`; `ncpus == 0` counts as 1.
pub const fn scaled_base_slice(ncpus: u32) -> u64 {
    let n = if ncpus == 0 {
        1
    } else if ncpus > 8 {
        8
    } else {
        ncpus
    };
    SCHED_BASE_SLICE_NS * (1 + n.ilog2() as u64)
}

/// Run-time knobs of the fair class (Linux sysctls and `sched_feat`s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FairTunables {
    /// Slice of entities without a custom slice (`sysctl_sched_base_slice`).
    pub base_slice_ns: u64,
    /// Tick length; lower bound of the lag clamp (`TICK_NSEC`).
    pub tick_nsec: u64,
    /// Cadence extension: a waking entity preempts `curr` only if its virtual deadline
    /// is earlier by at least this much real time converted to the waker's virtual time.
    /// Limits wakeup-preemption storms like CFS's `sched_wakeup_granularity_ns`. 0 disables.
    pub wakeup_granularity_ns: u64,
    /// PLACE_LAG: preserve lag over sleep/migration (otherwise wakers start at `V`).
    pub place_lag: bool,
    /// PLACE_DEADLINE_INITIAL: new tasks get half a slice of deadline.
    pub place_deadline_initial: bool,
    /// PLACE_REL_DEADLINE: non-sleep dequeues keep the deadline relative to vruntime.
    pub place_rel_deadline: bool,
    /// RUN_TO_PARITY: once picked, an eligible `curr` keeps running until its deadline
    /// moves (it received its slice) even if another entity has an earlier deadline.
    pub run_to_parity: bool,
}

impl Default for FairTunables {
    fn default() -> Self {
        FairTunables {
            base_slice_ns: SCHED_BASE_SLICE_NS,
            tick_nsec: DEFAULT_TICK_NSEC,
            wakeup_granularity_ns: SCHED_WAKEUP_GRANULARITY_NS,
            place_lag: true,
            place_deadline_initial: true,
            place_rel_deadline: true,
            run_to_parity: true,
        }
    }
}

impl FairTunables {
    /// Defaults with the base slice scaled for `ncpus` CPUs ([`scaled_base_slice`]).
    pub fn for_cpus(ncpus: u32) -> Self {
        FairTunables { base_slice_ns: scaled_base_slice(ncpus), ..Self::default() }
    }
}

/// Per-entity fair scheduling state (Linux `struct sched_entity`, EEVDF part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairEntity {
    weight: u64,
    vruntime: u64,
    /// Absolute virtual deadline; relative to `vruntime` (two's complement) while
    /// `rel_deadline` is set.
    deadline: u64,
    slice: u64,
    custom_slice: bool,
    vlag: i64,
    sum_exec_runtime: u64,
    on_rq: bool,
    rel_deadline: bool,
    /// RUN_TO_PARITY: set when picked, cleared when the deadline moves.
    protect_slice: bool,
}

fn check_weight(weight: u64) -> Result<u64, Errno> {
    if (1..=MAX_WEIGHT).contains(&weight) {
        Ok(weight)
    } else {
        Err(Errno::EINVAL)
    }
}

impl FairEntity {
    /// A fresh, not-queued entity. `weight` must be in `1..=MAX_WEIGHT` (else `EINVAL`).
    pub fn new(weight: u64) -> Result<Self, Errno> {
        Ok(FairEntity {
            weight: check_weight(weight)?,
            vruntime: VRUNTIME_ORIGIN,
            deadline: VRUNTIME_ORIGIN,
            slice: SCHED_BASE_SLICE_NS,
            custom_slice: false,
            vlag: 0,
            sum_exec_runtime: 0,
            on_rq: false,
            rel_deadline: false,
            protect_slice: false,
        })
    }

    /// Sets a custom slice (`sched_attr.sched_runtime`), clamped to
    /// `[SCHED_SLICE_MIN_NS, SCHED_SLICE_MAX_NS]`; `None` or `Some(0)` restores the base slice.
    pub fn with_custom_slice(mut self, slice_ns: Option<u64>) -> Self {
        self.set_custom_slice(slice_ns);
        self
    }

    fn set_custom_slice(&mut self, slice_ns: Option<u64>) {
        match slice_ns {
            Some(ns) if ns != 0 => {
                self.custom_slice = true;
                self.slice = ns.clamp(SCHED_SLICE_MIN_NS, SCHED_SLICE_MAX_NS);
            }
            _ => self.custom_slice = false,
        }
    }

    /// Linux `reweight_entity` for an entity on no queue (a task's parked entity while its
    /// nice or policy changes): keeps `w * vlag` (the lag in real time) and scales a relative
    /// deadline by `old_w / new_w`, so toggling nice neither sheds negative lag nor gains
    /// positive lag. `EINVAL` for a weight outside `1..=MAX_WEIGHT`, `EBUSY` if it is queued
    /// (use [`FairRq::reweight`]).
    pub fn reweight(&mut self, new_weight: u64) -> Result<(), Errno> {
        let new_weight = check_weight(new_weight)?;
        if self.on_rq {
            return Err(Errno::EBUSY);
        }
        if new_weight != self.weight {
            self.rescale(new_weight);
        }
        Ok(())
    }

    /// The weight change of a not-queued entity: `vlag` and a relative deadline scaled by
    /// `old / new` (shared by [`FairEntity::reweight`] and [`FairRq::reweight`]).
    fn rescale(&mut self, new_weight: u64) {
        let old = self.weight;
        self.vlag = saturate_i64(self.vlag as i128 * old as i128 / new_weight as i128);
        if self.rel_deadline {
            let rel = self.deadline as i64 as i128;
            self.deadline = saturate_i64(rel * old as i128 / new_weight as i128) as u64;
        }
        self.weight = new_weight;
        self.protect_slice = false;
    }

    /// Load weight.
    pub fn weight(&self) -> u64 {
        self.weight
    }
    /// Virtual runtime (meaningful while queued on a queue).
    pub fn vruntime(&self) -> u64 {
        self.vruntime
    }
    /// Virtual deadline (absolute while queued).
    pub fn deadline(&self) -> u64 {
        self.deadline
    }
    /// Current slice in ns.
    pub fn slice(&self) -> u64 {
        self.slice
    }
    /// Whether the slice was set explicitly (`sched_runtime`).
    pub fn has_custom_slice(&self) -> bool {
        self.custom_slice
    }
    /// Lag saved at the last dequeue (`V - v`, clamped), in virtual ns.
    pub fn vlag(&self) -> i64 {
        self.vlag
    }
    /// Total real execution time charged, in ns.
    pub fn sum_exec_runtime(&self) -> u64 {
        self.sum_exec_runtime
    }
    /// Whether the entity is queued (the running entity counts as queued).
    pub fn on_rq(&self) -> bool {
        self.on_rq
    }
}

/// `(a - b)` in wrapping virtual time, as Linux compares `u64` vruntimes.
fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// `a / b`, truncating like `/`, in one 64-bit division when both fit in `i64` (the usual case:
/// the weighted key sums stay far below 2^63 with realistic loads and lags). `i128 / i128` is a
/// library call (`__divti3`, ~180 instructions: a tenth of what the fair class runs per switch).
fn div_i128(a: i128, b: i128) -> i128 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(x), Ok(y)) if y != 0 && !(x == i64::MIN && y == -1) => (x / y) as i128,
        _ => a / b,
    }
}

fn saturate_i64(x: i128) -> i64 {
    x.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Memory for a [`FairRq`] of up to `n` entities, allocated outside the run-queue lock and
/// installed with [`FairRq::adopt_storage`].
#[derive(Debug)]
pub struct FairStorage<K> {
    entities: SlabMap<K, FairEntity>,
    timeline: Timeline<K>,
}

impl<K: Copy + Ord> FairStorage<K> {
    /// Room for `n` entities.
    pub fn with_capacity(n: usize) -> Self {
        FairStorage { entities: SlabMap::with_capacity(n), timeline: Timeline::with_capacity(n) }
    }

    /// Bytes of memory it reserves.
    pub fn storage_bytes(&self) -> usize {
        self.entities.storage_bytes() + self.timeline.storage_bytes()
    }

    /// Entities it has room for.
    pub fn capacity(&self) -> usize {
        self.entities.capacity().min(self.timeline.capacity())
    }

    /// Holds nothing (a fresh one, or the old buffers after `adopt_storage`).
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty() && self.timeline.is_empty()
    }
}

/// One fair run queue, generic over the entity key (task id, or group id later).
#[derive(Clone, Debug)]
pub struct FairRq<K: Copy + Ord> {
    tunables: FairTunables,
    entities: SlabMap<K, FairEntity>,
    timeline: Timeline<K>,
    curr: Option<K>,
    /// `curr`'s position in `entities` (valid while `curr` is set): the running entity is
    /// what most operations touch (charging, eligibility, picking), reached without a search.
    curr_pos: u32,
    /// The last other entity looked up and its position: an operation on one entity looks it
    /// up several times (enqueue: check, place, queue, tree insert). Checked against the key
    /// stored at that position before use, so it is never wrong, only sometimes a miss.
    hot: core::cell::Cell<Option<(K, u32)>>,
    avg_vruntime: i128,
    avg_load: u64,
    load: u64,
    nr_queued: usize,
    min_vruntime: u64,
}

impl<K: Copy + Ord> Default for FairRq<K> {
    fn default() -> Self {
        Self::new(FairTunables::default())
    }
}

impl<K: Copy + Ord> FairRq<K> {
    /// An empty queue.
    pub fn new(tunables: FairTunables) -> Self {
        Self::with_min_vruntime(tunables, VRUNTIME_ORIGIN)
    }

    /// An empty queue whose virtual time starts at `min_vruntime` (tests of the rebase).
    pub fn with_min_vruntime(tunables: FairTunables, min_vruntime: u64) -> Self {
        FairRq {
            tunables,
            entities: SlabMap::new(),
            timeline: Timeline::new(),
            curr: None,
            curr_pos: 0,
            hot: core::cell::Cell::new(None),
            avg_vruntime: 0,
            avg_load: 0,
            load: 0,
            nr_queued: 0,
            min_vruntime,
        }
    }

    // ----- memory (see `arena`: inserts below capacity never allocate) --------------

    /// The capacity this queue should grow to before more entities are attached, or `None`
    /// if it has headroom ([`grow_target`]). The owner allocates a [`FairStorage`] of that
    /// size outside its lock and installs it with [`FairRq::adopt_storage`].
    pub fn grow_target(&self) -> Option<usize> {
        self.grow_target_for(0)
    }

    /// Bytes of memory its storage reserves.
    pub fn storage_bytes(&self) -> usize {
        self.entities.storage_bytes() + self.timeline.storage_bytes()
    }

    /// Entities it can hold without allocating.
    pub fn capacity(&self) -> usize {
        self.entities.capacity().min(self.timeline.capacity())
    }

    /// [`FairRq::grow_target`] with `incoming` more entities counted as attached already
    /// (wakeups on their way to this queue).
    pub fn grow_target_for(&self, incoming: usize) -> Option<usize> {
        grow_target(self.entities.len().saturating_add(incoming), self.capacity())
    }

    /// Gives up the storage of an empty queue (for reuse by another queue: no allocation,
    /// no free); the queue is left with none. `None` if entities are still attached.
    pub fn take_storage(&mut self) -> Option<FairStorage<K>> {
        if !self.entities.is_empty() {
            return None;
        }
        Some(FairStorage { entities: core::mem::take(&mut self.entities), timeline: core::mem::take(&mut self.timeline) })
    }

    /// Moves the queue's entities into `spare`'s memory (no allocation); `spare` is left
    /// empty, holding the old buffers, for the caller to drop outside its lock. False (and
    /// nothing changed) if `spare` is not empty or too small.
    pub fn adopt_storage(&mut self, spare: &mut FairStorage<K>) -> bool {
        let n = self.entities.len();
        let fits = |m: usize| m >= n;
        if !spare.is_empty() || !fits(spare.entities.capacity()) || !fits(spare.timeline.capacity()) {
            return false;
        }
        self.entities.adopt_storage(&mut spare.entities) && self.timeline.adopt_storage(&mut spare.timeline)
    }

    /// The knobs in effect.
    pub fn tunables(&self) -> &FairTunables {
        &self.tunables
    }

    /// Replaces the knobs; new slices apply from each entity's next deadline update.
    pub fn set_tunables(&mut self, tunables: FairTunables) {
        self.tunables = tunables;
    }

    // ----- entity ownership -------------------------------------------------------

    /// Takes ownership of a (not queued) entity, e.g. a new task or one migrating in.
    /// `EBUSY` if `key` is already known here.
    pub fn attach(&mut self, key: K, mut se: FairEntity) -> Result<(), Errno> {
        if self.entities.contains_key(&key) {
            return Err(Errno::EBUSY);
        }
        se.on_rq = false;
        se.protect_slice = false;
        if !se.custom_slice {
            se.slice = self.tunables.base_slice_ns;
        }
        self.entities.insert(key, se);
        Ok(())
    }

    /// Shorthand for `attach(key, FairEntity::new(weight)?)`.
    pub fn attach_new(&mut self, key: K, weight: u64) -> Result<(), Errno> {
        self.attach(key, FairEntity::new(weight)?)
    }

    /// Gives up a not-queued, not-running entity (task exit, or migration out: its
    /// `vlag` and relative deadline travel with it). `ESRCH` unknown, `EBUSY` queued/running.
    pub fn detach(&mut self, key: K) -> Result<FairEntity, Errno> {
        let se = self.entities.get(&key).ok_or(Errno::ESRCH)?;
        if se.on_rq || self.curr == Some(key) {
            return Err(Errno::EBUSY);
        }
        let se = self.entities.remove(&key).ok_or(Errno::ESRCH)?;
        // The removal moved the running entity if it was the last value (it fills the hole).
        if let Some(c) = self.curr {
            if self.entities.key_at(self.curr_pos) != Some(&c) {
                self.curr_pos = self.entities.position(&c).unwrap_or(0);
            }
        }
        Ok(se)
    }

    /// Changes an entity's custom slice (see [`FairEntity::with_custom_slice`]); it takes
    /// effect at its next deadline update or placement.
    pub fn set_custom_slice(&mut self, key: K, slice_ns: Option<u64>) -> Result<(), Errno> {
        let base = self.tunables.base_slice_ns;
        let se = self.pos(key).and_then(|p| self.entities.at_mut(p)).ok_or(Errno::ESRCH)?;
        se.set_custom_slice(slice_ns);
        if !se.custom_slice {
            se.slice = base;
        }
        Ok(())
    }

    // ----- accessors ----------------------------------------------------------------

    /// State of one entity.
    pub fn entity(&self, key: K) -> Option<&FairEntity> {
        self.se(key)
    }
    /// The running entity, if any (it may have been dequeued, e.g. going to sleep,
    /// until `put_prev`).
    pub fn curr(&self) -> Option<K> {
        self.curr
    }
    /// Queued entities, `curr` included if still `on_rq` (Linux `cfs_rq->nr_queued`).
    pub fn nr_queued(&self) -> usize {
        self.nr_queued
    }
    /// Sum of the weights of queued entities, `curr` included (`cfs_rq->load.weight`).
    /// A parent queue uses this for group shares ([`crate::weight::calc_group_shares`]).
    pub fn load(&self) -> u64 {
        self.load
    }
    /// Monotonic lower bound of queued vruntimes (see the module docs for the rebase).
    pub fn min_vruntime(&self) -> u64 {
        self.min_vruntime
    }
    /// Number of entities known to this queue (queued or not).
    pub fn len(&self) -> usize {
        self.entities.len()
    }
    /// No entities known.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }
    /// Queued entities other than `curr`, in (deadline, key) order.
    pub fn queued(&self) -> impl Iterator<Item = K> + '_ {
        self.timeline.iter().map(|(_, k, _)| k)
    }

    /// Where `key`'s entity sits in `entities` (`curr` without a search).
    fn pos(&self, key: K) -> Option<u32> {
        if self.curr == Some(key) {
            return Some(self.curr_pos);
        }
        if let Some((k, p)) = self.hot.get() {
            if k == key && self.entities.key_at(p) == Some(&key) {
                return Some(p);
            }
        }
        let p = self.entities.position(&key)?;
        self.hot.set(Some((key, p)));
        Some(p)
    }

    fn se(&self, key: K) -> Option<&FairEntity> {
        self.entities.at(self.pos(key)?)
    }

    fn curr_on_rq(&self) -> Option<&FairEntity> {
        self.curr.and_then(|_| self.entities.at(self.curr_pos)).filter(|se| se.on_rq)
    }

    fn key_of(&self, vruntime: u64) -> i64 {
        vdiff(vruntime, self.min_vruntime)
    }

    /// `(Σ (v_i - min_vruntime) w_i, Σ w_i)` over all queued entities including `curr`.
    fn sums(&self) -> (i128, i128) {
        let (mut avg, mut load) = (self.avg_vruntime, self.avg_load as i128);
        if let Some(c) = self.curr_on_rq() {
            avg += self.key_of(c.vruntime) as i128 * c.weight as i128;
            load += c.weight as i128;
        }
        (avg, load)
    }

    /// The queue's virtual time `V`: weighted average vruntime of the queued entities
    /// (`curr` included), rounded down; `min_vruntime` when empty (Linux `avg_vruntime`).
    pub fn avg_vruntime(&self) -> u64 {
        let (mut avg, load) = self.sums();
        if load > 0 {
            // Floor division (Rust `/` truncates toward zero).
            if avg < 0 {
                avg -= load - 1;
            }
            avg = div_i128(avg, load);
        }
        self.min_vruntime.wrapping_add(saturate_i64(avg) as u64)
    }

    fn vruntime_eligible(&self, vruntime: u64) -> bool {
        let (avg, load) = self.sums();
        avg >= (self.key_of(vruntime) as i128).saturating_mul(load)
    }

    /// `V - v` for a queued entity (unclamped, virtual ns); the saved `vlag` otherwise.
    pub fn lag(&self, key: K) -> Option<i64> {
        let se = self.se(key)?;
        Some(if se.on_rq { vdiff(self.avg_vruntime(), se.vruntime) } else { se.vlag })
    }

    /// Linux `entity_eligible`: queued and `lag >= 0` (computed without division).
    pub fn is_eligible(&self, key: K) -> bool {
        self.se(key).is_some_and(|se| se.on_rq && self.vruntime_eligible(se.vruntime))
    }

    // ----- tree maintenance ---------------------------------------------------------

    fn tree_insert(&mut self, key: K) {
        let Some(se) = self.se(key) else { return };
        let (v, d, w) = (se.vruntime, se.deadline, se.weight);
        self.avg_vruntime += self.key_of(v) as i128 * w as i128;
        self.avg_load += w;
        self.timeline.insert(d, key, v);
    }

    fn tree_remove(&mut self, key: K) {
        let Some(se) = self.se(key) else { return };
        let (v, d, w) = (se.vruntime, se.deadline, se.weight);
        if self.timeline.remove(d, key).is_some() {
            self.avg_vruntime -= self.key_of(v) as i128 * w as i128;
            self.avg_load -= w;
        }
    }

    /// Linux `update_min_vruntime`: follow the smallest queued vruntime, never backwards.
    fn update_min_vruntime(&mut self) {
        let leftmost = self.timeline.min_vruntime();
        let target = match (self.curr_on_rq().map(|c| c.vruntime), leftmost) {
            (Some(c), Some(l)) => {
                if vdiff(l, c) < 0 {
                    l
                } else {
                    c
                }
            }
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        let delta = vdiff(target, self.min_vruntime);
        if delta > 0 {
            // Re-base the key sum: every key shrinks by `delta`.
            self.avg_vruntime -= self.avg_load as i128 * delta as i128;
            self.min_vruntime = target;
        }
        if self.min_vruntime >= VRUNTIME_REBASE_AT {
            self.rebase();
        }
    }

    /// Shifts all virtual times down so they stay far from `u64` wrap-around.
    fn rebase(&mut self) {
        let shift = self.min_vruntime - VRUNTIME_ORIGIN;
        self.min_vruntime = VRUNTIME_ORIGIN;
        for se in self.entities.values_mut() {
            se.vruntime = se.vruntime.wrapping_sub(shift);
            if !se.rel_deadline {
                se.deadline = se.deadline.wrapping_sub(shift);
            }
        }
        self.timeline.map_in_place(|d| d.wrapping_sub(shift), |v| v.wrapping_sub(shift));
    }

    /// Linux `update_entity_lag`: `vlag = clamp(V - v, ±calc_delta_fair(max(2*slice, TICK), w))`.
    fn update_entity_lag(&mut self, key: K) {
        let v_avg = self.avg_vruntime();
        let tick = self.tunables.tick_nsec;
        if let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) {
            let limit = calc_delta_fair(se.slice.saturating_mul(2).max(tick), se.weight);
            let limit = limit.min(i64::MAX as u64) as i64;
            se.vlag = vdiff(v_avg, se.vruntime).clamp(-limit, limit);
        }
    }

    /// Linux `place_entity`: position an entity that is about to be queued. The entity
    /// must not be counted in the sums yet.
    fn place_entity(&mut self, key: K, flags: u32) {
        let v_avg = self.avg_vruntime();
        let queued_load = self.sums().1;
        let nr_queued = self.nr_queued;
        let t = self.tunables;
        let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) else { return };
        if !se.custom_slice {
            se.slice = t.base_slice_ns;
        }
        let mut vslice = calc_delta_fair(se.slice, se.weight);
        let mut lag = 0i64;
        if t.place_lag && nr_queued > 0 {
            // Adding an entity with lag `l` moves V by `-w*l/(W+w)`, shrinking its lag to
            // `l*W/(W+w)`; inflate by `(W+w)/W` so the lag after joining is the saved one.
            let load = queued_load.max(1);
            let scaled = div_i128((se.vlag as i128).saturating_mul(load + se.weight as i128), load);
            lag = saturate_i64(scaled);
        }
        se.vruntime = v_avg.wrapping_sub(lag as u64);
        se.protect_slice = false;
        if se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if t.place_deadline_initial && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    // ----- the scheduling operations -----------------------------------------------

    /// Linux `enqueue_entity`: place and queue an attached entity.
    /// `ESRCH` unknown key, `EBUSY` already queued, `EINVAL` unknown flag bits.
    pub fn enqueue(&mut self, key: K, flags: u32) -> Result<(), Errno> {
        if flags & !ENQUEUE_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let se = self.se(key).ok_or(Errno::ESRCH)?;
        if se.on_rq {
            return Err(Errno::EBUSY);
        }
        self.place_entity(key, flags);
        let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) else { return Err(Errno::ESRCH) };
        se.on_rq = true;
        self.load += se.weight;
        self.nr_queued += 1;
        if self.curr != Some(key) {
            self.tree_insert(key);
        }
        Ok(())
    }

    /// Linux `dequeue_entity`: remove from the queue, saving the clamped lag. Without
    /// `DEQUEUE_SLEEP` (and with PLACE_REL_DEADLINE) the deadline is kept relative so a
    /// save/restore or migration does not lose the slice in progress. Dequeuing `curr`
    /// leaves it `curr` (not queued) until [`FairRq::put_prev`].
    /// `ESRCH` unknown key, `EINVAL` not queued or unknown flag bits.
    pub fn dequeue(&mut self, key: K, flags: u32) -> Result<(), Errno> {
        if flags & !DEQUEUE_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let se = self.se(key).ok_or(Errno::ESRCH)?;
        if !se.on_rq {
            return Err(Errno::EINVAL);
        }
        self.update_entity_lag(key);
        if self.curr != Some(key) {
            self.tree_remove(key);
        }
        let rel = self.tunables.place_rel_deadline && flags & DEQUEUE_SLEEP == 0;
        let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) else { return Err(Errno::ESRCH) };
        if rel {
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        se.on_rq = false;
        se.protect_slice = false;
        self.load -= se.weight;
        self.nr_queued -= 1;
        if flags & (DEQUEUE_SAVE | DEQUEUE_MOVE) != DEQUEUE_SAVE {
            self.update_min_vruntime();
        }
        Ok(())
    }

    /// Linux `pick_eevdf`: the eligible queued entity (`curr` included) with the earliest
    /// virtual deadline; with RUN_TO_PARITY an eligible `curr` that has not finished its
    /// slice is kept. Falls back to the earliest deadline if rounding leaves nothing
    /// eligible. `None` iff nothing is queued. Does not change any state.
    pub fn pick_next(&self) -> Option<K> {
        self.pick(self.tunables.run_to_parity, false)
    }

    /// [`FairRq::pick_next`] as if `curr` had been put back first ([`FairRq::put_prev`]): it
    /// competes like any queued entity, without RUN_TO_PARITY. The kernel's switch fast path
    /// picks with the running entities still `curr` (to put and set only the levels that
    /// change) and uses this to choose what a put-back-then-pick would.
    pub fn pick_next_as_put_back(&self) -> Option<K> {
        self.pick(false, true)
    }

    /// The queued entities (`curr` included, as if put back) in the order this queue would
    /// run them from now, for the core-wide pick's candidates: first
    /// [`FairRq::pick_next_as_put_back`], then the other eligible entities, then the
    /// ineligible ones, each group by (deadline, key). Calls `f` on each until it returns
    /// false; returns false if it did. (After the first, the order is EEVDF's with `V` held
    /// at its present value: a later pick's `V` moves as entities leave.)
    pub fn for_each_in_pick_order(&self, mut f: impl FnMut(K) -> bool) -> bool {
        let first = self.pick_next_as_put_back();
        if let Some(k) = first {
            if !f(k) {
                return false;
            }
        }
        let curr = self.curr_on_rq().and_then(|se| self.curr.map(|c| (se.deadline, c)));
        for eligible in [true, false] {
            let mut curr = curr;
            let mut visit = |k: K| first == Some(k) || self.is_eligible(k) != eligible || f(k);
            for (d, k, _) in self.timeline.iter() {
                if let Some(c) = curr.filter(|&c| c < (d, k)) {
                    curr = None;
                    if !visit(c.1) {
                        return false;
                    }
                }
                if !visit(k) {
                    return false;
                }
            }
            if let Some((_, c)) = curr {
                if !visit(c) {
                    return false;
                }
            }
        }
        true
    }

    /// `put_back`: `curr` is ordered as the tree orders (deadline, then key) and without
    /// RUN_TO_PARITY, exactly as if it had been put back.
    fn pick(&self, run_to_parity: bool, put_back: bool) -> Option<K> {
        let queued_curr = self.curr_on_rq().and(self.curr);
        let first = self.timeline.first();
        if self.nr_queued == 1 {
            return queued_curr.or(first.map(|(_, k)| k));
        }
        // `c` (curr, deadline `cd`) before the tree entry `(d, k)`?
        let before = |cd: u64, c: K, (d, k): (u64, K)| if put_back { (cd, c) < (d, k) } else { vdiff(cd, d) < 0 };
        let earliest = |c: Option<K>| match (c.and_then(|c| self.se(c).map(|se| (se.deadline, c))), first) {
            (Some((cd, c)), Some(f)) if before(cd, c, f) => Some(c),
            (_, Some((_, k))) => Some(k),
            (c, None) => c.map(|(_, c)| c),
        };
        let curr = queued_curr.filter(|&k| self.is_eligible(k));
        if let Some(c) = curr {
            if run_to_parity && self.se(c).is_some_and(|se| se.protect_slice) {
                return Some(c);
            }
        }
        // Linux `pick_eevdf`: one descent of the augmented tree (eligibility is monotone in
        // vruntime: `v` is eligible iff `(v - min_vruntime) * load <= avg`).
        let (avg, load) = self.sums();
        let best = self.timeline.pick(|v| avg >= (self.key_of(v) as i128).saturating_mul(load)).map(|(d, k, _)| (d, k));
        let chosen = match (best, curr) {
            (Some(b), Some(c)) => {
                let cd = self.se(c).map_or(b.0, |se| se.deadline);
                if before(cd, c, b) {
                    Some(c)
                } else {
                    Some(b.1)
                }
            }
            (Some((_, k)), None) => Some(k),
            (None, c) => c,
        };
        // Nothing eligible (rounding): the earliest deadline, `curr` included when put back.
        chosen.or_else(|| earliest(if put_back { queued_curr } else { None }))
    }

    /// Linux `set_next_entity`: `key` becomes the running entity and leaves the tree
    /// (it stays counted in `V` and `load`). `ESRCH` unknown, `EINVAL` not queued,
    /// `EBUSY` another entity is still `curr` (call [`FairRq::put_prev`] first).
    pub fn set_next(&mut self, key: K) -> Result<(), Errno> {
        let se = self.se(key).ok_or(Errno::ESRCH)?;
        if !se.on_rq {
            return Err(Errno::EINVAL);
        }
        if self.curr.is_some() {
            return Err(Errno::EBUSY);
        }
        self.tree_remove(key);
        let Some(pos) = self.pos(key) else { return Err(Errno::ESRCH) };
        self.curr = Some(key);
        self.curr_pos = pos;
        let parity = self.tunables.run_to_parity;
        if let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) {
            se.protect_slice = parity;
        }
        Ok(())
    }

    /// Linux `put_prev_entity`: `key` stops running; if still queued it goes back into
    /// the tree. `EINVAL` if `key` is not `curr`.
    pub fn put_prev(&mut self, key: K) -> Result<(), Errno> {
        if self.curr != Some(key) {
            return Err(Errno::EINVAL);
        }
        self.curr = None;
        if self.se(key).is_some_and(|se| se.on_rq) {
            self.tree_insert(key);
        }
        Ok(())
    }

    /// Linux `update_curr`: charge `delta_exec_ns` of execution to `curr`
    /// (`vruntime += delta * 1024 / weight`), renew its deadline if reached and advance
    /// `min_vruntime`. Returns `true` when the CPU should reschedule (a new slice was
    /// started and other entities are queued). No `curr`: nothing to do, `false`.
    pub fn update_curr(&mut self, delta_exec_ns: u64) -> bool {
        let Some(key) = self.curr else { return false };
        let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) else { return false };
        se.sum_exec_runtime = se.sum_exec_runtime.saturating_add(delta_exec_ns);
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta_exec_ns, se.weight));
        let resched = self.update_deadline();
        self.update_min_vruntime();
        resched
    }

    /// Linux `update_deadline` for `curr`: once `vruntime >= deadline`, request a new
    /// slice (`deadline = vruntime + slice * 1024 / weight`); returns "reschedule needed"
    /// (`nr_queued > 1`) in that case, `false` otherwise.
    pub fn update_deadline(&mut self) -> bool {
        let base = self.tunables.base_slice_ns;
        let nr_queued = self.nr_queued;
        let Some(se) = self.curr.and_then(|_| self.entities.at_mut(self.curr_pos)) else { return false };
        // A running entity dequeued without DEQUEUE_SLEEP keeps its deadline relative to its
        // vruntime until it is placed again: not an absolute deadline to compare with.
        if se.rel_deadline || vdiff(se.vruntime, se.deadline) < 0 {
            return false;
        }
        if !se.custom_slice {
            se.slice = base;
        }
        se.deadline = se.vruntime.wrapping_add(calc_delta_fair(se.slice, se.weight));
        se.protect_slice = false;
        nr_queued > 1
    }

    /// Linux `yield_task_fair`: `curr` gives up the rest of its request by pushing its
    /// deadline one slice further. No-op when it is alone or nothing runs.
    pub fn yield_curr(&mut self) {
        if self.nr_queued <= 1 {
            return;
        }
        if let Some(se) = self.curr.and_then(|_| self.entities.at_mut(self.curr_pos)) {
            se.deadline = se.deadline.wrapping_add(calc_delta_fair(se.slice, se.weight));
            se.protect_slice = false;
        }
    }

    /// Linux `reweight_entity` (6.13 form): change an entity's weight, queued or not.
    /// Keeps `w * vlag` (the real lag) and scales the relative deadline by
    /// `old / new`; a queued entity is re-placed so its lag is preserved.
    /// `ESRCH` unknown, `EINVAL` weight outside `1..=MAX_WEIGHT`.
    pub fn reweight(&mut self, key: K, new_weight: u64) -> Result<(), Errno> {
        let new_weight = check_weight(new_weight)?;
        let se = self.se(key).ok_or(Errno::ESRCH)?;
        if se.weight == new_weight {
            // Linux `update_cfs_group` reweights only on a change: a same-weight reweight would
            // re-place the entity (and drop its slice protection) for nothing.
            return Ok(());
        }
        let on_rq = se.on_rq;
        let is_curr = self.curr == Some(key);
        if on_rq {
            self.update_entity_lag(key);
            if !is_curr {
                self.tree_remove(key);
            }
        }
        let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) else { return Err(Errno::ESRCH) };
        let old = se.weight;
        if on_rq {
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
            se.on_rq = false;
            self.load -= old;
            self.nr_queued -= 1;
        }
        se.rescale(new_weight);
        if on_rq {
            self.place_entity(key, 0);
            if let Some(se) = self.pos(key).and_then(|p| self.entities.at_mut(p)) {
                se.on_rq = true;
            }
            self.load += new_weight;
            self.nr_queued += 1;
            if !is_curr {
                self.tree_insert(key);
            }
        }
        Ok(())
    }

    /// Should the queued entity `waking` preempt `curr`? (Linux `check_preempt_wakeup_fair`.)
    /// * nothing fair running, or `waking` is `curr`/not queued: `false` (cross-class
    ///   preemption is the caller's decision);
    /// * a SCHED_IDLE `curr` is always preempted by a non-idle waker;
    /// * a SCHED_BATCH or SCHED_IDLE waker never preempts;
    /// * otherwise iff [`FairRq::pick_next`] would choose `waking` and (unless the
    ///   granularity is 0) `waking`'s deadline is earlier than `curr`'s by at least
    ///   `calc_delta_fair(wakeup_granularity_ns, waking.weight)`.
    pub fn check_preempt_wakeup(&self, waking: K, curr_policy: Policy, waking_policy: Policy) -> bool {
        let Some(curr) = self.curr else { return false };
        let Some(pse) = self.se(waking).filter(|se| se.on_rq) else { return false };
        if curr == waking {
            return false;
        }
        if curr_policy == Policy::Idle && waking_policy != Policy::Idle {
            return true;
        }
        if waking_policy != Policy::Normal {
            return false;
        }
        if self.pick_next() != Some(waking) {
            return false;
        }
        let gran = self.tunables.wakeup_granularity_ns;
        match self.curr_on_rq() {
            Some(cse) if gran > 0 => {
                let vgran = calc_delta_fair(gran, pse.weight).min(i64::MAX as u64) as i64;
                vdiff(cse.deadline, pse.deadline) >= vgran
            }
            _ => true,
        }
    }

    /// Checks every internal invariant; for tests and kernel debug builds.
    pub fn verify(&self) -> Result<(), &'static str> {
        let mut avg = 0i128;
        let mut avg_load = 0u64;
        let mut load = 0u64;
        let mut nr = 0usize;
        for (&k, se) in self.entities.iter() {
            if se.on_rq {
                load += se.weight;
                nr += 1;
                if self.curr != Some(k) {
                    if self.timeline.vruntime_of(se.deadline, k) != Some(se.vruntime) {
                        return Err("queued entity missing from the tree");
                    }
                    avg += self.key_of(se.vruntime) as i128 * se.weight as i128;
                    avg_load += se.weight;
                }
            }
        }
        if self.timeline.len() + usize::from(self.curr_on_rq().is_some()) != nr {
            return Err("tree size mismatch");
        }
        if avg != self.avg_vruntime || avg_load != self.avg_load {
            return Err("avg_vruntime sums out of date");
        }
        if load != self.load || nr != self.nr_queued {
            return Err("load / nr_queued out of date");
        }
        if self.curr.is_some_and(|k| !self.entities.contains_key(&k)) {
            return Err("curr not attached");
        }
        if self.curr.is_some_and(|k| self.entities.position(&k) != Some(self.curr_pos)) {
            return Err("curr position stale");
        }
        Ok(())
    }
}

/// Real time for `vdelta` of virtual time at `weight` (inverse of
/// [`calc_delta_fair`](crate::weight::calc_delta_fair)): `vdelta × weight / 1024`.
pub fn virtual_to_real(vdelta: u64, weight: u64) -> u64 {
    ((vdelta as u128 * weight as u128) / crate::weight::NICE_0_LOAD as u128).min(u64::MAX as u128) as u64
}

/// hrtick's delay for a running entity (Linux `hrtick_start_fair`: slice − ran): the real time
/// until its virtual deadline, `(deadline − vruntime) × weight / 1024`; `None` when the
/// deadline has already passed (reschedule now).
pub fn slice_remaining_ns(se: &FairEntity) -> Option<u64> {
    let vleft = se.deadline().wrapping_sub(se.vruntime()) as i64;
    (vleft > 0).then(|| virtual_to_real(vleft as u64, se.weight()))
}

impl FairEntity {
    /// Orders by virtual deadline (wrapping), like Linux `entity_before`.
    pub fn deadline_cmp(&self, other: &FairEntity) -> Ordering {
        vdiff(self.deadline, other.deadline).cmp(&0)
    }
}

#[cfg(test)]
mod slice_remainder_tests {
    use super::*;

    #[test]
    fn remainder_is_the_slice_at_start_and_shrinks_in_real_time() {
        for nice in [-20, -5, 0, 5, 19] {
            let w = crate::weight::nice_to_weight(nice);
            let mut rq: FairRq<u32> = FairRq::new(FairTunables::default());
            rq.attach_new(1, w).unwrap();
            rq.attach_new(2, 1024).unwrap();
            rq.enqueue(1, 0).unwrap();
            rq.enqueue(2, 0).unwrap();
            rq.set_next(1).unwrap();
            let start = slice_remaining_ns(rq.entity(1).unwrap()).unwrap();
            let slice = rq.entity(1).unwrap().slice();
            assert!(start <= slice + 2, "nice {}: {} > slice {}", nice, start, slice);
            rq.update_curr(start / 2);
            let left = slice_remaining_ns(rq.entity(1).unwrap()).unwrap();
            assert!(left.abs_diff(start - start / 2) <= 2 + w / 1024, "nice {}: {} left after half", nice, left);
            rq.update_curr(left + 1);
            // The slice ended: a new deadline was set, and the remainder is a whole slice again.
            let renewed = slice_remaining_ns(rq.entity(1).unwrap()).unwrap();
            assert!(renewed.abs_diff(slice) <= 2 + w / 1024, "nice {}: renewed {}", nice, renewed);
        }
    }

    #[test]
    fn past_deadline_means_reschedule_now() {
        let se = FairEntity::new(1024).unwrap();
        // A fresh entity has deadline == vruntime until placed: nothing left.
        assert_eq!(slice_remaining_ns(&se), None);
        assert_eq!(virtual_to_real(1000, 2048), 2000);
        assert_eq!(virtual_to_real(u64::MAX, 88761), u64::MAX);
    }
}

#[cfg(test)]
mod div_tests {
    use super::div_i128;
    use proptest::prelude::*;

    #[test]
    fn edges_divide_like_i128() {
        let big = i64::MAX as i128;
        for (a, b) in
            [(i64::MIN as i128, -1), (i64::MIN as i128, 1), (big + 1, 2), (-big - 7, 3), (7, -2), (-7, 2), (0, 5), (big * big, big)]
        {
            assert_eq!(div_i128(a, b), a / b, "{} / {}", a, b);
        }
    }

    proptest! {
        #[test]
        fn divides_like_i128(a in any::<i128>(), b in any::<i128>().prop_filter("non-zero", |b| *b != 0), small in any::<i64>(), d in 1i64..1 << 40) {
            prop_assert_eq!(div_i128(a, b), a / b);
            prop_assert_eq!(div_i128(small as i128, d as i128), small as i128 / d as i128);
            prop_assert_eq!(div_i128(small as i128, -(d as i128)), small as i128 / -(d as i128));
        }
    }
}
