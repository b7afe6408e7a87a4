//! Generated files: the building blocks of procfs ([`super::procfs`]) and sysfs
//! ([`super::sysfs`]), Linux's `seq_file` and kernfs attributes in one shape.
//!
//! A generated file ([`GenFile`]) holds no data: its text is made from the kernel's own tables
//! (tasks, run queues, sysctls) when it is read, and a write is handed to the table's setter.
//! A generated directory ([`GenDir`]) lists and looks up its entries when asked: `/proc` lists
//! the processes alive at that moment. The VFS makes an inode for each lookup
//! (`vfs::child`), numbered from its parent's number and its name ([`ino_of`]), so a path
//! looked up twice has one inode number, as `find` and `ls -i` expect.
//!
//! **Contract.** `show` and `store` run in the reading or writing task, with no VFS lock held
//! (the directory's content lock is dropped before `lookup`); they may take the scheduler's
//! and the process layer's locks. A file read in several calls shows one snapshot: the text is
//! made at the read at offset 0 and kept in the open file ([`super::file::Kind::Gen`]), as
//! `seq_file` does, so a reader never sees half of one version and half of another.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// Makes a generated file's text.
pub type Show = Box<dyn Fn() -> Result<String, Errno> + Send + Sync>;
/// Takes a write to a generated file (the written text, whole).
pub type Store = Box<dyn Fn(&str) -> Result<(), Errno> + Send + Sync>;

/// Reads a stream file: at most this many bytes, whether the reader is non-blocking.
pub type PipeRead = Box<dyn Fn(usize, bool) -> Result<Vec<u8>, Errno> + Send + Sync>;

/// A file whose text is made when read.
pub struct GenFile {
    show: Show,
    store: Option<Store>,
    /// Opening with `O_TRUNC` (tracefs's `trace` and `set_event` empty there).
    truncate: Option<Box<dyn Fn() + Send + Sync>>,
    /// A stream rather than a text: every read takes what is new (tracefs `trace_pipe`).
    pipe: Option<PipeRead>,
}

impl GenFile {
    /// A file made by `show`, taking writes through `store` if any.
    pub fn new(show: impl Fn() -> Result<String, Errno> + Send + Sync + 'static, store: Option<Store>) -> GenFile {
        GenFile { show: Box::new(show), store, truncate: None, pipe: None }
    }

    /// The same file, doing `f` when opened with `O_TRUNC`.
    pub fn on_truncate(mut self, f: impl Fn() + Send + Sync + 'static) -> GenFile {
        self.truncate = Some(Box::new(f));
        self
    }

    /// A read-only stream: each read gets `read(max bytes, nonblocking)` (which may sleep).
    pub fn pipe(read: impl Fn(usize, bool) -> Result<Vec<u8>, Errno> + Send + Sync + 'static) -> GenFile {
        GenFile { show: Box::new(|| Err(Errno::EINVAL)), store: None, truncate: None, pipe: Some(Box::new(read)) }
    }

    /// Is it a stream ([`GenFile::pipe`])? Streams do not seek (ESPIPE).
    pub fn is_pipe(&self) -> bool {
        self.pipe.is_some()
    }

    /// A read of a stream: what is new, at most `max` bytes.
    pub fn read_pipe(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        match &self.pipe {
            Some(read) => read(max, nonblock),
            None => Err(Errno::EINVAL),
        }
    }

    /// Opened with `O_TRUNC` (or truncated to 0).
    pub fn truncate(&self) {
        if let Some(f) = &self.truncate {
            f();
        }
    }

    /// Its text now.
    pub fn show(&self) -> Result<Vec<u8>, Errno> {
        (self.show)().map(String::into_bytes)
    }

    /// A write: the whole of `data` goes to the setter (EINVAL if the file takes no writes or
    /// the bytes are not text, as Linux's proc files answer).
    pub fn store(&self, data: &[u8]) -> Result<usize, Errno> {
        let store = self.store.as_ref().ok_or(Errno::EINVAL)?;
        let text = core::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
        store(text)?;
        Ok(data.len())
    }
}

/// A directory whose entries are made when listed or looked up.
pub trait GenDir: Send + Sync {
    /// Its entries now: names and type bits (`S_IFDIR`, `S_IFREG`, `S_IFLNK`).
    fn list(&self) -> Vec<(String, u32)>;
    /// The entry `name`, made now; `None` is ENOENT.
    fn lookup(&self, name: &str) -> Option<Node>;
    /// `mkdir(name)` (`name` is not an entry): the new directory, or why not. Linux's procfs
    /// and sysfs have no mkdir: the lookup before it fails (ENOENT).
    fn mkdir(&self, _name: &str, _perm: u32) -> Result<Node, Errno> {
        Err(Errno::ENOENT)
    }
    /// `rmdir(name)` of an entry that is a directory. Linux's procfs and sysfs: EPERM.
    fn rmdir(&self, _name: &str) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }
    /// What creating a file here answers (`open(O_CREAT)`, `mknod`, `symlink`).
    fn create_error(&self) -> Errno {
        Errno::ENOENT
    }
    /// `chmod` of this directory: a tree that remembers modes keeps it (cgroupfs); others
    /// accept it for the inode at hand only, as before.
    fn set_mode(&self, _perm: u32) -> Result<(), Errno> {
        Ok(())
    }
    /// The pid a `/proc/PID` directory stands for (Linux's `proc_tgid_base_operations`, whose
    /// open directory `pidfd_send_signal` takes as a pidfd); `None` for every other directory,
    /// `/proc/PID/task/TID` included.
    fn tgid_dir(&self) -> Option<u32> {
        None
    }
}

/// One entry of a generated directory.
#[derive(Clone)]
pub enum Node {
    /// A file with these permission bits.
    File(u32, Arc<GenFile>),
    /// A directory with these permission bits.
    Dir(u32, Arc<dyn GenDir>),
    /// A symbolic link to this target.
    Link(String),
}

impl Node {
    /// A read-only file (mode 0444).
    pub fn ro(show: impl Fn() -> Result<String, Errno> + Send + Sync + 'static) -> Node {
        Node::File(0o444, Arc::new(GenFile::new(show, None)))
    }

    /// A file that takes writes (mode 0644).
    pub fn rw(
        show: impl Fn() -> Result<String, Errno> + Send + Sync + 'static,
        store: impl Fn(&str) -> Result<(), Errno> + Send + Sync + 'static,
    ) -> Node {
        Node::File(0o644, Arc::new(GenFile::new(show, Some(Box::new(store)))))
    }

    /// A file that takes writes only (mode 0220; a read is EINVAL, as Linux's `trace_marker`).
    pub fn wo(store: impl Fn(&str) -> Result<(), Errno> + Send + Sync + 'static) -> Node {
        Node::File(0o220, Arc::new(GenFile::new(|| Err(Errno::EINVAL), Some(Box::new(store)))))
    }

    /// A fixed text (mode 0444).
    pub fn text(text: String) -> Node {
        Node::ro(move || Ok(text.clone()))
    }

    /// A directory (mode 0555, as procfs's).
    pub fn dir(d: impl GenDir + 'static) -> Node {
        Node::Dir(0o555, Arc::new(d))
    }

    /// Its type bits.
    pub fn kind(&self) -> u32 {
        match self {
            Node::File(..) => super::vfs::S_IFREG,
            Node::Dir(..) => super::vfs::S_IFDIR,
            Node::Link(_) => super::vfs::S_IFLNK,
        }
    }
}

/// A directory of nodes made once (sysfs's CPU files: the topology does not change after boot).
pub struct Fixed(pub Vec<(String, Node)>);

impl GenDir for Fixed {
    fn list(&self) -> Vec<(String, u32)> {
        self.0.iter().map(|(n, node)| (n.clone(), node.kind())).collect()
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, node)| node.clone())
    }
}

/// Type bits for [`Table::names`].
pub const REG: u32 = super::vfs::S_IFREG;
/// Type bits for [`Table::names`].
pub const DIR: u32 = super::vfs::S_IFDIR;
/// Type bits for [`Table::names`].
pub const LNK: u32 = super::vfs::S_IFLNK;

/// The inode number of `name` in the generated directory numbered `parent`: FNV-1a of both,
/// with bit 62 set so it never meets the ramfs's counter. Stable: the same path always has the
/// same number.
pub fn ino_of(parent: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parent.to_le_bytes().iter().chain(name.as_bytes()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h >> 2) | (1 << 62)
}

/// A CPU mask as Linux's `%*pb` at `nr_cpu_ids` bits: hex, in comma-separated 32-bit groups,
/// the leading group only as wide as its bits need.
pub fn cpumask_hex(mask: cadence_sched::CpuMask) -> String {
    mask.to_hex(crate::percpu::nr_cpus().max(1) as usize)
}
