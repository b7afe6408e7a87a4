//! The parsers and Linux's node mapping on synthetic tables: each rule, each error.
mod common;

use cadence_firmware::numa::{BadSrat, Fallback, Numa, SlitUse, LOCAL_DISTANCE, REMOTE_DISTANCE};
use cadence_firmware::srat::{self, Affinity};
use cadence_firmware::{slit, Error};
use common::*;

const MEM: u32 = srat::MEM_ENABLED;

#[test]
fn srat_entries_decode() {
    let t = srat(
        3,
        &[
            lapic(0x0403_0201, 7, true),
            memory(5, 0x1_0000_0000, 0x2000_0000, MEM | srat::MEM_HOTPLUGGABLE | srat::MEM_NON_VOLATILE),
            x2apic(9, 0x1234_5678, false),
            vec![0x42, 6, 1, 2, 3, 4],
        ],
    );
    let s = srat::parse(&t).unwrap();
    assert_eq!(&s.header.signature, b"SRAT");
    assert_eq!(s.header.revision, 3);
    assert_eq!(s.header.length as usize, t.len());
    assert_eq!(s.table_revision, 1);
    assert_eq!(s.entries.len(), 4);
    assert_eq!((s.entries[0].offset, s.entries[0].length), (48, 16));
    let Affinity::Lapic(a) = s.entries[0].affinity else { panic!() };
    assert_eq!((a.proximity_domain, a.proximity_domain_lo(), a.apic_id, a.enabled()), (0x0403_0201, 1, 7, true));
    let Affinity::Memory(m) = s.entries[1].affinity else { panic!() };
    assert_eq!((m.proximity_domain, m.base, m.length, m.end()), (5, 0x1_0000_0000, 0x2000_0000, Some(0x1_2000_0000)));
    assert!(m.enabled() && m.hotpluggable() && m.non_volatile());
    let Affinity::X2apic(x) = s.entries[2].affinity else { panic!() };
    assert_eq!((x.proximity_domain, x.x2apic_id, x.enabled()), (9, 0x1234_5678, false));
    assert_eq!(s.entries[3].affinity, Affinity::Other { entry_type: 0x42 });
    assert_eq!((s.entries[3].offset, s.entries[3].length), (48 + 16 + 40 + 24, 6));
    let cpus: Vec<_> = s.cpus().map(|c| (c.apic_id, c.proximity_domain, c.enabled, c.x2apic)).collect();
    assert_eq!(cpus, [(7, 0x0403_0201, true, false), (0x1234_5678, 9, false, true)]);
    assert_eq!(s.memory().count(), 1);
}

#[test]
fn table_checks() {
    let good = srat(1, &[lapic(0, 0, true), memory(0, 0, 1 << 20, MEM)]);
    assert!(srat::parse(&good).is_ok());
    // Trailing bytes past the header's length are not the table's.
    let mut longer = good.clone();
    longer.extend_from_slice(&[0xff; 7]);
    assert_eq!(srat::parse(&longer).unwrap(), srat::parse(&good).unwrap());

    assert_eq!(srat::parse(&good[..20]), Err(Error::Truncated { needed: 36, available: 20 }));
    assert_eq!(srat::parse(&good[..good.len() - 1]), Err(Error::Truncated { needed: good.len(), available: good.len() - 1 }));
    assert!(matches!(slit::parse(&good), Err(Error::Signature { expected, found }) if &expected == b"SLIT" && &found == b"SRAT"));
    let mut bad_sum = good.clone();
    bad_sum[60] ^= 1;
    assert!(matches!(srat::parse(&bad_sum), Err(Error::Checksum { .. })));
    // A length field below the fixed part (48 bytes for the SRAT).
    let mut short = table(b"SRAT", 1, &[0; 4]);
    assert_eq!(srat::parse(&short), Err(Error::TooShort { length: 40, minimum: 48 }));
    short.truncate(36);
    assert_eq!(srat::parse(&short), Err(Error::TooShort { length: 40, minimum: 48 }));
    // No entries at all is a table.
    assert_eq!(srat::parse(&srat(1, &[])).unwrap().entries, []);
}

#[test]
fn entry_checks() {
    assert_eq!(srat::parse(&srat(1, &[lapic(0, 0, true), vec![7, 0, 0, 0]])), Err(Error::ZeroLengthEntry { offset: 64 }));
    assert_eq!(srat::parse(&srat(1, &[vec![7, 9, 0, 0]])), Err(Error::EntryPastEnd { offset: 48, length: 9, table_length: 52 }));
    assert_eq!(srat::parse(&srat(1, &[vec![7]])), Err(Error::EntryPastEnd { offset: 48, length: 1, table_length: 49 }));
    let mut short = lapic(0, 0, true);
    short.truncate(12);
    short[1] = 12;
    assert_eq!(srat::parse(&srat(1, &[short])), Err(Error::EntryTooShort { offset: 48, entry_type: 0, length: 12, minimum: 16 }));
    let mut short = memory(0, 0, 1, MEM);
    short.truncate(32);
    short[1] = 32;
    assert_eq!(srat::parse(&srat(1, &[short])), Err(Error::EntryTooShort { offset: 48, entry_type: 1, length: 32, minimum: 40 }));
    let mut short = x2apic(0, 0, true);
    short.truncate(16);
    short[1] = 16;
    assert_eq!(srat::parse(&srat(1, &[short])), Err(Error::EntryTooShort { offset: 48, entry_type: 2, length: 16, minimum: 24 }));
    // Longer than the structure: accepted, the length kept.
    let mut long = lapic(3, 1, true);
    long.extend_from_slice(&[0; 4]);
    long[1] = 20;
    let s = srat::parse(&srat(1, &[long])).unwrap();
    assert_eq!(s.entries[0].length, 20);
    assert_eq!(s.cpus().next().unwrap().apic_id, 1);
}

#[test]
fn slit_checks() {
    let s = slit::parse(&slit(3, &[10, 20, 30, 21, 10, 22, 31, 32, 10])).unwrap();
    assert_eq!(s.localities(), 3);
    assert_eq!(s.distance(0, 2), Some(30));
    assert_eq!(s.distance(2, 0), Some(31));
    assert_eq!(s.distance(3, 0), None);
    assert_eq!(s.row(1), Some(&[21u8, 10, 22][..]));
    assert_eq!(s.row(3), None);
    assert!(s.linux_valid());
    assert_eq!(slit::parse(&slit(3, &[10; 8])), Err(Error::SlitSize { localities: 3, length: 52 }));
    assert_eq!(slit::parse(&slit(2, &[10; 5])), Err(Error::SlitSize { localities: 2, length: 49 }));
    assert_eq!(slit::parse(&slit(u64::MAX, &[10; 4])), Err(Error::SlitSize { localities: u64::MAX, length: 48 }));
    assert_eq!(slit::parse(&slit(1 << 32, &[])), Err(Error::SlitSize { localities: 1 << 32, length: 44 }));
    assert_eq!(slit::parse(&slit(0, &[])).unwrap().localities(), 0);
    assert_eq!(slit::parse(&table(b"SLIT", 1, &[1, 0, 0])), Err(Error::TooShort { length: 39, minimum: 44 }));
    // slit_valid: the diagonal exactly 10, the rest above 10 (255, unreachable, is fine).
    assert!(!slit::parse(&slit(2, &[10, 10, 10, 10])).unwrap().linux_valid());
    assert!(!slit::parse(&slit(2, &[11, 20, 20, 10])).unwrap().linux_valid());
    assert!(!slit::parse(&slit(2, &[10, 9, 20, 10])).unwrap().linux_valid());
    assert!(slit::parse(&slit(2, &[10, 255, 255, 10])).unwrap().linux_valid());
}

fn numa(srat_t: &[u8], slit_t: Option<&[u8]>) -> Numa {
    let s = srat::parse(srat_t).unwrap();
    let l = slit_t.map(|t| slit::parse(t).unwrap());
    Numa::linux(Some(&s), l.as_ref())
}

#[test]
fn nodes_in_order_of_first_appearance_cpus_first() {
    // Domains 7, 3 for CPUs; 9 memory only, listed before the CPUs; 3's memory too.
    let t = srat(
        1,
        &[
            memory(9, 0x4000_0000, 1 << 30, MEM),
            lapic(7, 0, true),
            lapic(3, 1, false), // disabled: no node from it
            memory(3, 0, 1 << 30, MEM),
            lapic(7, 2, true),
            x2apic(3, 300, true),
        ],
    );
    let n = numa(&t, None);
    assert_eq!(n.fallback(), None);
    assert_eq!(n.nodes(), [0, 1, 2]);
    assert_eq!((n.node_of_pxm(7), n.node_of_pxm(3), n.node_of_pxm(9), n.node_of_pxm(4)), (Some(0), Some(1), Some(2), None));
    assert_eq!((n.pxm_of_node(0), n.pxm_of_node(1), n.pxm_of_node(2), n.pxm_of_node(3)), (Some(7), Some(3), Some(9), None));
    assert_eq!((n.node_of_apic(0), n.node_of_apic(1), n.node_of_apic(2), n.node_of_apic(300)), (Some(0), None, Some(0), Some(1)));
    assert_eq!((n.node_of_addr(0x1000), n.node_of_addr(0x4000_0000), n.node_of_addr(0x8000_0000)), (Some(1), Some(2), None));
    assert_eq!(n.slit(), SlitUse::Absent);
    assert_eq!((n.distance(0, 0), n.distance(0, 2), n.distance(5, 5), n.distance(5, 6)), (10, 20, 10, 20));
}

/// A later entry for an APIC id overrides an earlier one (also across the two entry types).
#[test]
fn the_last_entry_for_an_apic_id_wins() {
    let t = srat(1, &[memory(0, 0, 1 << 30, MEM), lapic(0, 5, true), lapic(1, 5, true), x2apic(2, 9, true), lapic(0, 9, true)]);
    let n = numa(&t, None);
    assert_eq!((n.node_of_apic(5), n.node_of_apic(9), n.node_of_apic(4)), (Some(1), Some(0), None));
}

#[test]
fn revision_decides_the_domain_width() {
    // Revision 1: only the low byte of a type-0 domain, memory domains cut to 8 bits.
    let entries = [lapic(0x0100, 0, true), memory(0x0101, 0, 1 << 20, MEM)];
    let n = numa(&srat(1, &entries), None);
    assert_eq!((n.node_of_pxm(0), n.node_of_pxm(1)), (Some(0), Some(1)));
    // Revision 2 and up: all of it; 0x100 and 0x101 are below MAX_PXM_DOMAINS (1024).
    let n = numa(&srat(2, &entries), None);
    assert_eq!((n.node_of_pxm(0x100), n.node_of_pxm(0x101), n.node_of_pxm(0)), (Some(0), Some(1), None));
    // A domain of 1024 or more: Linux gives up on the SRAT.
    let n = numa(&srat(3, &[lapic(0x400, 0, true), memory(0, 0, 1 << 20, MEM)]), None);
    assert_eq!(n.fallback(), Some(Fallback::BadSrat { offset: 48, reason: BadSrat::Domain { pxm: 0x400 } }));
    assert_eq!((n.nodes(), n.node_of_apic(0), n.node_of_addr(0), n.node_of_pxm(0)), (&[0][..], Some(0), Some(0), None));
    // ... unless the entry is disabled: the domain is never looked at.
    let n = numa(&srat(3, &[lapic(0x400, 0, false), memory(0, 0, 1 << 20, MEM)]), None);
    assert_eq!(n.fallback(), None);
}

#[test]
fn fallbacks() {
    let mem = memory(0, 0, 1 << 20, MEM);
    assert_eq!(Numa::linux(None, None).fallback(), Some(Fallback::NoSrat));
    // A type-0 entry of the wrong length, even a disabled one.
    let mut long = lapic(0, 0, false);
    long.extend_from_slice(&[0; 4]);
    long[1] = 20;
    let n = numa(&srat(1, &[mem.clone(), long]), None);
    assert_eq!(n.fallback(), Some(Fallback::BadSrat { offset: 88, reason: BadSrat::EntryLength }));
    // No enabled memory.
    let n = numa(&srat(1, &[lapic(0, 0, true), memory(0, 0, 1 << 20, 0)]), None);
    assert_eq!(n.fallback(), Some(Fallback::NoMemory));
    // An empty range still counts as memory (numa_add_memblk ignores it and succeeds).
    let n = numa(&srat(1, &[lapic(0, 0, true), memory(1, 0, 0, MEM)]), None);
    assert_eq!((n.fallback(), n.nodes(), n.memory()), (None, &[0, 1][..], &[][..]));
    // A fallback drops the SLIT with the rest.
    let s = slit(2, &[10, 30, 30, 10]);
    let n = numa(&srat(1, &[lapic(0, 0, true), memory(1, 0, 1 << 20, 0)]), Some(&s));
    assert_eq!((n.slit(), n.distance(0, 1)), (SlitUse::Absent, REMOTE_DISTANCE));
}

#[test]
fn x2apic_ids_too_big_get_no_node_but_map_the_domain() {
    let n = numa(&srat(1, &[x2apic(4, 40000, true), lapic(5, 0, true), memory(5, 0, 1 << 20, MEM)]), None);
    assert_eq!(n.node_of_pxm(4), Some(0));
    assert_eq!(n.node_of_pxm(5), Some(1));
    assert_eq!(n.nodes(), [1]); // node 0 exists, but nothing made it "parsed"
    assert_eq!(n.node_of_apic(40000), None);
    assert_eq!(n.cpus().len(), 1);
}

#[test]
fn slit_distances_by_node() {
    // Domains 2 and 0 become nodes 0 and 1: the SLIT (by domain) is read through the mapping.
    let t = srat(1, &[lapic(2, 0, true), lapic(0, 1, true), memory(2, 0, 1 << 20, MEM), memory(0, 1 << 20, 1 << 20, MEM)]);
    let s = slit(3, &[10, 17, 23, 17, 10, 25, 23, 25, 10]);
    let n = numa(&t, Some(&s));
    assert_eq!(n.slit(), SlitUse::Used);
    assert_eq!((n.distance(0, 0), n.distance(0, 1), n.distance(1, 0), n.distance(1, 1)), (10, 23, 23, 10));
    assert_eq!((n.distance(0, 2), n.distance(2, 2)), (REMOTE_DISTANCE, LOCAL_DISTANCE));
    // A SLIT that covers fewer localities than there are nodes: the rest keep 20.
    let s = slit(1, &[10]);
    let n = numa(&t, Some(&s));
    assert_eq!((n.slit(), n.distance(0, 1), n.distance(1, 0)), (SlitUse::Used, 20, 20));
    // An invalid SLIT is not used.
    let s = slit(3, &[10, 17, 23, 17, 10, 25, 23, 25, 11]);
    let n = numa(&t, Some(&s));
    assert_eq!((n.slit(), n.distance(0, 1)), (SlitUse::Invalid, REMOTE_DISTANCE));
}
