//! The arena trees against `std`'s ordered map, and the RT priority array built on them
//! against a list-per-level model: after every random operation the invariants hold and every
//! query answers as the model does.

use cadence_sched::arena::{ArenaMap, Full, SlabMap};
use cadence_sched::RtPrioArray;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
enum MapOp {
    Insert(u16, u32),
    TryInsert(u16, u32),
    Remove(u16),
    /// Writes through the position of the model's `n % len`-th key.
    BumpAt(usize),
    RangeFrom(u16),
    Grow(usize),
    PopFirst,
}

fn map_op() -> impl Strategy<Value = MapOp> {
    prop_oneof![
        3 => (0u16..200, any::<u32>()).prop_map(|(k, v)| MapOp::Insert(k, v)),
        2 => (0u16..200, any::<u32>()).prop_map(|(k, v)| MapOp::TryInsert(k, v)),
        3 => (0u16..200).prop_map(MapOp::Remove),
        1 => any::<usize>().prop_map(MapOp::BumpAt),
        1 => (0u16..210).prop_map(MapOp::RangeFrom),
        1 => (0usize..64).prop_map(MapOp::Grow),
        1 => Just(MapOp::PopFirst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arena_map_matches_btreemap(ops in proptest::collection::vec(map_op(), 1..400), cap in 0usize..40) {
        let mut m: ArenaMap<u16, u32> = ArenaMap::with_capacity(cap);
        let mut model: BTreeMap<u16, u32> = BTreeMap::new();
        for op in ops {
            match op {
                MapOp::Insert(k, v) => prop_assert_eq!(m.insert(k, v), model.insert(k, v)),
                MapOp::TryInsert(k, v) => {
                    let full = m.len() == m.capacity();
                    match m.try_insert(k, v) {
                        Ok(old) => prop_assert_eq!(old, model.insert(k, v)),
                        Err((Full, back)) => {
                            prop_assert!(full && !model.contains_key(&k), "Full only for a new key in a full arena");
                            prop_assert_eq!(back, v);
                        }
                    }
                }
                MapOp::Remove(k) => prop_assert_eq!(m.remove(&k), model.remove(&k)),
                MapOp::PopFirst => prop_assert_eq!(m.pop_first(), model.pop_first()),
                MapOp::BumpAt(n) => {
                    let len = model.len().max(1);
                    if let Some((&k, v)) = model.iter_mut().nth(n % len) {
                        let p = m.position(&k).unwrap();
                        prop_assert_eq!(m.key_at(p), Some(&k));
                        *m.at_mut(p).unwrap() ^= 1;
                        *v ^= 1;
                    }
                }
                MapOp::RangeFrom(k) => {
                    let got: Vec<(u16, u32)> = m.range_from(&k).map(|(&k, &v)| (k, v)).collect();
                    let want: Vec<(u16, u32)> = model.range(k..).map(|(&k, &v)| (k, v)).collect();
                    prop_assert_eq!(got, want);
                    let got: Vec<u16> = m.range_before(&k).map(|(&k, _)| k).collect();
                    let want: Vec<u16> = model.range(..k).map(|(&k, _)| k).collect();
                    prop_assert_eq!(got, want);
                }
                MapOp::Grow(extra) => {
                    let positions: Vec<_> = model.keys().map(|k| m.position(k)).collect();
                    let mut spare = ArenaMap::with_capacity(m.len() + extra);
                    prop_assert!(m.adopt_storage(&mut spare));
                    prop_assert!(spare.is_empty());
                    let after: Vec<_> = model.keys().map(|k| m.position(k)).collect();
                    prop_assert_eq!(positions, after, "adopting storage keeps positions");
                }
            }
            m.check();
            prop_assert_eq!(m.len(), model.len());
            let got: Vec<(u16, u32)> = m.iter().map(|(&k, &v)| (k, v)).collect();
            let want: Vec<(u16, u32)> = model.iter().map(|(&k, &v)| (k, v)).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(m.first().map(|(&k, _)| k), model.keys().next().copied());
            prop_assert_eq!(m.last().map(|(&k, _)| k), model.keys().next_back().copied());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn slab_map_matches_btreemap(ops in proptest::collection::vec(map_op(), 1..300)) {
        let mut m: SlabMap<u16, u32> = SlabMap::new();
        let mut model: BTreeMap<u16, u32> = BTreeMap::new();
        for op in ops {
            match op {
                MapOp::Insert(k, v) | MapOp::TryInsert(k, v) => prop_assert_eq!(m.insert(k, v), model.insert(k, v)),
                MapOp::Remove(k) => prop_assert_eq!(m.remove(&k), model.remove(&k)),
                MapOp::PopFirst => {
                    if let Some(k) = model.keys().next().copied() {
                        prop_assert_eq!(m.remove(&k), model.remove(&k));
                    }
                }
                MapOp::BumpAt(n) => {
                    let len = model.len().max(1);
                    if let Some((&k, v)) = model.iter_mut().nth(n % len) {
                        let p = m.position(&k).unwrap();
                        prop_assert_eq!(m.key_at(p), Some(&k));
                        *m.at_mut(p).unwrap() ^= 1;
                        *v ^= 1;
                    }
                }
                MapOp::RangeFrom(k) => prop_assert_eq!(m.contains_key(&k), model.contains_key(&k)),
                MapOp::Grow(extra) => {
                    let positions: Vec<_> = model.keys().map(|k| m.position(k)).collect();
                    let mut spare = SlabMap::with_capacity(m.len() + extra);
                    prop_assert!(m.adopt_storage(&mut spare));
                    let after: Vec<_> = model.keys().map(|k| m.position(k)).collect();
                    prop_assert_eq!(positions, after, "adopting storage keeps positions");
                }
            }
            m.check();
            let got: Vec<(u16, u32)> = m.iter().map(|(&k, &v)| (k, v)).collect();
            let want: Vec<(u16, u32)> = model.iter().map(|(&k, &v)| (k, v)).collect();
            prop_assert_eq!(got, want);
        }
    }
}

#[derive(Clone, Debug)]
enum RtOp {
    Enqueue { key: u8, prio: u8, head: bool },
    Dequeue(u8),
    Requeue(u8, bool),
    ChangePrio(u8, u8),
    Mark(u8, bool),
}

fn rt_op() -> impl Strategy<Value = RtOp> {
    let key = 0u8..24;
    // Few priorities, so levels hold several tasks; 100 is invalid.
    let prio = prop_oneof![5 => prop::sample::select(vec![0u8, 1, 50, 98, 99]), 1 => Just(100u8)];
    prop_oneof![
        4 => (key.clone(), prio.clone(), any::<bool>()).prop_map(|(key, prio, head)| RtOp::Enqueue { key, prio, head }),
        2 => key.clone().prop_map(RtOp::Dequeue),
        2 => (key.clone(), any::<bool>()).prop_map(|(k, h)| RtOp::Requeue(k, h)),
        1 => (key.clone(), prio).prop_map(|(k, p)| RtOp::ChangePrio(k, p)),
        2 => (key, any::<bool>()).prop_map(|(k, m)| RtOp::Mark(k, m)),
    ]
}

/// Linux's shape: one FIFO list per priority (index = rt_priority), entries `(key, migratory)`.
#[derive(Default)]
struct Lists {
    levels: BTreeMap<u8, Vec<(u8, bool)>>,
}

impl Lists {
    fn find(&self, key: u8) -> Option<(u8, usize)> {
        self.levels.iter().find_map(|(&p, l)| l.iter().position(|&(k, _)| k == key).map(|i| (p, i)))
    }
    fn take(&mut self, key: u8) -> Option<(u8, bool)> {
        let (p, i) = self.find(key)?;
        Some((p, self.levels.get_mut(&p).unwrap().remove(i).1))
    }
    fn put(&mut self, key: u8, prio: u8, head: bool, mark: bool) {
        let l = self.levels.entry(prio).or_default();
        if head {
            l.insert(0, (key, mark));
        } else {
            l.push((key, mark));
        }
    }
    fn run_order(&self) -> Vec<(u8, u8, bool)> {
        self.levels.iter().rev().flat_map(|(&p, l)| l.iter().map(move |&(k, m)| (k, p, m))).collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rt_array_matches_per_level_lists(ops in proptest::collection::vec(rt_op(), 1..300)) {
        let mut rq: RtPrioArray<u8> = RtPrioArray::new();
        let mut model = Lists::default();
        for op in ops {
            match op {
                RtOp::Enqueue { key, prio, head } => {
                    let r = rq.enqueue(key, prio, head);
                    if prio > 99 {
                        prop_assert!(r.is_err());
                    } else if model.find(key).is_some() {
                        prop_assert!(r.is_err(), "EBUSY");
                    } else {
                        prop_assert!(r.is_ok());
                        model.put(key, prio, head, false);
                    }
                }
                RtOp::Dequeue(key) => prop_assert_eq!(rq.dequeue(key).ok(), model.take(key).map(|(p, _)| p)),
                RtOp::Requeue(key, head) => {
                    let r = rq.requeue(key, head);
                    prop_assert_eq!(r.is_ok(), model.find(key).is_some());
                    if let Some((p, m)) = model.take(key) {
                        model.put(key, p, head, m);
                    }
                }
                RtOp::ChangePrio(key, prio) => {
                    let r = rq.change_prio(key, prio);
                    match model.find(key) {
                        Some(_) if prio > 99 => prop_assert!(r.is_err()),
                        Some((old, _)) => {
                            prop_assert!(r.is_ok());
                            if old != prio {
                                let (_, m) = model.take(key).unwrap();
                                model.put(key, prio, prio < old, m);
                            }
                        }
                        None => prop_assert!(r.is_err()),
                    }
                }
                RtOp::Mark(key, mark) => {
                    prop_assert_eq!(rq.set_migratory(key, mark).is_ok(), model.find(key).is_some());
                    if let Some((p, i)) = model.find(key) {
                        model.levels.get_mut(&p).unwrap()[i].1 = mark;
                    }
                }
            }
            rq.check();
            let order = model.run_order();
            prop_assert_eq!(rq.iter().collect::<Vec<_>>(), order.iter().map(|&(k, p, _)| (k, p)).collect::<Vec<_>>());
            prop_assert_eq!(
                rq.migratory().collect::<Vec<_>>(),
                order.iter().filter(|e| e.2).map(|&(k, p, _)| (k, p)).collect::<Vec<_>>()
            );
            prop_assert_eq!(rq.pick_highest(), order.first().map(|e| e.0));
            prop_assert_eq!(rq.highest_prio(), order.first().map(|e| e.1));
            prop_assert_eq!(rq.nr_running(), order.len());
            for p in [0u8, 1, 50, 98, 99, 100] {
                prop_assert_eq!(rq.nr_at_prio(p), model.levels.get(&p).map_or(0, Vec::len));
            }
        }
    }
}
