//! Credential system calls (Linux `kernel/sys.c`, `kernel/groups.c`): the user and group ids
//! and supplementary groups of `process::Creds`, changed by Linux's rules. Privileged means an
//! effective uid of 0 (Linux: CAP_SETUID / CAP_SETGID, which root has). The ids are reported,
//! not enforced: Cadence checks no file permissions.

use super::{ok, Outcome};
use crate::process::{Creds, Thread};
use cadence_abi::errno::Errno;
use framework::user::UserContext;

/// "Leave it as it is" (`(uid_t)-1`).
const KEEP: u32 = u32::MAX;
/// The most supplementary groups (`NGROUPS_MAX`).
const NGROUPS_MAX: u64 = 65_536;

/// Which id family a call changes.
#[derive(Clone, Copy)]
enum Ids {
    User,
    Group,
}

fn ids(c: &mut Creds, which: Ids) -> &mut [u32; 4] {
    match which {
        Ids::User => &mut c.uid,
        Ids::Group => &mut c.gid,
    }
}

fn privileged(c: &Creds) -> bool {
    c.uid[1] == 0
}

/// `getuid`, `geteuid`, `getgid`, `getegid` share this shape.
fn get(proc: &Thread, which: Ids, i: usize) -> Result<Outcome, Errno> {
    let mut c = proc.process.creds.lock_uninterruptible();
    ok(u64::from(ids(&mut c, which)[i]))
}

/// `getuid()`.
pub fn getuid(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    get(proc, Ids::User, 0)
}
/// `geteuid()`.
pub fn geteuid(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    get(proc, Ids::User, 1)
}
/// `getgid()`.
pub fn getgid(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    get(proc, Ids::Group, 0)
}
/// `getegid()`.
pub fn getegid(proc: &Thread, _: &mut UserContext, _: [u64; 6]) -> Result<Outcome, Errno> {
    get(proc, Ids::Group, 1)
}

/// `setuid` / `setgid`: privileged, all four ids; else the effective (and file-system) id, to
/// the real or saved one. EINVAL for -1, EPERM otherwise.
fn set_one(proc: &Thread, which: Ids, id: u32) -> Result<Outcome, Errno> {
    if id == KEEP {
        return Err(Errno::EINVAL);
    }
    let mut c = proc.process.creds.lock_uninterruptible();
    let p = privileged(&c);
    let v = ids(&mut c, which);
    if p {
        *v = [id; 4];
    } else if id == v[0] || id == v[2] {
        v[1] = id;
        v[3] = id;
    } else {
        return Err(Errno::EPERM);
    }
    ok(0)
}

/// `setuid(uid)`.
pub fn setuid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_one(proc, Ids::User, a[0] as u32)
}
/// `setgid(gid)`.
pub fn setgid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_one(proc, Ids::Group, a[0] as u32)
}

/// `setreuid` / `setregid`: unprivileged, the real id to the real or effective one and the
/// effective to any of the three; the saved id follows the new effective one when the real
/// one is set or the effective one moves off the real one.
fn set_re(proc: &Thread, which: Ids, r: u32, e: u32) -> Result<Outcome, Errno> {
    let mut c = proc.process.creds.lock_uninterruptible();
    let p = privileged(&c);
    let v = ids(&mut c, which);
    let old = *v;
    if !p && ((r != KEEP && r != old[0] && r != old[1]) || (e != KEEP && e != old[0] && e != old[1] && e != old[2])) {
        return Err(Errno::EPERM);
    }
    if r != KEEP {
        v[0] = r;
    }
    if e != KEEP {
        v[1] = e;
    }
    if r != KEEP || (e != KEEP && e != old[0]) {
        v[2] = v[1];
    }
    v[3] = v[1];
    ok(0)
}

/// `setreuid(ruid, euid)`.
pub fn setreuid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_re(proc, Ids::User, a[0] as u32, a[1] as u32)
}
/// `setregid(rgid, egid)`.
pub fn setregid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_re(proc, Ids::Group, a[0] as u32, a[1] as u32)
}

/// `setresuid` / `setresgid`: unprivileged, each new id must be one of the current three.
fn set_res(proc: &Thread, which: Ids, new: [u32; 3]) -> Result<Outcome, Errno> {
    let mut c = proc.process.creds.lock_uninterruptible();
    let p = privileged(&c);
    let v = ids(&mut c, which);
    let old = *v;
    if !p && new.iter().any(|&n| n != KEEP && !old[..3].contains(&n)) {
        return Err(Errno::EPERM);
    }
    for (i, &n) in new.iter().enumerate() {
        if n != KEEP {
            v[i] = n;
        }
    }
    v[3] = v[1];
    ok(0)
}

/// `setresuid(ruid, euid, suid)`.
pub fn setresuid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_res(proc, Ids::User, [a[0] as u32, a[1] as u32, a[2] as u32])
}
/// `setresgid(rgid, egid, sgid)`.
pub fn setresgid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_res(proc, Ids::Group, [a[0] as u32, a[1] as u32, a[2] as u32])
}

/// `getresuid` / `getresgid`: the three ids to three pointers (EFAULT for a bad one).
fn get_res(proc: &Thread, which: Ids, a: [u64; 6]) -> Result<Outcome, Errno> {
    let v = *ids(&mut proc.process.creds.lock_uninterruptible(), which);
    let mm = proc.mm_ref();
    for i in 0..3 {
        mm.write(a[i], &v[i].to_le_bytes())?;
    }
    ok(0)
}

/// `getresuid(ruid, euid, suid)`.
pub fn getresuid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    get_res(proc, Ids::User, a)
}
/// `getresgid(rgid, egid, sgid)`.
pub fn getresgid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    get_res(proc, Ids::Group, a)
}

/// `setfsuid` / `setfsgid`: returns the old file-system id; changes it if privileged or if the
/// new one is one of the others.
fn set_fs(proc: &Thread, which: Ids, id: u32) -> Result<Outcome, Errno> {
    let mut c = proc.process.creds.lock_uninterruptible();
    let p = privileged(&c);
    let v = ids(&mut c, which);
    let old = v[3];
    if id != KEEP && (p || v.contains(&id)) {
        v[3] = id;
    }
    ok(u64::from(old))
}

/// `setfsuid(uid)`.
pub fn setfsuid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_fs(proc, Ids::User, a[0] as u32)
}
/// `setfsgid(gid)`.
pub fn setfsgid(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    set_fs(proc, Ids::Group, a[0] as u32)
}

/// `getgroups(size, list)`: the count with size 0; EINVAL if the list is smaller than it.
pub fn getgroups(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let groups = proc.process.creds.lock_uninterruptible().groups.clone();
    let size = a[0] as i32;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    if size == 0 {
        return ok(groups.len() as u64);
    }
    if (size as usize) < groups.len() {
        return Err(Errno::EINVAL);
    }
    let bytes: alloc::vec::Vec<u8> = groups.iter().flat_map(|g| g.to_le_bytes()).collect();
    proc.write_user(a[1], &bytes)?;
    ok(groups.len() as u64)
}

/// `setgroups(size, list)`: privileged only (EPERM); EINVAL past NGROUPS_MAX.
pub fn setgroups(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[0] as i32 as i64 > NGROUPS_MAX as i64 || (a[0] as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    if !privileged(&proc.process.creds.lock_uninterruptible()) {
        return Err(Errno::EPERM);
    }
    let n = a[0] as u32 as usize;
    let mut bytes = alloc::vec![0u8; n * 4];
    proc.read_user(a[1], &mut bytes)?;
    let mut groups: alloc::vec::Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
    groups.sort_unstable();
    proc.process.creds.lock_uninterruptible().groups = groups;
    ok(0)
}
