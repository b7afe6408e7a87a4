//! File system calls (Linux `fs/read_write.c`, `fs/open.c`, `fs/namei.c`, `fs/stat.c`,
//! `fs/readdir.c`, `fs/fcntl.c`, `fs/pipe.c`, `fs/select.c`), over the VFS (`crate::fs`).
//! Data moves between user memory and the file through a kernel buffer of at most [`CHUNK`]
//! bytes, so no page fault happens under a file's lock.

use super::{ok, Outcome};
use crate::fs::file::{
    self, FdTable, Kind, OpenFile, Written, O_ACCMODE, O_CLOEXEC, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_TRUNC, SETFL_MASK,
};
use crate::fs::vfs::{self, Content, FileData, Inode, PATH_MAX, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG};
use crate::process::Process;
use crate::sched::wait::MutexGuard;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// Bytes moved per step between user memory and a file.
const CHUNK: usize = 65536;
/// Linux's `MAX_RW_COUNT`: one call moves at most this much.
const MAX_RW: u64 = 0x7fff_f000;
/// `IOV_MAX`.
const IOV_MAX: u64 = 1024;
const AT_FDCWD: i64 = -100;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_REMOVEDIR: u64 = 0x200;
const AT_EMPTY_PATH: u64 = 0x1000;
const AT_EACCESS: u64 = 0x200;

fn files(proc: &Process) -> MutexGuard<'_, FdTable> {
    proc.files.lock_uninterruptible()
}

fn fd_file(proc: &Process, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    files(proc).get(fd)
}

/// A path argument: EFAULT if unreadable, ENAMETOOLONG past `PATH_MAX`, not UTF-8 is EINVAL
/// (Cadence's names are strings), empty is ENOENT unless `empty_ok`.
fn user_path(proc: &Process, addr: u64, empty_ok: bool) -> Result<String, Errno> {
    let bytes = proc.mm.lock_uninterruptible().read_cstr(addr, PATH_MAX - 1)?;
    if bytes.is_empty() && !empty_ok {
        return Err(Errno::ENOENT);
    }
    String::from_utf8(bytes).map_err(|_| Errno::EINVAL)
}

/// Where a relative `path` starts: the directory `dirfd` names, or the working directory.
fn base(proc: &Process, dirfd: u64, path: &str) -> Result<Arc<Inode>, Errno> {
    // Linux takes `int dirfd`: only the low 32 bits count (glibc leaves the rest undefined).
    if path.starts_with('/') || dirfd as i32 == AT_FDCWD as i32 {
        return Ok(proc.cwd.lock_uninterruptible().clone());
    }
    let f = fd_file(proc, dirfd)?;
    match f.inode() {
        Some(i) if i.is_dir() => Ok(i.clone()),
        _ => Err(Errno::ENOTDIR),
    }
}

fn copy_out(proc: &Process, addr: u64, data: &[u8]) -> Result<(), Errno> {
    proc.mm.lock_uninterruptible().write(addr, data)
}

fn copy_in(proc: &Process, addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
    let mut buf = alloc::vec![0u8; len];
    proc.mm.lock_uninterruptible().read(addr, &mut buf)?;
    Ok(buf)
}

/// Reads into user memory at `buf`, at most `len` bytes, with `op` filling a kernel buffer.
fn read_into(proc: &Process, buf: u64, len: u64, op: impl FnOnce(&mut [u8]) -> Result<usize, Errno>) -> Result<u64, Errno> {
    let len = len.min(MAX_RW).min(CHUNK as u64) as usize;
    // A bad buffer is EFAULT before anything is consumed (Linux checks `access_ok` first).
    if len > 0 {
        let mut probe = [0u8; 1];
        proc.mm.lock_uninterruptible().read(buf, &mut probe)?;
    }
    let mut kbuf = alloc::vec![0u8; len];
    let n = op(&mut kbuf)?;
    copy_out(proc, buf, &kbuf[..n])?;
    Ok(n as u64)
}

/// `read(fd, buf, count)`.
pub fn read(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    ok(read_into(proc, a[1], a[2], |b| file::read(&f, b))?)
}

/// `pread64(fd, buf, count, offset)`.
pub fn pread64(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    ok(read_into(proc, a[1], a[2], |b| file::pread(&f, b, a[3]))?)
}

/// Writes user memory `[buf, buf + len)` to `f`; a broken pipe sends SIGPIPE and is EPIPE.
fn write_from(proc: &Process, f: &OpenFile, buf: u64, len: u64) -> Result<u64, Errno> {
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    let len = len.min(MAX_RW);
    let mut done = 0u64;
    while done < len || len == 0 {
        let n = (len - done).min(CHUNK as u64) as usize;
        let data = match copy_in(proc, buf + done, n) {
            Ok(d) => d,
            Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
        };
        match file::write(f, &data) {
            Ok(Written::Bytes(w)) => {
                done += w as u64;
                if w < n || len == 0 {
                    break;
                }
            }
            Ok(Written::BrokenPipe) => {
                if done > 0 {
                    break;
                }
                crate::process::signal_self(crate::process::SIGPIPE);
                return Err(Errno::EPIPE);
            }
            Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
        }
    }
    Ok(done)
}

/// `write(fd, buf, count)`.
pub fn write(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    ok(write_from(proc, &f, a[1], a[2])?)
}

/// `pwrite64(fd, buf, count, offset)`.
pub fn pwrite64(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let n = a[2].min(CHUNK as u64) as usize;
    let data = copy_in(proc, a[1], n)?;
    ok(file::pwrite(&f, &data, a[3])? as u64)
}

/// The (base, len) pairs of an iovec array.
fn iovecs(proc: &Process, addr: u64, count: u64) -> Result<Vec<(u64, u64)>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let raw = copy_in(proc, addr, count as usize * 16)?;
    let mut total = 0u64;
    let mut out = Vec::with_capacity(count as usize);
    for v in raw.chunks(16) {
        let base = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        let len = u64::from_le_bytes(v[8..].try_into().expect("8 bytes"));
        total = total.checked_add(len).filter(|&t| t <= i64::MAX as u64).ok_or(Errno::EINVAL)?;
        out.push((base, len));
    }
    Ok(out)
}

/// `writev(fd, iov, iovcnt)`.
pub fn writev(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    let mut total = 0;
    for (base, len) in iovecs(proc, a[1], a[2])? {
        if len == 0 {
            continue;
        }
        match write_from(proc, &f, base, len) {
            Ok(n) => {
                total += n;
                if n < len {
                    break;
                }
            }
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        }
    }
    ok(total)
}

/// `readv(fd, iov, iovcnt)`.
pub fn readv(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    let mut total = 0;
    for (base, len) in iovecs(proc, a[1], a[2])? {
        if len == 0 {
            continue;
        }
        match read_into(proc, base, len, |b| file::read(&f, b)) {
            Ok(n) => {
                total += n;
                if n < len.min(CHUNK as u64) {
                    break;
                }
            }
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        }
    }
    ok(total)
}

/// `close(fd)`.
pub fn close(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let entry = files(proc).remove(a[0])?;
    drop(entry);
    ok(0)
}

/// Opens `path` from `dir` as `open(2)` does.
fn open_path(proc: &Process, dir: &Arc<Inode>, path: &str, flags: u32, mode: u32) -> Result<Arc<OpenFile>, Errno> {
    let follow = flags & O_NOFOLLOW == 0;
    let inode = match vfs::lookup(dir, path, follow) {
        Ok(i) => {
            if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL {
                return Err(Errno::EEXIST);
            }
            i
        }
        Err(Errno::ENOENT) if flags & O_CREAT != 0 => {
            let (parent, name) = vfs::parent_of(dir, path)?;
            if path.ends_with('/') {
                return Err(Errno::EISDIR);
            }
            let perm = mode & 0o7777 & !proc.umask.load(Ordering::Relaxed);
            match vfs::create(&parent, name, S_IFREG | perm, Content::File(FileData::Owned(Vec::new()))) {
                Ok(i) => i,
                Err(Errno::EEXIST) if flags & O_EXCL == 0 => vfs::child(&parent, name)?,
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let kind = file::open_kind(&inode, flags)?;
    if flags & O_TRUNC != 0 && inode.kind() == S_IFREG && flags & O_ACCMODE != 0 {
        inode.truncate(0)?;
    }
    Ok(OpenFile::new(kind, flags))
}

/// `openat(dirfd, path, flags, mode)`.
pub fn openat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let flags = a[2] as u32;
    let dir = base(proc, a[0], &path)?;
    let f = open_path(proc, &dir, &path, flags, a[3] as u32)?;
    ok(files(proc).install(f, flags & O_CLOEXEC != 0)?)
}

/// `open(path, flags, mode)`.
pub fn open(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    openat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], a[2], 0, 0])
}

/// `creat(path, mode)`.
pub fn creat(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    openat(proc, ctx, [AT_FDCWD as u64, a[0], u64::from(O_CREAT | 1 | O_TRUNC), a[1], 0, 0])
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = f.pos.lock_uninterruptible();
    let size = f.inode().map_or(0, |i| i.size()) as i64;
    let base = match a[2] {
        0 => 0,
        1 => *pos as i64,
        2 => size,
        _ => return Err(Errno::EINVAL),
    };
    let new = base.checked_add(a[1] as i64).filter(|&p| p >= 0).ok_or(Errno::EINVAL)?;
    *pos = new as u64;
    ok(new as u64)
}

/// `dup(fd)`.
pub fn dup(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut t = files(proc);
    let f = t.get(a[0])?;
    ok(t.install(f, false)?)
}

fn dup_to(proc: &Process, old: u64, new: u64, cloexec: bool) -> Result<u64, Errno> {
    let replaced = {
        let mut t = files(proc);
        let f = t.get(old)?;
        t.install_at(new, f, cloexec)?
    };
    drop(replaced);
    Ok(new)
}

/// `dup2(old, new)`: the same fd is returned as is (after checking it is open).
pub fn dup2(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] == a[1] {
        fd_file(proc, a[0])?;
        return ok(a[1]);
    }
    ok(dup_to(proc, a[0], a[1], false)?)
}

/// `dup3(old, new, flags)`: EINVAL for the same fd or flags other than O_CLOEXEC.
pub fn dup3(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !u64::from(O_CLOEXEC) != 0 || a[0] == a[1] {
        return Err(Errno::EINVAL);
    }
    ok(dup_to(proc, a[0], a[1], a[2] != 0)?)
}

/// `fcntl(fd, cmd, arg)`: F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL.
pub fn fcntl(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
    let mut t = files(proc);
    let f = t.get(a[0])?;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let min = usize::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            ok(t.install_from(min, f, a[1] == F_DUPFD_CLOEXEC)?)
        }
        F_GETFD => ok(u64::from(t.entry_mut(a[0])?.cloexec)),
        F_SETFD => {
            t.entry_mut(a[0])?.cloexec = a[2] & 1 != 0;
            ok(0)
        }
        F_GETFL => ok(u64::from(f.flags.load(Ordering::Relaxed))),
        F_SETFL => {
            let keep = f.flags.load(Ordering::Relaxed) & !SETFL_MASK;
            f.flags.store(keep | (a[2] as u32 & SETFL_MASK), Ordering::Relaxed);
            ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `struct stat` (x86_64, 144 bytes) of an inode, or of a pipe end.
fn stat_bytes(inode: Option<&Arc<Inode>>, pipe_id: u64) -> [u8; 144] {
    let mut st = [0u8; 144];
    let mut put = |at: usize, v: u64, n: usize| st[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(0, 1, 8); // st_dev: the ramfs
    match inode {
        Some(i) => {
            let mode = i.mode.load(Ordering::Relaxed);
            let size = i.size();
            put(8, i.ino, 8);
            put(16, u64::from(i.nlink.load(Ordering::Relaxed)), 8);
            put(24, u64::from(mode), 4);
            if mode & S_IFMT == S_IFCHR {
                if let Content::Device(d) = &*i.lock() {
                    put(40, d.rdev(), 8);
                }
            }
            put(48, size, 8);
            put(56, 4096, 8);
            put(64, size.div_ceil(512), 8);
            let t = i.mtime_ns.load(Ordering::Relaxed);
            for at in [72, 88, 104] {
                put(at, t / 1_000_000_000, 8);
                put(at + 8, t % 1_000_000_000, 8);
            }
        }
        None => {
            put(0, 12, 8); // pipefs
            put(8, pipe_id, 8);
            put(16, 1, 8);
            put(24, u64::from(S_IFIFO | 0o600), 4);
            put(56, 4096, 8);
        }
    }
    st
}

fn file_stat(f: &OpenFile) -> [u8; 144] {
    match &f.kind {
        Kind::Pipe(p) => stat_bytes(None, p.id()),
        Kind::Inode(i) | Kind::Device(_, i) => stat_bytes(Some(i), 0),
    }
}

/// `fstat(fd, statbuf)`.
pub fn fstat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    copy_out(proc, a[1], &file_stat(&f))?;
    ok(0)
}

/// `newfstatat(dirfd, path, statbuf, flags)`.
pub fn newfstatat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = user_path(proc, a[1], a[3] & AT_EMPTY_PATH != 0)?;
    let st = if path.is_empty() {
        if a[0] as i32 == AT_FDCWD as i32 {
            stat_bytes(Some(&proc.cwd.lock_uninterruptible().clone()), 0)
        } else {
            file_stat(&*fd_file(proc, a[0])?)
        }
    } else {
        let dir = base(proc, a[0], &path)?;
        let inode = vfs::lookup(&dir, &path, a[3] & AT_SYMLINK_NOFOLLOW == 0)?;
        stat_bytes(Some(&inode), 0)
    };
    copy_out(proc, a[2], &st)?;
    ok(0)
}

/// `stat(path, statbuf)`.
pub fn stat(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    newfstatat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `lstat(path, statbuf)`.
pub fn lstat(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    newfstatat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], AT_SYMLINK_NOFOLLOW, 0, 0])
}

/// `getdents64(fd, dirp, count)`: entries from the directory's offset (an index) on.
pub fn getdents64(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    let dir = match &f.kind {
        Kind::Inode(i) if i.is_dir() => i.clone(),
        Kind::Inode(_) | Kind::Device(_, _) | Kind::Pipe(_) => return Err(Errno::ENOTDIR),
    };
    let entries = vfs::entries(&dir)?;
    let mut pos = f.pos.lock_uninterruptible();
    let cap = a[2].min(CHUNK as u64) as usize;
    let mut out = Vec::new();
    let mut i = *pos as usize;
    while i < entries.len() {
        let (ino, kind, name) = &entries[i];
        let reclen = (19 + name.len() + 1).next_multiple_of(8);
        if out.len() + reclen > cap {
            break;
        }
        let dtype: u8 = match *kind {
            S_IFDIR => 4,
            S_IFREG => 8,
            S_IFLNK => 10,
            S_IFCHR => 2,
            S_IFIFO => 1,
            _ => 0,
        };
        out.extend_from_slice(&ino.to_le_bytes());
        out.extend_from_slice(&((i + 1) as u64).to_le_bytes());
        out.extend_from_slice(&(reclen as u16).to_le_bytes());
        out.push(dtype);
        out.extend_from_slice(name.as_bytes());
        out.resize(out.len() + reclen - 19 - name.len(), 0);
        i += 1;
    }
    if out.is_empty() && i < entries.len() {
        return Err(Errno::EINVAL);
    }
    copy_out(proc, a[1], &out)?;
    *pos = i as u64;
    ok(out.len() as u64)
}

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let (parent, name) = vfs::parent_of(&dir, &path)?;
    let perm = a[2] as u32 & 0o7777 & !proc.umask.load(Ordering::Relaxed);
    vfs::create(&parent, name, S_IFDIR | perm, Content::Dir(Default::default()))?;
    ok(0)
}

/// `mkdir(path, mode)`.
pub fn mkdir(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    mkdirat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `unlinkat(dirfd, path, flags)`.
pub fn unlinkat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let (parent, name) = vfs::parent_of(&dir, &path)?;
    if a[2] & AT_REMOVEDIR == 0 && path.ends_with('/') {
        let node = vfs::child(&parent, name)?;
        return Err(if node.is_dir() { Errno::EISDIR } else { Errno::ENOTDIR });
    }
    vfs::remove(&parent, name, a[2] & AT_REMOVEDIR != 0)?;
    ok(0)
}

/// `unlink(path)`.
pub fn unlink(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    unlinkat(proc, ctx, [AT_FDCWD as u64, a[0], 0, 0, 0, 0])
}

/// `rmdir(path)`.
pub fn rmdir(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    unlinkat(proc, ctx, [AT_FDCWD as u64, a[0], AT_REMOVEDIR, 0, 0, 0])
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)`: flags must be 0 (no RENAME_NOREPLACE
/// or RENAME_EXCHANGE yet: EINVAL).
pub fn renameat2(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[4] != 0 {
        return Err(Errno::EINVAL);
    }
    let (old, new) = (user_path(proc, a[1], false)?, user_path(proc, a[3], false)?);
    let (od, nd) = (base(proc, a[0], &old)?, base(proc, a[2], &new)?);
    let (op, on) = vfs::parent_of(&od, &old)?;
    let (np, nn) = vfs::parent_of(&nd, &new)?;
    vfs::rename(&op, on, &np, nn)?;
    ok(0)
}

/// `rename(old, new)`.
pub fn rename(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    renameat2(proc, ctx, [AT_FDCWD as u64, a[0], AT_FDCWD as u64, a[1], 0, 0])
}

/// `renameat(olddirfd, old, newdirfd, new)`.
pub fn renameat(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    renameat2(proc, ctx, [a[0], a[1], a[2], a[3], 0, 0])
}

/// `symlinkat(target, newdirfd, linkpath)`.
pub fn symlinkat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let target = user_path(proc, a[0], false)?;
    let path = user_path(proc, a[2], false)?;
    let dir = base(proc, a[1], &path)?;
    let (parent, name) = vfs::parent_of(&dir, &path)?;
    vfs::create(&parent, name, S_IFLNK | 0o777, Content::Symlink(target))?;
    ok(0)
}

/// `symlink(target, linkpath)`.
pub fn symlink(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    symlinkat(proc, ctx, [a[0], AT_FDCWD as u64, a[1], 0, 0, 0])
}

/// `readlinkat(dirfd, path, buf, size)`: EINVAL for a non-link or a size ≤ 0; the target is
/// truncated to `size`, unterminated, as Linux.
pub fn readlinkat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[3] as i64 <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let inode = vfs::lookup(&dir, &path, false)?;
    let target = match &*inode.lock() {
        Content::Symlink(t) => t.clone(),
        _ => return Err(Errno::EINVAL),
    };
    let n = target.len().min(a[3] as usize);
    copy_out(proc, a[2], &target.as_bytes()[..n])?;
    ok(n as u64)
}

/// `readlink(path, buf, size)`.
pub fn readlink(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    readlinkat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], a[2], 0, 0])
}

/// `getcwd(buf, size)`: the length with its NUL; ERANGE if it does not fit.
pub fn getcwd(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut path = vfs::path_of(&proc.cwd.lock_uninterruptible().clone()).into_bytes();
    path.push(0);
    if (a[1] as usize) < path.len() {
        return Err(Errno::ERANGE);
    }
    copy_out(proc, a[0], &path)?;
    ok(path.len() as u64)
}

/// `chdir(path)`.
pub fn chdir(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    let target = vfs::lookup(&dir, &path, true)?;
    if !target.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    *proc.cwd.lock_uninterruptible() = target;
    ok(0)
}

/// `fchdir(fd)`.
pub fn fchdir(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    match f.inode() {
        Some(i) if i.is_dir() => {
            *proc.cwd.lock_uninterruptible() = i.clone();
            ok(0)
        }
        _ => Err(Errno::ENOTDIR),
    }
}

/// `faccessat2(dirfd, path, mode, flags)`: root may read and write anything, and execute
/// what has an execute bit (or is a directory).
pub fn faccessat2(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !7 != 0 || a[3] & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = user_path(proc, a[1], a[3] & AT_EMPTY_PATH != 0)?;
    let dir = base(proc, a[0], &path)?;
    let inode = if path.is_empty() { dir } else { vfs::lookup(&dir, &path, a[3] & AT_SYMLINK_NOFOLLOW == 0)? };
    if a[2] & 1 != 0 && !inode.is_dir() && inode.mode.load(Ordering::Relaxed) & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    ok(0)
}

/// `faccessat(dirfd, path, mode)`.
pub fn faccessat(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    faccessat2(proc, ctx, [a[0], a[1], a[2], 0, 0, 0])
}

/// `access(path, mode)`.
pub fn access(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    faccessat2(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `umask(mask)`: the old mask.
pub fn umask(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(proc.umask.swap(a[0] as u32 & 0o777, Ordering::Relaxed)))
}

/// `ftruncate(fd, length)`.
pub fn ftruncate(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    match f.inode() {
        Some(i) if i.kind() == S_IFREG && f.writable() => {
            i.truncate(a[1])?;
            ok(0)
        }
        Some(i) if i.kind() == S_IFREG => Err(Errno::EINVAL),
        _ => Err(Errno::EINVAL),
    }
}

/// `truncate(path, length)`.
pub fn truncate(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    let inode = vfs::lookup(&dir, &path, true)?;
    if inode.is_dir() {
        return Err(Errno::EISDIR);
    }
    inode.truncate(a[1])?;
    ok(0)
}

/// `fchmodat(dirfd, path, mode)`, `chmod`, `fchmod`: the permission bits change.
pub fn fchmodat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let inode = vfs::lookup(&dir, &path, true)?;
    let old = inode.mode.load(Ordering::Relaxed);
    inode.mode.store((old & S_IFMT) | (a[2] as u32 & 0o7777), Ordering::Relaxed);
    ok(0)
}

/// `chmod(path, mode)`.
pub fn chmod(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    fchmodat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `fchmod(fd, mode)`.
pub fn fchmod(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    let inode = f.inode().ok_or(Errno::EINVAL)?;
    let old = inode.mode.load(Ordering::Relaxed);
    inode.mode.store((old & S_IFMT) | (a[1] as u32 & 0o7777), Ordering::Relaxed);
    ok(0)
}

/// `fchownat`, `chown`, `lchown`, `fchown`: everything is root's; the path must exist.
pub fn chown(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    vfs::lookup(&dir, &path, true)?;
    ok(0)
}

/// `fchown(fd, ...)`.
pub fn fchown(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    fd_file(proc, a[0])?;
    ok(0)
}

/// `utimensat(dirfd, path, times, flags)`: the file must exist; times set to now.
pub fn utimensat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let inode = if a[1] == 0 {
        fd_file(proc, a[0])?.inode().cloned().ok_or(Errno::EINVAL)?
    } else {
        let path = user_path(proc, a[1], false)?;
        let dir = base(proc, a[0], &path)?;
        vfs::lookup(&dir, &path, a[3] & AT_SYMLINK_NOFOLLOW == 0)?
    };
    inode.mtime_ns.store(crate::time::uptime_ns(), Ordering::Relaxed);
    ok(0)
}

/// `pipe2(fds, flags)`: flags O_CLOEXEC and O_NONBLOCK (else EINVAL).
pub fn pipe2(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] & !u64::from(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let flags = a[1] as u32;
    // A bad pointer is EFAULT before any fd is taken.
    copy_out(proc, a[0], &[0u8; 8])?;
    let (r, w) = crate::fs::pipe::new()?;
    let (rf, wf) = (OpenFile::new(Kind::Pipe(r), flags & O_NONBLOCK), OpenFile::new(Kind::Pipe(w), 1 | (flags & O_NONBLOCK)));
    let cloexec = flags & O_CLOEXEC != 0;
    let (rfd, wfd) = {
        let mut t = files(proc);
        let rfd = t.install(rf, cloexec)?;
        match t.install(wf, cloexec) {
            Ok(wfd) => (rfd, wfd),
            Err(e) => {
                let _ = t.remove(rfd);
                return Err(e);
            }
        }
    };
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&(rfd as u32).to_le_bytes());
    out[4..].copy_from_slice(&(wfd as u32).to_le_bytes());
    copy_out(proc, a[0], &out)?;
    ok(0)
}

/// `pipe(fds)`.
pub fn pipe(proc: &Process, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    pipe2(proc, ctx, [a[0], 0, 0, 0, 0, 0])
}

const POLLIN: u16 = 0x1;
const POLLOUT: u16 = 0x4;
const POLLERR: u16 = 0x8;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;
const POLLRDNORM: u16 = 0x40;
const POLLWRNORM: u16 = 0x100;

/// The events of `fd` (POLLNVAL for a closed one).
fn revents(proc: &Process, fd: i32, events: u16) -> u16 {
    if fd < 0 {
        return 0;
    }
    let Ok(f) = fd_file(proc, fd as u64) else { return POLLNVAL };
    let (r, w, hup, err) = file::poll(&f);
    let mut m = 0;
    if r {
        m |= POLLIN | POLLRDNORM;
    }
    if w {
        m |= POLLOUT | POLLWRNORM;
    }
    (m & (events | POLLERR | POLLHUP)) | if hup { POLLHUP } else { 0 } | if err { POLLERR } else { 0 }
}

/// Waits until `ready()` finds something or `deadline` (None: forever) passes.
fn wait_ready(mut ready: impl FnMut() -> bool, deadline: Option<u64>) -> Result<bool, Errno> {
    let q = &crate::sched::wait::POLL;
    let r = match deadline {
        Some(d) => q.wait_until_interruptible_deadline(&mut ready, d),
        None => q.wait_until_interruptible(&mut ready).map(|()| true),
    };
    r.map_err(|_| Errno::EINTR)
}

fn do_poll(proc: &Process, fds_addr: u64, nfds: u64, deadline: Option<u64>) -> Result<u64, Errno> {
    if nfds > file::NOFILE as u64 {
        return Err(Errno::EINVAL);
    }
    let mut raw = copy_in(proc, fds_addr, nfds as usize * 8)?;
    let mut count = 0;
    let scan = |raw: &mut [u8]| -> u64 {
        let mut n = 0;
        for e in raw.chunks_mut(8) {
            let fd = i32::from_le_bytes(e[..4].try_into().expect("4"));
            let events = u16::from_le_bytes(e[4..6].try_into().expect("2"));
            let re = revents(proc, fd, events | POLLERR | POLLHUP) & (events | POLLERR | POLLHUP | POLLNVAL);
            e[6..8].copy_from_slice(&re.to_le_bytes());
            if re != 0 {
                n += 1;
            }
        }
        n
    };
    count = scan(&mut raw).max(count);
    if count == 0 && deadline != Some(0) {
        let mut probe = raw.clone();
        wait_ready(|| scan(&mut probe) > 0, deadline)?;
        count = scan(&mut raw);
    }
    copy_out(proc, fds_addr, &raw)?;
    Ok(count)
}

/// `poll(fds, nfds, timeout_ms)`.
pub fn poll(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = a[2] as i32;
    let deadline = (t >= 0).then(|| crate::time::uptime_ns().saturating_add(t as u64 * 1_000_000));
    ok(do_poll(proc, a[0], a[1], deadline.map(|d| if t == 0 { 0 } else { d }))?)
}

fn timespec_deadline(proc: &Process, addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let b = copy_in(proc, addr, 16)?;
    let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
    let nsec = i64::from_le_bytes(b[8..].try_into().expect("8"));
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    if sec == 0 && nsec == 0 {
        return Ok(Some(0));
    }
    Ok(Some(crate::time::uptime_ns().saturating_add((sec as u64).saturating_mul(1_000_000_000)).saturating_add(nsec as u64)))
}

/// `ppoll(fds, nfds, tmo_p, sigmask, sigsetsize)`: the mask is not applied (no handlers yet).
pub fn ppoll(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = timespec_deadline(proc, a[2])?;
    ok(do_poll(proc, a[0], a[1], deadline)?)
}

/// `select(nfds, readfds, writefds, exceptfds, timeout)` over the same readiness as `poll`.
fn do_select(proc: &Process, a: [u64; 6], deadline: Option<u64>) -> Result<u64, Errno> {
    let nfds = a[0] as i32;
    if !(0..=file::NOFILE as i32).contains(&nfds) {
        return Err(Errno::EINVAL);
    }
    let bytes = (nfds as usize).div_ceil(64) * 8;
    let load = |addr: u64| -> Result<Option<Vec<u8>>, Errno> {
        if addr == 0 {
            Ok(None)
        } else {
            copy_in(proc, addr, bytes).map(Some)
        }
    };
    let (r_in, w_in, e_in) = (load(a[1])?, load(a[2])?, load(a[3])?);
    let set = |s: &Option<Vec<u8>>, fd: usize| s.as_ref().is_some_and(|v| v[fd / 8] & (1 << (fd % 8)) != 0);
    for fd in 0..nfds as usize {
        if (set(&r_in, fd) || set(&w_in, fd) || set(&e_in, fd)) && fd_file(proc, fd as u64).is_err() {
            return Err(Errno::EBADF);
        }
    }
    let scan = || -> (u64, Vec<u8>, Vec<u8>) {
        let (mut r, mut w) = (alloc::vec![0u8; bytes], alloc::vec![0u8; bytes]);
        let mut n = 0;
        for fd in 0..nfds as usize {
            let ev = revents(proc, fd as i32, POLLIN | POLLOUT);
            if set(&r_in, fd) && ev & (POLLIN | POLLHUP | POLLERR) != 0 {
                r[fd / 8] |= 1 << (fd % 8);
                n += 1;
            }
            if set(&w_in, fd) && ev & (POLLOUT | POLLERR) != 0 {
                w[fd / 8] |= 1 << (fd % 8);
                n += 1;
            }
        }
        (n, r, w)
    };
    let mut result = scan();
    if result.0 == 0 && deadline != Some(0) {
        wait_ready(|| scan().0 > 0, deadline)?;
        result = scan();
    }
    let (n, r, w) = result;
    if a[1] != 0 {
        copy_out(proc, a[1], &r)?;
    }
    if a[2] != 0 {
        copy_out(proc, a[2], &w)?;
    }
    if a[3] != 0 {
        copy_out(proc, a[3], &alloc::vec![0u8; bytes])?;
    }
    Ok(n)
}

/// `select(nfds, readfds, writefds, exceptfds, timeval)`.
pub fn select(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = if a[4] == 0 {
        None
    } else {
        let b = copy_in(proc, a[4], 16)?;
        let sec = i64::from_le_bytes(b[..8].try_into().expect("8"));
        let usec = i64::from_le_bytes(b[8..].try_into().expect("8"));
        if sec < 0 || usec < 0 {
            return Err(Errno::EINVAL);
        }
        let ns = (sec as u64).saturating_mul(1_000_000_000).saturating_add(usec as u64 * 1000);
        Some(if ns == 0 { 0 } else { crate::time::uptime_ns().saturating_add(ns) })
    };
    ok(do_select(proc, a, deadline)?)
}

/// `pselect6(nfds, readfds, writefds, exceptfds, timespec, sigmask)`.
pub fn pselect6(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = timespec_deadline(proc, a[4])?;
    ok(do_select(proc, a, deadline)?)
}

/// `ioctl(fd, request, arg)`: on the console, TCGETS / TCSETS* (a fixed termios, changes
/// accepted and kept nowhere yet), TIOCGWINSZ (80×24), TIOCGPGRP / TIOCSPGRP; FIONREAD on
/// pipes; ENOTTY for everything else (as for a file).
pub fn ioctl(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const TCGETS: u64 = 0x5401;
    const TCSETS: u64 = 0x5402;
    const TCSETSW: u64 = 0x5403;
    const TCSETSF: u64 = 0x5404;
    const TIOCGPGRP: u64 = 0x540f;
    const TIOCSPGRP: u64 = 0x5410;
    const TIOCGWINSZ: u64 = 0x5413;
    const TIOCSWINSZ: u64 = 0x5414;
    const FIONREAD: u64 = 0x541b;
    let f = fd_file(proc, a[0])?;
    let console = matches!(f.kind, Kind::Device(crate::fs::vfs::Device::Console, _));
    match (a[1], &f.kind) {
        (FIONREAD, Kind::Pipe(p)) => {
            copy_out(proc, a[2], &(p.available() as u32).to_le_bytes())?;
            ok(0)
        }
        (TCGETS, _) if console => {
            // c_iflag ICRNL|IXON, c_oflag OPOST|ONLCR, c_cflag B38400|CS8|CREAD|HUPCL,
            // c_lflag ISIG|ICANON|ECHO|ECHOE|ECHOK|ECHOCTL|ECHOKE|IEXTEN, line 0, c_cc as Linux.
            // The kernel's `struct termios` (36 bytes: four flag words, c_line, c_cc[19]).
            let mut t = [0u8; 36];
            t[0..4].copy_from_slice(&0x0500u32.to_le_bytes());
            t[4..8].copy_from_slice(&0x0005u32.to_le_bytes());
            t[8..12].copy_from_slice(&0x04bfu32.to_le_bytes());
            t[12..16].copy_from_slice(&0x8a3bu32.to_le_bytes());
            let cc: [u8; 19] = [3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0, 0, 0];
            t[17..36].copy_from_slice(&cc);
            copy_out(proc, a[2], &t)?;
            ok(0)
        }
        (TCSETS | TCSETSW | TCSETSF, _) if console => {
            copy_in(proc, a[2], 36)?;
            ok(0)
        }
        (TIOCGWINSZ, _) if console => {
            let mut w = [0u8; 8];
            w[0..2].copy_from_slice(&24u16.to_le_bytes());
            w[2..4].copy_from_slice(&80u16.to_le_bytes());
            copy_out(proc, a[2], &w)?;
            ok(0)
        }
        (TIOCSWINSZ, _) if console => {
            copy_in(proc, a[2], 8)?;
            ok(0)
        }
        (TIOCGPGRP, _) if console => {
            let pgid = crate::sched::current().process.pgid.load(Ordering::Relaxed);
            copy_out(proc, a[2], &pgid.to_le_bytes())?;
            ok(0)
        }
        (TIOCSPGRP, _) if console => {
            copy_in(proc, a[2], 4)?;
            ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// `sendfile(out_fd, in_fd, offset, count)`: through a kernel buffer.
pub fn sendfile(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (out, inp) = (fd_file(proc, a[0])?, fd_file(proc, a[1])?);
    if !inp.readable() || !out.writable() {
        return Err(Errno::EBADF);
    }
    let n = a[3].min(CHUNK as u64) as usize;
    let mut buf = alloc::vec![0u8; n];
    let got = if a[2] != 0 {
        let off = u64::from_le_bytes(copy_in(proc, a[2], 8)?.try_into().expect("8"));
        let got = file::pread(&inp, &mut buf, off)?;
        copy_out(proc, a[2], &(off + got as u64).to_le_bytes())?;
        got
    } else {
        file::read(&inp, &mut buf)?
    };
    match file::write(&out, &buf[..got])? {
        Written::Bytes(w) => ok(w as u64),
        Written::BrokenPipe => {
            crate::process::signal_self(crate::process::SIGPIPE);
            Err(Errno::EPIPE)
        }
    }
}
