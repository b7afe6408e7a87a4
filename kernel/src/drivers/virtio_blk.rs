//! `/dev/vda`: a virtio-blk disk on PCI (QEMU `-drive if=virtio`), driven by the
//! `virtio-drivers` crate over [`PortIoCam`] and [`KernelHal`], completions by interrupt.
//!
//! # Discovery
//! [`probe`] (init, before the tests and the `run=` commands) scans PCI bus 0 and the buses
//! behind PCI-to-PCI bridges for vendor 0x1af4 block devices (transitional id 0x1001 or modern
//! 0x1042) and takes the first. It enables memory decoding and bus mastering, makes every memory
//! BAR reachable ([`virtio_hal::map_bar`]), and lets the crate's `PciTransport` and `VirtIOBlk`
//! negotiate features and set up the one request queue.
//!
//! # Interrupts
//! The device's INTx line: the interrupt line register (0x3C) names the ISA IRQ that the
//! firmware routed the PIIX3's PIRQ link to (SeaBIOS and OVMF both fill it in), the MADT's
//! override gives its GSI, and the I/O APIC routes that pin, level-triggered and active high
//! (as QEMU's MADT and DSDT describe PCI links), to [`VIRTIO_BLK_VECTOR`] on the boot CPU.
//! The handler ([`interrupt`]) reads the virtio ISR status register, which acknowledges the
//! device and lowers the line before the EOI, counts the interrupt and wakes the tasks waiting
//! for completions. The handler reads its own pointer to the ISR byte (found from the same
//! capability the transport uses) so that it never takes the device's lock: a task holds that
//! lock across a whole request, sleeping.
//!
//! Only the i440fx (QEMU's `pc` machine, host bridge 8086:1237, PIIX3 PIRQ links) is handled:
//! there the interrupt line register is also the I/O APIC input. On another chipset (Q35's
//! ICH9 routes PIRQs to GSIs 16–23, which the line register does not say) [`probe`] refuses
//! the disk with a message rather than guess. The driver assumes it is the only user of its
//! INTx line (the handler wakes the waiters whatever the ISR byte says, and a line shared with
//! another device's unacknowledged interrupt would keep firing).
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
//! locked or under writeback that a killed caller must release first). The whole locked section (submit, wait, complete, and
//! every 64 KiB chunk of a longer transfer) is a [`DeferFatal`] section made before the lock is
//! taken (so it ends after the lock is released): a fatal signal that arrives meanwhile cannot
//! end the task with the mutex held and a token un-popped, which would wedge the disk. Between
//! chunks a pending fatal signal ends the transfer early (`EINTR`, [`BlkError::Interrupted`]),
//! with the lock given back; the task then dies at its next preemption point. The request header, the status byte and a
//! [`BOUNCE_PAGES`]-page data buffer are DMA memory allocated once at probe time, so no request
//! allocates. A request goes in with `read_blocks_nb`/`write_blocks_nb`; the task then sleeps
//! on [`COMPLETION`] until the used ring holds its token (the interrupt wakes it), and collects
//! the result with `complete_read_blocks`/`complete_write_blocks`. The wait is uninterruptible
//! (the device writes into the driver's buffers until it completes): a fatal signal is acted
//! on after the request. The lock is a sleeping mutex, not an `IrqLock`, because the handler
//! never takes it and a request lasts a device round trip.
//!
//! A flush (`VIRTIO_BLK_T_FLUSH`, offered by QEMU with `cache=writeback`) has no non-blocking
//! form in `virtio-drivers` 0.13 (its request header type and the queue are private to the
//! crate): [`flush`] calls the crate's blocking `flush`, which spins on the used ring inside
//! the crate (`spin_loop`, no hook to sleep or yield). It spins in task context with
//! interrupts and preemption on (the sleeping mutex is the only lock held), so interrupts and
//! higher-priority tasks run meanwhile, but a SCHED_FIFO caller keeps its CPU from equal and
//! lower priorities for the flush's round trip (an `fdatasync` on the host). The flush is
//! yielded before and after ([`sched::yield_now`](crate::sched::yield_now)) so it at least
//! does not extend a time slice already used up. Its header and status byte live in the
//! crate's stack frame: [`KernelHal`]'s `share` copies such buffers into bounce pages (see
//! `virtio_hal`), and the request cannot be abandoned half-way (the `DeferFatal` section).
//! The completion interrupt it raises is acknowledged by the handler as any other.
//!
//! # Memory and panics
//! The BARs inside the physical-memory mapping (SeaBIOS places QEMU's below 4 GiB) are reached
//! through that mapping, whose page attributes are write-back: uncached access relies on the
//! firmware's MTRRs marking the PCI hole uncacheable (SeaBIOS and OVMF do). Only BARs outside it
//! get explicit `NO_CACHE` mappings ([`virtio_hal::map_bar`]). The crate allocates from the
//! kernel heap inside requests (an indirect descriptor list per request, `add_indirect`, when
//! the device offers `VIRTIO_F_INDIRECT_DESC`) and unwraps the allocation: heap exhaustion
//! during a request panics the kernel.
//!
//! Errors are Linux's errnos ([`BlkError`]): no disk `ENODEV`, a write past the end `ENOSPC`
//! (checked before anything is written), a device error `EIO`, a read-only disk `EROFS`, a
//! transfer cut short by a fatal signal `EINTR`.

use super::virtio_hal::{self, DmaPages, KernelHal};
use crate::arch::pci::PortIoCam;
use crate::sched::signal::DeferFatal;
use crate::sched::wait::{Mutex, WaitQueue};
use core::sync::atomic::{AtomicU64, Ordering};
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk, SECTOR_SIZE};
use virtio_drivers::transport::pci::bus::{BarInfo, Command, DeviceFunction, HeaderType, PciRoot};
use virtio_drivers::transport::pci::{virtio_device_type, PciTransport};
use virtio_drivers::transport::DeviceType;

/// IDT vector of the disk's interrupt (after COM1's 0x30).
pub const VIRTIO_BLK_VECTOR: u8 = crate::interrupts::VIRTIO_BLK_VECTOR;
/// Data buffer per request: 64 KiB (longer transfers are split).
pub const BOUNCE_PAGES: usize = 16;
const BOUNCE_BYTES: usize = BOUNCE_PAGES * 4096;
/// How often a waiting request re-checks the used ring without an interrupt: 10 ms.
pub const POLL_NS: u64 = 10_000_000;
/// The one host bridge whose interrupt routing the probe knows (i440fx, QEMU `pc`).
const I440FX: (u16, u16) = (0x8086, 0x1237);
/// The name in messages, as Linux names the first virtio disk.
pub const NAME: &str = "/dev/vda";

const PCI_CAP_ID_VNDR: u8 = 0x09;
const VIRTIO_PCI_CAP_ISR_CFG: u8 = 3;

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
#[derive(Debug, Clone, Copy)]
pub struct Info {
    /// Capacity in 512-byte sectors.
    pub sectors: u64,
    pub readonly: bool,
    pub location: DeviceFunction,
    /// ISA IRQ / GSI of the INTx line.
    pub irq: u8,
    pub gsi: u32,
    /// Physical address of the ISR status byte (in the modern BAR), and whether the BARs had
    /// to be mapped outside the physical mapping.
    pub isr_phys: u64,
    pub bars_in_window: bool,
}

struct Disk {
    blk: VirtIOBlk<KernelHal, PciTransport>,
    /// The request header (offset 0) and the status byte (offset [`RESP_OFFSET`]).
    header: DmaPages,
    bounce: DmaPages,
}

const RESP_OFFSET: usize = 64;

static DISK: Mutex<Option<Disk>> = Mutex::new(None);
static INFO: spin::Once<Info> = spin::Once::new();
/// Virtual address of the device's ISR status byte (set before the line is routed).
static ISR: AtomicU64 = AtomicU64::new(0);
/// Tasks waiting for a completion.
static COMPLETION: WaitQueue = WaitQueue::new();
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);
static REQUESTS: AtomicU64 = AtomicU64::new(0);
/// Completions found by the [`POLL_NS`] re-check with no interrupt since their submission.
static LOST: AtomicU64 = AtomicU64::new(0);

/// Interrupt routing facts from the MADT, kept by [`set_platform`] for the probe.
struct Routing {
    io_apics: alloc::vec::Vec<crate::platform::IoApicInfo>,
    isa_overrides: alloc::vec::Vec<(u8, u32)>,
    apic_id: u32,
}
static ROUTING: spin::Once<Routing> = spin::Once::new();

/// Remembers the I/O APICs and ISA overrides (boot, before [`probe`]); the disk's interrupt
/// goes to the CPU with `apic_id`.
pub fn set_platform(platform: &crate::platform::Platform, apic_id: u32) {
    crate::interrupts::register(VIRTIO_BLK_VECTOR, interrupt);
    ROUTING.call_once(|| Routing { io_apics: platform.io_apics.clone(), isa_overrides: platform.isa_overrides.clone(), apic_id });
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

/// The disk's interrupt (from the IDT stub, before its EOI).
pub fn interrupt() {
    let isr = ISR.load(Ordering::Acquire);
    if isr == 0 {
        crate::interrupts::count_unexpected(VIRTIO_BLK_VECTOR, 0);
        return;
    }
    // Reading the ISR status byte is how virtio-pci acknowledges an INTx interrupt (it clears
    // the bits and lowers the line).
    // SAFETY: `isr` maps that byte (set by `probe` before the line was routed, never
    // unmapped); the transport's own pointer to it is never used (the driver never calls
    // `ack_interrupt`), so no other access races with this one.
    let status = unsafe { core::ptr::read_volatile(isr as *const u8) };
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

/// The first virtio block function on bus 0 or behind a bridge (depth-first, buses visited once).
fn find(root: &PciRoot<PortIoCam>, cam: &PortIoCam) -> Option<DeviceFunction> {
    let mut pending: arrayvec::ArrayVec<u8, 16> = arrayvec::ArrayVec::new();
    let mut seen = [false; 256];
    pending.push(0);
    while let Some(bus) = pending.pop() {
        if core::mem::replace(&mut seen[bus as usize], true) {
            continue;
        }
        for (df, info) in root.enumerate_bus(bus) {
            if virtio_device_type(&info) == Some(DeviceType::Block) {
                return Some(df);
            }
            if info.header_type == HeaderType::PciPciBridge {
                // Secondary bus number: byte 1 of the dword at 0x18.
                let secondary = (cam.read(df, 0x18) >> 8) as u8;
                if secondary != 0 && !seen[secondary as usize] {
                    let _ = pending.try_push(secondary);
                }
            }
        }
    }
    None
}

fn probe_inner() -> Result<Option<Info>, &'static str> {
    // SAFETY: the PC platform has configuration mechanism #1; only `PortIoCam`s use the ports.
    // This handle only reads (the interrupt line, a bridge's bus numbers).
    let cam = unsafe { PortIoCam::new() };
    // SAFETY: as above; the transport's configuration accesses go through this one.
    let mut root = PciRoot::new(unsafe { PortIoCam::new() });
    let Some(df) = find(&root, &cam) else { return Ok(None) };
    let host = cam.read(DeviceFunction { bus: 0, device: 0, function: 0 }, 0);
    if (host as u16, (host >> 16) as u16) != I440FX {
        crate::klog!(
            "virtio-blk: host bridge {:04x}:{:04x} is not the i440fx (QEMU `pc`): its PCI interrupt routing (Q35: GSIs 16-23) is not handled",
            host as u16,
            (host >> 16) as u16
        );
        return Err("unsupported chipset (use QEMU's `pc` machine)");
    }

    let (_, command) = root.get_status_command(df);
    let wanted = (command | Command::IO_SPACE | Command::MEMORY_SPACE | Command::BUS_MASTER) & !Command::INTERRUPT_DISABLE;
    root.set_command(df, wanted);

    let bars = root.bars(df).map_err(|_| "cannot read the BARs")?;
    for bar in bars.iter().flatten() {
        if let BarInfo::Memory { address, size, .. } = bar {
            if *address != 0 && *size != 0 {
                virtio_hal::map_bar(*address, *size).ok_or("cannot map a BAR")?;
            }
        }
    }
    let (isr, isr_phys) = isr_address(&root, &bars, df).ok_or("no ISR status capability")?;

    let intx = cam.read(df, 0x3c);
    let (irq, pin) = (intx as u8, (intx >> 8) as u8);
    if pin == 0 || irq == 0 || irq == 0xff {
        return Err("no INTx line routed by the firmware");
    }
    let routing = ROUTING.get().ok_or("no interrupt routing information")?;
    let gsi = routing.isa_overrides.iter().find(|(isa, _)| *isa == irq).map_or(irq as u32, |&(_, g)| g);
    let io = routing.io_apics.iter().find(|io| gsi >= io.gsi_base && gsi < io.gsi_base + 24).ok_or("no I/O APIC for its interrupt")?;
    let ioapic = crate::arch::ioapic::IoApic::from_platform(io);
    if gsi - io.gsi_base >= ioapic.max_entries() {
        return Err("its interrupt is past the I/O APIC's inputs");
    }

    let transport = PciTransport::new::<KernelHal, _>(&mut root, df).map_err(|_| "not a usable virtio-pci device")?;
    let blk = VirtIOBlk::<KernelHal, _>::new(transport).map_err(|_| "device setup failed")?;
    if !virtio_hal::reserve_bounce() {
        return Err("no memory for bounce pages");
    }
    let header = DmaPages::new(1).ok_or("no memory for requests")?;
    let bounce = DmaPages::new(BOUNCE_PAGES).ok_or("no memory for requests")?;
    let bars_in_window = virtio_hal::window_mapped() > 0;
    let info = Info { sectors: blk.capacity(), readonly: blk.readonly(), location: df, irq, gsi, isr_phys, bars_in_window };
    *DISK.lock() = Some(Disk { blk, header, bounce });
    INFO.call_once(|| info);
    // The handler can acknowledge the device from here on: only now route the line.
    ISR.store(isr, Ordering::Release);
    ioapic.route_level(gsi - io.gsi_base, VIRTIO_BLK_VECTOR, routing.apic_id);
    Ok(Some(info))
}

/// Virtual and physical address of the ISR status byte (the vendor capability of `cfg_type` 3).
fn isr_address(root: &PciRoot<PortIoCam>, bars: &[Option<BarInfo>; 6], df: DeviceFunction) -> Option<(u64, u64)> {
    // SAFETY: a read-only configuration handle (see `probe_inner`).
    let cam = unsafe { PortIoCam::new() };
    let cap = root.capabilities(df).find(|c| c.id == PCI_CAP_ID_VNDR && (c.private_header >> 8) as u8 == VIRTIO_PCI_CAP_ISR_CFG)?;
    let bar = cam.read(df, cap.offset + 4) as u8;
    let offset = cam.read(df, cap.offset + 8) as u64;
    let (address, size) = bars.get(bar as usize)?.as_ref()?.memory_address_size()?;
    if offset >= size {
        return None;
    }
    virtio_hal::map_bar(address, size).map(|base| (base + offset, address + offset))
}

enum Op<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
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
fn wait_used(disk: &mut Disk, token: u16, irqs0: u64) {
    loop {
        let deadline = crate::time::uptime_ns().saturating_add(POLL_NS);
        if COMPLETION.wait_until_uninterruptible_deadline(|| disk.blk.peek_used() == Some(token), deadline) {
            return;
        }
        if disk.blk.peek_used() == Some(token) {
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

/// One request of at most [`BOUNCE_BYTES`], through the bounce buffer, sleeping until the
/// interrupt (or the periodic re-check) reports it complete. Call inside a [`DeferFatal`]
/// section: the request must not be abandoned between submission and completion.
fn request(disk: &mut Disk, sector: u64, op: Op<'_>) -> Result<(), BlkError> {
    let len = match &op {
        Op::Read(b) => b.len(),
        Op::Write(b) => b.len(),
    };
    debug_assert!(len > 0 && len <= BOUNCE_BYTES && len % SECTOR_SIZE == 0);
    let req = disk.header.ptr(0).cast::<BlkReq>();
    let resp = disk.header.ptr(RESP_OFFSET).cast::<BlkResp>();
    let data = disk.bounce.ptr(0);
    let irqs0 = INTERRUPTS.load(Ordering::Relaxed);
    // The device accesses `header` and `bounce` only between the `_nb` call and the matching
    // `complete_*` call, which are passed the very same buffers; the caller's `DeferFatal`
    // section keeps the task from ending in between.
    // SAFETY: both are DMA memory this driver alone owns (allocated at probe, zeroed, page-aligned), and the caller's sleeping
    // mutex admits one request at a time, so nothing else touches them until the request completes below. BlkReq (16 bytes,
    // align 8) fits at offset 0 and BlkResp (1 byte) at RESP_OFFSET; `len` is at most the bounce buffer's size.
    unsafe {
        let (req, resp, buf) = (&mut *req, &mut *resp, core::slice::from_raw_parts_mut(data, len));
        let result = match op {
            Op::Write(src) => {
                buf.copy_from_slice(src);
                let token = disk.blk.write_blocks_nb(sector as usize, req, buf, resp).map_err(|_| BlkError::Io)?;
                wait_used(disk, token, irqs0);
                disk.blk.complete_write_blocks(token, req, buf, resp)
            }
            Op::Read(dst) => {
                let token = disk.blk.read_blocks_nb(sector as usize, req, buf, resp).map_err(|_| BlkError::Io)?;
                wait_used(disk, token, irqs0);
                let r = disk.blk.complete_read_blocks(token, req, buf, resp);
                if r.is_ok() {
                    dst.copy_from_slice(buf);
                }
                r
            }
        };
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        result.map_err(|_| BlkError::Io)
    }
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
    mut each: impl FnMut(&mut Disk, u64, core::ops::Range<usize>) -> Result<(), BlkError>,
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
    transfer(sector, buf.len(), false, |disk, s, r| request(disk, s, Op::Read(&mut buf[r])))
}

/// Writes `buf` (whole sectors) from `sector` on. Nothing is written if the end is past the
/// disk's (`ENOSPC`).
pub fn write(sector: u64, buf: &[u8]) -> Result<(), BlkError> {
    transfer(sector, buf.len(), true, |disk, s, r| request(disk, s, Op::Write(&buf[r])))
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
        let r = disk.blk.flush().map_err(|_| BlkError::Io);
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        r
    };
    crate::sched::yield_now();
    r
}
