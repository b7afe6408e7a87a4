//! The mount table: which file system covers which directory (Linux's `struct mount`, flat).
//!
//! A mount hides a directory (its *mountpoint*, named by inode number: a generated directory's
//! inode is made anew at each lookup, but its number is stable) behind the root of another
//! tree. The path walk asks [`covering`] at every step (`vfs::child`), so a mount on a ramfs
//! directory and one on a generated directory (`/sys/fs/cgroup`) behave alike, and mounts
//! stack (the last one on a mountpoint is the one seen). `/proc/mounts` is [`format`] of this
//! table, in mount order.
//!
//! **Lock**: [`MOUNTS`], a leaf spin lock: held only to copy an entry out or to change the
//! table, never across a file system's code.

use super::vfs::{self, Inode};
use crate::sync::SpinLock;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// One mounted tree.
pub struct Mount {
    /// `mount(2)`'s source (the first field of `/proc/mounts`).
    pub source: String,
    /// The mountpoint's absolute path when mounted (the second field).
    pub target: String,
    /// The file system type (`proc`, `cgroup2`, ...).
    pub fstype: &'static str,
    /// The options `/proc/mounts` shows.
    pub options: String,
    /// The covered directory's inode number.
    pub at: u64,
    /// The tree's root directory.
    pub root: Arc<Inode>,
}

static MOUNTS: SpinLock<Vec<Mount>> = SpinLock::new(Vec::new());

/// The root of the last tree mounted on directory number `ino`, if any.
pub fn covering(ino: u64) -> Option<Arc<Inode>> {
    MOUNTS.lock().iter().rev().find(|m| m.at == ino).map(|m| m.root.clone())
}

/// Is directory number `ino` a mountpoint (rmdir and rename refuse it: EBUSY)?
pub fn is_mountpoint(ino: u64) -> bool {
    MOUNTS.lock().iter().any(|m| m.at == ino)
}

/// The mountpoint number of `root`, if it is a mounted tree's root (for `getcwd`).
pub fn mountpoint_of(root: &Arc<Inode>) -> Option<u64> {
    MOUNTS.lock().iter().find(|m| Arc::ptr_eq(&m.root, root)).map(|m| m.at)
}

/// Mounts `root` on directory `at` (already resolved, through any mounts on it).
pub fn attach(source: &str, target: &str, fstype: &'static str, options: &str, at: &Arc<Inode>, root: Arc<Inode>) -> Result<(), Errno> {
    if !at.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let m = Mount { source: source.into(), target: target.into(), fstype, options: options.into(), at: at.ino, root };
    MOUNTS.lock().push(m);
    Ok(())
}

/// Unmounts the tree whose root is `root` (what the target path resolved to). EINVAL if it is
/// no mount's root; EBUSY while another tree is mounted on a directory inside it (the walk
/// would lose its way back) or on it.
pub fn detach(root: &Arc<Inode>) -> Result<(), Errno> {
    let removed = {
        let mut mounts = MOUNTS.lock();
        let i = mounts.iter().rposition(|m| Arc::ptr_eq(&m.root, root)).ok_or(Errno::EINVAL)?;
        let prefix = alloc::format!("{}/", mounts[i].target.trim_end_matches('/'));
        let busy = mounts.iter().enumerate().any(|(j, m)| j > i && (m.at == root.ino || m.target.starts_with(&prefix)));
        if busy {
            return Err(Errno::EBUSY);
        }
        mounts.remove(i)
    };
    drop(removed); // the tree's root, freed with no lock held
    Ok(())
}

/// `/proc/mounts`: one line per mount, `source target type options 0 0`, after the root's.
pub fn format() -> String {
    let mut out = String::from("rootfs / rootfs rw 0 0\n");
    for m in MOUNTS.lock().iter() {
        out.push_str(&alloc::format!("{} {} {} {} 0 0\n", m.source, m.target, m.fstype, m.options));
    }
    out
}

/// Mounts a generated tree at boot (`/proc`, `/sys`, debugfs, tracefs): the mountpoint is
/// made in the ramfs if missing.
pub fn mount_generated(source: &str, target: &str, fstype: &'static str, options: &str, node: super::pseudo::Node) -> Result<(), Errno> {
    let at = vfs::lookup(&vfs::root(), target, true)
        .or_else(|_| vfs::install(target, vfs::S_IFDIR | 0o555, vfs::Content::Dir(Default::default())))?;
    let root = vfs::mount_root(&at, node)?;
    attach(source, target, fstype, options, &at, root)
}
