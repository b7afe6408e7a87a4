//! ACPI SLIT, the System Locality Information Table (ACPI 6.5, section 5.2.17).
//!
//! After the 36-byte header: the number of localities N (u64), then N×N distances (u8), row by
//! row: entry `i*N + j` is the distance from locality (proximity domain) `i` to `j`. 10 means
//! local, 255 unreachable; the length must be exactly 44 + N×N.

use crate::{u64_at, Error, Header};
use alloc::vec::Vec;

/// The table's signature.
pub const SIGNATURE: [u8; 4] = *b"SLIT";
/// Bytes before the matrix: the header and the locality count.
pub const MATRIX_OFFSET: usize = 44;
/// A locality's distance to itself.
pub const LOCAL_DISTANCE: u8 = 10;
/// The distance to a locality that cannot be reached.
pub const UNREACHABLE: u8 = 255;

/// A parsed SLIT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slit {
    pub header: Header,
    localities: usize,
    matrix: Vec<u8>,
}

impl Slit {
    /// N, the number of localities.
    pub fn localities(&self) -> usize {
        self.localities
    }

    /// The distance from locality `from` to `to`, `None` outside the matrix.
    pub fn distance(&self, from: usize, to: usize) -> Option<u8> {
        if from >= self.localities || to >= self.localities {
            return None;
        }
        self.matrix.get(from * self.localities + to).copied()
    }

    /// Locality `from`'s row: its distance to each locality.
    pub fn row(&self, from: usize) -> Option<&[u8]> {
        if from >= self.localities {
            return None;
        }
        self.matrix.get(from * self.localities..(from + 1) * self.localities)
    }

    /// The N×N matrix, row by row.
    pub fn matrix(&self) -> &[u8] {
        &self.matrix
    }

    /// Whether Linux uses this SLIT (`slit_valid()` in `drivers/acpi/numa/srat.c`): every
    /// diagonal entry is exactly 10 and every other entry is above 10. Firmware that fills in
    /// 10 everywhere would otherwise tell the scheduler that remote memory is local; Linux then
    /// prints "SLIT table looks invalid. Not used." and keeps its default distances.
    pub fn linux_valid(&self) -> bool {
        (0..self.localities).all(|i| {
            (0..self.localities).all(|j| {
                let d = self.matrix[i * self.localities + j];
                if i == j {
                    d == LOCAL_DISTANCE
                } else {
                    d > LOCAL_DISTANCE
                }
            })
        })
    }
}

/// Parses a whole SLIT, header included (bytes after the header's length are ignored).
pub fn parse(bytes: &[u8]) -> Result<Slit, Error> {
    let (header, table) = Header::parse(bytes, SIGNATURE, MATRIX_OFFSET)?;
    let count = u64_at(table, 36);
    let size_error = Error::SlitSize { localities: count, length: header.length };
    let localities = usize::try_from(count).map_err(|_| size_error)?;
    let cells = localities.checked_mul(localities).ok_or(size_error)?;
    if cells.checked_add(MATRIX_OFFSET) != Some(table.len()) {
        return Err(size_error);
    }
    Ok(Slit { header, localities, matrix: table[MATRIX_OFFSET..].to_vec() })
}
