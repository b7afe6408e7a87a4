//! The VFS: one tree of [`Inode`]s, a writable ramfs whose root is unpacked from the
//! initramfs at boot, with Linux's path walk (`.`, `..`, symbolic links, ELOOP at 40) and
//! errors (ENOENT, ENOTDIR, EISDIR, EEXIST, ENOTEMPTY, ENAMETOOLONG). Devices live in `/dev`
//! as character-device inodes ([`Device`]). `/proc` and `/sys` are generated directories
//! ([`super::pseudo`]) grafted into the tree at boot: their entries are made at each lookup,
//! and the VFS refuses to create or remove any (ENOENT, EPERM; EXDEV to rename across).
//!
//! **Locks.** Each inode's content is behind its own sleeping mutex, taken without letting a
//! fatal signal end the task inside (`lock_uninterruptible`: a process unwinds instead). A
//! directory operation locks the directory, then (for rename) the second directory in address
//! order; file data is copied to and from user memory outside the inode's lock (through a
//! kernel buffer), so the order is inode → nothing, and a page fault never runs under one.

use super::pseudo::{self, GenDir, GenFile, Node};
use crate::mm::page::PageRef;
use crate::sched::wait::{Mutex, MutexGuard};
use alloc::collections::btree_map::Entry;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use spin::Once;

pub use cadence_abi::cpio::{S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG};
/// A block device's type bits (`S_IFBLK`).
pub const S_IFBLK: u32 = 0o060000;
/// Most symbolic links one walk follows (Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINKS: u32 = 40;
/// Longest path (`PATH_MAX`, with its NUL).
pub const PATH_MAX: usize = 4096;
/// Longest name (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// A device's behaviour (character devices, and the disk as a block device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// `/dev/null` (1:3): reads end at once, writes vanish.
    Null,
    /// `/dev/zero` (1:5): reads give zeros, writes vanish.
    Zero,
    /// `/dev/console` (5:1): COM1, through the line discipline (`fs::console`).
    Console,
    /// `/dev/tty` (5:0): the opener's controlling terminal (ENXIO without one).
    Tty,
    /// `/dev/ttyN` (4:N, N = 1..63): the kernel's virtual terminal N (`crate::tty`), through
    /// `fs::vt`.
    Vt(u32),
    /// `/dev/cpu_dma_latency` (10:62): a PM QoS request (a 4-byte latency in µs, or its
    /// text) held while open. Cadence has no CPU idle states deeper than `hlt`, so the
    /// request is recorded, and read back, only.
    CpuDmaLatency,
    /// `/dev/vda` (block 254:0, virtio-blk's dynamic major on Linux 6.1 too): the disk through
    /// the page cache (`fs::blockdev`).
    Vda,
}

impl Device {
    /// Its major and minor numbers.
    pub fn major_minor(self) -> (u32, u32) {
        match self {
            Device::Null => (1, 3),
            Device::Zero => (1, 5),
            Device::Console => (5, 1),
            Device::Tty => (5, 0),
            Device::Vt(n) => (4, n),
            Device::CpuDmaLatency => (10, 62),
            Device::Vda => (254, 0),
        }
    }

    /// Its device number as `st_rdev` holds it (Linux's `new_encode_dev`).
    pub fn rdev(self) -> u64 {
        let (major, minor) = self.major_minor();
        encode_dev(major, minor)
    }
}

/// Linux's `new_encode_dev`: the user-visible `dev_t` (`st_dev`, `st_rdev`, `tty_nr`) of a
/// major and minor number.
pub fn encode_dev(major: u32, minor: u32) -> u64 {
    u64::from(minor & 0xff) | (u64::from(major) << 8) | (u64::from(minor & !0xff) << 12)
}

/// A regular file's bytes: the initramfs's in place until first written, then owned while
/// written inside its size; in frames once it grows or a shared mapping maps it (so the
/// mapping and `read`/`write` see the same memory: a ramfs file's page cache is the file).
///
/// A file grows only in frames, page by page, sparse (a page never written takes no memory),
/// as tmpfs: a write or truncate far past the end costs what it writes, and growth never
/// takes the kernel heap (whose exhaustion the kernel cannot survive), only frames, whose
/// shortage is the writer's ENOSPC.
pub enum FileData {
    /// Still the archive's bytes.
    Static(&'static [u8]),
    /// Written since boot, never past its size.
    Owned(Vec<u8>),
    /// In page frames (a page never written is absent and reads as zeros).
    Paged {
        /// The frames by page index.
        pages: BTreeMap<u64, PageRef>,
        /// The size in bytes.
        len: u64,
    },
}

/// The largest file size (Linux's `MAX_LFS_FILESIZE` on 64-bit, tmpfs's `s_maxbytes`): a
/// write or truncate past it is EFBIG.
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

const PAGE: u64 = 4096;

impl FileData {
    /// The size in bytes.
    pub fn len(&self) -> u64 {
        match self {
            FileData::Static(b) => b.len() as u64,
            FileData::Owned(v) => v.len() as u64,
            FileData::Paged { len, .. } => *len,
        }
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies bytes at `offset` into `buf`; the count (0 at or past the end).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> usize {
        let len = self.len();
        let start = offset.min(len);
        let n = (buf.len() as u64).min(len - start) as usize;
        match self {
            FileData::Static(b) => buf[..n].copy_from_slice(&b[start as usize..start as usize + n]),
            FileData::Owned(v) => buf[..n].copy_from_slice(&v[start as usize..start as usize + n]),
            FileData::Paged { pages, .. } => {
                let mut done = 0;
                while done < n {
                    let at = start + done as u64;
                    let (idx, off) = (at / PAGE, (at % PAGE) as usize);
                    let k = (PAGE as usize - off).min(n - done);
                    match pages.get(&idx) {
                        Some(p) => p.read_at(off, &mut buf[done..done + k]),
                        None => buf[done..done + k].fill(0),
                    }
                    done += k;
                }
            }
        }
        n
    }

    /// The bytes, to change inside the size (copied out of the archive the first time);
    /// `None` once paged.
    fn owned(&mut self) -> Option<&mut Vec<u8>> {
        if let FileData::Static(b) = self {
            *self = FileData::Owned(b.to_vec());
        }
        match self {
            FileData::Owned(v) => Some(v),
            _ => None,
        }
    }

    /// Moves the bytes to frames (ENOSPC if there are not enough); the page map.
    fn paged(&mut self) -> Result<&mut BTreeMap<u64, PageRef>, Errno> {
        if !matches!(self, FileData::Paged { .. }) {
            let len = self.len();
            let mut pages = BTreeMap::new();
            for i in 0..len.div_ceil(PAGE) {
                let mut buf = [0u8; PAGE as usize];
                let got = self.read_at(i * PAGE, &mut buf);
                if buf[..got].iter().any(|&b| b != 0) {
                    let frame = PageRef::alloc().ok_or(Errno::ENOSPC)?;
                    frame.write_at(0, &buf[..got]);
                    pages.insert(i, frame);
                }
            }
            *self = FileData::Paged { pages, len };
        }
        let FileData::Paged { pages, .. } = self else { unreachable!("made paged above") };
        Ok(pages)
    }

    /// Writes `data` at `offset`, growing the file (EFBIG past [`MAX_FILE_SIZE`], ENOSPC
    /// without frames).
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let end = offset.checked_add(data.len() as u64).filter(|&e| e <= MAX_FILE_SIZE).ok_or(Errno::EFBIG)?;
        if end <= self.len() {
            if let Some(v) = self.owned() {
                v[offset as usize..end as usize].copy_from_slice(data);
                return Ok(());
            }
        }
        let pages = self.paged()?;
        let mut done = 0;
        while done < data.len() {
            let at = offset + done as u64;
            let (idx, off) = (at / PAGE, (at % PAGE) as usize);
            let k = (PAGE as usize - off).min(data.len() - done);
            if let Entry::Vacant(e) = pages.entry(idx) {
                e.insert(PageRef::alloc().ok_or(Errno::ENOSPC)?);
            }
            pages[&idx].write_at(off, &data[done..done + k]);
            done += k;
        }
        let FileData::Paged { len, .. } = self else { unreachable!("paged above") };
        *len = (*len).max(end);
        Ok(())
    }

    /// Sets the size (EFBIG past [`MAX_FILE_SIZE`]); bytes past a shrink read as zero if the
    /// file grows again.
    pub fn truncate(&mut self, new_len: u64) -> Result<(), Errno> {
        if new_len > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        if new_len <= self.len() {
            if let Some(v) = self.owned() {
                v.truncate(new_len as usize);
                return Ok(());
            }
        }
        let pages = self.paged()?;
        let keep = new_len.div_ceil(PAGE);
        drop(pages.split_off(&keep));
        if !new_len.is_multiple_of(PAGE) {
            if let Some(p) = pages.get(&(keep - 1)) {
                let off = (new_len % PAGE) as usize;
                p.write_at(off, &[0u8; PAGE as usize][..PAGE as usize - off]);
            }
        }
        let FileData::Paged { len, .. } = self else { unreachable!("paged above") };
        *len = new_len;
        Ok(())
    }

    /// The frame of page `index` for a shared mapping (the file moves to frames the first
    /// time; a page inside the file never written gets a zeroed frame). `None` past the end
    /// (a shared mapping's access there is SIGBUS, as Linux's).
    pub fn shared_page(&mut self, index: u64) -> Result<Option<PageRef>, Errno> {
        if index >= self.len().div_ceil(PAGE) {
            return Ok(None);
        }
        let pages = self.paged().map_err(|_| Errno::ENOMEM)?;
        if let Entry::Vacant(e) = pages.entry(index) {
            e.insert(PageRef::alloc().ok_or(Errno::ENOMEM)?);
        }
        Ok(pages.get(&index).cloned())
    }
}

/// What an inode holds.
pub enum Content {
    /// Entries by name (no `.` or `..`: the walk makes those).
    Dir(BTreeMap<String, Arc<Inode>>),
    /// A regular file.
    File(FileData),
    /// A symbolic link's target.
    Symlink(String),
    /// A character or block device.
    Device(Device),
    /// A generated file (procfs, sysfs: [`super::pseudo`]).
    Gen(Arc<GenFile>),
    /// A generated directory.
    GenDir(Arc<dyn GenDir>),
}

/// One file of the tree.
pub struct Inode {
    /// Its number (`st_ino`).
    pub ino: u64,
    /// `st_mode`: type and permission bits.
    pub mode: AtomicU32,
    /// Hard links to it (directories: 2 + subdirectories, as Linux counts).
    pub nlink: AtomicU32,
    /// Last modification, ns since boot (`st_mtime`).
    pub mtime_ns: AtomicU64,
    /// The directory holding it (the root's is itself).
    parent: Mutex<Weak<Inode>>,
    /// A generated inode's directory, held: nothing else keeps a generated directory's
    /// inode alive, and `..` from it must still lead up.
    up: Option<Arc<Inode>>,
    /// Its content.
    content: Mutex<Content>,
    /// Linux's `i_writecount`: open files that may write it (> 0), or address spaces whose
    /// program it is (< 0, one each): a running program's file cannot be opened for writing
    /// or truncated, nor a file open for writing run (ETXTBSY).
    write_count: AtomicI32,
}

static NEXT_INO: AtomicU64 = AtomicU64::new(2);
static ROOT: Once<Arc<Inode>> = Once::new();

impl Inode {
    fn new(mode: u32, content: Content, parent: Weak<Inode>) -> Arc<Inode> {
        let nlink = if mode & S_IFMT == S_IFDIR { 2 } else { 1 };
        Arc::new(Inode {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            mode: AtomicU32::new(mode),
            nlink: AtomicU32::new(nlink),
            mtime_ns: AtomicU64::new(crate::time::uptime_ns()),
            parent: Mutex::new(parent),
            up: None,
            content: Mutex::new(content),
            write_count: AtomicI32::new(0),
        })
    }

    /// The inode for generated entry `name` of generated directory `dir`, made at each lookup
    /// (numbered by [`pseudo::ino_of`]: the same path, the same number).
    fn generated(dir: &Arc<Inode>, name: &str, node: Node) -> Arc<Inode> {
        let (mode, content) = match node {
            Node::File(perm, f) => (S_IFREG | perm, Content::Gen(f)),
            Node::Dir(perm, d) => (S_IFDIR | perm, Content::GenDir(d)),
            Node::Link(t) => (S_IFLNK | 0o777, Content::Symlink(t)),
        };
        Arc::new(Inode {
            ino: pseudo::ino_of(dir.ino, name),
            mode: AtomicU32::new(mode),
            nlink: AtomicU32::new(if mode & S_IFMT == S_IFDIR { 2 } else { 1 }),
            mtime_ns: AtomicU64::new(crate::time::uptime_ns()),
            parent: Mutex::new(Arc::downgrade(dir)),
            up: Some(dir.clone()),
            content: Mutex::new(content),
            write_count: AtomicI32::new(0),
        })
    }

    /// A mounted tree's root over directory `at`: a number of its own, `..` leading to `at`'s
    /// parent (held, as a generated inode's).
    fn root_on(at: &Arc<Inode>, mode: u32, content: Content) -> Arc<Inode> {
        let up = at.parent();
        Arc::new(Inode {
            ino: NEXT_INO.fetch_add(1, Ordering::Relaxed),
            mode: AtomicU32::new(mode),
            nlink: AtomicU32::new(2),
            mtime_ns: AtomicU64::new(crate::time::uptime_ns()),
            parent: Mutex::new(Arc::downgrade(&up)),
            up: Some(up),
            content: Mutex::new(content),
            write_count: AtomicI32::new(0),
        })
    }

    /// Linux's `get_write_access`: one more writer, unless a running program's file (ETXTBSY).
    pub fn get_write_access(&self) -> Result<(), Errno> {
        self.write_count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n >= 0).then_some(n + 1))
            .map(|_| ())
            .map_err(|_| Errno::ETXTBSY)
    }

    /// Linux's `put_write_access`: a writer [`Inode::get_write_access`] let in is gone.
    pub fn put_write_access(&self) {
        self.write_count.fetch_sub(1, Ordering::AcqRel);
    }

    /// Linux's `deny_write_access`: the file becomes a running program's, unless open for
    /// writing (ETXTBSY).
    pub fn deny_write_access(&self) -> Result<(), Errno> {
        self.write_count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n <= 0).then_some(n - 1))
            .map(|_| ())
            .map_err(|_| Errno::ETXTBSY)
    }

    /// Linux's `allow_write_access`: one address space running it is gone.
    pub fn allow_write_access(&self) {
        self.write_count.fetch_add(1, Ordering::AcqRel);
    }

    /// Is it a generated directory (procfs, sysfs), whose entries the VFS cannot add or remove?
    pub fn is_generated_dir(&self) -> bool {
        matches!(&*self.lock(), Content::GenDir(_))
    }

    /// The content, locked (module doc).
    pub fn lock(&self) -> MutexGuard<'_, Content> {
        self.content.lock_uninterruptible()
    }

    /// The file type bits.
    pub fn kind(&self) -> u32 {
        self.mode.load(Ordering::Relaxed) & S_IFMT
    }

    /// Is it a directory?
    pub fn is_dir(&self) -> bool {
        self.kind() == S_IFDIR
    }

    /// The directory holding it.
    pub fn parent(self: &Arc<Self>) -> Arc<Inode> {
        if let Some(up) = &self.up {
            return up.clone();
        }
        self.parent.lock_uninterruptible().upgrade().unwrap_or_else(|| self.clone())
    }

    /// A regular file's size, a symlink's target length, 0 otherwise (`st_size`).
    pub fn size(&self) -> u64 {
        match &*self.lock() {
            Content::File(d) => d.len(),
            Content::Symlink(t) => t.len() as u64,
            // Generated files have no size until read, as Linux's proc files.
            Content::Dir(_) | Content::Device(_) | Content::Gen(_) | Content::GenDir(_) => 0,
        }
    }

    /// Reads a regular file's bytes at `offset` into `buf`; the count read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        match &*self.lock() {
            Content::File(d) => Ok(d.read_at(offset, buf)),
            Content::Gen(g) => {
                let text = g.show()?;
                let from = usize::try_from(offset).unwrap_or(usize::MAX).min(text.len());
                let n = buf.len().min(text.len() - from);
                buf[..n].copy_from_slice(&text[from..from + n]);
                Ok(n)
            }
            Content::Dir(_) | Content::GenDir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Writes `data` at `offset` (zero-filling a gap); the count written.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<usize, Errno> {
        offset.checked_add(data.len() as u64).filter(|&e| e <= MAX_FILE_SIZE).ok_or(Errno::EFBIG)?;
        match &mut *self.lock() {
            Content::File(d) => {
                d.write_at(offset, data)?;
                self.mtime_ns.store(crate::time::uptime_ns(), Ordering::Relaxed);
                Ok(data.len())
            }
            // A generated file takes each write whole, wherever it lands (Linux's proc files
            // ignore the offset of most writes too).
            Content::Gen(g) => g.store(data),
            Content::Dir(_) | Content::GenDir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Sets a regular file's size (`truncate`).
    pub fn truncate(&self, len: u64) -> Result<(), Errno> {
        if len > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        match &mut *self.lock() {
            Content::File(d) => {
                d.truncate(len)?;
                self.mtime_ns.store(crate::time::uptime_ns(), Ordering::Relaxed);
                Ok(())
            }
            // `echo 1 > /proc/sys/...` opens with O_TRUNC: nothing to cut; tracefs's `trace`
            // empties the rings.
            Content::Gen(g) => {
                if len == 0 {
                    g.truncate();
                }
                Ok(())
            }
            Content::Dir(_) | Content::GenDir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    /// Page `index` of a regular file for a shared mapping (see [`FileData::shared_page`]).
    pub fn shared_page(&self, index: u64) -> Result<Option<PageRef>, Errno> {
        match &mut *self.lock() {
            Content::File(d) => d.shared_page(index),
            _ => Err(Errno::ENODEV),
        }
    }
}

/// The root directory.
pub fn root() -> Arc<Inode> {
    ROOT.call_once(|| Inode::new(S_IFDIR | 0o755, Content::Dir(BTreeMap::new()), Weak::new())).clone()
}

fn check_name(name: &str) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(())
}

/// Looks `name` up in directory `dir` (`.` and `..` included).
pub fn child(dir: &Arc<Inode>, name: &str) -> Result<Arc<Inode>, Errno> {
    check_name(name)?;
    match name {
        "" | "." => Ok(dir.clone()),
        ".." => Ok(dir.parent()),
        _ => {
            let gen = match &*dir.lock() {
                Content::Dir(m) => Err(m.get(name).cloned().ok_or(Errno::ENOENT)?),
                Content::GenDir(d) => Ok(d.clone()),
                _ => return Err(Errno::ENOTDIR),
            };
            let found = match gen {
                Err(inode) => inode,
                // Made with the directory unlocked (the contract in `pseudo`).
                Ok(gen) => Inode::generated(dir, name, gen.lookup(name).ok_or(Errno::ENOENT)?),
            };
            Ok(covered(found))
        }
    }
}

/// What the walk sees at `inode`: the root of the last tree mounted on it, through stacked
/// mounts, or `inode` itself.
fn covered(mut inode: Arc<Inode>) -> Arc<Inode> {
    // Bounded: each step moves to a root mounted later than the last.
    for _ in 0..64 {
        match super::mount::covering(inode.ino) {
            Some(root) if !Arc::ptr_eq(&root, &inode) => inode = root,
            _ => break,
        }
    }
    inode
}

/// A new tree's root, to be mounted on directory `at` (`mount(2)`): a generated directory
/// (procfs, cgroupfs, ...) or, for [`Node::Link`]-free empty trees, see [`empty_root`]. Its
/// `..` is `at`'s parent, as a mount root's is on Linux.
pub fn mount_root(at: &Arc<Inode>, node: Node) -> Result<Arc<Inode>, Errno> {
    let Node::Dir(perm, d) = node else { return Err(Errno::ENOTDIR) };
    Ok(Inode::root_on(at, S_IFDIR | perm, Content::GenDir(d)))
}

/// An empty ramfs tree's root (`mount -t tmpfs`), to be mounted on directory `at`.
pub fn empty_root(at: &Arc<Inode>, perm: u32) -> Arc<Inode> {
    Inode::root_on(at, S_IFDIR | perm, Content::Dir(BTreeMap::new()))
}

/// Walks `path` from `cwd` (absolute paths from the root). `follow`: follow a symbolic link
/// in the last component too (`stat` does, `lstat` does not).
pub fn lookup(cwd: &Arc<Inode>, path: &str, follow: bool) -> Result<Arc<Inode>, Errno> {
    let mut links = 0;
    walk(cwd, path, follow, &mut links)
}

fn walk(cwd: &Arc<Inode>, path: &str, follow: bool, links: &mut u32) -> Result<Arc<Inode>, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    // A trailing slash asks for a directory: a symlink there is followed even by lstat.
    let follow = follow || path.ends_with('/');
    let mut at = if path.starts_with('/') { root() } else { cwd.clone() };
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    for (i, c) in comps.iter().enumerate() {
        let last = i + 1 == comps.len();
        if !at.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let next = child(&at, c)?;
        if next.kind() == S_IFLNK && (!last || follow) {
            *links += 1;
            if *links > MAX_SYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = match &*next.lock() {
                Content::Symlink(t) => t.clone(),
                _ => unreachable!("a symlink's content"),
            };
            at = walk(&at, &target, true, links)?;
        } else {
            at = next;
        }
    }
    // A trailing slash asks for a directory.
    if path.ends_with('/') && !at.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(at)
}

/// The directory that would hold `path`'s last component, and that component (for
/// creating, removing and renaming). EEXIST-free: the caller checks the name.
pub fn parent_of<'a>(cwd: &Arc<Inode>, path: &'a str) -> Result<(Arc<Inode>, &'a str), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        // "/" itself.
        return Ok((root(), "."));
    }
    let (dir, name) = match trimmed.rfind('/') {
        Some(0) => ("/", &trimmed[1..]),
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (".", trimmed),
    };
    check_name(name)?;
    let d = lookup(cwd, dir, true)?;
    if !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok((d, name))
}

/// What stands for each byte of a user's path that is not UTF-8 (`syscall::fs::user_path`):
/// NUL, which no name holds, so such a name is never found and never made.
pub const UNREPRESENTABLE: char = '\0';

/// Creates `name` in `dir` holding `content` with `mode`; EEXIST if the name is taken, EINVAL
/// for a name (or a symlink's target) with bytes Cadence's string names cannot hold
/// ([`UNREPRESENTABLE`]: open(2)'s "invalid for the underlying filesystem").
pub fn create(dir: &Arc<Inode>, name: &str, mode: u32, content: Content) -> Result<Arc<Inode>, Errno> {
    if name == "." || name == ".." {
        return Err(Errno::EEXIST);
    }
    check_name(name)?;
    if name.contains(UNREPRESENTABLE) || matches!(&content, Content::Symlink(t) if t.contains(UNREPRESENTABLE)) {
        return Err(Errno::EINVAL);
    }
    let gen = match &*dir.lock() {
        Content::GenDir(d) => Some(d.clone()),
        _ => None,
    };
    if let Some(gen) = gen {
        // procfs and sysfs have no create or mkdir (the lookup before them fails, as on
        // Linux); cgroupfs makes a group for a mkdir.
        if gen.lookup(name).is_some() {
            return Err(Errno::EEXIST);
        }
        if mode & S_IFMT != S_IFDIR {
            return Err(gen.create_error());
        }
        let node = gen.mkdir(name, mode & 0o7777)?;
        return Ok(Inode::generated(dir, name, node));
    }
    let is_dir = mode & S_IFMT == S_IFDIR;
    let node = Inode::new(mode, content, Arc::downgrade(dir));
    match &mut *dir.lock() {
        Content::Dir(m) => {
            if m.contains_key(name) {
                return Err(Errno::EEXIST);
            }
            // A removed directory takes no new entries (Linux's IS_DEADDIR: ENOENT), so
            // nothing is made where no path reaches (a process's cwd after its rmdir).
            if is_dead(dir) {
                return Err(Errno::ENOENT);
            }
            m.insert(name.to_string(), node.clone());
        }
        _ => return Err(Errno::ENOTDIR),
    }
    if is_dir {
        dir.nlink.fetch_add(1, Ordering::Relaxed);
    }
    dir.mtime_ns.store(crate::time::uptime_ns(), Ordering::Relaxed);
    Ok(node)
}

/// Removes `name` from `dir`: a directory only if `rmdir` (and then only if empty), a
/// non-directory only if not (Linux's `unlink` / `rmdir` errors).
pub fn remove(dir: &Arc<Inode>, name: &str, rmdir: bool) -> Result<(), Errno> {
    match name {
        "." => return Err(if rmdir { Errno::EINVAL } else { Errno::EISDIR }),
        ".." => return Err(if rmdir { Errno::ENOTEMPTY } else { Errno::EISDIR }),
        _ => {}
    }
    let gen = match &*dir.lock() {
        Content::GenDir(d) => Some(d.clone()),
        _ => None,
    };
    if let Some(gen) = gen {
        let node = child(dir, name)?;
        if super::mount::mountpoint_of(&node).is_some() {
            return Err(Errno::EBUSY);
        }
        return match (node.is_dir(), rmdir) {
            (true, true) => gen.rmdir(name),
            (false, true) => Err(Errno::ENOTDIR),
            // Linux's procfs, sysfs and cgroupfs have no unlink.
            _ => Err(Errno::EPERM),
        };
    }
    let mut guard = dir.lock();
    let Content::Dir(m) = &mut *guard else { return Err(Errno::ENOTDIR) };
    let node = m.get(name).cloned().ok_or(Errno::ENOENT)?;
    if super::mount::is_mountpoint(node.ino) {
        return Err(Errno::EBUSY);
    }
    match (node.is_dir(), rmdir) {
        (true, false) => return Err(Errno::EISDIR),
        (false, true) => return Err(Errno::ENOTDIR),
        (true, true) => {
            // Empty, and dead from here on: the check and the count change under the
            // directory's own lock, which `create` and `rename` take to add an entry.
            let content = node.lock();
            if matches!(&*content, Content::Dir(c) if !c.is_empty()) {
                return Err(Errno::ENOTEMPTY);
            }
            node.nlink.fetch_sub(2, Ordering::Relaxed);
            drop(content);
            dir.nlink.fetch_sub(1, Ordering::Relaxed);
        }
        (false, false) => {
            node.nlink.fetch_sub(1, Ordering::Relaxed);
        }
    }
    m.remove(name);
    dir.mtime_ns.store(crate::time::uptime_ns(), Ordering::Relaxed);
    Ok(())
}

/// Has directory `dir` been removed (rmdir: no name reaches it)? Read under its lock, which
/// `remove` holds while it empties-checks and unlinks it.
pub fn is_dead(dir: &Inode) -> bool {
    dir.is_dir() && dir.nlink.load(Ordering::Relaxed) == 0
}

/// Is `a` the same as, or an ancestor of, `b`? (The walk up from inside a mounted tree meets
/// that tree's root before it steps to the mountpoint's parent: `mount::detach` asks whether a
/// mountpoint is inside a tree.)
pub fn is_ancestor(a: &Arc<Inode>, b: &Arc<Inode>) -> bool {
    let mut at = b.clone();
    loop {
        if Arc::ptr_eq(&at, a) {
            return true;
        }
        let up = at.parent();
        if Arc::ptr_eq(&up, &at) {
            return false;
        }
        at = up;
    }
}

/// `rename(from_dir/from, to_dir/to)` with Linux's rules: a directory may replace only an empty
/// directory, a non-directory only a non-directory, and a directory cannot move into itself.
pub fn rename(from_dir: &Arc<Inode>, from: &str, to_dir: &Arc<Inode>, to: &str) -> Result<(), Errno> {
    if [from, to].iter().any(|n| *n == "." || *n == "..") {
        return Err(Errno::EBUSY);
    }
    let node = child(from_dir, from)?;
    if to.contains(UNREPRESENTABLE) {
        return Err(Errno::EINVAL);
    }
    if super::mount::mountpoint_of(&node).is_some() {
        return Err(Errno::EBUSY);
    }
    match (from_dir.is_generated_dir(), to_dir.is_generated_dir()) {
        (false, false) => {}
        // Generated trees are file systems of their own on Linux.
        (true, true) => return Err(Errno::EPERM),
        _ => return Err(Errno::EXDEV),
    }
    if node.is_dir() && is_ancestor(&node, to_dir) {
        return Err(Errno::EINVAL);
    }
    if let Ok(existing) = child(to_dir, to) {
        if Arc::ptr_eq(&existing, &node) {
            return Ok(());
        }
        match (node.is_dir(), existing.is_dir()) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            _ => {}
        }
        remove(to_dir, to, existing.is_dir())?;
    }
    // Take the entry out, then put it in: two locks, never both (module doc).
    match &mut *from_dir.lock() {
        Content::Dir(m) => {
            m.remove(from);
        }
        _ => return Err(Errno::ENOTDIR),
    }
    match &mut *to_dir.lock() {
        Content::Dir(m) if !is_dead(to_dir) => {
            m.insert(to.to_string(), node.clone());
        }
        Content::Dir(_) => {
            // The target directory was removed meanwhile: put the entry back (ENOENT).
            if let Content::Dir(m) = &mut *from_dir.lock() {
                m.insert(from.to_string(), node.clone());
            }
            return Err(Errno::ENOENT);
        }
        _ => return Err(Errno::ENOTDIR),
    }
    if node.is_dir() && !Arc::ptr_eq(from_dir, to_dir) {
        from_dir.nlink.fetch_sub(1, Ordering::Relaxed);
        to_dir.nlink.fetch_add(1, Ordering::Relaxed);
    }
    *node.parent.lock_uninterruptible() = Arc::downgrade(to_dir);
    Ok(())
}

/// The absolute path of directory `dir` (`getcwd`).
pub fn path_of(dir: &Arc<Inode>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut at = dir.clone();
    loop {
        let up = at.parent();
        if Arc::ptr_eq(&up, &at) {
            break;
        }
        // A mounted tree's root goes by its mountpoint's entry (the bottom one's, when trees
        // are stacked on one mountpoint).
        let ino = super::mount::entry_of(&at).unwrap_or(at.ino);
        let gen = match &*up.lock() {
            Content::Dir(m) => Err(m.iter().find(|(_, v)| Arc::ptr_eq(v, &at) || v.ino == ino).map(|(k, _)| k.clone())),
            Content::GenDir(d) => Ok(d.clone()),
            _ => Err(None),
        };
        // A generated entry is found by its number, which its name makes.
        let name = match gen {
            Err(name) => name,
            Ok(d) => d.list().into_iter().map(|(n, _)| n).find(|n| pseudo::ino_of(up.ino, n) == ino),
        };
        parts.push(name.unwrap_or_else(|| String::from("(unreachable)")));
        at = up;
    }
    parts.reverse();
    alloc::format!("/{}", parts.join("/"))
}

/// A directory's entries for `getdents64`: `.`, `..`, then the names in order, each with its
/// inode number and type.
pub fn entries(dir: &Arc<Inode>) -> Result<Vec<(u64, u32, String)>, Errno> {
    let mut out = alloc::vec![(dir.ino, S_IFDIR, String::from(".")), (dir.parent().ino, S_IFDIR, String::from(".."))];
    let gen = match &*dir.lock() {
        Content::Dir(m) => {
            out.extend(m.iter().map(|(k, v)| (v.ino, v.kind(), k.clone())));
            return Ok(out);
        }
        Content::GenDir(d) => d.clone(),
        _ => return Err(Errno::ENOTDIR),
    };
    out.extend(gen.list().into_iter().map(|(name, kind)| (pseudo::ino_of(dir.ino, &name), kind, name)));
    Ok(out)
}

/// Makes `path` (absolute, intermediate directories too) hold `content` (the initramfs and
/// `/dev` at boot). An existing entry is replaced.
pub fn install(path: &str, mode: u32, content: Content) -> Result<Arc<Inode>, Errno> {
    let mut dir = root();
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    let Some((last, dirs)) = comps.split_last() else { return Ok(root()) };
    for c in dirs {
        dir = match child(&dir, c) {
            Ok(d) if d.is_dir() => d,
            _ => {
                let _ = remove(&dir, c, false);
                create(&dir, c, S_IFDIR | 0o755, Content::Dir(BTreeMap::new()))?
            }
        };
    }
    if mode & S_IFMT == S_IFDIR {
        if let Ok(d) = child(&dir, last) {
            if d.is_dir() {
                d.mode.store(mode, Ordering::Relaxed);
                return Ok(d);
            }
        }
    }
    if let Ok(old) = child(&dir, last) {
        remove(&dir, last, old.is_dir())?;
    }
    create(&dir, last, mode, content)
}
