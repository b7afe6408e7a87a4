//! File system calls (Linux `fs/read_write.c`, `fs/open.c`, `fs/namei.c`, `fs/stat.c`,
//! `fs/readdir.c`, `fs/fcntl.c`, `fs/pipe.c`, `fs/select.c`), over the VFS (`crate::fs`).
//! Data moves between user memory and the file through a kernel buffer of at most [`CHUNK`]
//! bytes, so no page fault happens under a file's lock.

use super::{ok, Outcome};
use crate::fs::file::{
    self, FdTable, Kind, OpenFile, Written, O_ACCMODE, O_CLOEXEC, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_TRUNC, SETFL_MASK,
};
use crate::fs::vfs::{self, Content, FileData, Inode, PATH_MAX, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG};
use crate::process::Thread;
use crate::sched::wait::Mutex;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// Bytes moved per step between user memory and a file.
pub(super) const CHUNK: usize = 65536;
/// Linux's `MAX_RW_COUNT`: one call moves at most this much.
pub(super) const MAX_RW: u64 = 0x7fff_f000;
/// `IOV_MAX` (Linux's `UIO_MAXIOV`).
pub(super) const IOV_MAX: u64 = 1024;
pub(super) const AT_FDCWD: i64 = -100;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_REMOVEDIR: u64 = 0x200;
const AT_EMPTY_PATH: u64 = 0x1000;
const AT_EACCESS: u64 = 0x200;

pub(super) fn files(proc: &Thread) -> Arc<Mutex<FdTable>> {
    proc.files()
}

pub(super) fn fd_file(proc: &Thread, fd: u64) -> Result<Arc<OpenFile>, Errno> {
    files(proc).lock_uninterruptible().get(fd)
}

/// A path argument: EFAULT if unreadable, ENAMETOOLONG past `PATH_MAX`, empty is ENOENT
/// unless `empty_ok`.
///
/// Cadence's names are strings: each byte of a sequence that is not UTF-8 becomes
/// [`vfs::UNREPRESENTABLE`] (NUL, which no name can hold), so the path keeps its length in
/// bytes (PATH_MAX, NAME_MAX), a lookup through such a name finds nothing (ENOENT, as Linux
/// for a name that does not exist, and none can), and creating one is EINVAL (`vfs::create`:
/// "the final component is invalid for the underlying filesystem", open(2)), never a file
/// under another name.
pub(super) fn user_path(proc: &Thread, addr: u64, empty_ok: bool) -> Result<String, Errno> {
    let bytes = proc.read_user_cstr(addr, PATH_MAX - 1)?;
    if bytes.is_empty() && !empty_ok {
        return Err(Errno::ENOENT);
    }
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let mut s = String::with_capacity(e.as_bytes().len());
            for chunk in e.as_bytes().utf8_chunks() {
                s.push_str(chunk.valid());
                s.extend(core::iter::repeat_n(vfs::UNREPRESENTABLE, chunk.invalid().len()));
            }
            Ok(s)
        }
    }
}

/// Where a relative `path` starts: the directory `dirfd` names, or the working directory.
pub(super) fn base(proc: &Thread, dirfd: u64, path: &str) -> Result<Arc<Inode>, Errno> {
    // Linux takes `int dirfd`: only the low 32 bits count (glibc leaves the rest undefined).
    if path.starts_with('/') || dirfd as i32 == AT_FDCWD as i32 {
        return Ok(proc.fs.cwd.lock_uninterruptible().clone());
    }
    let f = fd_file(proc, dirfd)?;
    match f.inode() {
        Some(i) if i.is_dir() => Ok(i.clone()),
        _ => Err(Errno::ENOTDIR),
    }
}

/// Linux's `access_ok(buf, len)` (6.1, x86-64): the whole range below `TASK_SIZE_MAX`, or
/// EFAULT before anything moves, whatever is mapped.
pub(super) fn access_ok(buf: u64, len: u64) -> Result<(), Errno> {
    use crate::mm::vm::TASK_SIZE;
    if len <= TASK_SIZE && buf <= TASK_SIZE - len {
        Ok(())
    } else {
        Err(Errno::EFAULT)
    }
}

/// `pread64` / `pwrite64`'s checks in `ksys_pread64` / `vfs_read`'s order: a negative offset
/// (EINVAL, before the fd), the fd (EBADF), a stream (ESPIPE), the access mode (EBADF), the
/// buffer (EFAULT), an offset plus count past `loff_t` (EINVAL, `rw_verify_area`).
fn positioned(proc: &Thread, a: [u64; 6], write: bool) -> Result<Arc<OpenFile>, Errno> {
    if (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let f = fd_file(proc, a[0])?;
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    if !(if write { f.writable() } else { f.readable() }) {
        return Err(Errno::EBADF);
    }
    access_ok(a[1], a[2])?;
    if a[3].checked_add(a[2]).is_none_or(|end| end > i64::MAX as u64) {
        return Err(Errno::EINVAL);
    }
    Ok(f)
}

/// Reads into user memory at `buf`, at most `len` bytes, with `op` filling a kernel buffer
/// (given the bytes already read, for an offset). A file whose reads never wait (`whole`: a
/// regular file, `/dev/zero`, the disk) is read in chunks of [`CHUNK`] until `len` or a short
/// chunk, so one call moves as much as Linux's (a 1 MiB `dd` block is one record); anything
/// else gets one chunk, as a reader that waited for the first bytes must not wait again.
pub(super) fn read_into(
    proc: &Thread,
    buf: u64,
    len: u64,
    whole: bool,
    mut op: impl FnMut(&mut [u8], u64) -> Result<usize, Errno>,
) -> Result<u64, Errno> {
    access_ok(buf, len)?;
    let len = len.min(MAX_RW);
    // A bad buffer is EFAULT before anything is consumed (Linux checks `access_ok` first).
    if len > 0 {
        let mut probe = [0u8; 1];
        proc.read_user(buf, &mut probe)?;
    }
    let mut small = [0u8; SMALL];
    let mut big = Vec::new();
    let kbuf = small_or_heap(&mut small, &mut big, len.min(CHUNK as u64) as usize);
    let mut done = 0u64;
    loop {
        let want = (len - done).min(CHUNK as u64) as usize;
        let n = match op(&mut kbuf[..want], done) {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        if let Err(e) = proc.write_user(buf + done, &kbuf[..n]) {
            return if done > 0 { Ok(done) } else { Err(e) };
        }
        done += n as u64;
        if !whole || n < want || done == len {
            break;
        }
    }
    Ok(done)
}

/// Reads and writes up to this many bytes copy through a buffer on the stack (a pipe's
/// ping-pong, a terminal's line) instead of one allocated per call.
const SMALL: usize = 256;

/// A buffer of `len` bytes: the first `len` of `small` if they fit, else `big` grown to `len`.
fn small_or_heap<'a>(small: &'a mut [u8; SMALL], big: &'a mut Vec<u8>, len: usize) -> &'a mut [u8] {
    if len <= SMALL {
        &mut small[..len]
    } else {
        big.resize(len, 0);
        &mut big[..len]
    }
}

/// Does a read of `f` return at once, whatever its size ([`read_into`]'s `whole`)?
pub(super) fn reads_whole(f: &OpenFile) -> bool {
    use crate::fs::vfs::Device;
    matches!(&f.kind, Kind::Inode(_) | Kind::Device(Device::Zero | Device::Vda, _))
}

/// `read(fd, buf, count)`.
pub fn read(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    ok(read_into(proc, a[1], a[2], reads_whole(&f), |b, _| file::read(&f, b))?)
}

/// `pread64(fd, buf, count, offset)`.
pub fn pread64(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = positioned(proc, a, false)?;
    ok(read_into(proc, a[1], a[2], reads_whole(&f), |b, done| file::pread(&f, b, a[3] + done))?)
}

/// Writes user memory `[buf, buf + len)` to `f`; a broken pipe sends SIGPIPE and is EPIPE.
fn write_from(proc: &Thread, f: &OpenFile, buf: u64, len: u64) -> Result<u64, Errno> {
    write_from_with(proc, f, buf, len, f.nonblock())
}

/// [`write_from`], non-blocking if `nonblock` (an AIO write with RWF_NOWAIT).
pub(super) fn write_from_with(proc: &Thread, f: &OpenFile, buf: u64, len: u64, nonblock: bool) -> Result<u64, Errno> {
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    access_ok(buf, len)?;
    let len = len.min(MAX_RW);
    let mut done = 0u64;
    let mut small = [0u8; SMALL];
    let mut big = Vec::new();
    while done < len || len == 0 {
        let n = (len - done).min(CHUNK as u64) as usize;
        let data = small_or_heap(&mut small, &mut big, n);
        if let Err(e) = proc.read_user(buf + done, data) {
            return if done > 0 { Ok(done) } else { Err(e) };
        }
        match file::write_with(f, data, nonblock) {
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
pub fn write(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    ok(write_from(proc, &f, a[1], a[2])?)
}

/// `pwrite64(fd, buf, count, offset)`: in chunks of [`CHUNK`] at the offset plus what was
/// written, until a short write; an error after some bytes returns their count.
pub fn pwrite64(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = positioned(proc, a, true)?;
    ok(pwrite_from(proc, &f, a[1], a[2], a[3])?)
}

/// Writes user memory `[buf, buf + len)` to `f` at `offset` ([`pwrite64`]'s steps).
pub(super) fn pwrite_from(proc: &Thread, f: &OpenFile, buf: u64, len: u64, offset: u64) -> Result<u64, Errno> {
    let len = len.min(MAX_RW);
    let mut done = 0u64;
    loop {
        let n = (len - done).min(CHUNK as u64) as usize;
        let r = proc.read_user_vec(buf + done, n).and_then(|data| file::pwrite(f, &data, offset + done));
        match r {
            Ok(w) => {
                done += w as u64;
                if w < n || done == len {
                    break;
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(done)
}

/// The (base, len) pairs of an iovec array.
fn iovecs(proc: &Thread, addr: u64, count: u64) -> Result<Vec<(u64, u64)>, Errno> {
    if count > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let raw = proc.read_user_vec(addr, count as usize * 16)?;
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
pub fn writev(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
pub fn readv(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    let mut total = 0;
    for (base, len) in iovecs(proc, a[1], a[2])? {
        if len == 0 {
            continue;
        }
        let whole = reads_whole(&f);
        match read_into(proc, base, len, whole, |b, _| file::read(&f, b)) {
            Ok(n) => {
                total += n;
                if n < if whole { len } else { len.min(CHUNK as u64) } {
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
pub fn close(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let entry = files(proc).lock_uninterruptible().remove(a[0])?;
    if let Kind::Mqueue(q) = &entry.file.kind {
        // Linux's `mqueue_flush_file`: the closing process's notification goes.
        q.flush(crate::sched::current().process.tgid);
    }
    drop(entry);
    ok(0)
}

/// Opens `path` from `dir` as `open(2)` does.
fn open_path(proc: &Thread, dir: &Arc<Inode>, path: &str, flags: u32, mode: u32) -> Result<Arc<OpenFile>, Errno> {
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
            let perm = mode & 0o7777 & !proc.fs.umask.load(Ordering::Relaxed);
            match vfs::create(&parent, name, S_IFREG | perm, Content::File(FileData::Owned(Vec::new()))) {
                Ok(i) => i,
                Err(Errno::EEXIST) if flags & O_EXCL == 0 => vfs::child(&parent, name)?,
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let kind = file::open_kind(&inode, flags)?;
    // Write access (ETXTBSY for a running program's file) before the truncation, as Linux.
    let file = OpenFile::opened(kind, flags)?;
    if flags & O_TRUNC != 0 && inode.kind() == S_IFREG && flags & O_ACCMODE != 0 {
        inode.truncate(0)?;
    }
    Ok(file)
}

/// `openat(dirfd, path, flags, mode)`.
pub fn openat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let flags = a[2] as u32;
    let dir = base(proc, a[0], &path)?;
    let f = open_path(proc, &dir, &path, flags, a[3] as u32)?;
    let limit = proc.nofile();
    ok(files(proc).lock_uninterruptible().install(f, flags & O_CLOEXEC != 0, limit)?)
}

/// `open(path, flags, mode)`.
pub fn open(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    openat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], a[2], 0, 0])
}

/// `creat(path, mode)`.
pub fn creat(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    openat(proc, ctx, [AT_FDCWD as u64, a[0], u64::from(O_CREAT | 1 | O_TRUNC), a[1], 0, 0])
}

/// `lseek(fd, offset, whence)`.
pub fn lseek(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    if matches!(f.kind, Kind::TimerFd(_) | Kind::SignalFd(_)) {
        // Linux's anonymous-inode files seek with `noop_llseek`: nothing moves, 0.
        return ok(0);
    }
    if !f.seekable() {
        return Err(Errno::ESPIPE);
    }
    let mut pos = f.pos.lock_uninterruptible();
    let disk = matches!(f.kind, Kind::Device(crate::fs::vfs::Device::Vda, _));
    let size = if disk { crate::fs::blockdev::size() } else { f.inode().map_or(0, |i| i.size()) } as i64;
    let base = match a[2] {
        0 => 0,
        1 => *pos as i64,
        2 => size,
        _ => return Err(Errno::EINVAL),
    };
    // A block device cannot seek past its end (Linux's `fixed_size_llseek`).
    let new = base.checked_add(a[1] as i64).filter(|&p| p >= 0 && (!disk || p <= size)).ok_or(Errno::EINVAL)?;
    *pos = new as u64;
    ok(new as u64)
}

/// `dup(fd)`.
pub fn dup(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let table = files(proc);
    let mut t = table.lock_uninterruptible();
    let f = t.get(a[0])?;
    ok(t.install(f, false, proc.nofile())?)
}

fn dup_to(proc: &Thread, old: u64, new: u64, cloexec: bool) -> Result<u64, Errno> {
    let replaced = {
        let table = files(proc);
        let mut t = table.lock_uninterruptible();
        let f = t.get(old)?;
        t.install_at(new, f, cloexec, proc.nofile())?
    };
    drop(replaced);
    Ok(new)
}

/// `dup2(old, new)`: the same fd is returned as is (after checking it is open).
pub fn dup2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] == a[1] {
        fd_file(proc, a[0])?;
        return ok(a[1]);
    }
    ok(dup_to(proc, a[0], a[1], false)?)
}

/// `dup3(old, new, flags)`: EINVAL for the same fd or flags other than O_CLOEXEC.
pub fn dup3(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[2] & !u64::from(O_CLOEXEC) != 0 || a[0] == a[1] {
        return Err(Errno::EINVAL);
    }
    ok(dup_to(proc, a[0], a[1], a[2] != 0)?)
}

/// `fcntl(fd, cmd, arg)`: F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL.
pub fn fcntl(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
    let table = files(proc);
    let mut t = table.lock_uninterruptible();
    let f = t.get(a[0])?;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let min = usize::try_from(a[2]).map_err(|_| Errno::EINVAL)?;
            ok(t.install_from(min, f, a[1] == F_DUPFD_CLOEXEC, proc.nofile())?)
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

/// What `stat` and `statx` report of a file (Linux's `struct kstat`): [`inode_kstat`] and
/// [`file_kstat`] are the one place a file's attributes are read; [`encode_stat`] and
/// [`encode_statx`] only lay them out.
struct Kstat {
    /// The file system's device (major, minor): 0:1 the ramfs and the trees on it, 0:12 pipes
    /// and anonymous inodes, 0:8 sockets (anonymous devices, as Linux numbers them).
    dev: (u32, u32),
    ino: u64,
    nlink: u32,
    mode: u32,
    /// A device file's (major, minor).
    rdev: (u32, u32),
    size: u64,
    blocks: u64,
    /// Access, change and modification time alike, ns (Cadence keeps one time per inode).
    time_ns: u64,
    /// The root of a mounted tree (`STATX_ATTR_MOUNT_ROOT`).
    mount_root: bool,
}

/// Bytes `st_blksize` / `stx_blksize` give: the page size, as Linux's ramfs and tmpfs.
const BLKSIZE: u64 = 4096;

/// An inode's attributes.
fn inode_kstat(i: &Arc<Inode>) -> Kstat {
    let mode = i.mode.load(Ordering::Relaxed);
    let size = i.size();
    let rdev = match mode & S_IFMT {
        S_IFCHR | S_IFBLK => match &*i.lock() {
            Content::Device(d) => d.major_minor(),
            _ => (0, 0),
        },
        _ => (0, 0),
    };
    let mount_root = Arc::ptr_eq(i, &vfs::root()) || crate::fs::mount::mountpoint_of(i).is_some();
    Kstat {
        dev: (0, 1),
        ino: i.ino,
        nlink: i.nlink.load(Ordering::Relaxed),
        mode,
        rdev,
        size,
        blocks: size.div_ceil(512),
        time_ns: i.mtime_ns.load(Ordering::Relaxed),
        mount_root,
    }
}

/// The attributes of an anonymous file (a pipe end, socket, timerfd, signalfd): no times, no
/// size.
fn anon_kstat(dev_minor: u32, ino: u64, mode: u32) -> Kstat {
    Kstat { dev: (0, dev_minor), ino, nlink: 1, mode, rdev: (0, 0), size: 0, blocks: 0, time_ns: 0, mount_root: false }
}

/// An open file's attributes.
fn file_kstat(f: &OpenFile) -> Kstat {
    match &f.kind {
        Kind::Pipe(p) => anon_kstat(12, p.id(), S_IFIFO | 0o600),
        // sockfs: S_IFSOCK, mode 0777 (as Linux's socketpair ends).
        Kind::Socket(sk) => anon_kstat(8, sk.id(), 0o140000 | 0o777),
        // An anonymous inode: mode 0600 and no type bits, as Linux's `anon_inode:[timerfd]`.
        Kind::TimerFd(t) => anon_kstat(12, t.id(), 0o600),
        Kind::SignalFd(s) => anon_kstat(12, s.id(), 0o600),
        Kind::PidFd(p) => anon_kstat(12, p.id(), 0o600),
        // A file of the mqueue filesystem (its own device; the size is Linux's FILENT_SIZE).
        Kind::Mqueue(q) => Kstat { size: 80, ..anon_kstat(18, q.id(), S_IFREG | 0o600) },
        Kind::Inode(i) | Kind::Device(_, i) | Kind::Gen(i, _, _) => inode_kstat(i),
    }
}

/// `struct stat` (x86_64, 144 bytes).
fn encode_stat(k: &Kstat) -> [u8; 144] {
    let mut st = [0u8; 144];
    let mut put = |at: usize, v: u64, n: usize| st[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(0, vfs::encode_dev(k.dev.0, k.dev.1), 8);
    put(8, k.ino, 8);
    put(16, u64::from(k.nlink), 8);
    put(24, u64::from(k.mode), 4);
    put(40, vfs::encode_dev(k.rdev.0, k.rdev.1), 8);
    put(48, k.size, 8);
    put(56, BLKSIZE, 8);
    put(64, k.blocks, 8);
    for at in [72, 88, 104] {
        put(at, k.time_ns / 1_000_000_000, 8);
        put(at + 8, k.time_ns % 1_000_000_000, 8);
    }
    st
}

/// `statx`'s `STATX_BASIC_STATS`: type, mode, nlink, uid, gid, atime, mtime, ctime, ino, size,
/// blocks (what Cadence fills; no birth time, no mount id).
const STATX_BASIC_STATS: u32 = 0x7ff;
/// `STATX__RESERVED`: a mask bit kept for extending `struct statx` (EINVAL).
const STATX_RESERVED: u32 = 0x8000_0000;
/// `STATX_ATTR_MOUNT_ROOT`.
const STATX_ATTR_MOUNT_ROOT: u64 = 0x2000;
/// The attributes Linux's VFS always says it knows (`stx_attributes_mask`): AUTOMOUNT,
/// MOUNT_ROOT and DAX.
const STATX_ATTRIBUTES_KNOWN: u64 = 0x1000 | STATX_ATTR_MOUNT_ROOT | 0x20_0000;

/// `struct statx` (256 bytes), Linux's `cp_statx`: every field Cadence has, whatever `mask`
/// asked (Linux fills the basic stats regardless), and `stx_mask` says which.
fn encode_statx(k: &Kstat) -> [u8; 256] {
    let mut sx = [0u8; 256];
    let mut put = |at: usize, v: u64, n: usize| sx[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(0, u64::from(STATX_BASIC_STATS), 4);
    put(4, BLKSIZE, 4);
    put(8, if k.mount_root { STATX_ATTR_MOUNT_ROOT } else { 0 }, 8);
    put(16, u64::from(k.nlink), 4);
    // uid and gid (20, 24): root's.
    put(28, u64::from(k.mode), 2);
    put(32, k.ino, 8);
    put(40, k.size, 8);
    put(48, k.blocks, 8);
    put(56, STATX_ATTRIBUTES_KNOWN, 8);
    // atime, ctime, mtime (`struct statx_timestamp`: i64 seconds, u32 ns); btime (80) unset.
    for at in [64, 96, 112] {
        put(at, k.time_ns / 1_000_000_000, 8);
        put(at + 8, k.time_ns % 1_000_000_000, 4);
    }
    put(128, u64::from(k.rdev.0), 4);
    put(132, u64::from(k.rdev.1), 4);
    put(136, u64::from(k.dev.0), 4);
    put(140, u64::from(k.dev.1), 4);
    sx
}

/// `fstat(fd, statbuf)`.
pub fn fstat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    proc.write_user(a[1], &encode_stat(&file_kstat(&f)))?;
    ok(0)
}

const AT_NO_AUTOMOUNT: u64 = 0x800;
/// `AT_STATX_SYNC_TYPE`: `AT_STATX_FORCE_SYNC` (0x2000) and `AT_STATX_DONT_SYNC` (0x4000),
/// meaningless for a local file system (both at once: EINVAL, from `statx`).
const AT_STATX_SYNC_TYPE: u64 = 0x6000;

/// The file `newfstatat` and `statx` describe (Linux's `vfs_statx`): `path` from `dirfd`, or
/// with AT_EMPTY_PATH and an empty path, `dirfd`'s file itself. EINVAL for flags other than
/// AT_SYMLINK_NOFOLLOW, AT_NO_AUTOMOUNT (Cadence automounts nothing), AT_EMPTY_PATH and the
/// sync type bits; then the path's errors (EFAULT, ENOENT for an empty path without
/// AT_EMPTY_PATH), then the walk's (EBADF, ENOTDIR, ...).
fn stat_at(proc: &Thread, dirfd: u64, path_addr: u64, flags: u64) -> Result<Kstat, Errno> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = user_path(proc, path_addr, flags & AT_EMPTY_PATH != 0)?;
    if path.is_empty() {
        return Ok(if dirfd as i32 == AT_FDCWD as i32 {
            inode_kstat(&proc.fs.cwd.lock_uninterruptible().clone())
        } else {
            file_kstat(&*fd_file(proc, dirfd)?)
        });
    }
    let dir = base(proc, dirfd, &path)?;
    Ok(inode_kstat(&vfs::lookup(&dir, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?))
}

/// `newfstatat(dirfd, path, statbuf, flags)`.
pub fn newfstatat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let k = stat_at(proc, a[0], a[1], a[3])?;
    proc.write_user(a[2], &encode_stat(&k))?;
    ok(0)
}

/// `statx(dirfd, path, flags, mask, statxbuf)`: Linux's `do_statx`: EINVAL for
/// `STATX__RESERVED` in the mask or both sync types, then as `newfstatat` (flags, path,
/// walk), then EFAULT for the buffer. Mask bits Cadence cannot fill (birth time, mount id,
/// direct-I/O alignment) are left out of `stx_mask`, as a file system without them does.
pub fn statx(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (flags, mask) = (a[2] as u32 as u64, a[3] as u32);
    if mask & STATX_RESERVED != 0 || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
        return Err(Errno::EINVAL);
    }
    let k = stat_at(proc, a[0], a[1], flags)?;
    proc.write_user(a[4], &encode_statx(&k))?;
    ok(0)
}

/// `stat(path, statbuf)`.
pub fn stat(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    newfstatat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `lstat(path, statbuf)`.
pub fn lstat(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    newfstatat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], AT_SYMLINK_NOFOLLOW, 0, 0])
}

/// `getdents64(fd, dirp, count)`: entries from the directory's offset (an index) on.
pub fn getdents64(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    let dir = match &f.kind {
        Kind::Inode(i) if i.is_dir() => i.clone(),
        Kind::Inode(_)
        | Kind::Device(_, _)
        | Kind::Pipe(_)
        | Kind::Socket(_)
        | Kind::Gen(..)
        | Kind::TimerFd(_)
        | Kind::SignalFd(_)
        | Kind::Mqueue(_)
        | Kind::PidFd(_) => return Err(Errno::ENOTDIR),
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
            S_IFBLK => 6,
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
    proc.write_user(a[1], &out)?;
    *pos = i as u64;
    ok(out.len() as u64)
}

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let (parent, name) = vfs::parent_of(&dir, &path)?;
    let perm = a[2] as u32 & 0o7777 & !proc.fs.umask.load(Ordering::Relaxed);
    vfs::create(&parent, name, S_IFDIR | perm, Content::Dir(Default::default()))?;
    ok(0)
}

/// `mkdir(path, mode)`.
pub fn mkdir(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    mkdirat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `unlinkat(dirfd, path, flags)`.
pub fn unlinkat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
pub fn unlink(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    unlinkat(proc, ctx, [AT_FDCWD as u64, a[0], 0, 0, 0, 0])
}

/// `rmdir(path)`.
pub fn rmdir(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    unlinkat(proc, ctx, [AT_FDCWD as u64, a[0], AT_REMOVEDIR, 0, 0, 0])
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)`: flags must be 0 (no RENAME_NOREPLACE
/// or RENAME_EXCHANGE yet: EINVAL).
pub fn renameat2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
pub fn rename(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    renameat2(proc, ctx, [AT_FDCWD as u64, a[0], AT_FDCWD as u64, a[1], 0, 0])
}

/// `renameat(olddirfd, old, newdirfd, new)`.
pub fn renameat(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    renameat2(proc, ctx, [a[0], a[1], a[2], a[3], 0, 0])
}

/// `symlinkat(target, newdirfd, linkpath)`.
pub fn symlinkat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let target = user_path(proc, a[0], false)?;
    let path = user_path(proc, a[2], false)?;
    let dir = base(proc, a[1], &path)?;
    let (parent, name) = vfs::parent_of(&dir, &path)?;
    vfs::create(&parent, name, S_IFLNK | 0o777, Content::Symlink(target))?;
    ok(0)
}

/// `symlink(target, linkpath)`.
pub fn symlink(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    symlinkat(proc, ctx, [a[0], AT_FDCWD as u64, a[1], 0, 0, 0])
}

/// `readlinkat(dirfd, path, buf, size)`: EINVAL for a non-link or a size ≤ 0; the target is
/// truncated to `size`, unterminated, as Linux.
pub fn readlinkat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
    proc.write_user(a[2], &target.as_bytes()[..n])?;
    ok(n as u64)
}

/// `readlink(path, buf, size)`.
pub fn readlink(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    readlinkat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], a[2], 0, 0])
}

/// `getcwd(buf, size)`: the length with its NUL; ERANGE if it does not fit.
pub fn getcwd(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let mut path = vfs::path_of(&proc.fs.cwd.lock_uninterruptible().clone()).into_bytes();
    path.push(0);
    if (a[1] as usize) < path.len() {
        return Err(Errno::ERANGE);
    }
    proc.write_user(a[0], &path)?;
    ok(path.len() as u64)
}

/// `chdir(path)`.
pub fn chdir(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    let target = vfs::lookup(&dir, &path, true)?;
    if !target.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    *proc.fs.cwd.lock_uninterruptible() = target;
    ok(0)
}

/// `fchdir(fd)`.
pub fn fchdir(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    match f.inode() {
        Some(i) if i.is_dir() => {
            *proc.fs.cwd.lock_uninterruptible() = i.clone();
            ok(0)
        }
        _ => Err(Errno::ENOTDIR),
    }
}

/// `faccessat2(dirfd, path, mode, flags)`: root may read and write anything, and execute
/// what has an execute bit (or is a directory).
pub fn faccessat2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
pub fn faccessat(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    faccessat2(proc, ctx, [a[0], a[1], a[2], 0, 0, 0])
}

/// `access(path, mode)`.
pub fn access(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    faccessat2(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `umask(mask)`: the old mask.
pub fn umask(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    ok(u64::from(proc.fs.umask.swap(a[0] as u32 & 0o777, Ordering::Relaxed)))
}

/// `ftruncate(fd, length)`.
pub fn ftruncate(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
pub fn truncate(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    if (a[1] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    let inode = vfs::lookup(&dir, &path, true)?;
    if inode.is_dir() {
        return Err(Errno::EISDIR);
    }
    // Linux's do_truncate holds write access: a running program's file is ETXTBSY.
    inode.get_write_access()?;
    let r = inode.truncate(a[1]);
    inode.put_write_access();
    r?;
    ok(0)
}

/// `fchmodat(dirfd, path, mode)`, `chmod`, `fchmod`: the permission bits change.
pub fn fchmodat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[1], false)?;
    let dir = base(proc, a[0], &path)?;
    let inode = vfs::lookup(&dir, &path, true)?;
    set_mode(&inode, a[2] as u32)
}

/// The permission bits of `inode` become `mode`'s (a generated directory is told too).
fn set_mode(inode: &Arc<Inode>, mode: u32) -> Result<Outcome, Errno> {
    let gen = match &*inode.lock() {
        Content::GenDir(d) => Some(d.clone()),
        _ => None,
    };
    if let Some(d) = gen {
        d.set_mode(mode & 0o7777)?;
    }
    let old = inode.mode.load(Ordering::Relaxed);
    inode.mode.store((old & S_IFMT) | (mode & 0o7777), Ordering::Relaxed);
    ok(0)
}

/// `chmod(path, mode)`.
pub fn chmod(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    fchmodat(proc, ctx, [AT_FDCWD as u64, a[0], a[1], 0, 0, 0])
}

/// `fchmod(fd, mode)`.
pub fn fchmod(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    let inode = f.inode().ok_or(Errno::EINVAL)?;
    set_mode(inode, a[1] as u32)
}

/// `fchownat`, `chown`, `lchown`, `fchown`: everything is root's; the path must exist.
pub fn chown(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let path = user_path(proc, a[0], false)?;
    let dir = base(proc, AT_FDCWD as u64, &path)?;
    vfs::lookup(&dir, &path, true)?;
    ok(0)
}

/// `fchown(fd, ...)`.
pub fn fchown(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    fd_file(proc, a[0])?;
    ok(0)
}

/// `utimensat(dirfd, path, times, flags)`: the file must exist; times set to now.
pub fn utimensat(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    // The two timespecs are read first, as Linux's: a bad pointer is EFAULT before the path.
    if a[2] != 0 {
        proc.read_user_vec(a[2], 32)?;
    }
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
pub fn pipe2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] & !u64::from(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    let flags = a[1] as u32;
    // A bad pointer is EFAULT before any fd is taken.
    proc.write_user(a[0], &[0u8; 8])?;
    let (r, w) = crate::fs::pipe::new()?;
    let (rf, wf) = (OpenFile::new(Kind::Pipe(r), flags & O_NONBLOCK), OpenFile::new(Kind::Pipe(w), 1 | (flags & O_NONBLOCK)));
    install_pair(proc, a[0], rf, wf, flags & O_CLOEXEC != 0)
}

/// Installs two new open files as two fds, both or neither (EMFILE past RLIMIT_NOFILE), and
/// writes them as two `int`s at `addr` (`pipe2`, `socketpair`).
fn install_pair(proc: &Thread, addr: u64, first: Arc<OpenFile>, second: Arc<OpenFile>, cloexec: bool) -> Result<Outcome, Errno> {
    let (fd1, fd2) = {
        let table = files(proc);
        let mut t = table.lock_uninterruptible();
        let limit = proc.nofile();
        let fd1 = t.install(first, cloexec, limit)?;
        match t.install(second, cloexec, limit) {
            Ok(fd2) => (fd1, fd2),
            Err(e) => {
                let _ = t.remove(fd1);
                return Err(e);
            }
        }
    };
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&(fd1 as u32).to_le_bytes());
    out[4..].copy_from_slice(&(fd2 as u32).to_le_bytes());
    proc.write_user(addr, &out)?;
    ok(0)
}

/// `socketpair(domain, type, protocol, sv)`: a connected pair of Unix stream sockets
/// (`fs::socket`), with SOCK_NONBLOCK / SOCK_CLOEXEC. EAFNOSUPPORT for a domain other than
/// AF_UNIX, EOPNOTSUPP for AF_INET / AF_INET6 (no pairs there on Linux either) and for
/// AF_UNIX's datagram and seqpacket types (not in Cadence), EINVAL for an unknown type,
/// EPROTONOSUPPORT for a protocol other than 0, EFAULT for `sv`.
pub fn socketpair(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    const AF_UNIX: u64 = 1;
    const AF_INET: u64 = 2;
    const AF_INET6: u64 = 10;
    const SOCK_STREAM: u64 = 1;
    const SOCK_NONBLOCK: u64 = 0o4000;
    const SOCK_CLOEXEC: u64 = 0o2000000;
    let (domain, ty, protocol) = (a[0] as u32 as u64, a[1] as u32 as u64, a[2] as u32);
    let kind = ty & !(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if !(1..=6).contains(&kind) || kind == 4 || ty & !(0xf | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    match domain {
        AF_UNIX => {}
        AF_INET | AF_INET6 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EAFNOSUPPORT),
    }
    if protocol != 0 && protocol != AF_UNIX as u32 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    if kind != SOCK_STREAM {
        return Err(Errno::EOPNOTSUPP);
    }
    proc.write_user(a[3], &[0u8; 8])?;
    let nonblock = if ty & SOCK_NONBLOCK != 0 { O_NONBLOCK } else { 0 };
    let (x, y) = crate::fs::socket::pair()?;
    let (xf, yf) = (OpenFile::new(Kind::Socket(x), 2 | nonblock), OpenFile::new(Kind::Socket(y), 2 | nonblock));
    install_pair(proc, a[3], xf, yf, ty & SOCK_CLOEXEC != 0)
}

/// `pipe(fds)`.
pub fn pipe(proc: &Thread, ctx: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
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
fn revents(proc: &Thread, fd: i32, events: u16) -> u16 {
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

/// Waits until `ready()` finds something or `deadline` (None: forever) passes; a signal
/// ends the wait with ERESTARTNOHAND (EINTR after a handler, else a restart).
fn wait_ready(mut ready: impl FnMut() -> bool, deadline: Option<u64>) -> Result<bool, Errno> {
    let q = &crate::sched::wait::POLL;
    let r = match deadline {
        Some(d) => q.wait_until_interruptible_deadline(&mut ready, d),
        None => q.wait_until_interruptible(&mut ready).map(|()| true),
    };
    r.map_err(|_| Errno::ERESTARTNOHAND)
}

/// `ppoll`'s and `pselect6`'s signal mask: in force while the call waits; if a signal
/// interrupts it, the old mask comes back after the handler (`saved_mask`), else at once.
fn with_sigmask(proc: &Thread, mask_addr: u64, size: u64, f: impl FnOnce() -> Result<u64, Errno>) -> Result<u64, Errno> {
    if mask_addr == 0 {
        return f();
    }
    if size != 8 {
        return Err(Errno::EINVAL);
    }
    let b = proc.read_user_vec(mask_addr, 8)?;
    let mask = u64::from_le_bytes(b[..8].try_into().expect("8")) & !cadence_abi::signal::UNBLOCKABLE;
    let me = crate::sched::current();
    let old = me.process.signals.blocked.swap(mask, Ordering::Relaxed);
    let r = f();
    if r == Err(Errno::ERESTARTNOHAND) {
        *proc.saved_mask.lock() = Some(old);
    } else {
        me.process.signals.blocked.store(old, Ordering::Relaxed);
    }
    r
}

fn do_poll(proc: &Thread, fds_addr: u64, nfds: u64, deadline: Option<u64>) -> Result<u64, Errno> {
    if nfds > proc.nofile() as u64 {
        return Err(Errno::EINVAL);
    }
    let mut raw = proc.read_user_vec(fds_addr, nfds as usize * 8)?;
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
    proc.write_user(fds_addr, &raw)?;
    Ok(count)
}

/// `poll(fds, nfds, timeout_ms)`.
pub fn poll(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let t = a[2] as i32;
    let deadline = (t >= 0).then(|| crate::time::uptime_ns().saturating_add(t as u64 * 1_000_000));
    ok(do_poll(proc, a[0], a[1], deadline.map(|d| if t == 0 { 0 } else { d }))?)
}

fn timespec_deadline(proc: &Thread, addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let ns = super::time::parse_timespec(&proc.read_user_vec(addr, 16)?)?;
    Ok(Some(if ns == 0 { 0 } else { crate::time::uptime_ns().saturating_add(ns) }))
}

/// `ppoll(fds, nfds, tmo_p, sigmask, sigsetsize)`.
pub fn ppoll(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = timespec_deadline(proc, a[2])?;
    ok(with_sigmask(proc, a[3], a[4], || do_poll(proc, a[0], a[1], deadline))?)
}

/// `select(nfds, readfds, writefds, exceptfds, timeout)` over the same readiness as `poll`.
fn do_select(proc: &Thread, a: [u64; 6], deadline: Option<u64>) -> Result<u64, Errno> {
    let nfds = a[0] as i32;
    if nfds < 0 {
        return Err(Errno::EINVAL);
    }
    // Linux clamps to the fd table's size; fds past RLIMIT_NOFILE cannot be open.
    let nfds = nfds.min(proc.nofile() as i32);
    let bytes = (nfds as usize).div_ceil(64) * 8;
    let load = |addr: u64| -> Result<Option<Vec<u8>>, Errno> {
        if addr == 0 {
            Ok(None)
        } else {
            proc.read_user_vec(addr, bytes).map(Some)
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
        proc.write_user(a[1], &r)?;
    }
    if a[2] != 0 {
        proc.write_user(a[2], &w)?;
    }
    if a[3] != 0 {
        proc.write_user(a[3], &alloc::vec![0u8; bytes])?;
    }
    Ok(n)
}

/// `select(nfds, readfds, writefds, exceptfds, timeval)`.
pub fn select(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = if a[4] == 0 {
        None
    } else {
        let b = proc.read_user_vec(a[4], 16)?;
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

/// `pselect6(nfds, readfds, writefds, exceptfds, timespec, sigmask)`: the sixth argument
/// points to `{ const sigset_t *ss; size_t ss_len; }`.
pub fn pselect6(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let deadline = timespec_deadline(proc, a[4])?;
    let (mask_addr, size) = if a[5] != 0 {
        let b = proc.read_user_vec(a[5], 16)?;
        (u64::from_le_bytes(b[..8].try_into().expect("8")), u64::from_le_bytes(b[8..].try_into().expect("8")))
    } else {
        (0, 0)
    };
    ok(with_sigmask(proc, mask_addr, size, || do_select(proc, a, deadline))?)
}

/// `ioctl(fd, request, arg)`: the terminal requests of the console and the virtual terminals
/// (termios `TCGETS` / `TCSETS*`, the window size, job control: `TIOCSCTTY`, `TIOCNOTTY`,
/// `TIOCGPGRP` / `TIOCSPGRP`, `TIOCGSID`; `FIONREAD`, `TCFLSH`, `TCSBRK`, `TCXONC`,
/// `TIOCOUTQ`), FIONREAD on pipes and sockets, the disk's size requests (`BLKGETSIZE64`,
/// `BLKGETSIZE`, `BLKSSZGET`); ENOTTY for everything else, and for the job-control requests
/// of a process whose controlling terminal the file's terminal is not (as Linux).
pub fn ioctl(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    use crate::fs::console::{self, Termios};
    use crate::fs::vfs::Device;
    use crate::fs::vt;
    const TCGETS: u64 = 0x5401;
    const TCSETS: u64 = 0x5402;
    const TCSETSW: u64 = 0x5403;
    const TCSETSF: u64 = 0x5404;
    const TCSBRK: u64 = 0x5409;
    const TCXONC: u64 = 0x540a;
    const TCFLSH: u64 = 0x540b;
    const TIOCSCTTY: u64 = 0x540e;
    const TIOCGPGRP: u64 = 0x540f;
    const TIOCSPGRP: u64 = 0x5410;
    const TIOCOUTQ: u64 = 0x5411;
    const TIOCGWINSZ: u64 = 0x5413;
    const TIOCSWINSZ: u64 = 0x5414;
    const FIONREAD: u64 = 0x541b;
    const TIOCNOTTY: u64 = 0x5422;
    const TCSBRKP: u64 = 0x5425;
    const TIOCGSID: u64 = 0x5429;
    const BLKGETSIZE: u64 = 0x1260;
    const BLKSSZGET: u64 = 0x1268;
    const BLKGETSIZE64: u64 = 0x8008_1272;
    let f = fd_file(proc, a[0])?;
    let waiting = match &f.kind {
        Kind::Pipe(p) => Some(p.available()),
        Kind::Socket(s) => Some(s.available()),
        _ => None,
    };
    if let (FIONREAD, Some(n)) = (a[1], waiting) {
        proc.write_user(a[2], &(n as u32).to_le_bytes())?;
        return ok(0);
    }
    // Linux's `ioctl` takes `unsigned int cmd`.
    let cmd = a[1] as u32 as u64;
    let id = match &f.kind {
        Kind::Device(Device::Console, _) => crate::tty::CONSOLE,
        Kind::Device(Device::Vt(n), _) => *n,
        Kind::Device(Device::Vda, _) => {
            let size = crate::fs::blockdev::size();
            return match cmd {
                BLKGETSIZE64 => proc.write_user(a[2], &size.to_le_bytes()).and(ok(0)),
                BLKGETSIZE => proc.write_user(a[2], &(size / 512).to_le_bytes()).and(ok(0)),
                BLKSSZGET => proc.write_user(a[2], &512u32.to_le_bytes()).and(ok(0)),
                _ => Err(Errno::ENOTTY),
            };
        }
        _ => return Err(Errno::ENOTTY),
    };
    let is_console = id == crate::tty::CONSOLE;
    let me = crate::sched::current();
    let g = &me.process.group;
    // The job-control requests need this terminal to be the caller's controlling terminal.
    let ctty = || -> Result<alloc::sync::Arc<crate::tty::Tty>, Errno> {
        if g.tty.load(Ordering::Acquire) != id {
            return Err(Errno::ENOTTY);
        }
        crate::tty::get(id).filter(|t| t.session.load(Ordering::Acquire) == g.sid.load(Ordering::Acquire)).ok_or(Errno::ENOTTY)
    };
    match cmd {
        TCGETS => {
            let t = if is_console { console::termios() } else { vt::termios(id) };
            proc.write_user(a[2], &t.encode())?;
            ok(0)
        }
        TCSETS | TCSETSW | TCSETSF => {
            let t = Termios::decode(&proc.read_user_vec(a[2], Termios::SIZE)?);
            if is_console {
                console::set_termios(t, cmd == TCSETSF)?;
            } else {
                vt::set_termios(id, t);
            }
            ok(0)
        }
        TIOCGWINSZ => {
            let w = if is_console { console::winsize() } else { vt::winsize(id) };
            let mut b = [0u8; 8];
            for (i, v) in w.iter().enumerate() {
                b[i * 2..i * 2 + 2].copy_from_slice(&v.to_le_bytes());
            }
            proc.write_user(a[2], &b)?;
            ok(0)
        }
        TIOCSWINSZ => {
            let b = proc.read_user_vec(a[2], 8)?;
            let w = core::array::from_fn(|i| u16::from_le_bytes([b[i * 2], b[i * 2 + 1]]));
            if is_console {
                console::set_winsize(w);
            } else {
                vt::set_winsize(id, w);
            }
            ok(0)
        }
        FIONREAD => {
            // A vt's waiting input is whole lines; the count is not tracked, so 0 (a reader
            // that polls first still finds them).
            let n = if is_console { console::available() } else { 0 };
            proc.write_user(a[2], &(n as u32).to_le_bytes())?;
            ok(0)
        }
        TIOCOUTQ => {
            proc.write_user(a[2], &0u32.to_le_bytes())?;
            ok(0)
        }
        TCFLSH => match a[2] {
            0 | 2 => {
                if is_console {
                    console::flush_input();
                }
                ok(0)
            }
            1 => ok(0),
            _ => Err(Errno::EINVAL),
        },
        TCSBRK | TCSBRKP | TCXONC => ok(0),
        TIOCSCTTY => {
            crate::tty::set_controlling(id, a[2] == 1)?;
            ok(0)
        }
        TIOCNOTTY => {
            ctty()?;
            crate::tty::drop_controlling()?;
            ok(0)
        }
        TIOCGPGRP => {
            let t = ctty()?;
            proc.write_user(a[2], &t.fg_pgrp.load(Ordering::Acquire).to_le_bytes())?;
            ok(0)
        }
        TIOCGSID => {
            let t = ctty()?;
            proc.write_user(a[2], &t.session.load(Ordering::Acquire).to_le_bytes())?;
            ok(0)
        }
        TIOCSPGRP => {
            let t = ctty()?;
            let b = proc.read_user_vec(a[2], 4)?;
            let pgrp = i32::from_le_bytes(b[..4].try_into().expect("4"));
            if pgrp < 0 {
                return Err(Errno::EINVAL);
            }
            // No such group: ESRCH; one of another session: EPERM (Linux's `tiocspgrp`).
            if !crate::tty::pgrp_in_session(pgrp as u32, 0) {
                return Err(Errno::ESRCH);
            }
            if !crate::tty::pgrp_in_session(pgrp as u32, g.sid.load(Ordering::Acquire)) {
                return Err(Errno::EPERM);
            }
            if is_console {
                console::check_foreground_change()?;
            }
            t.fg_pgrp.store(pgrp as u32, Ordering::Release);
            ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// `fsync(fd)` and `fdatasync(fd)` ([`file::fsync`]).
pub fn fsync(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let f = fd_file(proc, a[0])?;
    file::fsync(&f)?;
    ok(0)
}

/// `sync()`: writes back the disk's page cache and flushes the disk; it cannot fail (Linux's
/// `ksys_sync` reports nothing).
pub fn sync(_: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    crate::fs::blockdev::sync_all();
    ok(0)
}

/// `sendfile(out_fd, in_fd, offset, count)`: through a kernel buffer, with Linux 6.1's checks
/// in its order (`fs/read_write.c` `do_sendfile`, `fs/splice.c`): the offset is read first
/// (EFAULT), then in_fd (EBADF, ESPIPE with an offset on a stream, EINVAL for a negative
/// offset), out_fd (EBADF), a count of 0 (0 bytes), then what splice accepts: a directory, pipe, timerfd, signalfd or message
/// queue has no `splice_read` (EINVAL), and a file that is not a pipe is written only from a
/// regular file or a block device (`splice_direct_to_actor`) and never with O_APPEND (EINVAL).
pub fn sendfile(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let offset = if a[2] != 0 { Some(u64::from_le_bytes(proc.read_user_vec(a[2], 8)?.try_into().expect("8"))) } else { None };
    let inp = fd_file(proc, a[1])?;
    if !inp.may_read() {
        return Err(Errno::EBADF);
    }
    if offset.is_some() && !inp.seekable() {
        return Err(Errno::ESPIPE);
    }
    if offset.is_some_and(|o| (o as i64) < 0) || (a[3] as i64) < 0 {
        return Err(Errno::EINVAL);
    }
    let out = fd_file(proc, a[0])?;
    if !out.writable() {
        return Err(Errno::EBADF);
    }
    if a[3] == 0 {
        return ok(0);
    }
    let (in_dir, in_regular) = match &inp.kind {
        Kind::Inode(i) => (i.is_dir(), !i.is_dir()),
        Kind::Device(vfs::Device::Vda, _) | Kind::Gen(..) => (false, true),
        _ => (false, false),
    };
    if in_dir || matches!(inp.kind, Kind::Pipe(_) | Kind::TimerFd(_) | Kind::SignalFd(_) | Kind::Mqueue(_) | Kind::PidFd(_)) {
        return Err(Errno::EINVAL);
    }
    if !matches!(out.kind, Kind::Pipe(_)) && (!in_regular || out.flags.load(Ordering::Relaxed) & file::O_APPEND != 0) {
        return Err(Errno::EINVAL);
    }
    let n = a[3].min(CHUNK as u64) as usize;
    let mut buf = alloc::vec![0u8; n];
    let got = if let Some(off) = offset {
        let got = file::pread(&inp, &mut buf, off)?;
        proc.write_user(a[2], &(off + got as u64).to_le_bytes())?;
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
