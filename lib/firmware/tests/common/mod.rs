//! Builders for synthetic tables: the header's length and checksum are filled in.
#![allow(dead_code)]

/// A table with this signature and header revision around `body` (what follows the 36 bytes).
pub fn table(signature: &[u8; 4], revision: u8, body: &[u8]) -> Vec<u8> {
    let mut t = Vec::with_capacity(36 + body.len());
    t.extend_from_slice(signature);
    t.extend_from_slice(&((36 + body.len()) as u32).to_le_bytes());
    t.push(revision);
    t.push(0); // checksum, below
    t.extend_from_slice(b"CADENC");
    t.extend_from_slice(b"TESTTABL");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"CDNC");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(body);
    fix_checksum(&mut t);
    t
}

/// Sets byte 9 so the whole slice sums to 0.
pub fn fix_checksum(t: &mut [u8]) {
    if t.len() < 10 {
        return;
    }
    t[9] = 0;
    let sum = t.iter().fold(0u8, |s, &b| s.wrapping_add(b));
    t[9] = 0u8.wrapping_sub(sum);
}

/// An SRAT of this header revision with these entries (the 12 bytes after the header: table
/// revision 1, reserved).
pub fn srat(revision: u8, entries: &[Vec<u8>]) -> Vec<u8> {
    let mut body = vec![0u8; 12];
    body[0] = 1;
    for e in entries {
        body.extend_from_slice(e);
    }
    table(b"SRAT", revision, &body)
}

/// Type 0, 16 bytes: the domain's low byte at 2, bytes 1-3 at 9-11.
pub fn lapic(pxm: u32, apic_id: u8, enabled: bool) -> Vec<u8> {
    let p = pxm.to_le_bytes();
    let mut e = vec![0u8, 16, p[0], apic_id];
    e.extend_from_slice(&u32::from(enabled).to_le_bytes());
    e.push(0); // SAPIC EID
    e.extend_from_slice(&p[1..4]);
    e.extend_from_slice(&0u32.to_le_bytes()); // clock domain
    e
}

/// Type 1, 40 bytes.
pub fn memory(pxm: u32, base: u64, length: u64, flags: u32) -> Vec<u8> {
    let mut e = vec![1u8, 40];
    e.extend_from_slice(&pxm.to_le_bytes());
    e.extend_from_slice(&[0, 0]);
    e.extend_from_slice(&base.to_le_bytes());
    e.extend_from_slice(&length.to_le_bytes());
    e.extend_from_slice(&0u32.to_le_bytes());
    e.extend_from_slice(&flags.to_le_bytes());
    e.extend_from_slice(&[0; 8]);
    e
}

/// Type 2, 24 bytes.
pub fn x2apic(pxm: u32, apic_id: u32, enabled: bool) -> Vec<u8> {
    let mut e = vec![2u8, 24, 0, 0];
    e.extend_from_slice(&pxm.to_le_bytes());
    e.extend_from_slice(&apic_id.to_le_bytes());
    e.extend_from_slice(&u32::from(enabled).to_le_bytes());
    e.extend_from_slice(&0u32.to_le_bytes());
    e.extend_from_slice(&[0; 4]);
    e
}

/// A SLIT of N localities from a row-major N×N matrix.
pub fn slit(n: u64, matrix: &[u8]) -> Vec<u8> {
    let mut body = n.to_le_bytes().to_vec();
    body.extend_from_slice(matrix);
    table(b"SLIT", 1, &body)
}

/// The fixture file `name` of topology `topo` (lib/firmware/tests/fixtures/), if there is one.
pub fn fixture(topo: &str, name: &str) -> Option<Vec<u8>> {
    std::fs::read(format!("{}/tests/fixtures/{topo}/{name}", env!("CARGO_MANIFEST_DIR"))).ok()
}

/// A file of Linux 6.12's recording of topology `topo` (tests/fixtures/topology/linux-6.12/).
pub fn linux(topo: &str, name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/topology/linux-6.12/{topo}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Linux's cpulist format ("0-3,8,10-11") as a list.
pub fn cpulist(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}
