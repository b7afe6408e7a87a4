//! Firmware tables, pure: bytes in, values out.
//!
//! - [`srat::parse`]: ACPI's System Resource Affinity Table (which proximity domain each CPU and
//!   each memory range belongs to).
//! - [`slit::parse`]: ACPI's System Locality Information Table (the distance between domains).
//! - [`numa::Numa::linux`]: what Linux 6.12 (x86_64) makes of the two: its node ids (numbered in
//!   the order the domains first appear, CPU entries before memory entries), the nodes it
//!   finds, and `node_distance()`, including when it ignores a table.
//!
//! Each parser takes a whole table, its 36-byte header included, as the firmware laid it out
//! (or as Linux shows it in `/sys/firmware/acpi/tables/`), and checks the signature, the length
//! and the checksum before anything else. A malformed table is an [`Error`], never a panic
//! (proptested on arbitrary bytes). The crate reads no memory itself: the kernel maps the table
//! and passes the slice.
//!
//! `#![no_std]` with `alloc`, `#![forbid(unsafe_code)]`, no dependencies; host-tested with the
//! tables QEMU 10 builds for the topologies of `tools/topology.sh` (`tests/fixtures/`).
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

use core::fmt;

pub mod numa;
pub mod slit;
pub mod srat;

/// Length of the header every ACPI system description table starts with.
pub const HEADER_LEN: usize = 36;

/// Why a table was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Fewer bytes than the table needs: than its header, or than its header's length field says.
    Truncated { needed: usize, available: usize },
    /// The table is not the one asked for.
    Signature { expected: [u8; 4], found: [u8; 4] },
    /// The header's length field is shorter than the table's fixed part.
    TooShort { length: u32, minimum: usize },
    /// The bytes of the table (its header's length of them) do not add up to 0 modulo 256.
    Checksum { sum: u8 },
    /// An SRAT entry of length 0 at this offset (walking on would loop forever; Linux stops).
    ZeroLengthEntry { offset: usize },
    /// An SRAT entry whose length runs past the end of the table (or a partial entry header).
    EntryPastEnd { offset: usize, length: usize, table_length: usize },
    /// An SRAT entry of a known type, shorter than that type's structure.
    EntryTooShort { offset: usize, entry_type: u8, length: u8, minimum: u8 },
    /// A SLIT whose length is not 44 + N×N bytes for its locality count N.
    SlitSize { localities: u64, length: u32 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { needed, available } => write!(f, "truncated table: {needed} bytes needed, {available} given"),
            Error::Signature { expected, found } => {
                write!(f, "signature {:?}, not {:?}", Sig(found), Sig(expected))
            }
            Error::TooShort { length, minimum } => write!(f, "table length {length} is below its fixed part ({minimum} bytes)"),
            Error::Checksum { sum } => write!(f, "bad checksum (bytes add up to {sum:#04x}, not 0)"),
            Error::ZeroLengthEntry { offset } => write!(f, "entry of length 0 at offset {offset}"),
            Error::EntryPastEnd { offset, length, table_length } => {
                write!(f, "entry at offset {offset} of length {length} runs past the table's end ({table_length})")
            }
            Error::EntryTooShort { offset, entry_type, length, minimum } => {
                write!(f, "entry type {entry_type} at offset {offset} has length {length}, below {minimum}")
            }
            Error::SlitSize { localities, length } => {
                write!(f, "SLIT of length {length} cannot hold {localities}x{localities} distances after its 44 bytes")
            }
        }
    }
}

/// Prints a signature as text where it is ASCII.
struct Sig([u8; 4]);

impl fmt::Debug for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for &b in &self.0 {
            if b.is_ascii_graphic() || b == b' ' {
                write!(f, "{}", b as char)?;
            } else {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

/// The header every ACPI system description table starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub signature: [u8; 4],
    /// Length of the whole table, header included.
    pub length: u32,
    pub revision: u8,
    pub checksum: u8,
    pub oem_id: [u8; 6],
    pub oem_table_id: [u8; 8],
    pub oem_revision: u32,
    pub creator_id: [u8; 4],
    pub creator_revision: u32,
}

impl Header {
    /// Checks `bytes` as a table with this `signature` whose fixed part (header included) is
    /// `minimum` bytes: the header is there, the signature matches, the length field is at
    /// least `minimum` and within `bytes`, and the table's bytes sum to 0. Returns the header
    /// and the table (the first `length` bytes; anything after them is not the table's).
    pub fn parse(bytes: &[u8], signature: [u8; 4], minimum: usize) -> Result<(Header, &[u8]), Error> {
        if bytes.len() < HEADER_LEN {
            return Err(Error::Truncated { needed: HEADER_LEN, available: bytes.len() });
        }
        let found = arr4(bytes, 0);
        if found != signature {
            return Err(Error::Signature { expected: signature, found });
        }
        let length = u32_at(bytes, 4);
        if (length as usize) < minimum {
            return Err(Error::TooShort { length, minimum });
        }
        let table = bytes.get(..length as usize).ok_or(Error::Truncated { needed: length as usize, available: bytes.len() })?;
        let sum = table.iter().fold(0u8, |s, &b| s.wrapping_add(b));
        if sum != 0 {
            return Err(Error::Checksum { sum });
        }
        let mut oem_id = [0; 6];
        oem_id.copy_from_slice(&table[10..16]);
        let mut oem_table_id = [0; 8];
        oem_table_id.copy_from_slice(&table[16..24]);
        let header = Header {
            signature: found,
            length,
            revision: table[8],
            checksum: table[9],
            oem_id,
            oem_table_id,
            oem_revision: u32_at(table, 24),
            creator_id: arr4(table, 28),
            creator_revision: u32_at(table, 32),
        };
        Ok((header, table))
    }
}

// Little-endian readers. Callers check the range first (an entry's length against its type's
// size, the header's 36 bytes); `get` keeps even a wrong check from panicking: it reads zeros.
fn arr4(b: &[u8], at: usize) -> [u8; 4] {
    let mut out = [0; 4];
    if let Some(s) = b.get(at..at + 4) {
        out.copy_from_slice(s);
    }
    out
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(arr4(b, at))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}
