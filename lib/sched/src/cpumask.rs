//! `CpuMask`: a set of CPU ids below [`NR_CPUS`] as a bitmap (bit `n` = CPU `n`), Linux's
//! `struct cpumask`; [`AtomicCpuMask`] and [`SeqCpuMask`] for masks shared between CPUs.
//!
//! [`NR_CPUS`] is the build's limit, as Linux's `CONFIG_NR_CPUS`: 1,024 unless the build sets
//! `CADENCE_NR_CPUS` (a power of two, at least 64: per-CPU tables index by `cpu & (NR_CPUS - 1)`). The kernel sizes its per-CPU data by the CPUs the
//! firmware lists, not by this limit; a mask is `NR_CPUS / 64` words whatever the machine.
//!
//! All operations are total: CPU ids `>= NR_CPUS` are simply never members, so
//! `single(NR_CPUS)` is empty and `contains(NR_CPUS)` is `false`; nothing panics.

use core::ops::{BitAnd, BitOr, Not};
use core::sync::atomic::{AtomicU64, Ordering};

/// Parses the build's `CADENCE_NR_CPUS` (decimal) at compile time; 1,024 if unset.
const fn parse_nr_cpus(s: Option<&str>) -> usize {
    let Some(s) = s else { return 1024 };
    let b = s.as_bytes();
    let mut n = 0usize;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "CADENCE_NR_CPUS must be a decimal number");
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    assert!(n >= 64 && n.is_power_of_two() && n <= 65536, "CADENCE_NR_CPUS must be a power of two from 64 to 65536");
    n
}

/// Largest number of CPUs the build handles (Linux's `NR_CPUS`).
pub const NR_CPUS: usize = parse_nr_cpus(option_env!("CADENCE_NR_CPUS"));

/// 64-bit words in a mask.
pub const WORDS: usize = NR_CPUS / 64;

/// A set of CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuMask {
    words: [u64; WORDS],
}

impl Default for CpuMask {
    fn default() -> Self {
        CpuMask::EMPTY
    }
}

impl core::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CpuMask[{}]", self.to_list())
    }
}

impl CpuMask {
    /// No CPUs.
    pub const EMPTY: CpuMask = CpuMask { words: [0; WORDS] };

    /// CPUs `0..ncpus` (all [`NR_CPUS`] if `ncpus >= NR_CPUS`).
    pub const fn all(ncpus: usize) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        let mut w = 0;
        while w < WORDS {
            let lo = w * 64;
            m.words[w] = if ncpus >= lo + 64 {
                u64::MAX
            } else if ncpus > lo {
                (1u64 << (ncpus - lo)) - 1
            } else {
                0
            };
            w += 1;
        }
        m
    }

    /// Just `cpu` (empty if `cpu >= NR_CPUS`).
    pub const fn single(cpu: usize) -> CpuMask {
        CpuMask::EMPTY.with(cpu)
    }

    /// CPUs 0..63 as the bits of `bits` (a test's or an old interface's 64-bit mask).
    pub const fn from_u64(bits: u64) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        m.words[0] = bits;
        m
    }

    /// CPUs 0..63 of this set as a 64-bit mask (the others are dropped).
    pub const fn low_u64(self) -> u64 {
        self.words[0]
    }

    /// The set whose bit `64 * i + b` is bit `b` of `words[i]` (Linux's `unsigned long`
    /// bitmap layout); words past [`WORDS`] are ignored, missing ones are 0.
    pub fn from_words(words: &[u64]) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (dst, src) in m.words.iter_mut().zip(words) {
            *dst = *src;
        }
        m
    }

    /// The bitmap as words, lowest CPUs first.
    pub const fn words(&self) -> &[u64; WORDS] {
        &self.words
    }

    /// The set from a little-endian byte bitmap (`sched_setaffinity`'s user buffer: bit `b`
    /// of byte `i` is CPU `8 * i + b`); bytes past [`NR_CPUS`] bits are ignored.
    pub fn from_le_bytes(bytes: &[u8]) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (i, &b) in bytes.iter().enumerate().take(NR_CPUS / 8) {
            m.words[i / 8] |= (b as u64) << (8 * (i % 8));
        }
        m
    }

    /// The first `out.len()` bytes of the little-endian bitmap (zeros past [`NR_CPUS`]).
    pub fn write_le_bytes(&self, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = if i < NR_CPUS / 8 { (self.words[i / 8] >> (8 * (i % 8))) as u8 } else { 0 };
        }
    }

    /// Membership test.
    pub const fn contains(self, cpu: usize) -> bool {
        cpu < NR_CPUS && self.words[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// This set plus `cpu`.
    pub const fn with(mut self, cpu: usize) -> CpuMask {
        if cpu < NR_CPUS {
            self.words[cpu / 64] |= 1 << (cpu % 64);
        }
        self
    }

    /// This set minus `cpu`.
    pub const fn without(mut self, cpu: usize) -> CpuMask {
        if cpu < NR_CPUS {
            self.words[cpu / 64] &= !(1 << (cpu % 64));
        }
        self
    }

    /// Intersection.
    pub const fn and_(mut self, other: CpuMask) -> CpuMask {
        let mut w = 0;
        while w < WORDS {
            self.words[w] &= other.words[w];
            w += 1;
        }
        self
    }

    /// Union.
    pub const fn or_(mut self, other: CpuMask) -> CpuMask {
        let mut w = 0;
        while w < WORDS {
            self.words[w] |= other.words[w];
            w += 1;
        }
        self
    }

    /// `self` minus `other`.
    pub const fn andnot(mut self, other: CpuMask) -> CpuMask {
        let mut w = 0;
        while w < WORDS {
            self.words[w] &= !other.words[w];
            w += 1;
        }
        self
    }

    /// Do the two sets share a CPU (Linux `cpumask_intersects`)?
    pub const fn intersects(self, other: CpuMask) -> bool {
        let mut w = 0;
        while w < WORDS {
            if self.words[w] & other.words[w] != 0 {
                return true;
            }
            w += 1;
        }
        false
    }

    /// Every member of `self` is in `other`.
    pub const fn is_subset_of(self, other: CpuMask) -> bool {
        let mut w = 0;
        while w < WORDS {
            if self.words[w] & !other.words[w] != 0 {
                return false;
            }
            w += 1;
        }
        true
    }

    /// Number of CPUs.
    pub const fn count(self) -> u32 {
        let mut n = 0;
        let mut w = 0;
        while w < WORDS {
            n += self.words[w].count_ones();
            w += 1;
        }
        n
    }

    /// Empty set.
    pub const fn is_empty(self) -> bool {
        let mut w = 0;
        while w < WORDS {
            if self.words[w] != 0 {
                return false;
            }
            w += 1;
        }
        true
    }

    /// Lowest-numbered CPU.
    pub const fn first(self) -> Option<usize> {
        let mut w = 0;
        while w < WORDS {
            if self.words[w] != 0 {
                return Some(w * 64 + self.words[w].trailing_zeros() as usize);
            }
            w += 1;
        }
        None
    }

    /// Lowest-numbered member at or after `cpu` (Linux `cpumask_next(cpu - 1)`).
    pub const fn next_from(self, cpu: usize) -> Option<usize> {
        if cpu >= NR_CPUS {
            return None;
        }
        let mut w = cpu / 64;
        let mut bits = self.words[w] & (u64::MAX << (cpu % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            if w >= WORDS {
                return None;
            }
            bits = self.words[w];
        }
    }

    /// Highest-numbered CPU.
    pub const fn last(self) -> Option<usize> {
        let mut w = WORDS;
        while w > 0 {
            w -= 1;
            if self.words[w] != 0 {
                return Some(w * 64 + 63 - self.words[w].leading_zeros() as usize);
            }
        }
        None
    }

    /// Members in increasing order.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut w = 0usize;
        let mut bits = self.words[0];
        core::iter::from_fn(move || loop {
            if bits != 0 {
                let cpu = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                return Some(cpu);
            }
            w += 1;
            if w >= WORDS {
                return None;
            }
            bits = self.words[w];
        })
    }

    /// Linux's CPU list format (`0-2,4-5,7`, as `/sys/devices/system/cpu/online` and
    /// `taskset -pc` print it); empty for no CPUs.
    pub fn to_list(self) -> alloc::string::String {
        use core::fmt::Write;
        let mut out = alloc::string::String::new();
        let mut next = self.first();
        while let Some(start) = next {
            let mut end = start;
            while end + 1 < NR_CPUS && self.contains(end + 1) {
                end += 1;
            }
            let sep = if out.is_empty() { "" } else { "," };
            let _ = if start == end { write!(out, "{sep}{start}") } else { write!(out, "{sep}{start}-{end}") };
            next = self.next_from(end + 1);
        }
        out
    }

    /// Linux's `%*pb` format for a machine of `nr_cpu_ids` CPUs (`/proc/PID/status`'s
    /// `Cpus_allowed`, sysfs `cpumap`, `/proc/schedstat`): hex, most significant first, in
    /// comma-separated 32-bit groups, the first group only as wide as its bits need
    /// (`f` for 4 CPUs, `ff,ffffffff` for 40).
    pub fn to_hex(self, nr_cpu_ids: usize) -> alloc::string::String {
        use core::fmt::Write;
        let bits = nr_cpu_ids.clamp(1, NR_CPUS);
        let groups = bits.div_ceil(32);
        let mut out = alloc::string::String::new();
        for g in (0..groups).rev() {
            let word = (self.words[g / 2] >> (32 * (g % 2))) as u32;
            if g == groups - 1 {
                let top_bits = bits - 32 * g;
                let digits = top_bits.div_ceil(4);
                let masked = if top_bits >= 32 { word } else { word & ((1u32 << top_bits) - 1) };
                let _ = write!(out, "{masked:0digits$x}");
            } else {
                let _ = write!(out, ",{word:08x}");
            }
        }
        out
    }

    /// The bitmap as one hex number without leading zeros or commas (`f0`; `0` for no CPUs),
    /// as `taskset -p` prints a mask.
    pub fn to_hex_number(self) -> alloc::string::String {
        use core::fmt::Write;
        let mut out = alloc::string::String::new();
        match self.words.iter().rposition(|&w| w != 0) {
            None => out.push('0'),
            Some(top) => {
                let _ = write!(out, "{:x}", self.words[top]);
                for w in self.words[..top].iter().rev() {
                    let _ = write!(out, "{:016x}", w);
                }
            }
        }
        out
    }

    /// Members starting at `start` and wrapping around (Linux `for_each_cpu_wrap`),
    /// so searches spread out instead of always favouring CPU 0.
    pub fn iter_wrap(self, start: usize) -> impl Iterator<Item = usize> {
        let split = CpuMask::all(start.min(NR_CPUS));
        self.andnot(split).iter().chain(self.and_(split).iter())
    }
}

impl BitAnd for CpuMask {
    type Output = CpuMask;
    fn bitand(self, rhs: CpuMask) -> CpuMask {
        self.and_(rhs)
    }
}

impl BitOr for CpuMask {
    type Output = CpuMask;
    fn bitor(self, rhs: CpuMask) -> CpuMask {
        self.or_(rhs)
    }
}

impl Not for CpuMask {
    type Output = CpuMask;
    fn not(self) -> CpuMask {
        CpuMask::all(NR_CPUS).andnot(self)
    }
}

impl FromIterator<usize> for CpuMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        iter.into_iter().fold(CpuMask::EMPTY, CpuMask::with)
    }
}

/// A CPU set that CPUs set and clear bits of concurrently (Linux's `cpu_online_mask`, the RT
/// overload mask): each bit changes atomically; [`load`](Self::load) reads word by word, so a
/// snapshot sees each bit as it was at some moment of the read, as Linux's readers of such
/// masks do.
pub struct AtomicCpuMask {
    words: [AtomicU64; WORDS],
}

impl Default for AtomicCpuMask {
    fn default() -> Self {
        AtomicCpuMask::new()
    }
}

impl AtomicCpuMask {
    /// The empty set.
    pub const fn new() -> Self {
        AtomicCpuMask { words: [const { AtomicU64::new(0) }; WORDS] }
    }

    /// Adds `cpu` (ignored if `cpu >= NR_CPUS`); returns whether it was already a member.
    pub fn set(&self, cpu: usize, order: Ordering) -> bool {
        cpu < NR_CPUS && self.words[cpu / 64].fetch_or(1 << (cpu % 64), order) & (1 << (cpu % 64)) != 0
    }

    /// Removes `cpu`; returns whether it was a member.
    pub fn clear(&self, cpu: usize, order: Ordering) -> bool {
        cpu < NR_CPUS && self.words[cpu / 64].fetch_and(!(1 << (cpu % 64)), order) & (1 << (cpu % 64)) != 0
    }

    /// Membership test.
    pub fn contains(&self, cpu: usize, order: Ordering) -> bool {
        cpu < NR_CPUS && self.words[cpu / 64].load(order) & (1 << (cpu % 64)) != 0
    }

    /// The members now (word by word).
    pub fn load(&self, order: Ordering) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (dst, src) in m.words.iter_mut().zip(&self.words) {
            *dst = src.load(order);
        }
        m
    }

    /// No member (word by word, as [`load`](Self::load)).
    pub fn is_empty(&self, order: Ordering) -> bool {
        self.words.iter().all(|w| w.load(order) == 0)
    }

    /// Empties the set, returning what it held (each word swapped out atomically, so a bit set
    /// meanwhile is either returned or kept, never lost).
    pub fn take(&self, order: Ordering) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (dst, src) in m.words.iter_mut().zip(&self.words) {
            *dst = src.swap(0, order);
        }
        m
    }

    /// The lowest member other than `except`, read word by word and stopping at the first
    /// word with one (Linux's `cpumask_first_andnot` on a shared mask): finding one CPU costs
    /// at most [`WORDS`] loads, never a walk over the members.
    pub fn first_except(&self, except: usize, order: Ordering) -> Option<usize> {
        self.words.iter().enumerate().find_map(|(w, word)| {
            let own = if except / 64 == w { 1u64 << (except % 64) } else { 0 };
            let bits = word.load(order) & !own;
            (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize)
        })
    }

    /// Is any member not in `except` (a quick "anyone else?" without a whole snapshot)?
    pub fn any_except(&self, except: usize, order: Ordering) -> bool {
        self.words.iter().enumerate().any(|(w, word)| {
            let bits = word.load(order);
            let own = if except / 64 == w { 1u64 << (except % 64) } else { 0 };
            bits & !own != 0
        })
    }
}

/// A whole CPU set replaced at once by one writer at a time and read locklessly from anywhere
/// (a task's cached affinity): readers retry while a store is in progress (a sequence count,
/// Linux's `seqcount_t`), so a read never mixes two stores' words, which could make an empty or
/// never-set mask. Stores must be serialized by the caller (the task's attribute lock).
pub struct SeqCpuMask {
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
}

impl Default for SeqCpuMask {
    fn default() -> Self {
        SeqCpuMask::new(CpuMask::EMPTY)
    }
}

impl SeqCpuMask {
    /// Holding `m`.
    pub const fn new(m: CpuMask) -> Self {
        let mut words = [const { AtomicU64::new(0) }; WORDS];
        let mut w = 0;
        while w < WORDS {
            words[w] = AtomicU64::new(m.words[w]);
            w += 1;
        }
        SeqCpuMask { seq: AtomicU64::new(0), words }
    }

    /// Replaces the set (callers serialize stores).
    pub fn store(&self, m: CpuMask) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        core::sync::atomic::fence(Ordering::Release);
        for (dst, src) in self.words.iter().zip(m.words.iter()) {
            dst.store(*src, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The set as of one store.
    pub fn load(&self) -> CpuMask {
        loop {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let mut m = CpuMask::EMPTY;
            for (dst, src) in m.words.iter_mut().zip(&self.words) {
                *dst = src.load(Ordering::Relaxed);
            }
            core::sync::atomic::fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s {
                return m;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn basics() {
        let m: CpuMask = [1, 3, 63, 64, 1000, NR_CPUS, NR_CPUS + 5].into_iter().collect();
        assert_eq!(m.count(), 5);
        assert!(m.contains(3) && m.contains(63) && m.contains(64) && m.contains(1000) && !m.contains(0));
        assert!(!m.contains(NR_CPUS));
        assert_eq!(m.first(), Some(1));
        assert_eq!(m.last(), Some(1000));
        assert_eq!(m.iter().collect::<Vec<_>>(), [1, 3, 63, 64, 1000]);
        assert_eq!(m.iter_wrap(2).collect::<Vec<_>>(), [3, 63, 64, 1000, 1]);
        assert_eq!(m.iter_wrap(100).collect::<Vec<_>>(), [1000, 1, 3, 63, 64]);
        assert_eq!(m.iter_wrap(NR_CPUS + 1).collect::<Vec<_>>(), [1, 3, 63, 64, 1000]);
        assert_eq!((m & CpuMask::all(4)).iter().collect::<Vec<_>>(), [1, 3]);
        assert_eq!(m.without(3).with(0).iter().collect::<Vec<_>>(), [0, 1, 63, 64, 1000]);
        assert!(CpuMask::EMPTY.is_empty() && CpuMask::EMPTY.first().is_none() && CpuMask::EMPTY.last().is_none());
        assert_eq!(CpuMask::all(64).count(), 64);
        assert_eq!(CpuMask::all(65).count(), 65);
        assert_eq!(CpuMask::all(NR_CPUS + 3).count(), NR_CPUS as u32);
        assert_eq!(CpuMask::all(0), CpuMask::EMPTY);
        assert!(CpuMask::single(2).is_subset_of(CpuMask::all(3)));
        assert_eq!((m | CpuMask::single(0)).count(), 6);
        assert_eq!((!CpuMask::EMPTY).count(), NR_CPUS as u32);
        assert_eq!(m.andnot(CpuMask::single(1)).first(), Some(3));
        assert_eq!(m.next_from(4), Some(63));
        assert_eq!(m.next_from(65), Some(1000));
        assert_eq!(m.next_from(1001), None);
        assert!(m.intersects(CpuMask::single(1000)) && !m.intersects(CpuMask::single(999)));
        assert_eq!(CpuMask::from_u64(0b101).to_list(), "0,2");
        assert_eq!(m.to_list(), "1,3,63-64,1000");
        assert_eq!(CpuMask::from_u64(0b1011_0111).to_list(), "0-2,4-5,7");
        assert_eq!(CpuMask::EMPTY.to_list(), "");
        assert_eq!(CpuMask::EMPTY.to_hex_number(), "0");
        assert_eq!(CpuMask::from_u64(0xf0).to_hex_number(), "f0");
        assert_eq!(CpuMask::single(64).to_hex_number(), "10000000000000000");
    }

    #[test]
    fn hex_as_linux_prints_it() {
        assert_eq!(CpuMask::all(4).to_hex(4), "f");
        assert_eq!(CpuMask::single(0).to_hex(2), "1");
        assert_eq!(CpuMask::all(64).to_hex(64), "ffffffff,ffffffff");
        assert_eq!(CpuMask::all(40).to_hex(40), "ff,ffffffff");
        assert_eq!(CpuMask::single(0).to_hex(40), "00,00000001");
        assert_eq!(CpuMask::all(8).to_hex(8), "ff");
        assert_eq!(CpuMask::single(1).to_hex(255), "00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000002");
    }

    #[test]
    fn bytes_round_trip() {
        let m = CpuMask::single(9).with(1023.min(NR_CPUS - 1)).with(0);
        let mut buf = [0u8; 200];
        m.write_le_bytes(&mut buf);
        assert_eq!(buf[0], 1);
        assert_eq!(buf[1], 2);
        assert_eq!(CpuMask::from_le_bytes(&buf), m);
        assert_eq!(CpuMask::from_le_bytes(&[0xff]), CpuMask::all(8));
    }

    #[test]
    fn atomic_and_seq() {
        let a = AtomicCpuMask::new();
        assert!(!a.set(700, Ordering::Relaxed));
        assert!(a.set(700, Ordering::Relaxed));
        assert!(!a.set(NR_CPUS, Ordering::Relaxed));
        a.set(3, Ordering::Relaxed);
        assert_eq!(a.load(Ordering::Relaxed).iter().collect::<Vec<_>>(), [3, 700]);
        assert!(a.any_except(3, Ordering::Relaxed));
        assert!(a.clear(700, Ordering::Relaxed));
        assert!(!a.any_except(3, Ordering::Relaxed));
        assert_eq!(a.first_except(3, Ordering::Relaxed), None);
        a.set(NR_CPUS - 1, Ordering::Relaxed);
        assert_eq!(a.first_except(3, Ordering::Relaxed), Some(NR_CPUS - 1));
        assert_eq!(a.first_except(NR_CPUS - 1, Ordering::Relaxed), Some(3));
        assert_eq!(a.first_except(NR_CPUS + 9, Ordering::Relaxed), Some(3), "an id past NR_CPUS excludes nothing");
        a.clear(NR_CPUS - 1, Ordering::Relaxed);
        assert!(a.contains(3, Ordering::Relaxed));
        assert!(!a.is_empty(Ordering::Relaxed));
        assert_eq!(a.take(Ordering::Relaxed), CpuMask::single(3));
        assert!(a.is_empty(Ordering::Relaxed));
        let s = SeqCpuMask::new(CpuMask::all(3));
        assert_eq!(s.load(), CpuMask::all(3));
        s.store(CpuMask::single(900));
        assert_eq!(s.load(), CpuMask::single(900));
    }

    fn mask() -> impl Strategy<Value = CpuMask> {
        proptest::collection::vec(0usize..NR_CPUS + 8, 0..40).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// The set operations agree with a model of sorted CPU lists.
        #[test]
        fn ops_match_a_set_model(a in mask(), b in mask(), start in 0usize..NR_CPUS + 2, n in 0usize..NR_CPUS + 2) {
            use std::collections::BTreeSet;
            let sa: BTreeSet<usize> = a.iter().collect();
            let sb: BTreeSet<usize> = b.iter().collect();
            prop_assert!(sa.iter().all(|&c| c < NR_CPUS && a.contains(c)));
            prop_assert_eq!((a & b).iter().collect::<Vec<_>>(), sa.intersection(&sb).copied().collect::<Vec<_>>());
            prop_assert_eq!((a | b).iter().collect::<Vec<_>>(), sa.union(&sb).copied().collect::<Vec<_>>());
            prop_assert_eq!(a.andnot(b).iter().collect::<Vec<_>>(), sa.difference(&sb).copied().collect::<Vec<_>>());
            prop_assert_eq!(a.count() as usize, sa.len());
            prop_assert_eq!(a.first(), sa.first().copied());
            prop_assert_eq!(a.last(), sa.last().copied());
            prop_assert_eq!(a.is_subset_of(b), sa.is_subset(&sb));
            prop_assert_eq!(a.intersects(b), !sa.is_disjoint(&sb));
            prop_assert_eq!(a.next_from(start), sa.range(start..).next().copied());
            let wrap: Vec<usize> = sa.range(start..).chain(sa.range(..start.min(NR_CPUS))).copied().collect();
            prop_assert_eq!(a.iter_wrap(start).collect::<Vec<_>>(), wrap);
            prop_assert_eq!((!a).count() as usize, NR_CPUS - sa.len());
            let shared = AtomicCpuMask::new();
            for c in a.iter() { shared.set(c, Ordering::Relaxed); }
            prop_assert_eq!(shared.first_except(start, Ordering::Relaxed), a.without(start).first());
            prop_assert_eq!(CpuMask::all(n).count() as usize, n.min(NR_CPUS));
            let mut bytes = [0u8; NR_CPUS / 8];
            a.write_le_bytes(&mut bytes);
            prop_assert_eq!(CpuMask::from_le_bytes(&bytes), a);
            prop_assert_eq!(CpuMask::from_words(a.words()), a);
            // The list format parses back into the same set.
            let parsed: CpuMask = a.to_list().split(',').filter(|s| !s.is_empty()).flat_map(|r| {
                let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                lo.parse::<usize>().unwrap()..=hi.parse::<usize>().unwrap()
            }).collect();
            prop_assert_eq!(parsed, a);
            // The hex format, read back group by group, is the set (for a machine of NR_CPUS).
            let hex = a.to_hex(NR_CPUS);
            let mut back = CpuMask::EMPTY;
            for (g, grp) in hex.split(',').rev().enumerate() {
                let v = u32::from_str_radix(grp, 16).unwrap();
                for bit in 0..32 { if v & (1 << bit) != 0 { back = back.with(32 * g + bit); } }
            }
            prop_assert_eq!(back, a);
        }
    }
}
