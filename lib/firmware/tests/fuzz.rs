//! Errors are values: no input makes the parsers or Linux's node mapping panic. Arbitrary bytes,
//! arbitrary bodies behind a valid header (so the entry walk is reached), mutated QEMU tables,
//! and well-formed tables whose every value must come back.
mod common;

use cadence_firmware::numa::{Numa, LOCAL_DISTANCE};
use cadence_firmware::srat::{self, Affinity};
use cadence_firmware::{slit, Error};
use common::*;
use proptest::prelude::*;

/// Runs everything on the bytes as an SRAT and as a SLIT; checks what must hold of any result.
fn exercise(srat_bytes: &[u8], slit_bytes: &[u8]) {
    let s = srat::parse(srat_bytes);
    let l = slit::parse(slit_bytes);
    if let Ok(s) = &s {
        let mut at = srat::ENTRIES_OFFSET;
        for e in &s.entries {
            assert_eq!(e.offset, at);
            assert!(e.length > 0);
            at += usize::from(e.length);
        }
        assert_eq!(at, s.header.length as usize);
    }
    if let Ok(l) = &l {
        assert_eq!(l.matrix().len(), l.localities() * l.localities());
        let _ = l.linux_valid();
    }
    for (s, l) in [(s.as_ref().ok(), l.as_ref().ok()), (s.as_ref().ok(), None), (None, l.as_ref().ok())] {
        let n = Numa::linux(s, l);
        let nodes = n.nodes();
        assert!(!nodes.is_empty());
        assert!(nodes.windows(2).all(|w| w[0] < w[1]), "ascending");
        for &a in nodes {
            assert_eq!(n.distance(a, a), LOCAL_DISTANCE);
            for &b in nodes {
                assert!(n.distance(a, b) >= LOCAL_DISTANCE);
            }
        }
        for c in n.cpus() {
            assert_eq!(n.pxm_of_node(c.node).and_then(|p| n.node_of_pxm(p)), Some(c.node));
        }
        for m in n.memory() {
            assert!(m.start < m.end);
            assert!(n.pxm_of_node(m.node).is_some());
        }
    }
}

fn entry() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (any::<u32>(), any::<u8>(), any::<bool>()).prop_map(|(p, a, e)| lapic(p % 300, a, e)),
        (any::<u32>(), any::<u32>(), any::<bool>()).prop_map(|(p, a, e)| x2apic(p % 300, a, e)),
        (any::<u32>(), any::<u64>(), any::<u64>(), 0u32..8).prop_map(|(p, b, l, f)| memory(p % 300, b, l, f)),
        (3u8..=255, proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(t, mut body)| {
            let mut e = vec![t, (body.len() + 2) as u8];
            e.append(&mut body);
            e
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes, &bytes);
    }

    #[test]
    fn arbitrary_body_behind_a_valid_header(revision in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..400),
                                            n in 0u64..6, cells in proptest::collection::vec(any::<u8>(), 0..40)) {
        let s = table(b"SRAT", revision, &body);
        let mut l = slit(n, &cells);
        exercise(&s, &l);
        // The same SLIT with its count forced to fit: the matrix is reached.
        let fit = (cells.len() as f64).sqrt() as usize;
        l = slit(fit as u64, &cells[..fit * fit]);
        exercise(&s, &l);
    }

    #[test]
    fn mutated_qemu_tables(topo in prop::sample::select(vec!["2node", "8node", "mesh", "seed003"]),
                           flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), fix in any::<bool>()) {
        let mut s = fixture(topo, "SRAT").unwrap();
        let mut l = fixture(topo, "SLIT").unwrap();
        for (i, v) in &flips {
            let k = i.index(s.len());
            s[k] = *v;
            let k = i.index(l.len());
            l[k] = *v;
        }
        if fix {
            fix_checksum(&mut s);
            fix_checksum(&mut l);
        }
        exercise(&s, &l);
    }

    #[test]
    fn well_formed_tables_round_trip(revision in 0u8..4, entries in proptest::collection::vec(entry(), 0..24)) {
        let t = srat(revision, &entries);
        let s = srat::parse(&t).unwrap();
        prop_assert_eq!(s.entries.len(), entries.len());
        for (e, raw) in s.entries.iter().zip(&entries) {
            prop_assert_eq!(usize::from(e.length), raw.len());
            match e.affinity {
                Affinity::Lapic(a) => prop_assert_eq!(lapic(a.proximity_domain, a.apic_id, a.enabled()), raw.clone()),
                Affinity::X2apic(a) => prop_assert_eq!(x2apic(a.proximity_domain, a.x2apic_id, a.enabled()), raw.clone()),
                Affinity::Memory(m) => prop_assert_eq!(memory(m.proximity_domain, m.base, m.length, m.flags), raw.clone()),
                Affinity::Other { entry_type } => prop_assert_eq!(entry_type, raw[0]),
            }
        }
        exercise(&t, &[]);
    }

    #[test]
    fn truncation_is_an_error(topo in prop::sample::select(vec!["2node", "8node", "mesh", "seed003"]), cut in any::<prop::sample::Index>()) {
        let s = fixture(topo, "SRAT").unwrap();
        let k = cut.index(s.len());
        let truncated = matches!(srat::parse(&s[..k]), Err(Error::Truncated { .. }));
        prop_assert!(truncated, "cut at {}", k);
    }
}
