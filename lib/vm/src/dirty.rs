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
//! # Throttle ([`throttle`]): Linux's `balance_dirty_pages`, one domain
//! A writer is checked after every [`Throttle::next_check`] pages it newly dirties (Linux's
//! `balance_dirty_pages_ratelimited`; rewriting a dirty page is free). With `nr = dirty +
//! writeback` pages, `freerun = (bg + thresh) / 2`, `setpoint = (freerun + thresh) / 2`:
//! * `nr > bg`: the flusher is woken (background writeback) — for every task, RT included.
//! * `nr <= freerun`: no pause; next check after [`poll_interval`] pages (√(thresh − nr)).
//! * `freerun < nr < thresh`, the rate band: the writer may dirty at
//!   `rate = bw / N × pos_ratio` bytes per second, with `bw` the measured writeback bandwidth,
//!   `N` the rate-limited writers ([`Dirtiers`]) and [`pos_ratio`] `= 1 + ((setpoint − nr) /
//!   (thresh − setpoint))³` (2 at `freerun`, 1 at the setpoint, 0 at `thresh`). It pauses
//!   `pages × 4096 / rate − elapsed` (the time its pages are worth at that rate, less the time
//!   it spent dirtying them), at most [`max_pause`], and is checked again after about
//!   [`TARGET_PAUSE_NS`] worth of pages. So every limited writer gets the same share, and the
//!   cache settles at the setpoint where they dirty, together, what the device writes.
//!   Linux's `dirty_ratelimit` reaches `bw / N` by feedback from the measured dirty rate; Cadence
//!   counts the writers, which gives the same value at once (a writer dirtying slower than its
//!   share counts fully, where Linux's feedback would hand its unused share to the others; the
//!   position ratio then rises and makes up part of it).
//! * `nr >= thresh`: the writer is paused [`max_pause`] (an eighth of the time the device
//!   needs for `nr` pages, 1 ms ..= Linux's `MAX_PAUSE`, 200 ms) and checked again before it
//!   dirties more ([`Throttle::exceeded`]).
//! * `vm.rt_dirty_throttle`: `exempt` (the seed, Morton 2003: "we do not want to throttle
//!   real-time tasks. Period."): an RT task is never paused and not counted in `N`; its pages
//!   are still accounted and the flusher still woken; `boost`: the RT thresholds above (so its
//!   position ratio, from its own `freerun`/`thresh`, is higher); `off`: RT tasks as any other.
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

/// Most pages a writer dirties between two throttle checks (Linux's `ratelimit_pages`, 32 on
/// small machines).
pub const RATELIMIT_PAGES: u64 = 32;
/// The pause the throttle aims at between checks of a rate-limited writer (Linux's
/// `wb_min_pause` targets 10 ms with HZ=1000).
pub const TARGET_PAUSE_NS: u64 = 10_000_000;
/// Fixed-point scale of the position ratio (Linux `RATELIMIT_CALC_SHIFT`: 1 << 10).
pub const POS_SCALE: i128 = 1 << 10;

/// The device and the other writers, as the throttle sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    /// Pages that can hold dirty data (free plus page cache).
    pub dirtyable: u64,
    /// Dirty plus writeback pages.
    pub nr_dirty: u64,
    /// Writeback bandwidth, bytes per second (0 counts as [`INIT_BW`]).
    pub bw: u64,
    /// Rate-limited writers (at least 1; [`Dirtiers::count`]).
    pub dirtiers: u64,
}

/// The writer at a throttle check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writer {
    /// An RT task.
    pub rt: bool,
    /// Pages it newly dirtied since its last check.
    pub pages: u64,
    /// Time since its last check ended (it was dirtying meanwhile), ns.
    pub elapsed_ns: u64,
}

/// What the throttle decided for one writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Wake the flusher for background writeback.
    pub wake_flusher: bool,
    /// Pause the writer this long (ns); 0: go on.
    pub pause_ns: u64,
    /// Pages the writer may dirty before its next check (Linux `nr_dirtied_pause`).
    pub next_check: u64,
    /// The writer is rate-limited (in the band or over the limit): counted in [`Dirtiers`].
    pub limited: bool,
    /// Over the hard limit: after the pause, check again before dirtying more (Linux's
    /// `dirty_exceeded` loop).
    pub exceeded: bool,
}

/// Linux's `dirty_poll_interval`: below the free-run ceiling a writer checks again after about
/// √(thresh − dirty) pages (a power of two), at most [`RATELIMIT_PAGES`].
pub fn poll_interval(nr_dirty: u64, limit: u64) -> u64 {
    match limit.checked_sub(nr_dirty) {
        Some(d) if d > 0 => (1u64 << (d.ilog2() / 2)).min(RATELIMIT_PAGES),
        _ => 1,
    }
}

/// The longest pause with `nr_dirty` pages dirty at `bw` bytes/s: an eighth of the time the
/// device needs to write them, within 1 ms ..= [`MAX_PAUSE_NS`] (Linux `wb_max_pause`: a
/// longer sleep could let a small pool of dirty pages drain and the disk idle).
pub fn max_pause(nr_dirty: u64, bw: u64) -> u64 {
    let bw = u128::from(if bw == 0 { INIT_BW } else { bw });
    let t = u128::from(nr_dirty) * u128::from(PAGE_SIZE) * 1_000_000_000 / bw / 8;
    t.clamp(1_000_000, u128::from(MAX_PAUSE_NS)) as u64
}

/// Linux's `pos_ratio` in [`POS_SCALE`] units: `1 + ((setpoint − nr) / (limit − setpoint))³`,
/// clamped to 0..=2, with `setpoint = (freerun + limit) / 2`: 2 at the free-run ceiling, 1 at
/// the setpoint, 0 at the limit.
pub fn pos_ratio(nr_dirty: u64, freerun: u64, limit: u64) -> i128 {
    let setpoint = (freerun + limit) / 2;
    let span = i128::from(limit.saturating_sub(setpoint).max(1));
    let x = (i128::from(setpoint) - i128::from(nr_dirty)) * POS_SCALE / span;
    (POS_SCALE + x * x * x / (POS_SCALE * POS_SCALE)).clamp(0, 2 * POS_SCALE)
}

/// The throttle at a writer's check (the module doc's rule).
pub fn throttle(cfg: &DirtyConfig, dom: &Domain, w: Writer, mode: RtDirty) -> Throttle {
    let t = thresholds(cfg, dom.dirtyable, w.rt, mode);
    let nr = dom.nr_dirty;
    let wake_flusher = nr > t.background;
    let freerun = (t.background + t.limit) / 2;
    let go = |next_check: u64| Throttle { wake_flusher, pause_ns: 0, next_check, limited: false, exceeded: false };
    if w.rt && mode == RtDirty::Exempt {
        return go(RATELIMIT_PAGES);
    }
    if nr <= freerun {
        return go(poll_interval(nr, t.limit));
    }
    let cap = max_pause(nr, dom.bw);
    if nr >= t.limit {
        return Throttle { wake_flusher, pause_ns: cap, next_check: 1, limited: true, exceeded: true };
    }
    let bw = i128::from(if dom.bw == 0 { INIT_BW } else { dom.bw });
    // Bytes per second for this writer: its share of the bandwidth, scaled by the position.
    let rate = bw * pos_ratio(nr, freerun, t.limit) / POS_SCALE / i128::from(dom.dirtiers.max(1));
    let (pause_ns, next_check) = if rate <= 0 {
        (cap, 1)
    } else {
        let period = i128::from(w.pages) * i128::from(PAGE_SIZE) * 1_000_000_000 / rate;
        let pause = (period - i128::from(w.elapsed_ns)).clamp(0, i128::from(cap)) as u64;
        let next = (rate * i128::from(TARGET_PAUSE_NS) / 1_000_000_000 / i128::from(PAGE_SIZE)).clamp(1, i128::from(RATELIMIT_PAGES));
        (pause, next as u64)
    };
    Throttle { wake_flusher, pause_ns, next_check, limited: true, exceeded: false }
}

/// How many writers are rate-limited: those that reached a limited check in the current or
/// the previous [`BANDWIDTH_INTERVAL_NS`] (the larger count of the two, so an interval's
/// start does not drop them). Each writer keeps the number of the interval it was last
/// counted in (`seen`, 0 at first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dirtiers {
    interval: u64,
    this: u64,
    last: u64,
}

impl Dirtiers {
    /// None counted yet.
    pub const fn new() -> Dirtiers {
        Dirtiers { interval: 0, this: 0, last: 0 }
    }

    fn roll(&mut self, now_ns: u64) {
        let i = now_ns / BANDWIDTH_INTERVAL_NS + 1;
        if i != self.interval {
            self.last = if i == self.interval + 1 { self.this } else { 0 };
            self.this = 0;
            self.interval = i;
        }
    }

    /// A limited writer, last counted in interval `*seen`, checks at `now_ns`.
    pub fn note(&mut self, now_ns: u64, seen: &mut u64) {
        self.roll(now_ns);
        if *seen != self.interval {
            *seen = self.interval;
            self.this += 1;
        }
    }

    /// The number of rate-limited writers at `now_ns` (at least 1).
    pub fn count(&mut self, now_ns: u64) -> u64 {
        self.roll(now_ns);
        self.this.max(self.last).max(1)
    }
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

    fn peer_config() -> DirtyConfig {
        let mut c = DirtyConfig::default();
        c.set("dirty_bytes", 32 * MIB).unwrap();
        c.set("dirty_background_bytes", 16 * MIB).unwrap();
        c
    }

    fn dom(nr_dirty: u64, dirtiers: u64) -> Domain {
        Domain { dirtyable: 1 << 20, nr_dirty, bw: 8 * MIB, dirtiers }
    }

    const NORMAL: Writer = Writer { rt: false, pages: 8, elapsed_ns: 0 };

    /// Thresholds 4096 / 8192 pages: freerun 6144, setpoint 7168.
    #[test]
    fn the_bands_of_balance_dirty_pages() {
        let c = peer_config();
        let go = |t: Throttle| (t.pause_ns, t.limited, t.exceeded);
        // Below background: nothing; the poll interval is √(thresh − nr), at most 32 pages.
        let t = throttle(&c, &dom(4000, 1), NORMAL, RtDirty::Off);
        assert_eq!((t.wake_flusher, go(t), t.next_check), (false, (0, false, false), 32));
        assert_eq!(poll_interval(8192 - 16, 8192), 4);
        assert_eq!(poll_interval(8192, 8192), 1);
        // Background writeback, still free-running.
        let t = throttle(&c, &dom(6144, 1), NORMAL, RtDirty::Off);
        assert_eq!((t.wake_flusher, go(t)), (true, (0, false, false)));
        // At the setpoint: pos_ratio 1, one writer gets all of 8 MiB/s: 8 pages = 3.9 ms.
        assert_eq!(pos_ratio(7168, 6144, 8192), POS_SCALE);
        let t = throttle(&c, &dom(7168, 1), NORMAL, RtDirty::Off);
        assert_eq!(go(t), (3_906_250, true, false));
        // ... and 10 ms worth of pages (20) before the next check.
        assert_eq!(t.next_check, 20);
        // Two writers: half the rate each, twice the pause; time spent dirtying counts.
        assert_eq!(throttle(&c, &dom(7168, 2), NORMAL, RtDirty::Off).pause_ns, 7_812_500);
        assert_eq!(throttle(&c, &dom(7168, 2), Writer { elapsed_ns: 812_500, ..NORMAL }, RtDirty::Off).pause_ns, 7_000_000);
        assert_eq!(throttle(&c, &dom(7168, 2), Writer { elapsed_ns: 1 << 40, ..NORMAL }, RtDirty::Off).pause_ns, 0);
        // The cubic: 2 at freerun, 0 at the limit, 1 + (1/2)³ halfway to freerun.
        assert_eq!(pos_ratio(6144, 6144, 8192), 2 * POS_SCALE);
        assert_eq!(pos_ratio(8192, 6144, 8192), 0);
        assert_eq!(pos_ratio(6656, 6144, 8192), POS_SCALE + POS_SCALE / 8);
        // Just under the limit: the rate is ~0, the pause capped.
        assert_eq!(throttle(&c, &dom(8191, 1), NORMAL, RtDirty::Off).pause_ns, MAX_PAUSE_NS);
        // At or over the limit: max_pause, and check again.
        assert_eq!(go(throttle(&c, &dom(8192 + 100_000, 1), NORMAL, RtDirty::Off)), (MAX_PAUSE_NS, true, true));
        // A small pool of dirty pages on a fast device: short pauses (16 pages at 100 MiB/s:
        // 625 µs to write, so 1 ms; 8 MiB at 8 MiB/s: 125 ms; 64 MiB: 8 s, so 200 ms).
        assert_eq!(max_pause(16, INIT_BW), 1_000_000);
        assert_eq!(max_pause(2048, 8 * MIB), 125_000_000);
        assert_eq!(max_pause(16384, 8 * MIB), MAX_PAUSE_NS);
        // Unknown bandwidth: INIT_BW (12.5 times 8 MiB/s).
        assert_eq!(throttle(&c, &Domain { bw: 0, ..dom(7168, 1) }, NORMAL, RtDirty::Off).pause_ns, 312_500);
    }

    #[test]
    fn rt_modes() {
        let c = peer_config();
        let over = dom(8192 + 512, 1);
        let rt = Writer { rt: true, ..NORMAL };
        let e = throttle(&c, &over, rt, RtDirty::Exempt);
        assert_eq!((e.wake_flusher, e.pause_ns, e.limited), (true, 0, false), "exempt: flusher woken, never paused, not counted");
        // Boost: thresholds 5376 / 10496, freerun 7936: 8704 is in its band, below its setpoint.
        let b = throttle(&c, &over, rt, RtDirty::Boost);
        assert!(b.limited && !b.exceeded && b.pause_ns < 3_906_250, "inside the boosted limit: {:?}", b);
        assert!(throttle(&c, &over, rt, RtDirty::Off).exceeded);
        assert!(throttle(&c, &over, NORMAL, RtDirty::Exempt).exceeded, "only RT tasks are exempt");
        for m in [RtDirty::Exempt, RtDirty::Boost, RtDirty::Off] {
            assert_eq!(RtDirty::parse(m.name()), Ok(m));
        }
        assert!(RtDirty::parse("on").is_err());
    }

    #[test]
    fn dirtiers_are_counted_per_interval() {
        let mut d = Dirtiers::default();
        let (mut a, mut b) = (0, 0);
        assert_eq!(d.count(0), 1, "none: 1");
        d.note(0, &mut a);
        d.note(1_000, &mut a);
        d.note(2_000, &mut b);
        assert_eq!(d.count(3_000), 2, "each writer once");
        // Next interval: the last one's count holds until this one's passes it.
        d.note(BANDWIDTH_INTERVAL_NS, &mut a);
        assert_eq!(d.count(BANDWIDTH_INTERVAL_NS + 1), 2);
        // One writer left for two intervals: 1.
        d.note(2 * BANDWIDTH_INTERVAL_NS, &mut a);
        assert_eq!(d.count(2 * BANDWIDTH_INTERVAL_NS), 1);
        // A gap of several intervals forgets everything.
        assert_eq!(d.count(10 * BANDWIDTH_INTERVAL_NS), 1);
        d.note(10 * BANDWIDTH_INTERVAL_NS, &mut b);
        assert_eq!(d.count(10 * BANDWIDTH_INTERVAL_NS), 1);
    }

    /// Morton's case, simulated: two normal writers dirty as fast as they can (a page per
    /// 10 µs) while the device writes 8 MiB/s in 64 KiB batches. Each gets half the bandwidth
    /// (within 3%), whatever their phase, and the cache stays between freerun and the limit.
    #[test]
    fn two_writers_share_the_bandwidth_equally() {
        let c = peer_config();
        const STEP_NS: u64 = 10_000;
        for phase in [0u64, 3, 7, 50, 333] {
            let mut nr: u64 = 6000;
            let mut written_bytes: u64 = 0;
            let mut dirtiers = Dirtiers::default();
            // Per writer: (pages dirtied in total, since last check, next check, asleep until, last check end, seen).
            let mut w = [(0u64, 0u64, 1u64, phase * STEP_NS, 0u64, 0u64), (0, 0, 1, 0, 0, 0)];
            let (mut lo, mut hi) = (u64::MAX, 0);
            let end = 20_000_000_000;
            let mut now = 0;
            while now < end {
                // The device: 8 MiB/s while there is background work.
                if nr > 4096 {
                    written_bytes += 8 * MIB * STEP_NS / 1_000_000_000;
                    while written_bytes >= 64 * 1024 {
                        written_bytes -= 64 * 1024;
                        nr = nr.saturating_sub(16);
                    }
                }
                for x in w.iter_mut() {
                    if now < x.3 {
                        continue;
                    }
                    x.0 += 1;
                    x.1 += 1;
                    nr += 1;
                    if x.1 >= x.2 {
                        let count = dirtiers.count(now);
                        let t = throttle(
                            &c,
                            &Domain { dirtyable: 1 << 20, nr_dirty: nr, bw: 8 * MIB, dirtiers: count },
                            Writer { rt: false, pages: x.1, elapsed_ns: now - x.4 },
                            RtDirty::Off,
                        );
                        if t.limited {
                            dirtiers.note(now, &mut x.5);
                        }
                        x.1 = 0;
                        x.2 = t.next_check;
                        x.3 = now + t.pause_ns;
                        x.4 = x.3;
                    }
                }
                if now > 2_000_000_000 {
                    lo = lo.min(nr);
                    hi = hi.max(nr);
                }
                now += STEP_NS;
            }
            let (a, b) = (w[0].0 as f64, w[1].0 as f64);
            assert!((a - b).abs() / (a + b) < 0.03, "phase {}: {} vs {} pages", phase, a, b);
            // Together they dirtied about what the device wrote (8 MiB/s for 20 s, 2048 pages/s).
            assert!((a + b) > 0.9 * 40960.0 && (a + b) < 1.1 * 40960.0, "phase {}: {} pages in total", phase, a + b);
            assert!(lo > 6144 - 64 && hi < 8192, "phase {}: nr in {}..{}", phase, lo, hi);
        }
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
        /// exempt RT task is never paused; background never exceeds the limit; the next check
        /// is 1..=RATELIMIT_PAGES pages away.
        #[test]
        fn pause_is_monotonic_and_bounded(dirtyable in 1u64..(1 << 24), ratio in 0u64..=100, bg in 0u64..=100,
                                          a in 0u64..(1 << 24), b in 0u64..(1 << 24), bw in 0u64..(1 << 32), rt: bool,
                                          pages in 1u64..64, dirtiers in 1u64..16) {
            let mut c = DirtyConfig::default();
            c.set("dirty_ratio", ratio).unwrap();
            c.set("dirty_background_ratio", bg).unwrap();
            let w = Writer { rt, pages, elapsed_ns: 0 };
            for mode in [RtDirty::Exempt, RtDirty::Boost, RtDirty::Off] {
                let t = thresholds(&c, dirtyable, rt, mode);
                prop_assert!(t.background <= t.limit);
                let (lo, hi) = (a.min(b), a.max(b));
                let d = |nr_dirty| Domain { dirtyable, nr_dirty, bw, dirtiers };
                let t_lo = throttle(&c, &d(lo), w, mode);
                let t_hi = throttle(&c, &d(hi), w, mode);
                prop_assert!(t_lo.pause_ns <= t_hi.pause_ns && t_hi.pause_ns <= MAX_PAUSE_NS);
                prop_assert!((1..=RATELIMIT_PAGES).contains(&t_lo.next_check) && (1..=RATELIMIT_PAGES).contains(&t_hi.next_check));
                if rt && mode == RtDirty::Exempt { prop_assert_eq!(t_hi.pause_ns, 0); prop_assert!(!t_hi.limited); }
            }
        }
    }
}
