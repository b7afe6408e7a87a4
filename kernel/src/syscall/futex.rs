//! Futex and thread-exit system calls (Linux `kernel/futex/syscalls.c`, `kernel/fork.c`):
//! `futex`, `set_tid_address`, `set_robust_list`, `get_robust_list`, over `process::futex`.

use super::{ok, Outcome};
use crate::process::futex::{self, BITSET_ANY};
use crate::process::Thread;
use cadence_abi::errno::Errno;
use core::sync::atomic::Ordering;
use framework::user::UserContext;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_REQUEUE: u64 = 3;
const FUTEX_CMP_REQUEUE: u64 = 4;
const FUTEX_WAKE_OP: u64 = 5;
const FUTEX_LOCK_PI: u64 = 6;
const FUTEX_UNLOCK_PI: u64 = 7;
const FUTEX_TRYLOCK_PI: u64 = 8;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_WAIT_REQUEUE_PI: u64 = 11;
const FUTEX_CMP_REQUEUE_PI: u64 = 12;
const FUTEX_LOCK_PI2: u64 = 13;
const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;
/// The robust list head's size on x86_64 (`struct robust_list_head`).
const ROBUST_HEAD_SIZE: u64 = 24;

/// A timeout argument: relative (FUTEX_WAIT) or absolute on the monotonic or realtime clock
/// (FUTEX_WAIT_BITSET), as a monotonic deadline in ns.
fn deadline(proc: &Thread, addr: u64, absolute: bool, realtime: bool) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let t = super::time::read_timespec(proc, addr)?;
    Ok(Some(if !absolute {
        crate::time::uptime_ns().saturating_add(t)
    } else if realtime {
        super::time::realtime_to_monotonic(t)
    } else {
        t
    }))
}

/// `futex(uaddr, op, val, timeout | val2, uaddr2, val3)`: WAIT, WAKE, REQUEUE, CMP_REQUEUE,
/// WAKE_OP, WAIT_BITSET, WAKE_BITSET, private or shared; the priority-inheritance LOCK_PI
/// (absolute CLOCK_REALTIME timeout), LOCK_PI2 (absolute, CLOCK_MONOTONIC unless
/// FUTEX_CLOCK_REALTIME), TRYLOCK_PI and UNLOCK_PI. FUTEX_CLOCK_REALTIME only with
/// WAIT_BITSET, WAIT_REQUEUE_PI and LOCK_PI2 (else ENOSYS, as Linux). The requeue-PI pair
/// WAIT_REQUEUE_PI (absolute timeout, as WAIT_BITSET) / CMP_REQUEUE_PI.
pub fn futex(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (uaddr, op, val, arg4, uaddr2, val3) = (a[0], a[1], a[2] as u32, a[3], a[4], a[5] as u32);
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    let realtime = op & FUTEX_CLOCK_REALTIME != 0;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    if realtime && !matches!(cmd, FUTEX_WAIT_BITSET | FUTEX_WAIT_REQUEUE_PI | FUTEX_LOCK_PI2) {
        return Err(Errno::ENOSYS);
    }
    let mm = proc.mm_ref();
    match cmd {
        FUTEX_WAIT => {
            let d = deadline(proc, arg4, false, false)?;
            futex::wait(&mm, uaddr, private, val, BITSET_ANY, d)?;
            ok(0)
        }
        FUTEX_WAIT_BITSET => {
            let d = deadline(proc, arg4, true, realtime)?;
            futex::wait(&mm, uaddr, private, val, val3, d)?;
            ok(0)
        }
        FUTEX_WAKE => ok(futex::wake(&mm, uaddr, private, val as i32, BITSET_ANY)? as u64),
        FUTEX_WAKE_BITSET => ok(futex::wake(&mm, uaddr, private, val as i32, val3)? as u64),
        FUTEX_REQUEUE => ok(futex::requeue(&mm, uaddr, uaddr2, private, val as i32, arg4 as u32 as i32, None)? as u64),
        FUTEX_CMP_REQUEUE => ok(futex::requeue(&mm, uaddr, uaddr2, private, val as i32, arg4 as u32 as i32, Some(val3))? as u64),
        FUTEX_WAKE_OP => ok(futex::wake_op(&mm, uaddr, uaddr2, private, val as i32, arg4 as u32 as i32, val3)? as u64),
        FUTEX_LOCK_PI => {
            let d = deadline(proc, arg4, true, true)?;
            futex::lock_pi(&mm, uaddr, private, d, false)?;
            ok(0)
        }
        FUTEX_LOCK_PI2 => {
            let d = deadline(proc, arg4, true, realtime)?;
            futex::lock_pi(&mm, uaddr, private, d, false)?;
            ok(0)
        }
        FUTEX_TRYLOCK_PI => {
            futex::lock_pi(&mm, uaddr, private, None, true)?;
            ok(0)
        }
        FUTEX_UNLOCK_PI => {
            futex::unlock_pi(&mm, uaddr, private)?;
            ok(0)
        }
        FUTEX_WAIT_REQUEUE_PI => {
            let d = deadline(proc, arg4, true, realtime)?;
            futex::wait_requeue_pi(&mm, uaddr, uaddr2, private, val, d)?;
            ok(0)
        }
        FUTEX_CMP_REQUEUE_PI => ok(futex::cmp_requeue_pi(&mm, uaddr, uaddr2, private, val as i32, arg4 as u32 as i32, val3)? as u64),
        _ => Err(Errno::ENOSYS),
    }
}

/// `set_tid_address(tidptr)`: where the thread's tid is cleared and woken at its end;
/// returns the caller's tid.
pub fn set_tid_address(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    proc.clear_child_tid.store(a[0], Ordering::Release);
    ok(u64::from(crate::sched::current().tid))
}

/// `set_robust_list(head, len)`: the thread's robust futex list, walked at its end. EINVAL
/// unless `len` is the x86_64 head's 24 bytes.
pub fn set_robust_list(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    if a[1] != ROBUST_HEAD_SIZE {
        return Err(Errno::EINVAL);
    }
    proc.robust_list.store(a[0], Ordering::Release);
    ok(0)
}

/// `get_robust_list(pid, head_ptr, len_ptr)`: the robust list of thread `pid` (0: the caller).
/// ESRCH for no such thread.
pub fn get_robust_list(proc: &Thread, _: &mut UserContext, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = a[0] as i32;
    let head = if pid == 0 {
        proc.robust_list.load(Ordering::Acquire)
    } else if pid < 0 {
        return Err(Errno::ESRCH);
    } else {
        let t = crate::sched::task::find(pid as u32).ok_or(Errno::ESRCH)?;
        crate::process::thread_of(&t).ok_or(Errno::ESRCH)?.robust_list.load(Ordering::Acquire)
    };
    let mm = proc.mm_ref();
    mm.write(a[2], &ROBUST_HEAD_SIZE.to_le_bytes())?;
    mm.write(a[1], &head.to_le_bytes())?;
    ok(0)
}
