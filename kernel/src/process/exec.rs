//! `execve`'s loader: maps an ELF program (static `ET_EXEC`, `ET_DYN` PIE, and the
//! `PT_INTERP` interpreter of a dynamic one) from the VFS into a fresh [`Mm`] and builds its
//! initial stack, as Linux's `fs/binfmt_elf.c` does without address randomization (PIE at
//! `0x5555_5555_4000`, the interpreter in the mmap area, the stack just below `TASK_SIZE`);
//! a `#!` script runs its interpreter with the script's path (`fs/binfmt_script.c`).

use super::mm::{page_up, Backing, ExeFile, Mm, Vma, PAGE, STACK_EXPAND, STACK_SIZE, STACK_TOP};
use crate::fs::vfs::{self, Inode, S_IFREG};
use crate::mm::vm::Prot;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::elf::{ElfError, ElfInfo, ET_DYN, PF_R, PF_W, PF_X, PHDR_SIZE};
use cadence_abi::errno::Errno;
use cadence_abi::stack::{self, *};

/// Linux's `ELF_ET_DYN_BASE` without randomization: where a PIE program goes.
const PIE_BASE: u64 = 0x5555_5555_4000;
/// How many bytes of a file the header parse reads (`BINPRM_BUF_SIZE` is 256; a page holds
/// the program headers of every linker's output).
const HEAD: usize = 4096;
/// Nested `#!` interpreters allowed (Linux: 4 levels, then ELOOP).
const MAX_SCRIPT_DEPTH: u32 = 4;

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

/// Maps `inode`'s loadable segments at `bias`; returns the end of the highest one.
fn map_image(mm: &mut Mm, info: &ElfInfo, inode: &Arc<Inode>, bias: u64) -> Result<u64, Errno> {
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
        if file_end > start {
            let backing =
                Backing::File { inode: inode.clone(), offset: s.offset & !(PAGE - 1), limit: s.offset + s.filesz, may_write: false };
            mm.insert(Vma::new(start, file_end, prot, backing, false));
        }
        if mem_end > file_end {
            mm.insert(Vma::new(file_end, mem_end, prot, Backing::Anonymous, false));
        }
        end = end.max(s.vaddr + bias + s.memsz);
    }
    Ok(end)
}

/// The executable regular file at `path`: EACCES for a directory, a device or a file
/// without an execute bit (root needs one too), as `execve` answers.
fn executable(cwd: &Arc<Inode>, path: &str) -> Result<Arc<Inode>, Errno> {
    let inode = vfs::lookup(cwd, path, true)?;
    if inode.kind() != S_IFREG || inode.mode.load(core::sync::atomic::Ordering::Relaxed) & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    Ok(inode)
}

fn head(inode: &Inode) -> Result<Vec<u8>, Errno> {
    let mut buf = alloc::vec![0u8; HEAD];
    let n = inode.read_at(0, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

fn parse(inode: &Inode, bytes: &[u8]) -> Result<ElfInfo, Errno> {
    ElfInfo::parse_prefix(bytes, inode.size()).map_err(|e| match e {
        ElfError::NotElf | ElfError::Unsupported(_) => Errno::ENOEXEC,
    })
}

/// Random bytes for AT_RANDOM (from the TSC: not cryptographic).
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

/// A `#!` line's interpreter and optional argument (Linux: up to the first newline, at most
/// 255 bytes in all; the argument is everything after the interpreter, trimmed).
fn shebang(head: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let rest = head.strip_prefix(b"#!")?;
    let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len()).min(255);
    let line = &rest[..line_end];
    let trim = |s: &[u8]| -> Vec<u8> {
        let s = s.iter().skip_while(|b| b.is_ascii_whitespace()).copied().collect::<Vec<u8>>();
        let n = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |p| p + 1);
        s[..n].to_vec()
    };
    let line = trim(line);
    if line.is_empty() {
        return None;
    }
    let split = line.iter().position(|b| b.is_ascii_whitespace());
    Some(match split {
        Some(i) => (line[..i].to_vec(), Some(trim(&line[i..])).filter(|a| !a.is_empty())),
        None => (line, None),
    })
}

/// Loads `path` (relative to `cwd`) with `argv` and `envp`.
pub fn load(cwd: &Arc<Inode>, path: &str, argv: &[&[u8]], envp: &[&[u8]]) -> Result<Loaded, Errno> {
    load_depth(cwd, path, argv, envp, 0)
}

fn load_depth(cwd: &Arc<Inode>, path: &str, argv: &[&[u8]], envp: &[&[u8]], depth: u32) -> Result<Loaded, Errno> {
    let inode = executable(cwd, path)?;
    // Linux's do_open_execat denies writers every file it opens for an exec, a script too,
    // first (ETXTBSY if one is open for writing); the program's file stays denied while its
    // address space lives (`Mm::exe_file`).
    let exe_file = ExeFile::deny(&inode)?;
    let bytes = head(&inode)?;
    if let Some((interp, arg)) = shebang(&bytes) {
        if depth >= MAX_SCRIPT_DEPTH {
            return Err(Errno::ELOOP);
        }
        let interp_path = core::str::from_utf8(&interp).map_err(|_| Errno::ENOEXEC)?;
        let mut args: Vec<&[u8]> = alloc::vec![&interp[..]];
        if let Some(a) = &arg {
            args.push(a);
        }
        args.push(path.as_bytes());
        args.extend(argv.iter().skip(1));
        return load_depth(cwd, interp_path, &args, envp, depth + 1);
    }
    let info = parse(&inode, &bytes)?;
    // Everything here builds the new image beside the old one: a failure (no memory for the
    // address space, its page tables or the stack's page) is the caller's ENOMEM and the old
    // image runs on. The point of no return is the caller's switch to the loaded image, which
    // allocates nothing.
    if crate::mm::fail_alloc::should_fail("exec_mm") {
        return Err(Errno::ENOMEM);
    }
    let mut mm = Mm::new()?;
    let bias = if info.kind == ET_DYN { PIE_BASE } else { 0 };
    let end = map_image(&mut mm, &info, &inode, bias)?;
    mm.brk_start = page_up(end).ok_or(Errno::ENOEXEC)?;
    mm.brk = mm.brk_start;
    mm.exe = crate::fs::vfs::path_of(&inode);
    mm.exe_file = Some(exe_file);
    mm.cmdline = argv.iter().flat_map(|a| a.iter().copied().chain(core::iter::once(0))).collect();
    let (entry, base) = match &info.interp {
        Some(interp) => {
            let ipath = core::str::from_utf8(interp).map_err(|_| Errno::ENOEXEC)?;
            let iinode = executable(cwd, ipath).map_err(|e| if e == Errno::EACCES { Errno::ENOEXEC } else { e })?;
            let ibytes = head(&iinode)?;
            let iinfo = parse(&iinode, &ibytes)?;
            let (lo, hi) = iinfo.span();
            let ibase = mm.free_range(page_up(hi - lo).ok_or(Errno::ENOEXEC)?)? - (lo & !(PAGE - 1));
            map_image(&mut mm, &iinfo, &iinode, ibase)?;
            (iinfo.entry + ibase, ibase)
        }
        None => (info.entry + bias, 0),
    };
    let phdr = info.phdr_vaddr().map_or(0, |v| v + bias);
    let auxv: Vec<(u64, u64)> = alloc::vec![
        (AT_HWCAP, u64::from(crate::arch::cpuid::leaf1_edx())),
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
    // The stack VMA (Linux's `setup_arg_pages`): the arguments' pages and STACK_EXPAND below
    // them, or RLIMIT_STACK's worth if that is less; it grows down on faults below it.
    let args = st.sp & !(PAGE - 1);
    let rlim = crate::process::thread_of(&crate::sched::current())
        .map_or(STACK_SIZE, |t| t.process.rlimits.lock_uninterruptible()[super::mm::RLIMIT_STACK].0)
        & !(PAGE - 1);
    let base = if STACK_TOP - args + STACK_EXPAND > rlim { STACK_TOP.saturating_sub(rlim) } else { args - STACK_EXPAND };
    mm.insert(Vma { grows_down: true, ..Vma::new(base.min(args), STACK_TOP, Prot::RW, Backing::Anonymous, false) });
    // The stack VMA is fresh and writable: only a page that cannot be had fails the copy.
    mm.write(st.sp, &st.bytes).map_err(|_| Errno::ENOMEM)?;
    Ok(Loaded { mm, entry, sp: st.sp })
}
