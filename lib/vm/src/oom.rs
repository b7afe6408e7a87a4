//! The OOM killer's choice (Linux 6.1 `mm/oom_kill.c`): `oom_badness`, `select_bad_process`,
//! `/proc/PID/oom_score` and the report lines. Pure: the kernel passes each candidate's page
//! counts and `oom_score_adj`; the mechanism (collecting them, SIGKILL) is the kernel's.

use core::fmt;

/// `OOM_SCORE_ADJ_MIN`: never chosen.
pub const OOM_SCORE_ADJ_MIN: i32 = -1000;
/// `OOM_SCORE_ADJ_MAX`.
pub const OOM_SCORE_ADJ_MAX: i32 = 1000;

/// What the killer knows of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its pid.
    pub pid: u32,
    /// Resident pages (`get_mm_rss`: anonymous + file + shmem).
    pub rss_pages: u64,
    /// Swapped-out pages (`MM_SWAPENTS`).
    pub swap_pages: u64,
    /// Bytes of page tables (`mm_pgtables_bytes`).
    pub pgtables_bytes: u64,
    /// `/proc/PID/oom_score_adj`, -1000..=1000.
    pub oom_score_adj: i32,
    /// Init, a kernel thread, a process without memory, or one already dying
    /// (`oom_unkillable_task`, `MMF_OOM_SKIP`, `in_vfork`).
    pub unkillable: bool,
}

/// `oom_badness(p, totalpages)`: `None` for never (Linux's `LONG_MIN`), else RSS + swap +
/// page-table pages + `oom_score_adj * totalpages / 1000` (may be negative).
pub fn badness(c: &Candidate, total_pages: u64) -> Option<i64> {
    if c.unkillable || c.oom_score_adj <= OOM_SCORE_ADJ_MIN {
        return None;
    }
    let points = (c.rss_pages + c.swap_pages + c.pgtables_bytes / crate::PAGE_SIZE) as i64;
    Some(points + i64::from(c.oom_score_adj) * (total_pages / 1000) as i64)
}

/// `select_bad_process`: the candidate with the most badness, in the order given (a later
/// one with equal points replaces an earlier one, as `oom_evaluate_task`'s `<`); `None` when
/// every candidate is unkillable or at `OOM_SCORE_ADJ_MIN`.
pub fn select(candidates: &[Candidate], total_pages: u64) -> Option<(usize, i64)> {
    let mut chooser = Chooser::new(total_pages);
    for (i, c) in candidates.iter().enumerate() {
        chooser.offer(i, c);
    }
    chooser.chosen()
}

/// [`select`] one candidate at a time, for a caller that cannot hold every candidate at
/// once (the kernel walks its process table in batches, allocating nothing per process).
/// `K` names a candidate: an index for [`select`], the kernel's own handle for the kernel.
#[derive(Clone, Debug)]
pub struct Chooser<K> {
    total_pages: u64,
    best: Option<(K, i64)>,
}

impl<K: Clone> Chooser<K> {
    /// No candidate seen yet.
    pub fn new(total_pages: u64) -> Self {
        Chooser { total_pages, best: None }
    }

    /// Weighs `c`, named `key`; true when it is now the chosen one (equal points replace,
    /// as [`select`]).
    pub fn offer(&mut self, key: K, c: &Candidate) -> bool {
        let Some(points) = badness(c, self.total_pages) else { return false };
        if self.best.as_ref().is_some_and(|(_, best)| points < *best) {
            return false;
        }
        self.best = Some((key, points));
        true
    }

    /// The chosen candidate's key and points.
    pub fn chosen(&self) -> Option<(K, i64)> {
        self.best.clone()
    }
}

/// `/proc/PID/oom_score` (`proc_oom_score`): 0 for never, else the badness scaled into
/// 0..=2000, times 2/3 (Linux 6.1).
pub fn oom_score(c: &Candidate, total_pages: u64) -> i64 {
    match badness(c, total_pages) {
        None => 0,
        Some(b) => (1000 + b * 1000 / total_pages.max(1) as i64) * 2 / 3,
    }
}

/// The victim's line, `__oom_kill_process`'s format: `Out of memory: Killed process 123 (hog)
/// total-vm:...kB, anon-rss:...kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:...kB
/// oom_score_adj:0`.
#[derive(Clone, Copy, Debug)]
pub struct KillReport<'a> {
    /// The victim.
    pub pid: u32,
    /// Its comm.
    pub comm: &'a str,
    /// Its mapped virtual memory, pages.
    pub total_vm_pages: u64,
    /// Its anonymous resident pages.
    pub anon_rss_pages: u64,
    /// Its file-backed resident pages.
    pub file_rss_pages: u64,
    /// Its real uid.
    pub uid: u32,
    /// Its page tables, bytes.
    pub pgtables_bytes: u64,
    /// Its `oom_score_adj`.
    pub oom_score_adj: i32,
}

impl fmt::Display for KillReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kb = |pages: u64| pages * (crate::PAGE_SIZE / 1024);
        write!(
            f,
            "Out of memory: Killed process {} ({}) total-vm:{}kB, anon-rss:{}kB, file-rss:{}kB, shmem-rss:0kB, UID:{} pgtables:{}kB oom_score_adj:{}",
            self.pid,
            self.comm,
            kb(self.total_vm_pages),
            kb(self.anon_rss_pages),
            kb(self.file_rss_pages),
            self.uid,
            self.pgtables_bytes / 1024,
            self.oom_score_adj
        )
    }
}

/// `dump_oom_summary`'s line for a global OOM (no cgroups, one node).
#[derive(Clone, Copy, Debug)]
pub struct Summary<'a> {
    /// The victim's comm.
    pub comm: &'a str,
    /// The victim's pid.
    pub pid: u32,
    /// The victim's real uid.
    pub uid: u32,
}

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task={},pid={},uid={}",
            self.comm, self.pid, self.uid
        )
    }
}

/// `dump_header`'s first line for a user page fault (order 0, GFP_HIGHUSER_MOVABLE).
#[derive(Clone, Copy, Debug)]
pub struct Invoked<'a> {
    /// The task whose allocation failed.
    pub comm: &'a str,
    /// Its `oom_score_adj`.
    pub oom_score_adj: i32,
    /// A kernel allocation (a fork's copies, a new fd: Linux's `GFP_KERNEL`), not a user page.
    pub kernel: bool,
}

impl fmt::Display for Invoked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gfp = if self.kernel { "0xcc0(GFP_KERNEL)" } else { "0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP)" };
        write!(f, "{} invoked oom-killer: gfp_mask={}, order=0, oom_score_adj={}", self.comm, gfp, self.oom_score_adj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(pid: u32, rss: u64, adj: i32) -> Candidate {
        Candidate { pid, rss_pages: rss, swap_pages: 0, pgtables_bytes: 0, oom_score_adj: adj, unkillable: false }
    }

    #[test]
    fn badness_is_rss_swap_and_page_tables_plus_the_adjustment() {
        let x = Candidate { pid: 5, rss_pages: 100, swap_pages: 7, pgtables_bytes: 3 * 4096, oom_score_adj: 0, unkillable: false };
        assert_eq!(badness(&x, 100_000), Some(110));
        assert_eq!(badness(&Candidate { oom_score_adj: 500, ..x }, 100_000), Some(110 + 500 * 100));
        assert_eq!(badness(&Candidate { oom_score_adj: -999, ..x }, 100_000), Some(110 - 999 * 100));
        assert_eq!(badness(&Candidate { oom_score_adj: -1000, ..x }, 100_000), None);
        assert_eq!(badness(&Candidate { unkillable: true, ..x }, 100_000), None);
    }

    #[test]
    fn the_biggest_is_chosen_and_minus_1000_never() {
        let t = 120_000;
        assert_eq!(select(&[c(1, 10, 0), c(2, 5000, 0), c(3, 20, 0)], t), Some((1, 5000)));
        assert_eq!(select(&[c(1, 10, 0), c(2, 5000, -1000), c(3, 20, 0)], t), Some((2, 20)));
        // An adjustment outweighs size: 500 × 120 = 60000 pages.
        assert_eq!(select(&[c(1, 10, 500), c(2, 5000, 0)], t).map(|s| s.0), Some(0));
        // Ties go to the later one, as Linux's `points < chosen_points` skip.
        assert_eq!(select(&[c(1, 10, 0), c(2, 10, 0)], t), Some((1, 10)));
        assert_eq!(select(&[c(1, 10, -1000)], t), None);
        assert_eq!(select(&[], t), None);
    }

    #[test]
    fn oom_score_is_linux_6_1s_scale() {
        let t = 100_000;
        assert_eq!(oom_score(&c(1, 0, 0), t), 666);
        assert_eq!(oom_score(&c(1, 50_000, 0), t), 1000);
        assert_eq!(oom_score(&c(1, 0, -1000), t), 0);
        // RSS of all memory plus the maximal adjustment: (1000 + 2000) × 2/3.
        assert_eq!(oom_score(&c(1, 100_000, 1000), t), 2000);
    }

    #[test]
    fn the_report_lines_are_linuxs() {
        let k = KillReport {
            pid: 123,
            comm: "hog",
            total_vm_pages: 1000,
            anon_rss_pages: 900,
            file_rss_pages: 0,
            uid: 0,
            pgtables_bytes: 8192,
            oom_score_adj: 0,
        };
        assert_eq!(
            k.to_string(),
            "Out of memory: Killed process 123 (hog) total-vm:4000kB, anon-rss:3600kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:8kB oom_score_adj:0"
        );
        assert_eq!(
            Summary { comm: "hog", pid: 123, uid: 0 }.to_string(),
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/,task=hog,pid=123,uid=0"
        );
        assert!(Invoked { comm: "hog", oom_score_adj: 0, kernel: false }
            .to_string()
            .starts_with("hog invoked oom-killer: gfp_mask=0x140cca"));
        assert!(Invoked { comm: "hog", oom_score_adj: 0, kernel: true }
            .to_string()
            .starts_with("hog invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)"));
    }

    proptest! {
        #[test]
        fn the_choice_has_the_most_points(v in proptest::collection::vec((0u64..100_000, -1000i32..=1000, any::<bool>()), 0..20), t in 1000u64..1_000_000) {
            let cs: Vec<Candidate> = v.iter().enumerate().map(|(i, &(rss, adj, u))| Candidate { unkillable: u, ..c(i as u32, rss, adj) }).collect();
            match select(&cs, t) {
                None => prop_assert!(cs.iter().all(|x| badness(x, t).is_none())),
                Some((i, p)) => {
                    prop_assert_eq!(badness(&cs[i], t), Some(p));
                    prop_assert!(cs.iter().all(|x| badness(x, t).is_none_or(|b| b <= p)));
                    prop_assert!(cs[i + 1..].iter().all(|x| badness(x, t).is_none_or(|b| b < p)));
                }
            }
        }
    }
}
