//! `/dev/vda`: a virtio-blk disk on PCI (QEMU `-drive if=virtio`), completions by interrupt.
//! The hardware half (PCI discovery, the `virtio-drivers` transport and device, the INTx
//! line's routing, the interrupt acknowledge, the DMA header and bounce buffers, request
//! submission and completion) is the framework's [`hw`] (`framework::virtio_blk`); this module
//! is the disk's policy: the lock, the waiting, fatal signals, counters, errnos and messages.
//!
//! # Discovery
//! [`probe`] (init, before the tests and the `run=` commands) has [`hw::probe`] find the first
//! virtio block function (PCI bus 0 and the buses behind bridges) and set it up, stores the
//! device, then routes its line ([`hw::Line::route`]) and logs what it found.
//!
//! # Interrupts
//! The device's INTx line, routed level-triggered through the I/O APIC to
//! [`VIRTIO_BLK_VECTOR`] on the boot CPU (see [`hw`]). The framework's handler reads the
//! virtio ISR status register, which acknowledges the device and lowers the line before the
//! EOI, and calls this module's notifier ([`interrupt`], registered by [`set_platform`]),
//! which counts the interrupt and wakes the tasks waiting for completions. The handler never
//! takes the device's lock: a task holds that lock across a whole request, sleeping.
//!
//! Only the i440fx (QEMU's `pc` machine, host bridge 8086:1237, PIIX3 PIRQ links) is handled:
//! there the interrupt line register is also the I/O APIC input. On another chipset (Q35's
//! ICH9 routes PIRQs to GSIs 16–23, which the line register does not say) [`probe`] refuses
//! the disk with a message rather than guess. The driver assumes it is the only user of its
//! INTx line (the notifier wakes the waiters whatever the ISR byte says, if it is not 0, and a
//! line shared with another device's unacknowledged interrupt would keep firing).
//!
//! A lost or misrouted interrupt does not hang a request: the wait re-checks the used ring
//! every [`POLL_NS`] (10 ms, a timed wait). A completion found that way with no interrupt
//! taken since the submission, and none in the [`POLL_NS`] after (the device writes the used
//! ring before it raises the interrupt, and a poll can fall in between), counts as a lost
//! interrupt ([`lost_interrupts`]; the first is
//! logged, `virtio-blk: /dev/vda: lost interrupt ...`).
//!
//! # Requests
//! One request is in flight at a time, under a sleeping [`Mutex`] (a task waiting for the
//! device sleeps, it does not spin; uninterruptibly, as the page cache calls in with pages
//! locked or under writeback that a killed caller must release first); the device object
//! ([`hw::VirtioBlk`], `&mut self` and a [`hw::Token`] per request) enforces it too. The whole
//! locked section (submit, wait, complete, and every 64 KiB chunk of a longer transfer) is a
//! [`DeferFatal`] section made before the lock is taken (so it ends after the lock is
//! released): a fatal signal that arrives meanwhile cannot end the task with the mutex held and
//! a token un-completed, which would wedge the disk. Between chunks a pending fatal signal ends
//! the transfer early (`EINTR`, [`BlkError::Interrupted`]), with the lock given back; the task
//! then dies at its next preemption point. The request header, the status byte and a
//! [`BOUNCE_PAGES`]-page data buffer are DMA memory the framework allocates once at probe time,
//! so no request allocates. A request goes in with [`hw::VirtioBlk::submit`]; the task then
//! sleeps on [`COMPLETION`] until the used ring holds its token (the interrupt wakes it), and
//! collects the result with [`hw::VirtioBlk::complete`]. The wait is uninterruptible (the
//! device writes into the driver's buffers until it completes): a fatal signal is acted on
//! after the request. The lock is a sleeping mutex, not an `IrqLock`, because the handler
//! never takes it and a request lasts a device round trip.
//!
//! A flush (`VIRTIO_BLK_T_FLUSH`, offered by QEMU with `cache=writeback`) has no non-blocking
//! form in `virtio-drivers` 0.13 (its request header type and the queue are private to the
//! crate): [`flush`] calls the crate's blocking `flush` ([`hw::VirtioBlk::flush`]), which spins
//! on the used ring inside the crate (`spin_loop`, no hook to sleep or yield). It spins in task
//! context with interrupts and preemption on (the sleeping mutex is the only lock held), so
//! interrupts and higher-priority tasks run meanwhile, but a SCHED_FIFO caller keeps its CPU
//! from equal and lower priorities for the flush's round trip (an `fdatasync` on the host). The
//! flush is yielded before and after ([`sched::yield_now`](crate::sched::yield_now)) so it at
//! least does not extend a time slice already used up. Its header and status byte live in the
//! crate's stack frame: the framework's `KernelHal` `share` copies such buffers into bounce
//! pages (see `virtio_hal`), and the request cannot be abandoned half-way (the `DeferFatal`
//! section). The completion interrupt it raises is acknowledged by the handler as any other.
//!
//! # Memory and panics
//! BARs inside the physical mapping rely on the firmware's MTRRs for uncached access, and the
//! crate's per-request allocation (`add_indirect`) panics the kernel on heap exhaustion (see
//! [`hw`]).
//!
//! Errors are Linux's errnos ([`BlkError`]): no disk `ENODEV`, a write past the end `ENOSPC`
//! (checked before anything is written), a device error `EIO`, a read-only disk `EROFS`, a
//! transfer cut short by a fatal signal `EINTR`.

use crate::sched::signal::DeferFatal;
use crate::sched::wait::{Mutex, WaitQueue};
use core::sync::atomic::{AtomicU64, Ordering};
use framework::virtio_blk as hw;
use virtio_drivers::device::blk::SECTOR_SIZE;

/// IDT vector of the disk's interrupt (after COM1's 0x30).
pub const VIRTIO_BLK_VECTOR: u8 = crate::interrupts::VIRTIO_BLK_VECTOR;
/// Data buffer per request: 64 KiB (longer transfers are split).
pub const BOUNCE_PAGES: usize = hw::BOUNCE_PAGES;
const BOUNCE_BYTES: usize = hw::BOUNCE_BYTES;
/// How often a waiting request re-checks the used ring without an interrupt: 10 ms.
pub const POLL_NS: u64 = 10_000_000;
/// The name in messages, as Linux names the first virtio disk.
pub const NAME: &str = "/dev/vda";

/// Why a disk operation failed (Linux errnos).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlkError {
    /// ENODEV: no disk attached.
    NoDevice,
    /// ENOSPC: the request goes past the end of the disk.
    NoSpace,
    /// EIO: the device reported an error (or the queue misbehaved).
    Io,
    /// EROFS: a write to a read-only disk.
    ReadOnly,
    /// EINVAL: a length that is not a whole number of sectors, a read past the end.
    Invalid,
    /// EINTR: a fatal signal ended a multi-chunk transfer between two requests.
    Interrupted,
    /// ENOMEM: no page for the page cache (never from the device itself).
    NoMemory,
}

impl BlkError {
    /// glibc's `strerror` text.
    pub fn strerror(self) -> &'static str {
        match self {
            BlkError::NoDevice => "No such device",
            BlkError::NoSpace => "No space left on device",
            BlkError::Io => "Input/output error",
            BlkError::ReadOnly => "Read-only file system",
            BlkError::Invalid => "Invalid argument",
            BlkError::Interrupted => "Interrupted system call",
            BlkError::NoMemory => "Cannot allocate memory",
        }
    }
}

/// What `blk info` shows; fixed at probe time.
pub use hw::Info;

static DISK: Mutex<Option<hw::VirtioBlk>> = Mutex::new(None);
static INFO: spin::Once<Info> = spin::Once::new();
/// Tasks waiting for a completion.
static COMPLETION: WaitQueue = WaitQueue::new();
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);
static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Completions found by the [`POLL_NS`] re-check with no interrupt since their submission.
static LOST: AtomicU64 = AtomicU64::new(0);

/// Registers the disk's interrupt notifier ([`interrupt`]) and hands the framework the I/O
/// APICs and ISA overrides (boot, before [`probe`]); the disk's interrupt goes to the CPU with
/// `apic_id`.
pub fn set_platform(platform: &crate::platform::Platform, apic_id: u32) {
    hw::set_platform(platform, apic_id, interrupt);
}

/// The disk, if one was found.
pub fn info() -> Option<Info> {
    INFO.get().copied()
}

/// (interrupts taken, requests completed) since boot.
pub fn counters() -> (u64, u64) {
    (INTERRUPTS.load(Ordering::Relaxed), REQUESTS.load(Ordering::Relaxed))
}

/// Completions whose interrupt never came (found by the periodic re-check), since boot.
pub fn lost_interrupts() -> u64 {
    LOST.load(Ordering::Relaxed)
}

/// `sectors` 512-byte sectors in bytes, if that fits in a u64 (the count is the device's).
pub fn capacity_bytes(sectors: u64) -> Option<u64> {
    sectors.checked_mul(SECTOR_SIZE as u64)
}

/// The disk's interrupt, after the framework's handler acknowledged the device (interrupt
/// context, before the EOI): `status` is the ISR status byte it read.
fn interrupt(status: u8) {
    INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    if status != 0 {
        // Bit 0: a used buffer (a completion); bit 1: a configuration change. Waiters re-check.
        COMPLETION.wake_all();
    }
}

/// Finds, sets up and routes the disk; logs what it found. Call once, from task context
/// (init), after [`set_platform`].
pub fn probe() {
    match probe_inner() {
        Ok(Some(i)) => crate::klog!(
            "virtio-blk: {} at {}: {} sectors ({} MiB){}, irq {} (gsi {}) -> vector {:#x}, isr at {:#x}{}",
            NAME,
            i.location,
            i.sectors,
            capacity_bytes(i.sectors).map_or(u64::MAX >> 20, |b| b >> 20),
            if i.readonly { ", read-only" } else { "" },
            i.irq,
            i.gsi,
            VIRTIO_BLK_VECTOR,
            i.isr_phys,
            if i.bars_in_window { " (outside the physical mapping: BARs mapped in the MMIO window)" } else { "" }
        ),
        Ok(None) => {}
        Err(why) => crate::klog!("virtio-blk: {}: not attached: {}", NAME, why),
    }
}

fn probe_inner() -> Result<Option<Info>, &'static str> {
    let probed = match hw::probe() {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(None),
        Err(hw::ProbeError::Chipset { vendor, device }) => {
            crate::klog!(
                "virtio-blk: host bridge {:04x}:{:04x} is not the i440fx (QEMU `pc`): its PCI interrupt routing (Q35: GSIs 16-23) is not handled",
                vendor,
                device
            );
            return Err("unsupported chipset (use QEMU's `pc` machine)");
        }
        Err(hw::ProbeError::Failed(why)) => return Err(why),
    };
    let info = probed.info;
    *DISK.lock() = Some(probed.device);
    INFO.call_once(|| info);
    // The handler can acknowledge the device from here on: only now route the line.
    probed.line.route();
    Ok(Some(info))
}

/// Checks a transfer of `len` bytes at `sector` against the disk.
fn check(info: &Info, sector: u64, len: usize, write: bool) -> Result<(), BlkError> {
    if !len.is_multiple_of(SECTOR_SIZE) {
        return Err(BlkError::Invalid);
    }
    if write && info.readonly {
        return Err(BlkError::ReadOnly);
    }
    let end = sector.checked_add((len / SECTOR_SIZE) as u64);
    match end {
        Some(e) if e <= info.sectors => Ok(()),
        _ if write => Err(BlkError::NoSpace),
        _ => Err(BlkError::Invalid),
    }
}

/// Sleeps until the used ring holds `token`: woken by the completion interrupt, or by a
/// [`POLL_NS`] timer that re-checks the ring (counting a completion found that way with no
/// interrupt since `irqs0` as a lost interrupt).
fn wait_used(disk: &mut hw::VirtioBlk, token: &hw::Token<'_>, irqs0: u64) {
    loop {
        let deadline = crate::time::uptime_ns().saturating_add(POLL_NS);
        if COMPLETION.wait_until_uninterruptible_deadline(|| disk.is_complete(token), deadline) {
            return;
        }
        if disk.is_complete(token) {
            // The device fills the used ring before it raises the interrupt: a poll can land
            // in between (a slow, throttled disk completes at any moment). Lost only if no
            // interrupt follows within another period.
            let late = crate::time::uptime_ns().saturating_add(POLL_NS);
            let arrived = INTERRUPTS.load(Ordering::Relaxed) != irqs0
                || COMPLETION.wait_until_uninterruptible_deadline(|| INTERRUPTS.load(Ordering::Relaxed) != irqs0, late);
            if !arrived && LOST.fetch_add(1, Ordering::Relaxed) == 0 {
                crate::klog!(
                    "virtio-blk: {}: lost interrupt (a request completed with no interrupt in {} ms): polling every {} ms",
                    NAME,
                    POLL_NS / 1_000_000,
                    POLL_NS / 1_000_000
                );
            }
            return;
        }
    }
}

/// One request of at most [`BOUNCE_BYTES`], through the framework's bounce buffer, sleeping
/// until the interrupt (or the periodic re-check) reports it complete. Call inside a
/// [`DeferFatal`] section: the request must not be abandoned between submission and completion.
fn request(disk: &mut hw::VirtioBlk, sector: u64, op: hw::Op<'_>) -> Result<(), BlkError> {
    let len = match &op {
        hw::Op::Read(b) => b.len(),
        hw::Op::Write(b) => b.len(),
    };
    debug_assert!(len > 0 && len <= BOUNCE_BYTES && len % SECTOR_SIZE == 0);
    let irqs0 = INTERRUPTS.load(Ordering::Relaxed);
    let token = disk.submit(sector, op).map_err(|_| BlkError::Io)?;
    wait_used(disk, &token, irqs0);
    let result = disk.complete(token);
    REQUESTS.fetch_add(1, Ordering::Relaxed);
    result.map_err(|_| BlkError::Io)
}

/// `EINTR` if a fatal signal is pending for the calling task (checked between chunks).
fn interrupted() -> Result<(), BlkError> {
    if crate::sched::signal::current_fatal_pending() {
        Err(BlkError::Interrupted)
    } else {
        Ok(())
    }
}

/// Runs `each(disk, sector, range)` for the consecutive bounce-buffer-sized pieces of a
/// transfer of `len` bytes from `sector` on, with the disk locked (after the bounds check:
/// nothing is transferred past the end), stopping early at a pending fatal signal between
/// pieces.
fn transfer(
    sector: u64,
    len: usize,
    write: bool,
    mut each: impl FnMut(&mut hw::VirtioBlk, u64, core::ops::Range<usize>) -> Result<(), BlkError>,
) -> Result<(), BlkError> {
    let info = info().ok_or(BlkError::NoDevice)?;
    check(&info, sector, len, write)?;
    // Made before the lock, so dropped after it (see the module doc).
    let _defer = DeferFatal::new();
    let mut guard = DISK.lock_uninterruptible();
    let disk = guard.as_mut().ok_or(BlkError::NoDevice)?;
    for start in (0..len).step_by(BOUNCE_BYTES) {
        if start > 0 {
            interrupted()?;
        }
        each(disk, sector + (start / SECTOR_SIZE) as u64, start..(start + BOUNCE_BYTES).min(len))?;
    }
    Ok(())
}

/// Reads `buf.len()` bytes (whole sectors) from `sector` on.
pub fn read(sector: u64, buf: &mut [u8]) -> Result<(), BlkError> {
    transfer(sector, buf.len(), false, |disk, s, r| request(disk, s, hw::Op::Read(&mut buf[r])))
}

/// Writes `buf` (whole sectors) from `sector` on. Nothing is written if the end is past the
/// disk's (`ENOSPC`).
pub fn write(sector: u64, buf: &[u8]) -> Result<(), BlkError> {
    transfer(sector, buf.len(), true, |disk, s, r| request(disk, s, hw::Op::Write(&buf[r])))
}

/// Asks the device to make every completed write durable (a host `fdatasync` under QEMU's
/// `cache=writeback`). Spins inside the crate (see the module doc).
pub fn flush() -> Result<(), BlkError> {
    info().ok_or(BlkError::NoDevice)?;
    crate::sched::yield_now();
    let r = {
        // Made before the lock, so dropped after it (see the module doc).
        let _defer = DeferFatal::new();
        let mut guard = DISK.lock_uninterruptible();
        let disk = guard.as_mut().ok_or(BlkError::NoDevice)?;
        let r = disk.flush().map_err(|_| BlkError::Io);
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        r
    };
    crate::sched::yield_now();
    r
}
