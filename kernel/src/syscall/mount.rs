//! Mounting (Linux `fs/namespace.c`): `mount(2)` and `umount2(2)` over the mount table
//! (`fs::mount`). The file systems: `proc`, `sysfs`, `cgroup2`, `cgroup` (the v1 `cpu`
//! controller), `debugfs`, `tracefs` (the kernel's generated trees) and `tmpfs` / `ramfs`
//! (an empty ramfs tree). Bind and move mounts are not supported (EINVAL); propagation
//! changes (`--make-private` ...) succeed and change nothing (there is one mount namespace).

use super::fs::{base, user_path};
use super::{ok, Outcome};
use crate::fs::mount;
use crate::fs::vfs;
use crate::process::Thread;
use alloc::string::String;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use framework::user::UserContext;

const MS_RDONLY: u64 = 1;
const MS_NOSUID: u64 = 2;
const MS_NODEV: u64 = 4;
const MS_NOEXEC: u64 = 8;
const MS_REMOUNT: u64 = 32;
const MS_BIND: u64 = 4096;
const MS_MOVE: u64 = 8192;
const MS_NOATIME: u64 = 1024;
/// MS_UNBINDABLE, MS_PRIVATE, MS_SLAVE, MS_SHARED.
const MS_PROPAGATION: u64 = (1 << 17) | (1 << 18) | (1 << 19) | (1 << 20);
const MS_MGC_MSK: u64 = 0xffff_0000;
const MS_MGC_VAL: u64 = 0xc0ed_0000;

const MNT_FORCE: u64 = 1;
const MNT_DETACH: u64 = 2;
const MNT_EXPIRE: u64 = 4;
const UMOUNT_NOFOLLOW: u64 = 8;

fn privileged(proc: &Thread) -> bool {
    proc.process.creds.lock_uninterruptible().uid[1] == 0
}

/// A user string of at most a page (`mount`'s source, type and data).
fn user_string(proc: &Thread, addr: u64) -> Result<String, Errno> {
    let bytes = proc.read_user_cstr(addr, 4095)?;
    String::from_utf8(bytes).map_err(|_| Errno::EINVAL)
}

/// The `/proc/mounts` options of a new mount from its flags.
fn flag_options(flags: u64) -> String {
    let mut o = String::from(if flags & MS_RDONLY != 0 { "ro" } else { "rw" });
    for (bit, name) in [(MS_NOSUID, "nosuid"), (MS_NODEV, "nodev"), (MS_NOEXEC, "noexec")] {
        if flags & bit != 0 {
            o.push(',');
            o.push_str(name);
        }
    }
    o.push_str(if flags & MS_NOATIME != 0 { ",noatime" } else { ",relatime" });
    o
}

/// `cgroup` (v1) options: the controllers named must be `cpu` (and `cpuacct`, which comes
/// with it here); none named means all, which is `cpu`. EINVAL for a controller Cadence does
/// not have or a named hierarchy without one.
fn cgroup1_options(data: &str) -> Result<&'static str, Errno> {
    let mut cpuacct = false;
    for opt in data.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match opt {
            "cpu" => {}
            "cpuacct" => cpuacct = true,
            "rw" | "ro" | "nosuid" | "nodev" | "noexec" | "relatime" | "noatime" | "noprefix" | "xattr" => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(if cpuacct { "cpu,cpuacct" } else { "cpu" })
}

/// `mount(source, target, fstype, flags, data)`.
pub fn mount(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if !privileged(proc) {
        return Err(Errno::EPERM);
    }
    let mut flags = a[3];
    if flags & MS_MGC_MSK == MS_MGC_VAL {
        flags &= !MS_MGC_MSK;
    }
    let target = user_path(proc, a[1], false)?;
    let at = vfs::lookup(&base(proc, super::fs::AT_FDCWD as u64, &target)?, &target, true)?;
    if flags & MS_REMOUNT != 0 {
        return if mount::mountpoint_of(&at).is_some() { ok(0) } else { Err(Errno::EINVAL) };
    }
    if flags & (MS_BIND | MS_MOVE) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MS_PROPAGATION != 0 {
        return ok(0);
    }
    if !at.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    // Linux's lock_mount: nothing mounts on a removed directory (cant_mount: ENOENT).
    if vfs::is_dead(&at) {
        return Err(Errno::ENOENT);
    }
    let fstype = if a[2] == 0 { return Err(Errno::EINVAL) } else { user_string(proc, a[2])? };
    let source = if a[0] == 0 { String::from("none") } else { user_string(proc, a[0])? };
    let data = if a[4] == 0 { String::new() } else { user_string(proc, a[4])? };
    let mut options = flag_options(flags);
    let (fstype, root): (&'static str, _) = match fstype.as_str() {
        "proc" => ("proc", vfs::mount_root(&at, crate::process::procfs::root())?),
        "sysfs" => ("sysfs", vfs::mount_root(&at, crate::fs::sysfs::root())?),
        "debugfs" => ("debugfs", vfs::mount_root(&at, crate::fs::sysfs::debugfs())?),
        "tracefs" => ("tracefs", vfs::mount_root(&at, crate::fs::tracefs::root())?),
        "cgroup2" => ("cgroup2", vfs::mount_root(&at, crate::process::cgroupfs::mount_v2())?),
        "cgroup" => {
            let controllers = cgroup1_options(&data)?;
            options.push(',');
            options.push_str(controllers);
            ("cgroup", vfs::mount_root(&at, crate::process::cgroupfs::mount_v1(controllers)?)?)
        }
        "tmpfs" | "ramfs" => {
            let fstype = if fstype == "tmpfs" { "tmpfs" } else { "ramfs" };
            (fstype, vfs::empty_root(&at, tmpfs_mode(&data)?))
        }
        _ => return Err(Errno::ENODEV),
    };
    mount::attach(&source, fstype, &options, &at, root)?;
    ok(0)
}

/// A tmpfs root's mode: `mode=` (octal) in the data, else 1777.
fn tmpfs_mode(data: &str) -> Result<u32, Errno> {
    let opts: Vec<&str> = data.split(',').collect();
    match opts.iter().find_map(|o| o.strip_prefix("mode=")) {
        Some(m) => u32::from_str_radix(m, 8).ok().filter(|m| *m <= 0o7777).ok_or(Errno::EINVAL),
        None => Ok(0o1777),
    }
}

/// `umount2(target, flags)`: EINVAL for unknown flags or a target that is no mount's root,
/// EBUSY while a tree is mounted inside it, unless MNT_DETACH: then the trees inside go too
/// (nothing here can be in use in a way that would make Linux defer the rest).
pub fn umount2(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0 {
        return Err(Errno::EINVAL);
    }
    if !privileged(proc) {
        return Err(Errno::EPERM);
    }
    let target = user_path(proc, a[0], false)?;
    let at = vfs::lookup(&base(proc, super::fs::AT_FDCWD as u64, &target)?, &target, a[1] & UMOUNT_NOFOLLOW == 0)?;
    mount::detach(&at, a[1] & MNT_DETACH != 0)?;
    ok(0)
}
