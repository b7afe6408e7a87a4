//! `execve`'s loader: maps an ELF program (static `ET_EXEC`, `ET_DYN` PIE, and the
//! `PT_INTERP` interpreter of a dynamic one) into a fresh [`Mm`] and builds its initial stack,
//! as Linux's `fs/binfmt_elf.c` does without address randomization (PIE at
//! `0x5555_5555_4000`, the interpreter in the mmap area, the stack just below `TASK_SIZE`).

use super::mm::{page_up, Backing, Mm, Vma, PAGE, STACK_SIZE, STACK_TOP};
use crate::fs::initramfs;
use crate::mm::vm::Prot;
use alloc::vec::Vec;
use cadence_abi::elf::{ElfError, ElfInfo, ET_DYN, PF_R, PF_W, PF_X, PHDR_SIZE};
use cadence_abi::errno::Errno;
use cadence_abi::stack::{self, *};

/// Linux's `ELF_ET_DYN_BASE` without randomization: where a PIE program goes.
const PIE_BASE: u64 = 0x5555_5555_4000;

/// A loaded program: its memory and first registers.
pub struct Loaded {
    /// Its address space.
    pub mm: Mm,
    /// Where it starts (the interpreter's entry if it has one).
    pub entry: u64,
    /// Its initial stack pointer.
    pub sp: u64,
}

fn prot_of(flags: u32) -> Prot {
    Prot { read: flags & (PF_R | PF_W | PF_X) != 0, write: flags & PF_W != 0, exec: flags & PF_X != 0 }
}

/// Maps `file`'s loadable segments at `bias`; returns the end of the highest one.
fn map_image(mm: &mut Mm, info: &ElfInfo, file: &'static [u8], bias: u64) -> Result<u64, Errno> {
    let mut end = 0;
    for s in info.loads() {
        let start = (s.vaddr + bias) & !(PAGE - 1);
        let file_end = page_up(s.vaddr + bias + s.filesz).ok_or(Errno::ENOEXEC)?;
        let mem_end = page_up(s.vaddr + bias + s.memsz).ok_or(Errno::ENOEXEC)?;
        if mem_end > STACK_TOP - STACK_SIZE {
            return Err(Errno::ENOEXEC);
        }
        let prot = prot_of(s.flags);
        // Bytes past p_filesz read as zero (.bss's start on the last file page: Linux's
        // `padzero`), so the backing ends at the segment's last file byte.
        let data = &file[..(s.offset + s.filesz) as usize];
        if file_end > start {
            mm.insert(Vma { start, end: file_end, prot, backing: Backing::File { data, offset: s.offset & !(PAGE - 1) } });
        }
        if mem_end > file_end {
            mm.insert(Vma { start: file_end, end: mem_end, prot, backing: Backing::Anonymous });
        }
        end = end.max(s.vaddr + bias + s.memsz);
    }
    Ok(end)
}

fn parse(file: &[u8]) -> Result<ElfInfo, Errno> {
    ElfInfo::parse(file).map_err(|e| match e {
        ElfError::NotElf | ElfError::Unsupported(_) => Errno::ENOEXEC,
    })
}

/// Random bytes for AT_RANDOM (from the TSC: not cryptographic, as the issue allows for now).
fn random16() -> [u8; 16] {
    let mut x = crate::arch::tsc::rdtsc() ^ 0x9e37_79b9_7f4a_7c15;
    let mut out = [0u8; 16];
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    out
}

/// Loads `path` with `argv` and `envp` (the paths are the initramfs's).
pub fn load(path: &str, argv: &[&[u8]], envp: &[&[u8]]) -> Result<Loaded, Errno> {
    let file = initramfs::regular_file(path)?;
    let info = parse(file)?;
    let mut mm = Mm::new()?;
    let bias = if info.kind == ET_DYN { PIE_BASE } else { 0 };
    let end = map_image(&mut mm, &info, file, bias)?;
    mm.brk_start = page_up(end).ok_or(Errno::ENOEXEC)?;
    mm.brk = mm.brk_start;
    let (entry, base) = match &info.interp {
        Some(interp) => {
            let ipath = core::str::from_utf8(interp).map_err(|_| Errno::ENOEXEC)?;
            let ifile = initramfs::regular_file(ipath)?;
            let iinfo = parse(ifile)?;
            let (lo, hi) = iinfo.span();
            let ibase = mm.free_range(page_up(hi - lo).ok_or(Errno::ENOEXEC)?)? - (lo & !(PAGE - 1));
            map_image(&mut mm, &iinfo, ifile, ibase)?;
            (iinfo.entry + ibase, ibase)
        }
        None => (info.entry + bias, 0),
    };
    mm.insert(Vma { start: STACK_TOP - STACK_SIZE, end: STACK_TOP, prot: Prot::RW, backing: Backing::Anonymous });
    let phdr = info.phdr_vaddr().map_or(0, |v| v + bias);
    let hwcap = u64::from(raw_cpuid_edx());
    let auxv: Vec<(u64, u64)> = alloc::vec![
        (AT_HWCAP, hwcap),
        (AT_PAGESZ, PAGE),
        (AT_CLKTCK, 100),
        (AT_PHDR, phdr),
        (AT_PHENT, PHDR_SIZE as u64),
        (AT_PHNUM, u64::from(info.phnum)),
        (AT_BASE, base),
        (AT_FLAGS, 0),
        (AT_ENTRY, info.entry + bias),
        (AT_UID, 0),
        (AT_EUID, 0),
        (AT_GID, 0),
        (AT_EGID, 0),
        (AT_SECURE, 0),
        (AT_HWCAP2, 0),
    ];
    let st = stack::build(STACK_TOP, argv, envp, path.as_bytes(), &auxv, random16()).map_err(|_| Errno::E2BIG)?;
    mm.write(st.sp, &st.bytes)?;
    Ok(Loaded { mm, entry, sp: st.sp })
}

/// CPUID.1:EDX, the hardware capabilities glibc reads from AT_HWCAP.
fn raw_cpuid_edx() -> u32 {
    crate::arch::cpuid::leaf1_edx()
}
