//! Index arithmetic of an overwrite-oldest ring buffer of `cap` fixed-size slots.
//!
//! Events are numbered by a 64-bit sequence `n` (0, 1, 2, ... since the last clear); event `n`
//! lives in slot `n % cap`. After `written` writes the ring holds the `min(written, cap)` newest
//! events, `first = written - held` .. `written`, and `written - held` were overwritten (lost).
//! `cap == 0` holds nothing and loses everything.

/// Slot of event number `n`.
pub fn slot(n: u64, cap: usize) -> usize {
    if cap == 0 {
        0
    } else {
        (n % cap as u64) as usize
    }
}

/// Sequence numbers still held after `written` writes: `first..written`.
pub fn live(written: u64, cap: usize) -> core::ops::Range<u64> {
    let held = written.min(cap as u64);
    (written - held)..written
}

/// Events overwritten after `written` writes.
pub fn lost(written: u64, cap: usize) -> u64 {
    written.saturating_sub(cap as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model ring built on these functions behaves like "keep the newest `cap`".
    #[test]
    fn model_ring_keeps_newest() {
        for cap in [0usize, 1, 3, 8] {
            let mut slots = alloc::vec![u64::MAX; cap];
            for written in 0..30u64 {
                let r = live(written, cap);
                assert_eq!(r.end - r.start + lost(written, cap), written);
                for n in r.clone() {
                    assert_eq!(slots[slot(n, cap)], n, "cap {cap} written {written}");
                }
                if cap > 0 {
                    slots[slot(written, cap)] = written;
                }
            }
        }
    }
}
