//! `CpuPri`: which CPUs run at which priority level (Linux kernel/sched/cpupri.c), so
//! an RT push or wakeup finds the least important allowed CPUs without visiting every
//! CPU.
//!
//! Levels, least important first (Linux's layout before 5.10, where idle and normal
//! were still separate):
//!
//! | level | index (`pri_to_cpu`) |
//! |-------|----------------------|
//! | offline (`None`, Linux `CPUPRI_INVALID`) | in no mask |
//! | [`CpuPrio::Idle`] | 0 |
//! | [`CpuPrio::Fair`] | 1 |
//! | [`CpuPrio::Rt`]`(p)`, `p` in `0..=99` | `2 + p` |
//!
//! `Rt(p)` with `p > 99` is stored as `Rt(99)` ([`CpuPri::get`] returns the stored level).
//!
//! Contract with the kernel (who calls [`CpuPri::set`], under the lock that protects
//! the `CpuPri`):
//! * A CPU's level is the **higher** of what it runs and its most important *queued*
//!   RT task ([`cpu_level`]); Linux sets cpupri from `rt_rq->highest_prio.curr`, which
//!   counts queued tasks. So a CPU that has a waiting RT task of priority `p` is never
//!   reported below `Rt(p)`, and a push never targets a CPU that is about to switch to
//!   something at least as important anyway.
//! * The level is updated whenever either term changes (enqueue, dequeue, switch,
//!   priority change, class change, RT throttling) and set to `None` when the CPU goes
//!   offline. A CPU that was never `set` is offline: never a target.
//! * CPU ids `>= min(ncpus, NR_CPUS)` are ignored by `set` and read back as offline.
//!
//! Invariants (checked by [`CpuPri::verify`]): every online CPU is in exactly the mask of
//! its level and in no other; offline CPUs are in none; bit `i` of the non-empty-level
//! bitmap is set iff `level_masks[i]` is non-empty; `online` is the union of the masks.
//!
//! Cost: `set` and `get` are O(1); [`CpuPri::find`] visits only non-empty levels strictly
//! below the task's level (at most 101), each an AND of two masks. Nothing allocates after
//! [`CpuPri::new`]: 102 level masks (13 KiB at 1,024 CPUs) and one level per CPU.

use crate::balance::CpuPrio;
use crate::cpumask::{CpuMask, NR_CPUS};
use alloc::vec::Vec;

/// Number of priority levels: idle, fair and RT priorities 0..=99.
pub const CPUPRI_NR_LEVELS: usize = 2 + 100;

/// Highest RT priority a level can hold; larger values are stored as this.
pub const CPUPRI_MAX_RT: u8 = 99;

/// Index of `prio` in the level array: idle 0, fair 1, `Rt(p)` `2 + min(p, 99)`.
const fn level_index(prio: CpuPrio) -> usize {
    match prio {
        CpuPrio::Idle => 0,
        CpuPrio::Fair => 1,
        CpuPrio::Rt(p) => 2 + if p > CPUPRI_MAX_RT { CPUPRI_MAX_RT } else { p } as usize,
    }
}

/// The level a priority is stored as (RT priorities above 99 become 99).
const fn normalize(prio: CpuPrio) -> CpuPrio {
    match prio {
        CpuPrio::Rt(p) if p > CPUPRI_MAX_RT => CpuPrio::Rt(CPUPRI_MAX_RT),
        other => other,
    }
}

/// The cpupri level of a CPU running `running` with `highest_queued_rt` as the priority
/// of its most important queued RT task (the running one included or not, either way):
/// `max(running, Rt(highest_queued_rt))`. Pass `None` for `highest_queued_rt` while the
/// CPU's RT queue is throttled (its queued RT tasks cannot run there).
pub fn cpu_level(running: CpuPrio, highest_queued_rt: Option<u8>) -> CpuPrio {
    match highest_queued_rt {
        Some(p) => running.max(CpuPrio::Rt(p)),
        None => running,
    }
}

/// Per-level CPU masks plus each CPU's level; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPri {
    nr_cpus: usize,
    /// `level_masks[level_index(l)]` = online CPUs currently at level `l`.
    level_masks: [CpuMask; CPUPRI_NR_LEVELS],
    /// Bit `i` set iff `level_masks[i]` is non-empty (`CPUPRI_NR_LEVELS <= 128`).
    nonempty_levels: u128,
    /// Level of each CPU, `None` = offline (Linux `cpu_to_pri`).
    cpu_levels: Vec<Option<CpuPrio>>,
    /// Union of all level masks.
    online: CpuMask,
}

impl CpuPri {
    /// `ncpus` CPUs (at most [`NR_CPUS`]; more are ignored), all offline.
    pub fn new(ncpus: usize) -> CpuPri {
        let nr_cpus = ncpus.min(NR_CPUS);
        CpuPri {
            nr_cpus,
            level_masks: [CpuMask::EMPTY; CPUPRI_NR_LEVELS],
            nonempty_levels: 0,
            cpu_levels: alloc::vec![None; nr_cpus],
            online: CpuMask::EMPTY,
        }
    }

    /// Every CPU offline again (the state [`CpuPri::new`] made), keeping the storage.
    pub fn clear(&mut self) {
        // Only the non-empty levels and the online CPUs have anything to undo.
        let mut levels = self.nonempty_levels;
        while levels != 0 {
            self.level_masks[levels.trailing_zeros() as usize] = CpuMask::EMPTY;
            levels &= levels - 1;
        }
        self.nonempty_levels = 0;
        for cpu in self.online.iter() {
            self.cpu_levels[cpu] = None;
        }
        self.online = CpuMask::EMPTY;
    }

    /// Number of CPUs this structure can describe (`min(ncpus, NR_CPUS)`).
    pub const fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// CPUs with a level (not offline).
    pub const fn online(&self) -> CpuMask {
        self.online
    }

    /// Records `cpu`'s level (Linux `cpupri_set`); `None` takes it offline. O(1).
    /// Ignored for `cpu >= nr_cpus()`.
    pub fn set(&mut self, cpu: usize, prio: Option<CpuPrio>) {
        if cpu >= self.nr_cpus {
            return;
        }
        let new = prio.map(normalize);
        let old = self.cpu_levels[cpu];
        if old == new {
            return;
        }
        if let Some(old) = old {
            let idx = level_index(old);
            self.level_masks[idx] = self.level_masks[idx].without(cpu);
            if self.level_masks[idx].is_empty() {
                self.nonempty_levels &= !(1u128 << idx);
            }
            self.online = self.online.without(cpu);
        }
        if let Some(new) = new {
            let idx = level_index(new);
            self.level_masks[idx] = self.level_masks[idx].with(cpu);
            self.nonempty_levels |= 1u128 << idx;
            self.online = self.online.with(cpu);
        }
        self.cpu_levels[cpu] = new;
    }

    /// `cpu`'s level, `None` if offline or out of range.
    pub fn get(&self, cpu: usize) -> Option<CpuPrio> {
        self.cpu_levels.get(cpu).copied().flatten()
    }

    /// Online CPUs at exactly level `prio` (RT priorities above 99 read level 99).
    pub fn cpus_at(&self, prio: CpuPrio) -> CpuMask {
        self.level_masks[level_index(prio)]
    }

    /// Linux `cpupri_find`: the CPUs of `affinity` at the lowest level strictly below
    /// `Rt(task_prio)` that contains any CPU of `affinity` (idle, then fair, then RT 0,
    /// 1, ...). Empty if every allowed online CPU is at `Rt(task_prio)` or above. Offline
    /// CPUs are never returned.
    pub fn find(&self, task_prio: u8, affinity: CpuMask) -> CpuMask {
        let task_level = level_index(CpuPrio::Rt(task_prio));
        let mut below = self.nonempty_levels & ((1u128 << task_level) - 1);
        while below != 0 {
            let idx = below.trailing_zeros() as usize;
            let hit = self.level_masks[idx] & affinity;
            if !hit.is_empty() {
                return hit;
            }
            below &= below - 1;
        }
        CpuMask::EMPTY
    }

    /// Linux `find_lowest_rq` on top of [`find`](Self::find): among the CPUs `find`
    /// returns, `prev_cpu` if present (warm cache), else the lowest-numbered one in
    /// `topology_hint` (e.g. CPUs sharing `prev_cpu`'s cache), else the lowest-numbered
    /// one. `None` if `find` is empty.
    pub fn find_lowest(&self, task_prio: u8, affinity: CpuMask, prev_cpu: usize, topology_hint: Option<CpuMask>) -> Option<usize> {
        let lowest = self.find(task_prio, affinity);
        if lowest.contains(prev_cpu) {
            return Some(prev_cpu);
        }
        topology_hint.and_then(|hint| (lowest & hint).first()).or_else(|| lowest.first())
    }

    /// Checks the invariants listed in the module docs; `Err` names the first broken one.
    pub fn verify(&self) -> Result<(), &'static str> {
        let mut union = CpuMask::EMPTY;
        for (idx, &mask) in self.level_masks.iter().enumerate() {
            if (self.nonempty_levels >> idx) & 1 != u128::from(!mask.is_empty()) {
                return Err("non-empty-level bitmap disagrees with a level mask");
            }
            if !(union & mask).is_empty() {
                return Err("a CPU is in two level masks");
            }
            union = union | mask;
        }
        if union != self.online {
            return Err("online is not the union of the level masks");
        }
        for cpu in 0..NR_CPUS {
            let in_mask = match self.cpu_levels.get(cpu).copied().flatten() {
                Some(l) => cpu < self.nr_cpus && self.level_masks[level_index(l)].contains(cpu),
                None => !union.contains(cpu),
            };
            if !in_mask {
                return Err("a CPU's level disagrees with the level masks");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CpuPrio::*;

    fn mask(cpus: &[usize]) -> CpuMask {
        cpus.iter().copied().collect()
    }

    #[test]
    fn clear_is_new() {
        let mut cp = CpuPri::new(300);
        cp.set(3, Some(CpuPrio::Rt(50)));
        cp.set(299, Some(CpuPrio::Fair));
        cp.set(7, Some(CpuPrio::Idle));
        cp.clear();
        assert_eq!(cp, CpuPri::new(300));
        assert_eq!(cp.verify(), Ok(()));
    }

    #[test]
    fn level_indices() {
        assert_eq!(level_index(Idle), 0);
        assert_eq!(level_index(Fair), 1);
        assert_eq!(level_index(Rt(0)), 2);
        assert_eq!(level_index(Rt(99)), CPUPRI_NR_LEVELS - 1);
        assert_eq!(level_index(Rt(200)), CPUPRI_NR_LEVELS - 1);
        assert_eq!(cpu_level(Fair, Some(3)), Rt(3));
        assert_eq!(cpu_level(Rt(9), Some(3)), Rt(9));
        assert_eq!(cpu_level(Idle, None), Idle);
    }

    #[test]
    fn set_get_and_clamp() {
        let mut cp = CpuPri::new(4);
        assert_eq!(cp.get(0), None);
        cp.set(2, Some(Rt(250)));
        assert_eq!(cp.get(2), Some(Rt(99)));
        assert_eq!(cp.cpus_at(Rt(99)), mask(&[2]));
        cp.set(7, Some(Idle));
        assert_eq!((cp.get(7), cp.online()), (None, mask(&[2])));
        cp.verify().unwrap();
    }
}
