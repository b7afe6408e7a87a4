//! Dirty-page limits and the throttle (`balance_dirty_pages` in spirit).
//!
//! # Thresholds (Linux `domain_dirty_limits`)
//! With `dirtyable` the pages that can hold dirty data (free plus page cache):
//! * `thresh = ceil(vm.dirty_bytes / 4096)` if `dirty_bytes` is set, else
//!   `(vm.dirty_ratio × 4096 / 100) × dirtyable / 4096` (Linux's integer steps: the ratio in
//!   parts per page first, so 20% of 100,000 pages is 19,995);
//! * `bg` the same from `vm.dirty_background_bytes` / `_ratio`; if `bg >= thresh`,
//!   `bg = thresh / 2`;
//! * an RT task under `vm.rt_dirty_throttle = boost` (Linux's rule): `bg += bg/4 + thresh/32`,
//!   `thresh += thresh/4 + thresh/32` (Linux adds `dirty_limit / 32`, a smoothed `thresh`;
//!   Cadence has one domain and uses `thresh` itself).
//!
//! As in Linux ([`DirtyConfig::set`]): writing a new `dirty_bytes` zeroes `dirty_ratio` and a
//! new `dirty_ratio` zeroes `dirty_bytes` (writing the value it has changes nothing); writing
//! either background setting zeroes the other, whatever the value. Ranges: ratios 0..=100,
//! `dirty_bytes` at least 2 pages, `dirty_background_bytes` at least 1.
//!
//! # Throttle ([`throttle`]), after a writer dirtied pages
//! `nr = dirty + writeback` pages.
//! * `nr > bg`: the flusher is woken (background writeback) — for every task, RT included.
//! * `nr > thresh`: the writer is paused for the time the device needs to write the excess at
//!   its measured bandwidth: `pause = (nr − thresh) × 4096 / bw` seconds, at most
//!   [`MAX_PAUSE_NS`] (Linux's `MAX_PAUSE`, 200 ms); then it checks again. So the pause grows
//!   in proportion to how far over the limit the cache is. (Linux's `balance_dirty_pages`
//!   starts a gentler, rate-based throttle between `(bg + thresh) / 2` and `thresh`; Cadence
//!   does only the part above the limit.)
//! * `vm.rt_dirty_throttle`: `exempt` (the seed, Morton 2003: "we do not want to throttle
//!   real-time tasks. Period."): an RT task is never paused, its pages are still accounted and
//!   the flusher still woken; `boost`: the RT thresholds above; `off`: RT tasks as any other.
//!
//! # Bandwidth ([`Bandwidth`])
//! Writeback bandwidth starts at Linux's `INIT_BW` (100 MiB/s) and follows what the flusher
//! completes: each sample of at least [`BANDWIDTH_INTERVAL_NS`] (200 ms, Linux's) moves the
//! estimate a quarter of the way to the sample. The flusher calls [`Bandwidth::start`] when it
//! goes from idle to busy, so idle time does not count as slow writing (Linux
//! `wb_bandwidth_estimate_start`).
//!
//! # Expiry
//! A dirty page older than `vm.dirty_expire_centisecs` is written by the flusher's periodic
//! pass whatever the thresholds ([`expired`]).

use crate::{Invalid, PAGE_SIZE};

/// The longest single throttle pause (Linux `MAX_PAUSE`: HZ/5).
pub const MAX_PAUSE_NS: u64 = 200_000_000;
/// The initial writeback bandwidth estimate, bytes per second (Linux `INIT_BW`: 100 MiB/s).
pub const INIT_BW: u64 = 100 << 20;
/// Shortest interval a bandwidth sample covers (Linux `BANDWIDTH_INTERVAL`, 200 ms).
pub const BANDWIDTH_INTERVAL_NS: u64 = 200_000_000;

/// The dirty sysctls (Linux's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyConfig {
    /// `vm.dirty_ratio` (%; 0 when `dirty_bytes` is set).
    pub ratio: u64,
    /// `vm.dirty_bytes` (0: the ratio applies).
    pub bytes: u64,
    /// `vm.dirty_background_ratio` (%).
    pub background_ratio: u64,
    /// `vm.dirty_background_bytes` (0: the ratio applies).
    pub background_bytes: u64,
    /// `vm.dirty_expire_centisecs`.
    pub expire_centisecs: u64,
    /// `vm.dirty_writeback_centisecs` (the flusher's period; 0: no periodic pass).
    pub writeback_centisecs: u64,
}

impl Default for DirtyConfig {
    fn default() -> Self {
        DirtyConfig { ratio: 20, bytes: 0, background_ratio: 10, background_bytes: 0, expire_centisecs: 3000, writeback_centisecs: 500 }
    }
}

/// The names [`DirtyConfig::set`] takes (without `vm.`).
pub const SYSCTLS: [&str; 6] = [
    "dirty_ratio", "dirty_bytes", "dirty_background_ratio", "dirty_background_bytes", "dirty_expire_centisecs", "dirty_writeback_centisecs",
];

impl DirtyConfig {
    /// Sets one sysctl (`name` without `vm.`) as Linux does: the ratio and bytes of a pair
    /// exclude each other. Errors: unknown name, value out of range.
    pub fn set(&mut self, name: &str, value: u64) -> Result<(), Invalid> {
        match name {
            "dirty_ratio" => {
                if value > 100 {
                    return Err(Invalid("vm.dirty_ratio must be 0..100"));
                }
                if value != self.ratio {
                    self.ratio = value;
                    self.bytes = 0;
                }
            }
            "dirty_bytes" => {
                if value < 2 * PAGE_SIZE {
                    return Err(Invalid("vm.dirty_bytes must be at least 8192 (two pages)"));
                }
                if value != self.bytes {
                    self.bytes = value;
                    self.ratio = 0;
                }
            }
            "dirty_background_ratio" => {
                if value > 100 {
                    return Err(Invalid("vm.dirty_background_ratio must be 0..100"));
                }
                self.background_ratio = value;
                self.background_bytes = 0;
            }
            "dirty_background_bytes" => {
                if value < 1 {
                    return Err(Invalid("vm.dirty_background_bytes must be at least 1"));
                }
                self.background_bytes = value;
                self.background_ratio = 0;
            }
            "dirty_expire_centisecs" => self.expire_centisecs = value,
            "dirty_writeback_centisecs" => self.writeback_centisecs = value,
            _ => return Err(Invalid("unknown dirty sysctl")),
        }
        Ok(())
    }

    /// The value of one sysctl (`name` without `vm.`).
    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "dirty_ratio" => self.ratio,
            "dirty_bytes" => self.bytes,
            "dirty_background_ratio" => self.background_ratio,
            "dirty_background_bytes" => self.background_bytes,
            "dirty_expire_centisecs" => self.expire_centisecs,
            "dirty_writeback_centisecs" => self.writeback_centisecs,
            _ => return None,
        })
    }
}

/// `vm.rt_dirty_throttle`: what the throttle does with RT tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtDirty {
    /// The seed: accounted, flusher woken, never paused.
    Exempt,
    /// Linux: thresholds +25% (+ thresh/32).
    Boost,
    /// No special treatment.
    Off,
}

impl RtDirty {
    /// The sysctl's spelling.
    pub fn name(self) -> &'static str {
        match self {
            RtDirty::Exempt => "exempt",
            RtDirty::Boost => "boost",
            RtDirty::Off => "off",
        }
    }

    /// Parses the sysctl's value.
    pub fn parse(s: &str) -> Result<RtDirty, Invalid> {
        match s {
            "exempt" => Ok(RtDirty::Exempt),
            "boost" => Ok(RtDirty::Boost),
            "off" => Ok(RtDirty::Off),
            _ => Err(Invalid("vm.rt_dirty_throttle must be exempt, boost or off")),
        }
    }
}

/// Background and hard dirty thresholds, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// Above it the flusher writes in the background.
    pub background: u64,
    /// Above it writers are paused.
    pub limit: u64,
}

/// The thresholds for a writer (`rt`: an RT task; the boost applies only in `Boost` mode).
pub fn thresholds(cfg: &DirtyConfig, dirtyable: u64, rt: bool, mode: RtDirty) -> Thresholds {
    let pages = |bytes: u64| bytes.div_ceil(PAGE_SIZE);
    // Linux: `ratio = (vm_dirty_ratio * PAGE_SIZE) / 100; thresh = (ratio * available) / PAGE_SIZE`.
    let of_ratio = |pct: u64| ((u128::from(pct.min(100) * PAGE_SIZE / 100) * u128::from(dirtyable)) / u128::from(PAGE_SIZE)) as u64;
    let mut limit = if cfg.bytes > 0 { pages(cfg.bytes) } else { of_ratio(cfg.ratio) };
    let mut background = if cfg.background_bytes > 0 { pages(cfg.background_bytes) } else { of_ratio(cfg.background_ratio) };
    if background >= limit {
        background = limit / 2;
    }
    if rt && mode == RtDirty::Boost {
        let extra = limit / 32;
        background += background / 4 + extra;
        limit += limit / 4 + extra;
    }
    Thresholds { background, limit }
}

/// What the throttle decided for one writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Wake the flusher for background writeback.
    pub wake_flusher: bool,
    /// Pause the writer this long (ns), then check again; 0: go on.
    pub pause_ns: u64,
}

/// The throttle after a write (the module doc's rule). `nr_dirty`: dirty plus writeback pages;
/// `bw`: writeback bandwidth, bytes per second (0 counts as [`INIT_BW`]).
pub fn throttle(cfg: &DirtyConfig, dirtyable: u64, nr_dirty: u64, bw: u64, rt: bool, mode: RtDirty) -> Throttle {
    let t = thresholds(cfg, dirtyable, rt, mode);
    let wake_flusher = nr_dirty > t.background;
    let exempt = rt && mode == RtDirty::Exempt;
    let pause_ns = if nr_dirty > t.limit && !exempt {
        let bw = if bw == 0 { INIT_BW } else { bw };
        let excess = u128::from(nr_dirty - t.limit) * u128::from(PAGE_SIZE);
        ((excess * 1_000_000_000 / u128::from(bw)).min(u128::from(MAX_PAUSE_NS)) as u64).max(1)
    } else {
        0
    };
    Throttle { wake_flusher, pause_ns }
}

/// Whether a page dirtied at `dirtied_at_ns` has expired at `now_ns`.
pub fn expired(cfg: &DirtyConfig, dirtied_at_ns: u64, now_ns: u64) -> bool {
    now_ns.saturating_sub(dirtied_at_ns) >= cfg.expire_centisecs.saturating_mul(10_000_000)
}

/// The writeback bandwidth estimate (bytes per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bandwidth {
    /// Current estimate.
    pub bytes_per_s: u64,
    written: u64,
    since_ns: u64,
}

impl Bandwidth {
    /// Starts at [`INIT_BW`], the first interval at `now_ns`.
    pub fn new(now_ns: u64) -> Bandwidth {
        Bandwidth { bytes_per_s: INIT_BW, written: 0, since_ns: now_ns }
    }

    /// The flusher became busy at `now_ns` (after being idle): a new interval starts.
    pub fn start(&mut self, now_ns: u64) {
        self.written = 0;
        self.since_ns = now_ns;
    }

    /// The flusher completed `bytes` of writeback at `now_ns`. Once the interval reaches
    /// [`BANDWIDTH_INTERVAL_NS`] the estimate moves a quarter of the way to the interval's
    /// rate (never to 0: an idle interval, nothing written, leaves it alone).
    pub fn completed(&mut self, bytes: u64, now_ns: u64) {
        self.written = self.written.saturating_add(bytes);
        let elapsed = now_ns.saturating_sub(self.since_ns);
        if elapsed < BANDWIDTH_INTERVAL_NS {
            return;
        }
        if self.written > 0 {
            let sample = (u128::from(self.written) * 1_000_000_000 / u128::from(elapsed)) as u64;
            self.bytes_per_s = ((3 * u128::from(self.bytes_per_s) + u128::from(sample)) / 4).max(1) as u64;
        }
        self.written = 0;
        self.since_ns = now_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn ratio_and_bytes_exclude_each_other_as_in_linux() {
        let mut c = DirtyConfig::default();
        c.set("dirty_bytes", 32 * MIB).unwrap();
        assert_eq!((c.ratio, c.bytes), (0, 32 * MIB));
        c.set("dirty_ratio", 0).unwrap();
        assert_eq!((c.ratio, c.bytes), (0, 32 * MIB), "writing the ratio it has changes nothing (Linux)");
        c.set("dirty_ratio", 30).unwrap();
        assert_eq!((c.ratio, c.bytes), (30, 0));
        c.set("dirty_background_ratio", 10).unwrap();
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        c.set("dirty_background_ratio", 0).unwrap();
        assert_eq!((c.background_ratio, c.background_bytes), (0, 0), "background writes clear the other always");
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        assert_eq!((c.background_ratio, c.background_bytes), (0, 16 * MIB));
        assert!(c.set("dirty_ratio", 101).is_err());
        assert!(c.set("dirty_bytes", 8191).is_err());
        assert!(c.set("dirty_background_bytes", 0).is_err());
        assert!(c.set("dirty_nonsense", 1).is_err());
        for n in SYSCTLS {
            assert!(c.get(n).is_some(), "{}", n);
        }
    }

    /// The peer's setting (dirty_bytes 32 MiB, background 16 MiB) and the ratio defaults.
    #[test]
    fn thresholds_follow_domain_dirty_limits() {
        let mut c = DirtyConfig::default();
        // Linux's integer steps: 20% → 819 parts per page, 10% → 409.
        assert_eq!(thresholds(&c, 100_000, false, RtDirty::Off), Thresholds { background: 9_985, limit: 19_995 });
        c.set("dirty_bytes", 32 * MIB).unwrap();
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        let t = thresholds(&c, 100_000, false, RtDirty::Boost);
        assert_eq!(t, Thresholds { background: 4096, limit: 8192 });
        // RT under boost: +25% + limit/32 (256 pages).
        let t = thresholds(&c, 100_000, true, RtDirty::Boost);
        assert_eq!(t, Thresholds { background: 4096 + 1024 + 256, limit: 8192 + 2048 + 256 });
        // Background at or above the limit is halved to limit/2.
        c.set("dirty_background_bytes", 64 * MIB).unwrap();
        assert_eq!(thresholds(&c, 100_000, false, RtDirty::Off).background, 4096);
    }

    #[test]
    fn pause_is_the_excess_at_the_bandwidth_capped_at_max_pause() {
        let mut c = DirtyConfig::default();
        c.set("dirty_bytes", 32 * MIB).unwrap();
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        let limit = 8192;
        assert_eq!(throttle(&c, 1 << 20, 4000, 8 * MIB, false, RtDirty::Off), Throttle { wake_flusher: false, pause_ns: 0 });
        assert_eq!(throttle(&c, 1 << 20, 5000, 8 * MIB, false, RtDirty::Off), Throttle { wake_flusher: true, pause_ns: 0 });
        // 256 pages (1 MiB) over at 8 MiB/s: 125 ms.
        assert_eq!(throttle(&c, 1 << 20, limit + 256, 8 * MIB, false, RtDirty::Off).pause_ns, 125_000_000);
        // 1 page over: 4096 B at 8 MiB/s = 488281 ns.
        assert_eq!(throttle(&c, 1 << 20, limit + 1, 8 * MIB, false, RtDirty::Off).pause_ns, 488_281);
        // Far over: capped.
        assert_eq!(throttle(&c, 1 << 20, limit + 100_000, 8 * MIB, false, RtDirty::Off).pause_ns, MAX_PAUSE_NS);
        // Unknown bandwidth: INIT_BW.
        assert_eq!(throttle(&c, 1 << 20, limit + 256, 0, false, RtDirty::Off).pause_ns, 10_000_000);
    }

    #[test]
    fn rt_modes() {
        let mut c = DirtyConfig::default();
        c.set("dirty_bytes", 32 * MIB).unwrap();
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        let over = 8192 + 512;
        let e = throttle(&c, 1 << 20, over, 8 * MIB, true, RtDirty::Exempt);
        assert_eq!(e, Throttle { wake_flusher: true, pause_ns: 0 }, "exempt: flusher woken, never paused");
        assert_eq!(throttle(&c, 1 << 20, over, 8 * MIB, true, RtDirty::Boost).pause_ns, 0, "inside the boosted limit");
        assert!(throttle(&c, 1 << 20, over, 8 * MIB, true, RtDirty::Off).pause_ns > 0);
        assert!(throttle(&c, 1 << 20, over, 8 * MIB, false, RtDirty::Exempt).pause_ns > 0, "only RT tasks are exempt");
        for m in [RtDirty::Exempt, RtDirty::Boost, RtDirty::Off] {
            assert_eq!(RtDirty::parse(m.name()), Ok(m));
        }
        assert!(RtDirty::parse("on").is_err());
    }

    #[test]
    fn expiry_and_bandwidth() {
        let c = DirtyConfig::default();
        assert!(!expired(&c, 0, 29_999_999_999));
        assert!(expired(&c, 0, 30_000_000_000));
        let mut bw = Bandwidth::new(0);
        bw.completed(8 * MIB, 100_000_000);
        assert_eq!(bw.bytes_per_s, INIT_BW, "under one interval: no sample");
        bw.completed(0, 200_000_000);
        // 8 MiB in 200 ms = 40 MiB/s; a quarter of the way from 100.
        assert_eq!(bw.bytes_per_s, (3 * INIT_BW + 40 * MIB) / 4);
        bw.completed(0, 400_000_000);
        assert_eq!(bw.bytes_per_s, (3 * INIT_BW + 40 * MIB) / 4, "an idle interval leaves it");
        // 10 s idle, then busy again: the interval starts at `start`, not at the last sample.
        let before = bw.bytes_per_s;
        bw.start(10_400_000_000);
        bw.completed(8 * MIB, 10_600_000_000);
        assert_eq!(bw.bytes_per_s, (3 * before + 40 * MIB) / 4);
    }

    proptest! {
        /// The pause never decreases as the cache gets dirtier, never passes MAX_PAUSE, and an
        /// exempt RT task is never paused; background never exceeds the limit.
        #[test]
        fn pause_is_monotonic_and_bounded(dirtyable in 1u64..(1 << 24), ratio in 0u64..=100, bg in 0u64..=100,
                                          a in 0u64..(1 << 24), b in 0u64..(1 << 24), bw in 0u64..(1 << 32), rt: bool) {
            let mut c = DirtyConfig::default();
            c.set("dirty_ratio", ratio).unwrap();
            c.set("dirty_background_ratio", bg).unwrap();
            for mode in [RtDirty::Exempt, RtDirty::Boost, RtDirty::Off] {
                let t = thresholds(&c, dirtyable, rt, mode);
                prop_assert!(t.background <= t.limit);
                let (lo, hi) = (a.min(b), a.max(b));
                let p_lo = throttle(&c, dirtyable, lo, bw, rt, mode).pause_ns;
                let p_hi = throttle(&c, dirtyable, hi, bw, rt, mode).pause_ns;
                prop_assert!(p_lo <= p_hi && p_hi <= MAX_PAUSE_NS);
                if rt && mode == RtDirty::Exempt { prop_assert_eq!(p_hi, 0); }
            }
        }
    }
}
