//! Open files (Linux's `struct file`: what the file is, its status flags and offset, shared by
//! every fd `dup`ed or inherited from it) and fd tables (per process; the slots, each with its
//! close-on-exec flag).

use super::pipe::PipeEnd;
use super::pseudo::GenFile;
use super::vfs::{Content, Device, Inode};
use crate::sched::wait::Mutex;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicU32, Ordering};

/// `O_ACCMODE` and its values.
pub const O_ACCMODE: u32 = 3;
/// Read only.
pub const O_RDONLY: u32 = 0;
/// Write only.
pub const O_WRONLY: u32 = 1;
/// Read and write.
pub const O_RDWR: u32 = 2;
/// Create if missing.
pub const O_CREAT: u32 = 0o100;
/// With `O_CREAT`: fail if it exists.
pub const O_EXCL: u32 = 0o200;
/// Do not make a tty the controlling one.
pub const O_NOCTTY: u32 = 0o400;
/// Truncate to 0 on open.
pub const O_TRUNC: u32 = 0o1000;
/// Every write at the end.
pub const O_APPEND: u32 = 0o2000;
/// Non-blocking reads and writes.
pub const O_NONBLOCK: u32 = 0o4000;
/// Must be a directory.
pub const O_DIRECTORY: u32 = 0o200000;
/// Do not follow a symlink in the last component.
pub const O_NOFOLLOW: u32 = 0o400000;
/// Close on `execve`.
pub const O_CLOEXEC: u32 = 0o2000000;
/// Flags `F_SETFL` may change (Linux's `SETFL_MASK`, of those Cadence has).
pub const SETFL_MASK: u32 = O_APPEND | O_NONBLOCK;

/// What an open file is.
pub enum Kind {
    /// A regular file, directory or symlink (`O_PATH`-like uses) of the VFS.
    Inode(Arc<Inode>),
    /// A pipe's end.
    Pipe(PipeEnd),
    /// A connected Unix stream socket's end (`socketpair`).
    Socket(super::socket::UnixStream),
    /// A character device.
    Device(Device, Arc<Inode>),
    /// A timerfd.
    TimerFd(Arc<super::timerfd::TimerFd>),
    /// A signalfd.
    SignalFd(Arc<super::signalfd::SignalFd>),
    /// A POSIX message queue (`mq_open`).
    Mqueue(Arc<super::mqueue::MessageQueue>),
    /// A pidfd (`pidfd_open`, `clone(CLONE_PIDFD)`).
    PidFd(Arc<super::pidfd::PidFd>),
    /// A generated file (procfs, sysfs) and the text its last read from offset 0 made
    /// (`seq_file`'s buffer: later reads continue in that snapshot).
    Gen(Arc<Inode>, Arc<GenFile>, Mutex<Vec<u8>>),
}

/// An open file description.
pub struct OpenFile {
    /// What it is.
    pub kind: Kind,
    /// `O_ACCMODE` bits and the `F_SETFL` flags.
    pub flags: AtomicU32,
    /// The file offset (for directories: the next entry's index).
    pub pos: Mutex<u64>,
    /// It counts as one of its regular file's writers (`Inode::get_write_access`), given
    /// back when it closes.
    write_access: bool,
}

impl OpenFile {
    /// A new open file.
    pub fn new(kind: Kind, flags: u32) -> Arc<OpenFile> {
        Self::with_write_access(kind, flags, false)
    }

    fn with_write_access(kind: Kind, flags: u32, write_access: bool) -> Arc<OpenFile> {
        if matches!(kind, Kind::Device(Device::Console, _)) {
            super::console::opened();
        }
        Arc::new(OpenFile { kind, flags: AtomicU32::new(flags & (O_ACCMODE | SETFL_MASK)), pos: Mutex::new(0), write_access })
    }

    /// A file `open` made: opened for writing, a regular file takes write access first
    /// (Linux's `do_dentry_open`), so a running program's file is ETXTBSY.
    pub fn opened(kind: Kind, flags: u32) -> Result<Arc<OpenFile>, Errno> {
        let write_access = match &kind {
            Kind::Inode(i) if matches!(flags & O_ACCMODE, O_WRONLY | O_RDWR) && i.kind() == super::vfs::S_IFREG => {
                i.get_write_access()?;
                true
            }
            _ => false,
        };
        Ok(Self::with_write_access(kind, flags, write_access))
    }

    /// Opened for reading?
    pub fn readable(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & O_ACCMODE != O_WRONLY
    }

    /// Opened for writing?
    pub fn writable(&self) -> bool {
        matches!(self.flags.load(Ordering::Relaxed) & O_ACCMODE, O_WRONLY | O_RDWR)
    }

    /// Opened for reading, as Linux's FMODE_READ: O_ACCMODE 3 (which only a message queue
    /// keeps, made by `mq_open`) reads nothing.
    pub fn may_read(&self) -> bool {
        matches!(self.flags.load(Ordering::Relaxed) & O_ACCMODE, O_RDONLY | O_RDWR)
    }

    /// Non-blocking?
    pub fn nonblock(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & O_NONBLOCK != 0
    }

    /// The inode behind it (pipes have none).
    pub fn inode(&self) -> Option<&Arc<Inode>> {
        match &self.kind {
            Kind::Inode(i) | Kind::Device(_, i) | Kind::Gen(i, _, _) => Some(i),
            Kind::Pipe(_) | Kind::Socket(_) | Kind::TimerFd(_) | Kind::Mqueue(_) | Kind::SignalFd(_) | Kind::PidFd(_) => None,
        }
    }

    /// What `/proc/PID/fd/N` links to: the path of a file of the tree, `pipe:[ino]`,
    /// `socket:[ino]`, `anon_inode:[timerfd]`, `anon_inode:[signalfd]`, `anon_inode:[pidfd]`, as
    /// Linux's `d_path` names them.
    pub fn proc_link(&self) -> alloc::string::String {
        match &self.kind {
            Kind::Inode(i) | Kind::Device(_, i) | Kind::Gen(i, _, _) => super::vfs::path_of(i),
            Kind::Pipe(p) => alloc::format!("pipe:[{}]", p.id()),
            Kind::Socket(sk) => alloc::format!("socket:[{}]", sk.id()),
            Kind::TimerFd(_) => alloc::string::String::from("anon_inode:[timerfd]"),
            Kind::SignalFd(_) => alloc::string::String::from("anon_inode:[signalfd]"),
            Kind::PidFd(_) => alloc::string::String::from("anon_inode:[pidfd]"),
            Kind::Mqueue(q) => q.path(),
        }
    }

    /// Can it seek? (ESPIPE for pipes and terminals.)
    pub fn seekable(&self) -> bool {
        match &self.kind {
            Kind::Inode(_) | Kind::Mqueue(_) => true,
            Kind::Gen(_, g, _) => !g.is_pipe(),
            Kind::Device(d, _) => !matches!(d, Device::Console | Device::Vt(_)),
            Kind::Pipe(_) | Kind::Socket(_) | Kind::TimerFd(_) | Kind::SignalFd(_) | Kind::PidFd(_) => false,
        }
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        if let (true, Kind::Inode(i)) = (self.write_access, &self.kind) {
            i.put_write_access();
        }
        match &self.kind {
            Kind::Device(Device::Console, _) => super::console::closed(),
            Kind::TimerFd(t) => t.close(),
            _ => {}
        }
    }
}

/// One fd's slot.
#[derive(Clone)]
pub struct FdEntry {
    /// The open file.
    pub file: Arc<OpenFile>,
    /// `FD_CLOEXEC`.
    pub cloexec: bool,
}

/// RLIMIT_NOFILE's default soft limit (the fds a new process may have).
pub const NOFILE: usize = 1024;
/// The highest RLIMIT_NOFILE may be (Linux's `fs.nr_open`).
pub const NR_OPEN: usize = 1 << 20;

/// A process's fd table.
#[derive(Default)]
pub struct FdTable {
    slots: Vec<Option<FdEntry>>,
}

/// An fd argument's slot: Linux takes `unsigned int fd` (or `int`), so only the low 32 bits
/// count; -1 and every other negative `int` is then out of range (EBADF).
fn slot(fd: u64) -> usize {
    fd as u32 as usize
}

impl FdTable {
    /// A copy for a child (`fork`): the same open files; ENOMEM if the slots cannot be had
    /// (Linux's `dup_fd`).
    pub fn try_clone(&self) -> Result<FdTable, Errno> {
        let mut slots = Vec::new();
        slots.try_reserve_exact(self.slots.len()).map_err(|_| Errno::ENOMEM)?;
        slots.extend(self.slots.iter().cloned());
        Ok(FdTable { slots })
    }

    /// Heap bytes [`FdTable::try_clone`] takes.
    pub fn clone_bytes(&self) -> usize {
        self.slots.len() * core::mem::size_of::<Option<FdEntry>>()
    }

    /// The file open at `fd` (EBADF if none).
    pub fn get(&self, fd: u64) -> Result<Arc<OpenFile>, Errno> {
        self.slots.get(slot(fd)).and_then(|s| s.as_ref()).map(|e| e.file.clone()).ok_or(Errno::EBADF)
    }

    /// The slot at `fd`, to change its flags.
    pub fn entry_mut(&mut self, fd: u64) -> Result<&mut FdEntry, Errno> {
        self.slots.get_mut(slot(fd)).and_then(|s| s.as_mut()).ok_or(Errno::EBADF)
    }

    /// Puts `file` in the lowest free fd at or above `min` and below `limit` (the process's
    /// RLIMIT_NOFILE): EINVAL if `min` is not below it, EMFILE if none is free.
    pub fn install_from(&mut self, min: usize, file: Arc<OpenFile>, cloexec: bool, limit: usize) -> Result<u64, Errno> {
        if min >= limit {
            return Err(Errno::EINVAL);
        }
        let free = (min..limit).find(|&i| self.slots.get(i).is_none_or(|s| s.is_none())).ok_or(Errno::EMFILE)?;
        // Every new fd of every kind comes through here: with the heap unable to grow, a
        // program cannot pile up more objects (ENOMEM, as Linux's `alloc_file` would give).
        if !crate::mm::heap::ensure_free(0) {
            return Err(Errno::ENOMEM);
        }
        if free >= self.slots.len() {
            self.grow(free + 1)?;
        }
        self.slots[free] = Some(FdEntry { file, cloexec });
        Ok(free as u64)
    }

    /// Makes the table `len` slots long (doubling, as Linux's `expand_files`); ENOMEM if the
    /// memory cannot be had, the table unchanged.
    fn grow(&mut self, len: usize) -> Result<(), Errno> {
        let want = len.max(self.slots.len() * 2).max(16);
        self.slots.try_reserve_exact(want - self.slots.len()).map_err(|_| Errno::ENOMEM)?;
        self.slots.resize(len, None);
        Ok(())
    }

    /// Is an fd below `limit` free?
    pub fn has_free(&self, limit: usize) -> bool {
        (0..limit).any(|i| self.slots.get(i).is_none_or(|s| s.is_none()))
    }

    /// Puts `file` in the lowest free fd below `limit` (EMFILE if none).
    pub fn install(&mut self, file: Arc<OpenFile>, cloexec: bool, limit: usize) -> Result<u64, Errno> {
        self.install_from(0, file, cloexec, limit).map_err(|e| if e == Errno::EINVAL { Errno::EMFILE } else { e })
    }

    /// Puts `file` at exactly `fd`, returning what was there (`dup2`); EBADF if `fd` is not
    /// below `limit`.
    pub fn install_at(&mut self, fd: u64, file: Arc<OpenFile>, cloexec: bool, limit: usize) -> Result<Option<FdEntry>, Errno> {
        let i = Some(slot(fd)).filter(|&i| i < limit).ok_or(Errno::EBADF)?;
        if i >= self.slots.len() {
            self.grow(i + 1)?;
        }
        Ok(self.slots[i].replace(FdEntry { file, cloexec }))
    }

    /// Empties `fd`, returning what was there (EBADF if nothing). The caller drops it outside
    /// the table's lock (a pipe end's last close wakes its peers).
    pub fn remove(&mut self, fd: u64) -> Result<FdEntry, Errno> {
        self.slots.get_mut(slot(fd)).and_then(|s| s.take()).ok_or(Errno::EBADF)
    }

    /// Closes every close-on-exec fd (`execve`); returns them, to drop outside the lock.
    pub fn take_cloexec(&mut self) -> Vec<FdEntry> {
        self.slots.iter_mut().filter(|s| s.as_ref().is_some_and(|e| e.cloexec)).filter_map(|s| s.take()).collect()
    }

    /// The open fds, in order (`/proc/PID/fd`).
    pub fn open_fds(&self) -> Vec<u64> {
        self.slots.iter().enumerate().filter(|(_, e)| e.is_some()).map(|(i, _)| i as u64).collect()
    }

    /// The table's size as Linux's `max_fds` (`FDSize` in `/proc/PID/status`): 64 at least,
    /// grown by powers of two.
    pub fn capacity(&self) -> usize {
        self.slots.len().max(64).next_power_of_two()
    }

    /// Closes everything (exit); returns the entries, to drop outside the lock.
    pub fn take_all(&mut self) -> Vec<FdEntry> {
        self.slots.drain(..).flatten().collect()
    }
}

/// Reads from `file` at its offset (advancing it) into `buf`.
pub fn read(file: &OpenFile, buf: &mut [u8]) -> Result<usize, Errno> {
    read_with(file, buf, file.nonblock())
}

/// [`read`], non-blocking if `nonblock` whatever the file's O_NONBLOCK (an AIO read with
/// RWF_NOWAIT).
pub fn read_with(file: &OpenFile, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    match &file.kind {
        Kind::Pipe(p) => p.read(buf, nonblock),
        Kind::Socket(s) => s.read(buf, nonblock),
        Kind::TimerFd(t) => t.read(buf, nonblock),
        Kind::SignalFd(s) => s.read(buf, nonblock),
        // No read method: Linux's `vfs_read` answers EINVAL.
        Kind::PidFd(_) => Err(Errno::EINVAL),
        Kind::Mqueue(q) => {
            if !file.may_read() {
                return Err(Errno::EBADF);
            }
            let mut pos = file.pos.lock_uninterruptible();
            let text = q.text();
            let from = usize::try_from(*pos).unwrap_or(usize::MAX).min(text.len());
            let n = buf.len().min(text.len() - from);
            buf[..n].copy_from_slice(&text.as_bytes()[from..from + n]);
            *pos += n as u64;
            Ok(n)
        }
        Kind::Device(Device::Console, i) => super::console::read(buf, nonblock, via_tty(i)),
        Kind::Device(Device::Vt(n), _) => super::vt::read(*n, buf, nonblock),
        Kind::Device(Device::Vda, _) => {
            let mut pos = file.pos.lock_uninterruptible();
            let n = super::blockdev::read_at(*pos, buf)?;
            *pos += n as u64;
            Ok(n)
        }
        Kind::Device(d, _) => read_device(*d, buf),
        Kind::Inode(i) => {
            if i.is_dir() {
                return Err(Errno::EISDIR);
            }
            let mut pos = file.pos.lock_uninterruptible();
            let n = i.read_at(*pos, buf)?;
            *pos += n as u64;
            Ok(n)
        }
        Kind::Gen(_, g, _) if g.is_pipe() => {
            let bytes = g.read_pipe(buf.len(), nonblock)?;
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            Ok(n)
        }
        Kind::Gen(_, g, text) => {
            let mut pos = file.pos.lock_uninterruptible();
            let mut text = text.lock_uninterruptible();
            if *pos == 0 {
                *text = g.show()?;
            }
            let from = usize::try_from(*pos).unwrap_or(usize::MAX).min(text.len());
            let n = buf.len().min(text.len() - from);
            buf[..n].copy_from_slice(&text[from..from + n]);
            *pos += n as u64;
            Ok(n)
        }
    }
}

/// Reads at `offset` without moving the file offset (`pread64`).
pub fn pread(file: &OpenFile, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
    if !file.readable() {
        return Err(Errno::EBADF);
    }
    match &file.kind {
        Kind::Pipe(_) | Kind::Socket(_) | Kind::TimerFd(_) | Kind::SignalFd(_) | Kind::PidFd(_) => Err(Errno::ESPIPE),
        Kind::Mqueue(q) => {
            let text = q.text();
            let from = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
            let n = buf.len().min(text.len() - from);
            buf[..n].copy_from_slice(&text.as_bytes()[from..from + n]);
            Ok(n)
        }
        Kind::Device(Device::Console | Device::Vt(_), _) => Err(Errno::ESPIPE),
        Kind::Device(Device::Vda, _) => super::blockdev::read_at(offset, buf),
        Kind::Device(d, _) => read_device(*d, buf),
        Kind::Gen(_, g, _) if g.is_pipe() => Err(Errno::ESPIPE),
        Kind::Inode(i) | Kind::Gen(i, _, _) => i.read_at(offset, buf),
    }
}

fn read_device(d: Device, buf: &mut [u8]) -> Result<usize, Errno> {
    match d {
        Device::Null => Ok(0),
        Device::Zero => {
            buf.fill(0);
            Ok(buf.len())
        }
        Device::CpuDmaLatency => {
            if buf.len() < 4 {
                return Err(Errno::EINVAL);
            }
            buf[..4].copy_from_slice(&CPU_DMA_LATENCY.load(Ordering::Relaxed).to_le_bytes());
            Ok(4)
        }
        // The terminals and the disk are read above; `/dev/tty` is resolved at open.
        Device::Console | Device::Tty | Device::Vt(_) | Device::Vda => Err(Errno::ENXIO),
    }
}

/// The latency `/dev/cpu_dma_latency` last took, in µs (Linux's `PM_QOS_DEFAULT_VALUE`,
/// 2,000,000,000, before any).
static CPU_DMA_LATENCY: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(2_000_000_000);

/// A write to `/dev/cpu_dma_latency`: a 4-byte value, or its text in hex (Linux's
/// `cpu_latency_qos_write`); EINVAL otherwise.
fn write_cpu_dma_latency(data: &[u8]) -> Result<usize, Errno> {
    let v = if data.len() == 4 {
        i32::from_le_bytes(data.try_into().expect("4 bytes"))
    } else {
        let t = core::str::from_utf8(data).map_err(|_| Errno::EINVAL)?.trim();
        let t = t.strip_prefix("0x").unwrap_or(t);
        i32::from_str_radix(t, 16).map_err(|_| Errno::EINVAL)?
    };
    if v < 0 {
        return Err(Errno::EINVAL);
    }
    CPU_DMA_LATENCY.store(v, Ordering::Relaxed);
    Ok(data.len())
}

/// Was this console file opened as `/dev/tty` (job control applies)?
fn via_tty(inode: &Inode) -> bool {
    matches!(&*inode.lock(), Content::Device(Device::Tty))
}

/// What a write came to: bytes written, or a broken pipe (the caller's SIGPIPE + EPIPE).
pub enum Written {
    /// This many bytes.
    Bytes(usize),
    /// No reader on the pipe.
    BrokenPipe,
}

/// Writes `data` to `file` at its offset (or its end with `O_APPEND`).
pub fn write(file: &OpenFile, data: &[u8]) -> Result<Written, Errno> {
    write_with(file, data, file.nonblock())
}

/// [`write`], non-blocking if `nonblock` whatever the file's O_NONBLOCK (RWF_NOWAIT).
pub fn write_with(file: &OpenFile, data: &[u8], nonblock: bool) -> Result<Written, Errno> {
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    match &file.kind {
        Kind::Pipe(p) => match p.write(data, nonblock) {
            Ok(n) => Ok(Written::Bytes(n)),
            Err(Ok(_)) => Ok(Written::BrokenPipe),
            Err(Err(e)) => Err(e),
        },
        Kind::Socket(sk) => match sk.write(data, nonblock) {
            Ok(n) => Ok(Written::Bytes(n)),
            Err(Ok(_)) => Ok(Written::BrokenPipe),
            Err(Err(e)) => Err(e),
        },
        // Neither has a write method: Linux's `vfs_write` answers EINVAL.
        Kind::TimerFd(_) | Kind::Mqueue(_) | Kind::SignalFd(_) | Kind::PidFd(_) => Err(Errno::EINVAL),
        Kind::Device(Device::Console, i) => Ok(Written::Bytes(super::console::write(data, via_tty(i))?)),
        Kind::Device(Device::CpuDmaLatency, _) => Ok(Written::Bytes(write_cpu_dma_latency(data)?)),
        Kind::Device(Device::Vt(n), _) => Ok(Written::Bytes(super::vt::write(*n, data))),
        Kind::Device(Device::Vda, _) => {
            let mut pos = file.pos.lock_uninterruptible();
            let n = super::blockdev::write_at(*pos, data)?;
            *pos += n as u64;
            Ok(Written::Bytes(n))
        }
        Kind::Device(_, _) => Ok(Written::Bytes(data.len())),
        Kind::Inode(i) => {
            let mut pos = file.pos.lock_uninterruptible();
            if file.flags.load(Ordering::Relaxed) & O_APPEND != 0 {
                *pos = i.size();
            }
            let n = i.write_at(*pos, data)?;
            *pos += n as u64;
            Ok(Written::Bytes(n))
        }
        Kind::Gen(_, g, _) => Ok(Written::Bytes(g.store(data)?)),
    }
}

/// Writes at `offset` without moving the file offset (`pwrite64`).
pub fn pwrite(file: &OpenFile, data: &[u8], offset: u64) -> Result<usize, Errno> {
    if !file.writable() {
        return Err(Errno::EBADF);
    }
    match &file.kind {
        Kind::Pipe(_)
        | Kind::Socket(_)
        | Kind::TimerFd(_)
        | Kind::SignalFd(_)
        | Kind::PidFd(_)
        | Kind::Device(Device::Console | Device::Vt(_), _) => Err(Errno::ESPIPE),
        Kind::Mqueue(_) => Err(Errno::EINVAL),
        Kind::Device(Device::Vda, _) => super::blockdev::write_at(offset, data),
        Kind::Device(_, _) => Ok(data.len()),
        Kind::Inode(i) => i.write_at(offset, data),
        Kind::Gen(_, g, _) => g.store(data),
    }
}

/// `fsync` / `fdatasync` of `file` (Linux's `vfs_fsync`): nothing to write for a ramfs file
/// or directory (`noop_fsync`), the disk's sync for `/dev/vda`; EINVAL for files without one
/// (pipes, sockets, terminals, `/dev/null`, generated files), as Linux's `vfs_fsync_range`.
pub fn fsync(file: &OpenFile) -> Result<(), Errno> {
    if !has_fsync(file) {
        return Err(Errno::EINVAL);
    }
    if let Kind::Device(Device::Vda, _) = &file.kind {
        super::blockdev::fsync()?;
    }
    Ok(())
}

/// Has the file an `fsync` method (a regular file, a directory, the disk)?
pub fn has_fsync(file: &OpenFile) -> bool {
    matches!(&file.kind, Kind::Inode(_) | Kind::Device(Device::Vda, _))
}

/// `poll`'s view of a file: (readable, writable, hung up, error).
pub fn poll(file: &OpenFile) -> (bool, bool, bool, bool) {
    match &file.kind {
        Kind::Pipe(p) => p.poll(),
        Kind::Socket(s) => s.poll(),
        Kind::TimerFd(t) => (t.readable(), false, false, false),
        Kind::SignalFd(s) => (s.readable(), false, false, false),
        Kind::PidFd(p) => (p.exited(), false, false, false),
        Kind::Mqueue(q) => {
            let (r, w) = q.poll();
            (r, w, false, false)
        }
        Kind::Device(Device::Console, _) => (super::console::readable(), true, false, false),
        Kind::Device(Device::Vt(n), _) => (super::vt::readable(*n), true, false, false),
        Kind::Device(_, _) | Kind::Inode(_) | Kind::Gen(..) => (true, true, false, false),
    }
}

/// Is `inode` something `open` may open with these flags? (EISDIR for writing a directory,
/// ENOTDIR for `O_DIRECTORY` on a file, ELOOP for `O_NOFOLLOW` on a symlink.)
pub fn open_kind(inode: &Arc<Inode>, flags: u32) -> Result<Kind, Errno> {
    use super::vfs::{S_IFDIR, S_IFLNK};
    let kind = inode.kind();
    if kind == S_IFLNK {
        return Err(Errno::ELOOP);
    }
    if flags & O_DIRECTORY != 0 && kind != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    if kind == S_IFDIR && flags & O_ACCMODE != O_RDONLY {
        return Err(Errno::EISDIR);
    }
    let dev = match &*inode.lock() {
        Content::Device(d) => Some(*d),
        Content::Gen(g) => return Ok(Kind::Gen(inode.clone(), g.clone(), Mutex::new(Vec::new()))),
        _ => None,
    };
    if dev == Some(Device::Tty) {
        // The controlling terminal, if the caller has one: the console or a virtual terminal,
        // with `/dev/tty`'s inode (fstat shows 5:0, as Linux's). Through it, reads and writes
        // of the console are subject to job control, which Linux skips for `/dev/console`.
        return match crate::sched::current().process.group.tty.load(Ordering::Acquire) {
            crate::tty::CONSOLE => Ok(Kind::Device(Device::Console, inode.clone())),
            n if (1..=crate::tty::MAX_VT).contains(&n) => Ok(Kind::Device(Device::Vt(n), inode.clone())),
            _ => Err(Errno::ENXIO),
        };
    }
    if let Some(Device::Vt(n)) = dev {
        // Opening a vt may make it the caller's controlling terminal (Linux's rule, in
        // `tty::open_file`); `/dev/console` never does (Linux's `noctty` for 5:1).
        let readable = matches!(flags & O_ACCMODE, O_RDONLY | O_RDWR);
        crate::tty::open_file(n, flags & O_NOCTTY != 0, readable)?;
    }
    Ok(match dev {
        Some(d) => Kind::Device(d, inode.clone()),
        None => Kind::Inode(inode.clone()),
    })
}
