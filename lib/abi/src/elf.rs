//! The part of ELF64 that `execve` reads (System V gABI; `include/uapi/linux/elf.h`): the file
//! header and the program headers. A file that is not a little-endian x86_64 ELF64
//! executable, or whose headers point outside it, is [`ElfError`] (the kernel's ENOEXEC).

use alloc::vec::Vec;

/// `e_type` of a fixed-address executable (static glibc programs, `gcc -static -no-pie`).
pub const ET_EXEC: u16 = 2;
/// `e_type` of a position-independent executable or shared object (PIE programs, ld.so).
pub const ET_DYN: u16 = 3;
/// A loadable segment.
pub const PT_LOAD: u32 = 1;
/// The program interpreter's path.
pub const PT_INTERP: u32 = 3;
/// The program headers' own location in memory.
pub const PT_PHDR: u32 = 6;
/// The stack's flags (PF_X: executable stack).
pub const PT_GNU_STACK: u32 = 0x6474_e551;
/// Segment flag: executable.
pub const PF_X: u32 = 1;
/// Segment flag: writable.
pub const PF_W: u32 = 2;
/// Segment flag: readable.
pub const PF_R: u32 = 4;
/// Size of one ELF64 program header (`AT_PHENT`).
pub const PHDR_SIZE: usize = 56;
const EHDR_SIZE: usize = 64;
const EM_X86_64: u16 = 62;

/// Why a file cannot be executed as ELF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// Not an ELF file at all (no `\x7fELF`): the kernel tries a `#!` script, else ENOEXEC.
    NotElf,
    /// ELF, but not a little-endian x86_64 ELF64 `ET_EXEC` / `ET_DYN` with sane headers.
    Unsupported(&'static str),
}

/// One program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_type`.
    pub kind: u32,
    /// `p_flags` (`PF_R`, `PF_W`, `PF_X`).
    pub flags: u32,
    /// `p_offset`: where its bytes start in the file.
    pub offset: u64,
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_filesz`: bytes from the file (the rest of `memsz` is zero: .bss).
    pub filesz: u64,
    /// `p_memsz`.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

/// What `execve` needs from an ELF file's headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfInfo {
    /// `e_type`: [`ET_EXEC`] or [`ET_DYN`].
    pub kind: u16,
    /// `e_entry` (relative to the load bias for `ET_DYN`).
    pub entry: u64,
    /// `e_phoff`: the program headers' file offset.
    pub phoff: u64,
    /// `e_phnum` (`AT_PHNUM`).
    pub phnum: u16,
    /// Every program header.
    pub segments: Vec<Segment>,
    /// `PT_INTERP`'s path, without its NUL.
    pub interp: Option<Vec<u8>>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl ElfInfo {
    /// Parses the headers of `file`.
    pub fn parse(file: &[u8]) -> Result<ElfInfo, ElfError> {
        Self::parse_prefix(file, file.len() as u64)
    }

    /// Parses the headers from the first bytes of a file of `file_size` bytes: `prefix` must
    /// hold the file header, the program headers and the interpreter's path (the first page
    /// does, for every linker's output), else the file is refused.
    pub fn parse_prefix(file: &[u8], file_size: u64) -> Result<ElfInfo, ElfError> {
        if file.len() < 4 || &file[..4] != b"\x7fELF" {
            return Err(ElfError::NotElf);
        }
        if file.len() < EHDR_SIZE {
            return Err(ElfError::Unsupported("truncated header"));
        }
        if file[4] != 2 || file[5] != 1 {
            return Err(ElfError::Unsupported("not little-endian ELF64"));
        }
        let kind = u16_at(file, 16);
        if kind != ET_EXEC && kind != ET_DYN {
            return Err(ElfError::Unsupported("not an executable"));
        }
        if u16_at(file, 18) != EM_X86_64 {
            return Err(ElfError::Unsupported("not x86_64"));
        }
        let entry = u64_at(file, 24);
        let phoff = u64_at(file, 32);
        let phentsize = u16_at(file, 54) as usize;
        let phnum = u16_at(file, 56);
        if phentsize != PHDR_SIZE || phnum == 0 || phnum > 256 {
            return Err(ElfError::Unsupported("bad program header table"));
        }
        let table_end = phoff.checked_add(phnum as u64 * PHDR_SIZE as u64).filter(|&e| e <= file.len() as u64 && e <= file_size);
        if table_end.is_none() {
            return Err(ElfError::Unsupported("program headers outside the file"));
        }
        let mut segments = Vec::with_capacity(phnum as usize);
        let mut interp = None;
        for i in 0..phnum as usize {
            let at = phoff as usize + i * PHDR_SIZE;
            let s = Segment {
                kind: u32_at(file, at),
                flags: u32_at(file, at + 4),
                offset: u64_at(file, at + 8),
                vaddr: u64_at(file, at + 16),
                filesz: u64_at(file, at + 32),
                memsz: u64_at(file, at + 40),
                align: u64_at(file, at + 48),
            };
            let file_end = s.offset.checked_add(s.filesz);
            if s.kind == PT_LOAD {
                if file_end.is_none_or(|e| e > file_size) || s.filesz > s.memsz {
                    return Err(ElfError::Unsupported("segment outside the file"));
                }
                if s.vaddr.checked_add(s.memsz).is_none() || (s.align > 1 && (s.vaddr % 4096) != (s.offset % 4096)) {
                    return Err(ElfError::Unsupported("misaligned segment"));
                }
            }
            if s.kind == PT_INTERP {
                let end = file_end.filter(|&e| e <= file.len() as u64).ok_or(ElfError::Unsupported("interpreter outside the file"))?;
                let path = &file[s.offset as usize..end as usize];
                let path = path.strip_suffix(&[0]).unwrap_or(path);
                if path.is_empty() || path.contains(&0) {
                    return Err(ElfError::Unsupported("bad interpreter path"));
                }
                interp = Some(path.to_vec());
            }
            segments.push(s);
        }
        if !segments.iter().any(|s| s.kind == PT_LOAD) {
            return Err(ElfError::Unsupported("nothing to load"));
        }
        Ok(ElfInfo { kind, entry, phoff, phnum, segments, interp })
    }

    /// The loadable segments.
    pub fn loads(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().filter(|s| s.kind == PT_LOAD)
    }

    /// Where the program headers are in memory before the load bias (`AT_PHDR` minus the
    /// bias): `PT_PHDR`'s address, else the address of the loaded bytes at `e_phoff`.
    pub fn phdr_vaddr(&self) -> Option<u64> {
        if let Some(p) = self.segments.iter().find(|s| s.kind == PT_PHDR) {
            return Some(p.vaddr);
        }
        self.loads().find(|s| s.offset <= self.phoff && self.phoff < s.offset + s.filesz).map(|s| s.vaddr + (self.phoff - s.offset))
    }

    /// The lowest and the end of the highest loaded address, before the bias.
    pub fn span(&self) -> (u64, u64) {
        let lo = self.loads().map(|s| s.vaddr).min().unwrap_or(0);
        let hi = self.loads().map(|s| s.vaddr + s.memsz).max().unwrap_or(0);
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16, phnum: u16) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 64 + 56 * phnum as usize];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[16..18].copy_from_slice(&kind.to_le_bytes());
        f[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        f[24..32].copy_from_slice(&0x401000u64.to_le_bytes());
        f[32..40].copy_from_slice(&64u64.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&phnum.to_le_bytes());
        f
    }

    fn put_segment(f: &mut [u8], i: usize, s: Segment) {
        let at = 64 + i * 56;
        f[at..at + 4].copy_from_slice(&s.kind.to_le_bytes());
        f[at + 4..at + 8].copy_from_slice(&s.flags.to_le_bytes());
        f[at + 8..at + 16].copy_from_slice(&s.offset.to_le_bytes());
        f[at + 16..at + 24].copy_from_slice(&s.vaddr.to_le_bytes());
        f[at + 32..at + 40].copy_from_slice(&s.filesz.to_le_bytes());
        f[at + 40..at + 48].copy_from_slice(&s.memsz.to_le_bytes());
        f[at + 48..at + 56].copy_from_slice(&s.align.to_le_bytes());
    }

    #[test]
    fn a_static_executable_parses() {
        let mut f = header(ET_EXEC, 1);
        let len = f.len() as u64;
        put_segment(
            &mut f,
            0,
            Segment { kind: PT_LOAD, flags: PF_R | PF_X, offset: 0, vaddr: 0x400000, filesz: len, memsz: len + 100, align: 4096 },
        );
        let e = ElfInfo::parse(&f).unwrap();
        assert_eq!((e.kind, e.entry, e.phnum), (ET_EXEC, 0x401000, 1));
        assert_eq!(e.phdr_vaddr(), Some(0x400040));
        assert_eq!(e.span(), (0x400000, 0x400000 + len + 100));
        assert_eq!(e.interp, None);
    }

    #[test]
    fn bad_files_are_refused_not_trusted() {
        assert_eq!(ElfInfo::parse(b"#!/bin/sh\n"), Err(ElfError::NotElf));
        assert!(ElfInfo::parse(&header(ET_EXEC, 1)[..40]).is_err());
        let mut f = header(ET_EXEC, 1);
        put_segment(
            &mut f,
            0,
            Segment { kind: PT_LOAD, flags: PF_R, offset: 0, vaddr: 0x400000, filesz: 1 << 40, memsz: 1 << 40, align: 4096 },
        );
        assert!(ElfInfo::parse(&f).is_err(), "file size past the end");
        let mut f = header(ET_EXEC, 1);
        put_segment(&mut f, 0, Segment { kind: PT_LOAD, flags: PF_R, offset: 0, vaddr: u64::MAX - 10, filesz: 0, memsz: 100, align: 4096 });
        assert!(ElfInfo::parse(&f).is_err(), "address overflow");
        let mut f = header(1, 1);
        put_segment(&mut f, 0, Segment { kind: PT_LOAD, flags: PF_R, offset: 0, vaddr: 0, filesz: 0, memsz: 0, align: 0 });
        assert!(ElfInfo::parse(&f).is_err(), "ET_REL");
        let mut big = header(ET_EXEC, 2);
        big.truncate(64 + 56);
        assert!(ElfInfo::parse(&big).is_err(), "headers past the end");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_fail_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400), tweak in 0usize..400) {
            let mut f = header(ET_EXEC, 3);
            f.extend_from_slice(&bytes);
            if tweak < f.len() { f[tweak] ^= 0xff; }
            let _ = ElfInfo::parse(&f);
            let _ = ElfInfo::parse(&bytes);
        }
    }
}
