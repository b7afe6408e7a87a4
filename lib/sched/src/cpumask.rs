//! `CpuMask`: a set of up to 64 CPU ids as a `u64` bitmap (bit `n` = CPU `n`).
//!
//! All operations are total: CPU ids `>= MAX_CPUS` are simply never members, so
//! `single(70)` is empty and `contains(70)` is `false`; nothing panics.

use core::ops::{BitAnd, BitOr, Not};

/// Largest number of CPUs a `CpuMask` can describe.
pub const MAX_CPUS: usize = 64;

/// A set of CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuMask(pub u64);

impl CpuMask {
    /// No CPUs.
    pub const EMPTY: CpuMask = CpuMask(0);

    /// CPUs `0..ncpus` (all 64 if `ncpus >= 64`).
    pub const fn all(ncpus: usize) -> CpuMask {
        if ncpus >= MAX_CPUS {
            CpuMask(u64::MAX)
        } else {
            CpuMask((1u64 << ncpus) - 1)
        }
    }

    /// Just `cpu` (empty if `cpu >= MAX_CPUS`).
    pub const fn single(cpu: usize) -> CpuMask {
        if cpu < MAX_CPUS {
            CpuMask(1 << cpu)
        } else {
            CpuMask(0)
        }
    }

    /// The raw bitmap.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Membership test.
    pub const fn contains(self, cpu: usize) -> bool {
        self.0 & CpuMask::single(cpu).0 != 0
    }

    /// This set plus `cpu`.
    pub const fn with(self, cpu: usize) -> CpuMask {
        CpuMask(self.0 | CpuMask::single(cpu).0)
    }

    /// This set minus `cpu`.
    pub const fn without(self, cpu: usize) -> CpuMask {
        CpuMask(self.0 & !CpuMask::single(cpu).0)
    }

    /// Intersection.
    pub const fn and_(self, other: CpuMask) -> CpuMask {
        CpuMask(self.0 & other.0)
    }

    /// Union.
    pub const fn or_(self, other: CpuMask) -> CpuMask {
        CpuMask(self.0 | other.0)
    }

    /// `self` minus `other`.
    pub const fn andnot(self, other: CpuMask) -> CpuMask {
        CpuMask(self.0 & !other.0)
    }

    /// Every member of `self` is in `other`.
    pub const fn is_subset_of(self, other: CpuMask) -> bool {
        self.0 & !other.0 == 0
    }

    /// Number of CPUs.
    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// Empty set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Lowest-numbered CPU.
    pub const fn first(self) -> Option<usize> {
        if self.0 == 0 {
            None
        } else {
            Some(self.0.trailing_zeros() as usize)
        }
    }

    /// Members in increasing order.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        let mut bits = self.0;
        core::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let cpu = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            Some(cpu)
        })
    }

    /// Linux's CPU list format (`0-2,4-5,7`, as `/sys/devices/system/cpu/online` and
    /// `taskset -pc` print it); empty for no CPUs.
    pub fn to_list(self) -> alloc::string::String {
        use core::fmt::Write;
        let mut out = alloc::string::String::new();
        let mut c = 0usize;
        while c < MAX_CPUS {
            if self.contains(c) {
                let start = c;
                while c + 1 < MAX_CPUS && self.contains(c + 1) {
                    c += 1;
                }
                let sep = if out.is_empty() { "" } else { "," };
                let _ = if start == c { write!(out, "{sep}{c}") } else { write!(out, "{sep}{start}-{c}") };
            }
            c += 1;
        }
        out
    }

    /// Members starting at `start` and wrapping around (Linux `for_each_cpu_wrap`),
    /// so searches spread out instead of always favouring CPU 0.
    pub fn iter_wrap(self, start: usize) -> impl Iterator<Item = usize> {
        let split = CpuMask::all(start.min(MAX_CPUS));
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
        CpuMask(!self.0)
    }
}

impl FromIterator<usize> for CpuMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        iter.into_iter().fold(CpuMask::EMPTY, CpuMask::with)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        let m: CpuMask = [1, 3, 63, 64, 1000].into_iter().collect();
        assert_eq!(m.count(), 3);
        assert!(m.contains(3) && m.contains(63) && !m.contains(64) && !m.contains(0));
        assert_eq!(m.first(), Some(1));
        assert_eq!(m.iter().collect::<Vec<_>>(), [1, 3, 63]);
        assert_eq!(m.iter_wrap(2).collect::<Vec<_>>(), [3, 63, 1]);
        assert_eq!(m.iter_wrap(100).collect::<Vec<_>>(), [1, 3, 63]);
        assert_eq!((m & CpuMask::all(4)).iter().collect::<Vec<_>>(), [1, 3]);
        assert_eq!(m.without(3).with(0).iter().collect::<Vec<_>>(), [0, 1, 63]);
        assert!(CpuMask::EMPTY.is_empty() && CpuMask::EMPTY.first().is_none());
        assert_eq!(CpuMask::all(64).count(), 64);
        assert_eq!(CpuMask::all(0), CpuMask::EMPTY);
        assert!(CpuMask::single(2).is_subset_of(CpuMask::all(3)));
        assert_eq!((m | CpuMask::single(0)).count(), 4);
        assert_eq!((!CpuMask::EMPTY).count(), 64);
        assert_eq!(m.andnot(CpuMask::single(1)).first(), Some(3));
    }
}
