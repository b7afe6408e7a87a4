//! ACPI SRAT, the System Resource Affinity Table (ACPI 6.5, section 5.2.16).
//!
//! After the 36-byte header: 4 bytes "table revision" (1), 8 reserved, then entries of
//! `type: u8, length: u8, ...`. Three types are decoded:
//!
//! | type | entry | length | fields |
//! |---|---|---|---|
//! | 0 | Processor Local APIC/SAPIC Affinity | 16 | domain bits 0–7 at 2, APIC id at 3, flags at 4, SAPIC EID at 8, domain bits 8–31 at 9–11, clock domain at 12 |
//! | 1 | Memory Affinity | 40 | domain at 2, base at 8, length at 16, flags at 28 |
//! | 2 | Processor Local x2APIC Affinity | 24 | domain at 4, x2APIC id at 8, flags at 12, clock domain at 16 |
//!
//! Any other type (GICC, GIC ITS, Generic Initiator, Generic Port, ...) is kept as
//! [`Affinity::Other`] and skipped by its length. An entry of length 0, one running past the
//! table, and a known type shorter than its structure are errors. A known type longer than its
//! structure is accepted (newer revisions may grow it); its `length` is kept, since Linux refuses
//! a type-0 entry whose length is not exactly 16 ([`crate::numa`]).

use crate::{u32_at, u64_at, u8_at, Error, Header};
use alloc::vec::Vec;

/// The table's signature.
pub const SIGNATURE: [u8; 4] = *b"SRAT";
/// Bytes before the first entry: the header, the table revision (4) and 8 reserved.
pub const ENTRIES_OFFSET: usize = 48;

/// Entry type: Processor Local APIC/SAPIC Affinity.
pub const TYPE_LAPIC: u8 = 0;
/// Entry type: Memory Affinity.
pub const TYPE_MEMORY: u8 = 1;
/// Entry type: Processor Local x2APIC Affinity.
pub const TYPE_X2APIC: u8 = 2;

/// Length of a type-0 entry.
pub const LAPIC_LEN: u8 = 16;
/// Length of a type-1 entry.
pub const MEMORY_LEN: u8 = 40;
/// Length of a type-2 entry.
pub const X2APIC_LEN: u8 = 24;

/// Processor affinity flag: the entry is enabled (a disabled one is to be ignored).
pub const CPU_ENABLED: u32 = 1 << 0;
/// Memory affinity flag: the entry is enabled.
pub const MEM_ENABLED: u32 = 1 << 0;
/// Memory affinity flag: the range is hot-pluggable.
pub const MEM_HOTPLUGGABLE: u32 = 1 << 1;
/// Memory affinity flag: the range is non-volatile.
pub const MEM_NON_VOLATILE: u32 = 1 << 2;

/// A parsed SRAT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srat {
    pub header: Header,
    /// The "table revision" field after the header (1 in every table seen; Linux ignores it and
    /// reads the header's `revision` instead).
    pub table_revision: u32,
    /// The entries in table order.
    pub entries: Vec<Entry>,
}

/// One entry, where it was and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of the entry in the table.
    pub offset: usize,
    /// The entry's length field.
    pub length: u8,
    pub affinity: Affinity,
}

/// What an entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affinity {
    /// Type 0: a CPU by its 8-bit local APIC id.
    Lapic(LapicAffinity),
    /// Type 1: a physical memory range.
    Memory(MemoryAffinity),
    /// Type 2: a CPU by its 32-bit x2APIC id.
    X2apic(X2apicAffinity),
    /// Any other type, skipped.
    Other { entry_type: u8 },
}

/// Type 0, Processor Local APIC/SAPIC Affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LapicAffinity {
    /// All 32 bits: byte 2 is bits 0–7, bytes 9–11 bits 8–31. (Before ACPI 3.0 only byte 2
    /// existed; Linux reads the high bytes only when the header's revision is 2 or more.)
    pub proximity_domain: u32,
    pub apic_id: u8,
    pub sapic_eid: u8,
    pub flags: u32,
    pub clock_domain: u32,
}

/// Type 1, Memory Affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryAffinity {
    pub proximity_domain: u32,
    pub base: u64,
    pub length: u64,
    pub flags: u32,
}

/// Type 2, Processor Local x2APIC Affinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct X2apicAffinity {
    pub proximity_domain: u32,
    pub x2apic_id: u32,
    pub flags: u32,
    pub clock_domain: u32,
}

impl LapicAffinity {
    /// Bits 0–7 of the domain, all that SRAT revision 1 has.
    pub fn proximity_domain_lo(&self) -> u8 {
        self.proximity_domain as u8
    }

    pub fn enabled(&self) -> bool {
        self.flags & CPU_ENABLED != 0
    }
}

impl X2apicAffinity {
    pub fn enabled(&self) -> bool {
        self.flags & CPU_ENABLED != 0
    }
}

impl MemoryAffinity {
    pub fn enabled(&self) -> bool {
        self.flags & MEM_ENABLED != 0
    }

    pub fn hotpluggable(&self) -> bool {
        self.flags & MEM_HOTPLUGGABLE != 0
    }

    pub fn non_volatile(&self) -> bool {
        self.flags & MEM_NON_VOLATILE != 0
    }

    /// One past the range's last byte, or `None` if `base + length` overflows.
    pub fn end(&self) -> Option<u64> {
        self.base.checked_add(self.length)
    }
}

/// A CPU entry of either type, as one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu {
    /// The local APIC id (type 0) or x2APIC id (type 2).
    pub apic_id: u32,
    /// The entry's proximity domain, all 32 bits (see [`LapicAffinity::proximity_domain`]).
    pub proximity_domain: u32,
    pub enabled: bool,
    /// From a type-2 entry.
    pub x2apic: bool,
}

impl Srat {
    /// The CPU entries (types 0 and 2) in table order.
    pub fn cpus(&self) -> impl Iterator<Item = Cpu> + '_ {
        self.entries.iter().filter_map(|e| match e.affinity {
            Affinity::Lapic(a) => {
                Some(Cpu { apic_id: a.apic_id.into(), proximity_domain: a.proximity_domain, enabled: a.enabled(), x2apic: false })
            }
            Affinity::X2apic(a) => {
                Some(Cpu { apic_id: a.x2apic_id, proximity_domain: a.proximity_domain, enabled: a.enabled(), x2apic: true })
            }
            _ => None,
        })
    }

    /// The memory entries in table order.
    pub fn memory(&self) -> impl Iterator<Item = &MemoryAffinity> + '_ {
        self.entries.iter().filter_map(|e| match &e.affinity {
            Affinity::Memory(m) => Some(m),
            _ => None,
        })
    }
}

/// Parses a whole SRAT, header included (bytes after the header's length are ignored).
pub fn parse(bytes: &[u8]) -> Result<Srat, Error> {
    let (header, table) = Header::parse(bytes, SIGNATURE, ENTRIES_OFFSET)?;
    let table_revision = u32_at(table, 36);
    let mut entries = Vec::new();
    let mut offset = ENTRIES_OFFSET;
    while offset < table.len() {
        let rest = &table[offset..];
        if rest.len() < 2 {
            return Err(Error::EntryPastEnd { offset, length: rest.len(), table_length: table.len() });
        }
        let (entry_type, length) = (rest[0], rest[1]);
        if length == 0 {
            return Err(Error::ZeroLengthEntry { offset });
        }
        if usize::from(length) > rest.len() {
            return Err(Error::EntryPastEnd { offset, length: length.into(), table_length: table.len() });
        }
        let e = &rest[..length.into()];
        let minimum = match entry_type {
            TYPE_LAPIC => LAPIC_LEN,
            TYPE_MEMORY => MEMORY_LEN,
            TYPE_X2APIC => X2APIC_LEN,
            _ => 2,
        };
        if length < minimum {
            return Err(Error::EntryTooShort { offset, entry_type, length, minimum });
        }
        let affinity = match entry_type {
            TYPE_LAPIC => Affinity::Lapic(LapicAffinity {
                proximity_domain: u32::from(e[2]) | u32::from(e[9]) << 8 | u32::from(e[10]) << 16 | u32::from(e[11]) << 24,
                apic_id: e[3],
                flags: u32_at(e, 4),
                sapic_eid: u8_at(e, 8),
                clock_domain: u32_at(e, 12),
            }),
            TYPE_MEMORY => Affinity::Memory(MemoryAffinity {
                proximity_domain: u32_at(e, 2),
                base: u64_at(e, 8),
                length: u64_at(e, 16),
                flags: u32_at(e, 28),
            }),
            TYPE_X2APIC => Affinity::X2apic(X2apicAffinity {
                proximity_domain: u32_at(e, 4),
                x2apic_id: u32_at(e, 8),
                flags: u32_at(e, 12),
                clock_domain: u32_at(e, 16),
            }),
            other => Affinity::Other { entry_type: other },
        };
        entries.push(Entry { offset, length, affinity });
        offset += usize::from(length);
    }
    Ok(Srat { header, table_revision, entries })
}
