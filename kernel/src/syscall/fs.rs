//! File system calls. Until the VFS lands, a process has the console on fds 0, 1 and 2 and
//! nothing else: every other fd is EBADF.

use super::{ok, Outcome};
use crate::process::Process;
use alloc::vec::Vec;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::user::UserContext;

/// Bytes copied per step between user memory and the console.
const CHUNK: usize = 4096;
/// Linux's `MAX_RW_COUNT`: one call moves at most this much.
const MAX_RW: u64 = 0x7fff_f000;
/// `IOV_MAX`.
const IOV_MAX: u64 = 1024;

fn console_fd(proc: &Process, fd: u64) -> Result<u32, Errno> {
    let fd = u32::try_from(fd).map_err(|_| Errno::EBADF)?;
    if fd < 3 && proc.console_fds.load(Ordering::Acquire) & (1 << fd) != 0 {
        Ok(fd)
    } else {
        Err(Errno::EBADF)
    }
}

fn write_user(proc: &Process, buf: u64, len: u64) -> Result<u64, Errno> {
    let len = len.min(MAX_RW);
    let mut done = 0;
    let mut chunk = Vec::new();
    while done < len {
        let n = (len - done).min(CHUNK as u64) as usize;
        chunk.resize(n, 0);
        if let Err(e) = proc.mm.lock_uninterruptible().read(buf + done, &mut chunk) {
            // Linux returns what was written before the bad page, or EFAULT if nothing was.
            return if done > 0 { Ok(done) } else { Err(e) };
        }
        framework::console::write_bytes(&chunk);
        done += n as u64;
    }
    Ok(done)
}

/// `write(fd, buf, count)`.
pub fn write(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    // fd 0 included: the console is open read-write, as Linux's is.
    console_fd(proc, a[0])?;
    ok(write_user(proc, a[1], a[2])?)
}

/// `writev(fd, iov, iovcnt)`.
pub fn writev(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    console_fd(proc, a[0])?;
    if a[2] > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut iov = alloc::vec![0u8; a[2] as usize * 16];
    proc.mm.lock_uninterruptible().read(a[1], &mut iov)?;
    let mut total = 0u64;
    for v in iov.chunks(16) {
        let base = u64::from_le_bytes(v[..8].try_into().expect("8 bytes"));
        let len = u64::from_le_bytes(v[8..].try_into().expect("8 bytes"));
        if len > i64::MAX as u64 || total.checked_add(len).is_none_or(|t| t > i64::MAX as u64) {
            return Err(Errno::EINVAL);
        }
        match write_user(proc, base, len) {
            Ok(n) => total += n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        }
    }
    ok(total)
}

/// `read(fd, buf, count)`: from the console, at least one byte, up to a newline.
pub fn read(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    console_fd(proc, a[0])?;
    if a[2] == 0 {
        return ok(0);
    }
    let want = a[2].min(CHUNK as u64) as usize;
    let mut line = Vec::with_capacity(want);
    loop {
        let b = match crate::console::read_byte_interruptible() {
            Ok(b) => b,
            // Bytes already read are returned; the signal is acted on on the way out.
            Err(_) if !line.is_empty() => break,
            Err(_) => return Err(Errno::EINTR),
        };
        let b = if b == b'\r' { b'\n' } else { b };
        line.push(b);
        if b == b'\n' || line.len() == want {
            break;
        }
    }
    proc.mm.lock_uninterruptible().write(a[1], &line)?;
    ok(line.len() as u64)
}

/// `close(fd)`.
pub fn close(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let fd = console_fd(proc, a[0])?;
    proc.console_fds.fetch_and(!(1 << fd), Ordering::AcqRel);
    ok(0)
}

/// `fstat(fd, statbuf)`: the console is a character device (`/dev/console`, 5:1).
pub fn fstat(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    console_fd(proc, a[0])?;
    let mut st = [0u8; 144];
    let put = |st: &mut [u8; 144], at: usize, v: u64, n: usize| st[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
    put(&mut st, 8, 6, 8); // st_ino
    put(&mut st, 16, 1, 8); // st_nlink
    put(&mut st, 24, 0o020620, 4); // st_mode: crw--w----
    put(&mut st, 40, (5 << 8) | 1, 8); // st_rdev 5:1
    put(&mut st, 56, 1024, 8); // st_blksize
    proc.mm.lock_uninterruptible().write(a[1], &st)?;
    ok(0)
}

/// `ioctl(fd, request, arg)`: no termios yet, so every request is ENOTTY (glibc then treats
/// stdout as a file and buffers it fully).
pub fn ioctl(proc: &Process, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    console_fd(proc, a[0])?;
    Err(Errno::ENOTTY)
}
