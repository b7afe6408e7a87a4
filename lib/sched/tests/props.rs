//! Property tests: EEVDF invariants under random operation sequences, affinity is
//! always honoured by the SMP decisions, and RT push converges to "the N most important
//! RT tasks run on N CPUs".

use cadence_sched::balance::{find_busiest, find_lowest_rq, select_task_rq_fair, CpuPrio, Topology};
use cadence_sched::eevdf::*;
use cadence_sched::weight::{nice_to_weight, WEIGHT_IDLEPRIO};
use cadence_sched::{CpuMask, FairRq, FairTunables, RtPrioArray};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Attach(u8, u64),
    Enqueue(u8, u32),
    Dequeue(u8, u32),
    UpdateCurr(u64),
    Schedule,
    SetNext(u8),
    PutPrev,
    Reweight(u8, u64),
    Detach(u8),
    Yield,
}

fn weight() -> impl Strategy<Value = u64> {
    prop_oneof![(-20i32..=19).prop_map(nice_to_weight), Just(WEIGHT_IDLEPRIO), 1u64..200_000, Just(88761u64),]
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..8;
    prop_oneof![
        (key.clone(), weight()).prop_map(|(k, w)| Op::Attach(k, w)),
        (
            key.clone(),
            prop::sample::select(vec![
                0,
                ENQUEUE_WAKEUP,
                ENQUEUE_INITIAL,
                ENQUEUE_RESTORE | ENQUEUE_MOVE,
                ENQUEUE_WAKEUP | ENQUEUE_MIGRATED,
                ENQUEUE_MIGRATING,
            ])
        )
            .prop_map(|(k, f)| Op::Enqueue(k, f)),
        (key.clone(), prop::sample::select(vec![DEQUEUE_SLEEP, DEQUEUE_SAVE, DEQUEUE_SAVE | DEQUEUE_MOVE, DEQUEUE_MIGRATING]))
            .prop_map(|(k, f)| Op::Dequeue(k, f)),
        prop_oneof![0u64..2_000_000, 0u64..50_000_000, Just(u32::MAX as u64)].prop_map(Op::UpdateCurr),
        Just(Op::Schedule),
        key.clone().prop_map(Op::SetNext),
        Just(Op::PutPrev),
        (key.clone(), weight()).prop_map(|(k, w)| Op::Reweight(k, w)),
        key.prop_map(Op::Detach),
        Just(Op::Yield),
    ]
}

fn apply(rq: &mut FairRq<u8>, op: &Op) {
    // Errors are expected for invalid sequences; only panics and broken invariants fail.
    let _ = match *op {
        Op::Attach(k, w) => rq.attach_new(k, w),
        Op::Enqueue(k, f) => rq.enqueue(k, f),
        Op::Dequeue(k, f) => rq.dequeue(k, f),
        Op::UpdateCurr(d) => {
            rq.update_curr(d);
            Ok(())
        }
        Op::Schedule => {
            if let Some(c) = rq.curr() {
                rq.put_prev(c).unwrap();
            }
            match rq.pick_next() {
                Some(n) => rq.set_next(n),
                None => Ok(()),
            }
        }
        Op::SetNext(k) => rq.set_next(k),
        Op::PutPrev => match rq.curr() {
            Some(c) => rq.put_prev(c),
            None => Ok(()),
        },
        Op::Reweight(k, w) => rq.reweight(k, w),
        Op::Detach(k) => rq.detach(k).map(|_| ()),
        Op::Yield => {
            rq.yield_curr();
            Ok(())
        }
    };
}

/// Queued entities including an on-rq `curr`.
fn queued(rq: &FairRq<u8>) -> Vec<u8> {
    let mut v: Vec<u8> = rq.queued().collect();
    if let Some(c) = rq.curr().filter(|&c| rq.entity(c).unwrap().on_rq()) {
        v.push(c);
    }
    v
}

fn check_invariants(rq: &FairRq<u8>, last_min: &mut u64, eevdf_pick: bool) -> Result<(), TestCaseError> {
    prop_assert_eq!(rq.verify(), Ok(()));
    // (c) min_vruntime never decreases (no rebase can happen this close to the origin).
    prop_assert!(rq.min_vruntime() >= *last_min);
    *last_min = rq.min_vruntime();
    let q = queued(rq);
    prop_assert_eq!(q.len(), rq.nr_queued());
    // (a) Σ w_i * lag_i = W*V - Σ w_i v_i ∈ (-W, 0] because V is rounded down.
    let sum: i128 = q.iter().map(|&k| rq.lag(k).unwrap() as i128 * rq.entity(k).unwrap().weight() as i128).sum();
    let load = rq.load() as i128;
    prop_assert!(sum <= 0 && sum > -load.max(1), "sum {} load {}", sum, load);
    // (b) pick: eligible (if any is) with the earliest deadline among eligible ones.
    let pick = rq.pick_next();
    prop_assert_eq!(pick.is_some(), !q.is_empty());
    if let Some(p) = pick {
        prop_assert!(q.contains(&p));
        let eligible: Vec<u8> = q.iter().copied().filter(|&k| rq.is_eligible(k)).collect();
        if eevdf_pick && !eligible.is_empty() && q.len() > 1 {
            prop_assert!(rq.is_eligible(p));
            let dl = |k: u8| rq.entity(k).unwrap().deadline();
            prop_assert!(eligible.iter().all(|&k| dl(p) <= dl(k)));
        }
    }
    // (d) the switch fast path's pick with `curr` held is the pick after putting it back.
    if let Some(c) = rq.curr() {
        let mut put = rq.clone();
        put.put_prev(c).unwrap();
        prop_assert_eq!(rq.pick_next_as_put_back(), put.pick_next());
    } else {
        prop_assert_eq!(rq.pick_next_as_put_back(), rq.pick_next());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn eevdf_invariants(ops in prop::collection::vec(op(), 1..200)) {
        let mut rq = FairRq::new(FairTunables { run_to_parity: false, ..FairTunables::default() });
        let mut last_min = rq.min_vruntime();
        for op in &ops {
            apply(&mut rq, op);
            check_invariants(&rq, &mut last_min, true)?;
        }
    }

    #[test]
    fn eevdf_invariants_default_tunables(ops in prop::collection::vec(op(), 1..200), ncpus in 1u32..16) {
        let mut rq = FairRq::new(FairTunables::for_cpus(ncpus));
        let mut last_min = rq.min_vruntime();
        for op in &ops {
            apply(&mut rq, op);
            check_invariants(&rq, &mut last_min, false)?;
        }
    }

    #[test]
    fn wakeup_placement_honours_affinity(
        affinity in any::<u64>(), idle in any::<u64>(), prev in 0usize..70,
        waker in prop::option::of(0usize..70), shape in 0usize..4,
    ) {
        let topo = [
            Topology::flat(64),
            Topology::uniform(64, 2, 8).unwrap(),
            Topology::uniform(16, 4, 16).unwrap(),
            Topology::uniform(6, 2, 2).unwrap(),
        ];
        let affinity = CpuMask::from_u64(affinity);
        let got = select_task_rq_fair(affinity, prev, waker, CpuMask::from_u64(idle), &topo[shape], |_| false);
        match got {
            None => prop_assert!(affinity.is_empty()),
            Some(c) => {
                prop_assert!(affinity.contains(c));
                // An allowed idle CPU exists => an idle CPU is chosen.
                if !(affinity & CpuMask::from_u64(idle)).is_empty() {
                    prop_assert!(CpuMask::from_u64(idle).contains(c));
                }
            }
        }
    }

    #[test]
    fn rt_push_target_honours_affinity(
        prio in 0u8..100, affinity in any::<u64>(), prev in 0usize..64,
        cpus in prop::collection::vec(prop_oneof![Just(CpuPrio::Idle), Just(CpuPrio::Fair), (1u8..100).prop_map(CpuPrio::Rt)], 1..64),
    ) {
        if let Some(c) = find_lowest_rq(prio, CpuMask::from_u64(affinity), prev, &cpus) {
            prop_assert!(CpuMask::from_u64(affinity).contains(c));
            prop_assert!(cpus[c] < CpuPrio::Rt(prio));
            // Nothing allowed is strictly lower than the chosen CPU.
            prop_assert!(CpuMask::from_u64(affinity).iter().filter(|&i| i < cpus.len()).all(|i| cpus[i] >= cpus[c]));
        }
    }

    #[test]
    fn busiest_is_a_candidate(
        this in 0usize..8, nr in prop::collection::vec(0u32..6, 8), load in prop::collection::vec(0u64..100_000, 8),
        cand in any::<u64>(),
    ) {
        if let Some(imb) = find_busiest(this, &nr, &load, CpuMask::from_u64(cand)) {
            prop_assert!(imb.busiest != this && CpuMask::from_u64(cand).contains(imb.busiest));
            prop_assert!(nr[imb.busiest] >= 2 && imb.nr_to_pull >= 1);
            prop_assert!(load[imb.busiest] as u128 * 100 > load[this] as u128 * 117);
        }
    }

    /// Random RT tasks on random CPUs; push queued tasks with find_lowest_rq until
    /// nothing moves. Then the running set is the N most important tasks.
    #[test]
    fn rt_push_runs_top_n(ncpus in 1usize..8, tasks in prop::collection::vec((1u8..100, 0usize..8), 0..24)) {
        let mut rqs: Vec<RtPrioArray<usize>> = (0..ncpus).map(|_| RtPrioArray::new()).collect();
        for (id, &(prio, cpu)) in tasks.iter().enumerate() {
            rqs[cpu % ncpus].enqueue(id, prio, false).unwrap();
        }
        let all = CpuMask::all(ncpus);
        let snapshot = |rqs: &[RtPrioArray<usize>]| -> Vec<CpuPrio> {
            rqs.iter().map(|rq| rq.highest_prio().map_or(CpuPrio::Idle, CpuPrio::Rt)).collect()
        };
        let mut moves = 0;
        'outer: loop {
            for src in 0..ncpus {
                let running = rqs[src].pick_highest();
                let pushable: Vec<(usize, u8)> = rqs[src].iter().filter(|&(k, _)| Some(k) != running).collect();
                for (task, prio) in pushable {
                    if let Some(dst) = find_lowest_rq(prio, all, src, &snapshot(&rqs)) {
                        rqs[src].dequeue(task).unwrap();
                        rqs[dst].enqueue(task, prio, false).unwrap();
                        moves += 1;
                        prop_assert!(moves < 10_000, "push does not converge");
                        continue 'outer;
                    }
                }
            }
            break;
        }
        let mut running: Vec<u8> = rqs.iter().filter_map(|rq| rq.highest_prio()).collect();
        let mut all_prios: Vec<u8> = tasks.iter().map(|&(p, _)| p).collect();
        running.sort_unstable_by(|a, b| b.cmp(a));
        all_prios.sort_unstable_by(|a, b| b.cmp(a));
        all_prios.truncate(ncpus);
        prop_assert_eq!(running, all_prios);
    }
}
