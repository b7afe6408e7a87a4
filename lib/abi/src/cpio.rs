//! The "newc" cpio format (`cpio -H newc`, Linux's `usr/gen_init_cpio.c` and
//! `init/initramfs.c`): a header of 13 eight-digit hex fields after the magic `070701`, the
//! name (NUL-terminated, padded to 4 bytes), the data (padded to 4), and a last entry named
//! `TRAILER!!!`. [`parse`] reads an archive, [`Writer`] makes one.

use alloc::string::String;
use alloc::vec::Vec;

const MAGIC: &[u8; 6] = b"070701";
const HEADER: usize = 110;
const TRAILER: &str = "TRAILER!!!";

/// One archive member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Its path inside the archive (no leading `/`, as `cpio` writes them; `.` is the root).
    pub name: &'a str,
    /// `st_mode`: file type (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, ...) and permissions.
    pub mode: u32,
    /// The file's bytes, or a symlink's target.
    pub data: &'a [u8],
}

/// The file-type bits of `mode` (Linux's `S_IF*`, the same in `st_mode`).
pub const S_IFMT: u32 = 0o170000;
/// A regular file.
pub const S_IFREG: u32 = 0o100000;
/// A directory.
pub const S_IFDIR: u32 = 0o040000;
/// A symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// A character device.
pub const S_IFCHR: u32 = 0o020000;
/// A FIFO (pipes' `st_mode`).
pub const S_IFIFO: u32 = 0o010000;

/// A malformed archive, at byte `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpioError {
    /// Where the bad entry starts.
    pub offset: usize,
    /// What is wrong.
    pub what: &'static str,
}

fn hex(field: &[u8]) -> Option<u32> {
    let s = core::str::from_utf8(field).ok()?;
    u32::from_str_radix(s, 16).ok()
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// Every entry of `archive` before its trailer (Linux's initramfs also accepts several
/// archives back to back and NUL padding between them: so does this).
pub fn parse(archive: &[u8]) -> Result<Vec<Entry<'_>>, CpioError> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        while at < archive.len() && archive[at] == 0 {
            at += 1;
        }
        if at >= archive.len() {
            return Ok(out);
        }
        let err = |what| CpioError { offset: at, what };
        let h = archive.get(at..at + HEADER).ok_or(err("truncated header"))?;
        if &h[..6] != MAGIC {
            return Err(err("not a newc header"));
        }
        let field = |i: usize| hex(&h[6 + 8 * i..14 + 8 * i]).ok_or(err("bad hex field"));
        let mode = field(1)?;
        let filesize = field(6)? as usize;
        let namesize = field(11)? as usize;
        if namesize == 0 {
            return Err(err("empty name"));
        }
        let name_start = at + HEADER;
        let name_bytes = archive.get(name_start..name_start + namesize).ok_or(err("truncated name"))?;
        let name = core::str::from_utf8(&name_bytes[..namesize - 1]).map_err(|_| err("name not UTF-8"))?;
        let data_start = pad4(name_start + namesize);
        let data = archive.get(data_start..data_start.saturating_add(filesize)).ok_or(err("truncated data"))?;
        at = pad4(data_start + filesize);
        if name == TRAILER {
            continue;
        }
        out.push(Entry { name, mode, data });
    }
}

/// Writes a newc archive (`Writer::new`, `add`..., `finish`).
pub struct Writer {
    out: Vec<u8>,
    ino: u32,
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// An empty archive.
    pub fn new() -> Writer {
        Writer { out: Vec::new(), ino: 1 }
    }

    /// Adds an entry (`name` without a leading `/`).
    pub fn add(&mut self, name: &str, mode: u32, data: &[u8]) {
        let fields = [self.ino, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, 0, 0, name.len() as u32 + 1, 0];
        self.ino += 1;
        let mut h = String::from("070701");
        for f in fields {
            h.push_str(&alloc::format!("{:08x}", f));
        }
        self.out.extend_from_slice(h.as_bytes());
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.out.resize(pad4(self.out.len()), 0);
        self.out.extend_from_slice(data);
        self.out.resize(pad4(self.out.len()), 0);
    }

    /// The archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.add(TRAILER, 0, &[]);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_archives_read_back() {
        let mut w = Writer::new();
        w.add("bin", S_IFDIR | 0o755, &[]);
        w.add("bin/hello", S_IFREG | 0o755, b"\x7fELF...");
        w.add("bin/sh", S_IFLNK | 0o777, b"busybox");
        let a = w.finish();
        let e = parse(&a).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[1], Entry { name: "bin/hello", mode: S_IFREG | 0o755, data: b"\x7fELF..." });
        assert_eq!(e[2].data, b"busybox");
    }

    proptest::proptest! {
        #[test]
        fn round_trip_and_no_panic_on_damage(names in proptest::collection::vec("[a-z]{1,12}", 0..8), size in 0usize..50, cut in 0usize..2000) {
            let mut w = Writer::new();
            for (i, n) in names.iter().enumerate() {
                w.add(n, S_IFREG | 0o644, &alloc::vec![i as u8; size]);
            }
            let a = w.finish();
            let e = parse(&a).unwrap();
            proptest::prop_assert_eq!(e.len(), names.len());
            for (x, n) in e.iter().zip(&names) {
                proptest::prop_assert_eq!(x.name, n.as_str());
                proptest::prop_assert_eq!(x.data.len(), size);
            }
            let _ = parse(&a[..cut.min(a.len())]);
        }
    }
}
