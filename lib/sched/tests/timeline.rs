//! The augmented timeline against a sorted model: after every random insert or remove the
//! tree's invariants hold, its order is the model's, and its EEVDF pick is the brute-force
//! choice (the earliest deadline among the entities at or below a vruntime threshold).

use cadence_sched::timeline::{Full, Timeline};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum Op {
    Insert {
        deadline: u64,
        key: u32,
        vruntime: u64,
    },
    /// Removes the model's `n % len`-th entity (or a missing one when empty).
    Remove(usize),
    /// Picks with eligibility `vruntime <= threshold`.
    Pick(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..64, 0u32..32, 0u64..1000).prop_map(|(deadline, key, vruntime)| Op::Insert { deadline, key, vruntime }),
        2 => any::<usize>().prop_map(Op::Remove),
        2 => (0u64..1100).prop_map(Op::Pick),
    ]
}

fn brute_pick(model: &BTreeMap<(u64, u32), u64>, threshold: u64) -> Option<(u64, u32, u64)> {
    model.iter().find(|(_, &v)| v <= threshold).map(|(&(d, k), &v)| (d, k, v))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn matches_the_sorted_model(ops in proptest::collection::vec(op(), 1..300), cap in 1usize..80) {
        let mut t: Timeline<u32> = Timeline::with_capacity(cap);
        let cap = t.capacity();
        let mut model: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert { deadline, key, vruntime } => {
                    let r = t.try_insert(deadline, key, vruntime);
                    if model.contains_key(&(deadline, key)) {
                        prop_assert_eq!(r, Ok(false));
                    } else if model.len() >= cap {
                        prop_assert_eq!(r, Err(Full));
                    } else {
                        prop_assert_eq!(r, Ok(true));
                        model.insert((deadline, key), vruntime);
                    }
                }
                Op::Remove(n) => {
                    if model.is_empty() {
                        prop_assert_eq!(t.remove(5, 5), None);
                    } else {
                        let (&(d, k), &v) = model.iter().nth(n % model.len()).unwrap();
                        prop_assert_eq!(t.remove(d, k), Some(v));
                        model.remove(&(d, k));
                        prop_assert_eq!(t.remove(d, k), None);
                    }
                }
                Op::Pick(threshold) => {
                    prop_assert_eq!(t.pick(|v| v <= threshold), brute_pick(&model, threshold));
                }
            }
            t.check();
            prop_assert_eq!(t.len(), model.len());
            prop_assert_eq!(t.capacity(), cap);
            let items: Vec<(u64, u32, u64)> = t.iter().collect();
            let want: Vec<(u64, u32, u64)> = model.iter().map(|(&(d, k), &v)| (d, k, v)).collect();
            prop_assert_eq!(items, want);
            prop_assert_eq!(t.first(), model.keys().next().copied());
            prop_assert_eq!(t.min_vruntime(), model.values().min().copied());
        }
    }

    #[test]
    fn adopting_bigger_storage_keeps_everything(entries in proptest::collection::btree_map((0u64..1000, 0u32..100), 0u64..1000, 0..60)) {
        let mut t: Timeline<u32> = Timeline::with_capacity(entries.len());
        for (&(d, k), &v) in &entries {
            prop_assert_eq!(t.try_insert(d, k, v), Ok(true));
        }
        prop_assert_eq!(t.try_insert(5000, 0, 0), if entries.len() == t.capacity() { Err(Full) } else { Ok(true) });
        if t.len() > entries.len() {
            t.remove(5000, 0);
        }
        let mut spare = Timeline::with_capacity(2 * entries.len() + 4);
        let cap = spare.capacity();
        prop_assert!(t.adopt_storage(&mut spare));
        prop_assert_eq!(t.capacity(), cap);
        prop_assert!(spare.is_empty());
        t.check();
        let items: Vec<(u64, u32, u64)> = t.iter().collect();
        let want: Vec<(u64, u32, u64)> = entries.iter().map(|(&(d, k), &v)| (d, k, v)).collect();
        prop_assert_eq!(items, want);
        prop_assert_eq!(t.try_insert(5000, 1, 1), Ok(true));
        t.check();
    }
}

#[test]
fn depth_stays_logarithmic_in_order_insertions() {
    // In-order insertion is a plain BST's worst case; the AVL rebalancing keeps picking and
    // iterating within the iterator's 64-slot stack (depth <= 1.44 log2 n).
    let n = 100_000u32;
    let mut t: Timeline<u32> = Timeline::with_capacity(n as usize);
    for i in 0..n {
        assert_eq!(t.try_insert(u64::from(i), i, u64::from(n - i)), Ok(true));
    }
    t.check();
    assert_eq!(t.iter().count(), n as usize);
    // Only the latest-deadline entity has the least vruntime.
    assert_eq!(t.pick(|v| v <= 1), Some((u64::from(n - 1), n - 1, 1)));
    for i in (0..n).step_by(2) {
        assert_eq!(t.remove(u64::from(i), i), Some(u64::from(n - i)));
    }
    t.check();
    assert_eq!(t.len(), n as usize / 2);
}
