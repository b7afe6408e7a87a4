//! Memory by NUMA node: which node owns each physical frame, and the order in which an
//! allocation falls back from its node to the others (Linux's zonelist, `mm/page_alloc.c`
//! `build_zonelists`).
//!
//! The frame allocator (the framework's `mm::frame`) keeps one cursor and one free count per
//! node over these spans; an allocation takes from the node of the CPU it runs on (Linux's
//! default local policy, so a task's memory lands where it first touches it) and, when that
//! node has no free frame, from the next node of [`fallback_order`].
//!
//! Pure: frame numbers and distances come in as numbers.

use alloc::vec::Vec;

/// A run of frames `[start, end)` (frame numbers) owned by `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First frame.
    pub start: u64,
    /// One past the last frame.
    pub end: u64,
    /// The node's number (as the SRAT numbers it, densely from 0).
    pub node: u16,
}

/// Splits `[0, frames)` into spans by the firmware's memory ranges (`ranges`: physical byte
/// addresses `[start, end)` and node, as the SRAT lists them, in any order, possibly
/// overlapping or beyond `frames`): every frame belongs to exactly one span, sorted and
/// merged where neighbours share a node. A frame no range covers belongs to node 0, as Linux
/// gives memory outside the SRAT to the first node; a frame two ranges cover keeps the first
/// range's node (Linux rejects overlapping SRAT entries on different nodes; Cadence's parser
/// reports them, and this keeps the answer defined). A partial frame at either end of a range
/// belongs to the range that holds its first byte.
pub fn spans(frames: u64, ranges: &[(u64, u64, u16)], page_size: u64) -> Vec<Span> {
    // Boundaries in frame numbers, clipped to [0, frames).
    let mut cuts: Vec<u64> = Vec::with_capacity(ranges.len() * 2 + 2);
    cuts.push(0);
    cuts.push(frames);
    for &(s, e, _) in ranges {
        for b in [s.div_ceil(page_size), e.div_ceil(page_size)] {
            cuts.push(b.min(frames));
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<Span> = Vec::with_capacity(cuts.len());
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        // The node of frame `a` (every frame in [a, b) is covered by the same ranges).
        let node = ranges.iter().find(|&&(s, e, _)| s.div_ceil(page_size) <= a && a < e.div_ceil(page_size)).map_or(0, |&(_, _, n)| n);
        match out.last_mut() {
            Some(last) if last.node == node && last.end == a => last.end = b,
            _ => out.push(Span { start: a, end: b, node }),
        }
    }
    out
}

/// The node owning frame `f` in `spans` (sorted, as [`spans`] returns them): a binary search.
/// `None` past the last span.
pub fn node_of_frame(spans: &[Span], f: u64) -> Option<u16> {
    let i = spans.partition_point(|s| s.end <= f);
    spans.get(i).filter(|s| s.start <= f).map(|s| s.node)
}

/// The nodes an allocation on `node` tries, in order: `node` itself, then the others nearest
/// first (`distance(a, b)`, the SLIT's), ties by node number. Linux's `build_zonelists` with
/// `find_next_best_node`'s distance order (Linux also spreads ties by how many zonelists already
/// start with a node, which changes which equally distant node is tried first, never that a
/// nearer node is tried before a farther one).
pub fn fallback_order(node: u16, nr_nodes: u16, distance: impl Fn(u16, u16) -> u32) -> Vec<u16> {
    let mut order: Vec<u16> = (0..nr_nodes).filter(|&n| n != node).collect();
    order.sort_by_key(|&n| (distance(node, n), n));
    if node < nr_nodes {
        order.insert(0, node);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const P: u64 = 4096;

    #[test]
    fn two_nodes_of_qemu() {
        // QEMU's 2-node SRAT at 1 GiB: node 0 from 0 (the first 640 KiB and from 1 MiB), node 1
        // from 512 MiB.
        let r = [(0, 0xa_0000, 0), (0x10_0000, 0x2000_0000, 0), (0x2000_0000, 0x4000_0000, 1)];
        let s = spans(0x4000_0000 / P, &r, P);
        assert_eq!(s, [Span { start: 0, end: 0x2_0000, node: 0 }, Span { start: 0x2_0000, end: 0x4_0000, node: 1 }]);
        assert_eq!(node_of_frame(&s, 0x1_ffff), Some(0));
        assert_eq!(node_of_frame(&s, 0x2_0000), Some(1));
        assert_eq!(node_of_frame(&s, 0x4_0000), None);
    }

    #[test]
    fn no_srat_is_one_node() {
        assert_eq!(spans(100, &[], P), [Span { start: 0, end: 100, node: 0 }]);
        assert_eq!(spans(0, &[], P), []);
    }

    #[test]
    fn nearest_nodes_first() {
        // Eight nodes on a ring: 10 to itself, 16, 22, then 28 for three hops or more.
        let d = |a: u16, b: u16| {
            let h = (a as i32 - b as i32).rem_euclid(8).min((b as i32 - a as i32).rem_euclid(8));
            [10, 16, 22, 28, 28][h as usize]
        };
        assert_eq!(fallback_order(0, 8, d), [0, 1, 7, 2, 6, 3, 4, 5], "three and four hops are both 28: by number");
        assert_eq!(fallback_order(5, 8, d), [5, 4, 6, 3, 7, 0, 1, 2]);
        assert_eq!(fallback_order(0, 1, d), [0]);
    }

    proptest! {
        /// Every frame in exactly one span, spans sorted and maximal, and each frame's node the
        /// first covering range's (node 0 if none), checked frame by frame.
        #[test]
        fn spans_partition_the_frames(
            frames in 0u64..300,
            ranges in proptest::collection::vec((0u64..1_400_000, 0u64..200_000, 0u16..4), 0..6),
        ) {
            let r: Vec<(u64, u64, u16)> = ranges.iter().map(|&(s, l, n)| (s, s + l, n)).collect();
            let s = spans(frames, &r, P);
            let mut next = 0;
            for (i, span) in s.iter().enumerate() {
                prop_assert_eq!(span.start, next);
                prop_assert!(span.end > span.start);
                if i > 0 {
                    prop_assert_ne!(s[i - 1].node, span.node, "neighbours merged");
                }
                next = span.end;
            }
            prop_assert_eq!(next, frames);
            for f in 0..frames {
                let want = r.iter().find(|&&(a, b, _)| a.div_ceil(P) <= f && f < b.div_ceil(P)).map_or(0, |x| x.2);
                prop_assert_eq!(node_of_frame(&s, f), Some(want), "frame {}", f);
            }
        }

        /// The local node first, every node once, distances never decreasing after it.
        #[test]
        fn fallback_is_a_nearest_first_permutation(node in 0u16..6, n in 1u16..7, seed in any::<u64>()) {
            let d = |a: u16, b: u16| if a == b { 10 } else { 11 + ((seed >> ((a.min(b) * 7 + a.max(b)) % 60)) & 7) as u32 };
            let o = fallback_order(node, n, d);
            let mut sorted = o.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
            if node < n {
                prop_assert_eq!(o[0], node);
                for w in o[1..].windows(2) {
                    prop_assert!(d(node, w[0]) <= d(node, w[1]));
                }
            }
        }
    }
}
