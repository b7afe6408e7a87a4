//! The mount table: which file system covers which directory (Linux's `struct mount`, flat).
//!
//! A mount hides a directory (its *mountpoint*, named by inode number: a generated directory's
//! inode is made anew at each lookup, but its number is stable) behind the root of another
//! tree. The path walk asks [`covering`] at every step (`vfs::child`), so a mount on a ramfs
//! directory and one on a generated directory (`/sys/fs/cgroup`) behave alike, and mounts
//! stack (the last one on a mountpoint is the one seen). `/proc/mounts` is [`format`] of this
//! table, in mount order.
//!
//! **Locks**: [`MOUNT_OPS`], a sleeping mutex taken first by `attach` and `detach` (one
//! change of the table at a time, and none while `detach` decides whether a tree is busy);
//! [`MOUNTS`], a leaf spin lock: held only to copy entries out or to change the table, never
//! across a file system's code or an inode's lock (naming a mountpoint for `/proc/mounts`
//! walks the tree with the table unlocked).

use super::vfs::{self, Inode};
use crate::sched::wait::Mutex;
use crate::sync::SpinLock;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;

/// One mounted tree.
pub struct Mount {
    /// `mount(2)`'s source (the first field of `/proc/mounts`).
    pub source: String,
    /// The covered directory (what the walk reached when mounting): `/proc/mounts` names it
    /// by its path at the time of reading, as Linux's `d_path`, so a rename of a directory
    /// above it shows.
    pub mountpoint: Arc<Inode>,
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
/// Serializes mounting and unmounting (Linux's `namespace_sem`): `detach` decides with the
/// table unlocked whether a tree is busy, and nothing may be mounted inside it meanwhile.
static MOUNT_OPS: Mutex<()> = Mutex::new(());

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

/// The number of the directory entry under which the walk reaches `root`: through stacked
/// mounts (a tree mounted on another tree's root), the mountpoint of the bottom one; `None` if
/// `root` is no mounted tree's root (`path_of`).
pub fn entry_of(root: &Arc<Inode>) -> Option<u64> {
    let mounts = MOUNTS.lock();
    let mut at = mounts.iter().find(|m| Arc::ptr_eq(&m.root, root))?.at;
    // Bounded: each step goes to a mount made before the last (a root exists before a tree
    // is mounted on it).
    for _ in 0..mounts.len() {
        match mounts.iter().find(|m| m.root.ino == at) {
            Some(m) => at = m.at,
            None => break,
        }
    }
    Some(at)
}

/// Mounts `root` on directory `at` (already resolved, through any mounts on it).
pub fn attach(source: &str, fstype: &'static str, options: &str, at: &Arc<Inode>, root: Arc<Inode>) -> Result<(), Errno> {
    if !at.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let m = Mount { source: source.into(), mountpoint: at.clone(), fstype, options: options.into(), at: at.ino, root };
    let _ops = MOUNT_OPS.lock_uninterruptible();
    MOUNTS.lock().push(m);
    Ok(())
}

/// Unmounts the tree whose root is `root` (what the target path resolved to: the top one of
/// a stack). EINVAL if it is no mount's root; EBUSY while another tree is mounted on it or on
/// a directory inside it (Linux's `propagate_mount_busy` without propagation) unless `lazy`
/// (`MNT_DETACH`, Linux's `umount_tree`): then those trees go with it, wherever they are.
pub fn detach(root: &Arc<Inode>, lazy: bool) -> Result<(), Errno> {
    let _ops = MOUNT_OPS.lock_uninterruptible();
    // The other mounts, looked at with the table unlocked (the walk up takes the inodes'
    // locks); MOUNT_OPS keeps the table as it is meanwhile.
    let others: Vec<(Arc<Inode>, Arc<Inode>)> = {
        let mounts = MOUNTS.lock();
        if !mounts.iter().any(|m| Arc::ptr_eq(&m.root, root)) {
            return Err(Errno::EINVAL);
        }
        mounts.iter().filter(|m| !Arc::ptr_eq(&m.root, root)).map(|m| (m.mountpoint.clone(), m.root.clone())).collect()
    };
    // The trees inside this one, then those inside them, ... (`lazy`), or the first (busy).
    let mut going: Vec<Arc<Inode>> = alloc::vec![root.clone()];
    let mut i = 0;
    while i < going.len() {
        for (mountpoint, r) in &others {
            if !going.iter().any(|g| Arc::ptr_eq(g, r)) && vfs::is_ancestor(&going[i], mountpoint) {
                if !lazy {
                    return Err(Errno::EBUSY);
                }
                going.push(r.clone());
            }
        }
        i += 1;
    }
    let removed: Vec<Mount> = {
        let mut mounts = MOUNTS.lock();
        let mut out = Vec::new();
        // The top of `root`'s stack, and every mount of the trees inside.
        if let Some(top) = mounts.iter().rposition(|m| Arc::ptr_eq(&m.root, root)) {
            out.push(mounts.remove(top));
        }
        for g in &going[1..] {
            if let Some(k) = mounts.iter().position(|m| Arc::ptr_eq(&m.root, g)) {
                out.push(mounts.remove(k));
            }
        }
        out
    };
    drop(others);
    drop(removed); // the trees' roots, freed with no lock held
    Ok(())
}

/// `/proc/mounts`: one line per mount, `source target type options 0 0`, after the root's.
pub fn format() -> String {
    let mut out = String::from("rootfs / rootfs rw 0 0\n");
    // Copied out first: naming a mountpoint walks the tree (its locks, and this table's).
    let mounts: Vec<(String, Arc<Inode>, &'static str, String)> =
        MOUNTS.lock().iter().map(|m| (m.source.clone(), m.mountpoint.clone(), m.fstype, m.options.clone())).collect();
    for (source, mountpoint, fstype, options) in mounts {
        out.push_str(&alloc::format!("{} {} {} {} 0 0\n", source, vfs::path_of(&mountpoint), fstype, options));
    }
    out
}

/// Mounts a generated tree at boot (`/proc`, `/sys`, debugfs, tracefs): the mountpoint is
/// made in the ramfs if missing.
pub fn mount_generated(source: &str, target: &str, fstype: &'static str, options: &str, node: super::pseudo::Node) -> Result<(), Errno> {
    let at = vfs::lookup(&vfs::root(), target, true)
        .or_else(|_| vfs::install(target, vfs::S_IFDIR | 0o555, vfs::Content::Dir(Default::default())))?;
    let root = vfs::mount_root(&at, node)?;
    attach(source, fstype, options, &at, root)
}
