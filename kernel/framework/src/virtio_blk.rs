//! The hardware half of the virtio-blk disk (`/dev/vda`, QEMU `-drive if=virtio`): PCI
//! discovery, the `virtio-drivers` transport and device over [`PortIoCam`] and [`KernelHal`],
//! the INTx line's routing, the interrupt acknowledge, and request submission through DMA
//! buffers this module owns. The kernel's `drivers::virtio_blk` builds the disk on it: the
//! sleeping lock, the waiting for completions, fatal signals, counters, errnos and messages.
//!
//! # Discovery ([`probe`])
//! Scans PCI bus 0 and the buses behind PCI-to-PCI bridges for vendor 0x1af4 block devices
//! (transitional id 0x1001 or modern 0x1042) and takes the first. It enables memory decoding
//! and bus mastering, makes every memory BAR reachable ([`virtio_hal::map_bar`]), and lets the
//! crate's `PciTransport` and `VirtIOBlk` negotiate features and set up the one request queue.
//!
//! # Interrupts
//! The device's INTx line: the interrupt line register (0x3C) names the ISA IRQ that the
//! firmware routed the PIIX3's PIRQ link to (SeaBIOS and OVMF both fill it in), the MADT's
//! override gives its GSI, and the I/O APIC routes that pin, level-triggered and active high
//! (as QEMU's MADT and DSDT describe PCI links), to [`VIRTIO_BLK_VECTOR`] on the CPU named at
//! [`set_platform`] ([`Line::route`]). The handler (registered by [`set_platform`]) reads the
//! virtio ISR status register, which acknowledges the device and lowers the line before the
//! EOI, and passes the byte to the kernel's notifier. It reads its own pointer to the ISR byte
//! (found from the same capability the transport uses) so that it never touches the
//! [`VirtioBlk`], which a task owns across a whole request.
//!
//! Only the i440fx (QEMU's `pc` machine, host bridge 8086:1237, PIIX3 PIRQ links) is handled:
//! there the interrupt line register is also the I/O APIC input. On another chipset (Q35's
//! ICH9 routes PIRQs to GSIs 16–23, which the line register does not say) [`probe`] refuses
//! the disk ([`ProbeError::Chipset`]) rather than guess.
//!
//! # Requests
//! One request is in flight at a time: [`VirtioBlk::submit`] takes `&mut self` and refuses a
//! second request ([`Error::Busy`]) until [`VirtioBlk::complete`] has been given the first's
//! [`Token`]. The request header, the status byte and a [`BOUNCE_PAGES`]-page data buffer are
//! DMA memory allocated once at probe time, so no request allocates: data is copied into the
//! bounce buffer at submission (a write) or out of it at completion (a read), and the device
//! never sees the caller's memory. A flush ([`VirtioBlk::flush`]) is the crate's blocking one,
//! which spins on the used ring inside the crate; its header and status byte live in the
//! crate's stack frame, which [`KernelHal`]'s `share` copies into bounce pages.
//!
//! # Memory
//! The BARs inside the physical-memory mapping (SeaBIOS places QEMU's below 4 GiB) are reached
//! through that mapping, whose page attributes are write-back: uncached access relies on the
//! firmware's MTRRs marking the PCI hole uncacheable (SeaBIOS and OVMF do). Only BARs outside it
//! get explicit `NO_CACHE` mappings ([`virtio_hal::map_bar`]). The crate allocates from the
//! kernel heap inside requests (an indirect descriptor list per request, `add_indirect`, when
//! the device offers `VIRTIO_F_INDIRECT_DESC`) and unwraps the allocation: heap exhaustion
//! during a request panics the kernel.

use crate::arch::ioapic::IoApic;
use crate::arch::pci::PortIoCam;
use crate::interrupts::VIRTIO_BLK_VECTOR;
use crate::platform::{IoApicInfo, Platform};
use crate::virtio_hal::{self, DmaPages, KernelHal};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use spin::Once;
use virtio_drivers::device::blk::{BlkReq, BlkResp, VirtIOBlk, SECTOR_SIZE};
use virtio_drivers::transport::pci::bus::{BarInfo, Command, DeviceFunction, HeaderType, PciRoot};
use virtio_drivers::transport::pci::{virtio_device_type, PciTransport};
use virtio_drivers::transport::DeviceType;

/// Data buffer per request: 64 KiB (longer transfers are split by the caller).
pub const BOUNCE_PAGES: usize = 16;
/// [`BOUNCE_PAGES`] in bytes: the longest request [`VirtioBlk::submit`] takes.
pub const BOUNCE_BYTES: usize = BOUNCE_PAGES * 4096;
/// The one host bridge whose interrupt routing the probe knows (i440fx, QEMU `pc`).
const I440FX: (u16, u16) = (0x8086, 0x1237);

const PCI_CAP_ID_VNDR: u8 = 0x09;
const VIRTIO_PCI_CAP_ISR_CFG: u8 = 3;

/// The request header (offset 0) and the status byte (offset `RESP_OFFSET`) in `header`.
const RESP_OFFSET: usize = 64;

/// What the probe found; fixed at probe time.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    /// Capacity in 512-byte sectors.
    pub sectors: u64,
    /// Whether the device offers `VIRTIO_BLK_F_RO` (writes are refused).
    pub readonly: bool,
    /// The PCI function.
    pub location: DeviceFunction,
    /// ISA IRQ of the INTx line (the interrupt line register).
    pub irq: u8,
    /// GSI of the INTx line (the MADT's override of `irq`, or `irq`).
    pub gsi: u32,
    /// Physical address of the ISR status byte (in the modern BAR).
    pub isr_phys: u64,
    /// Whether some BAR had to be mapped outside the physical mapping.
    pub bars_in_window: bool,
}

/// Interrupt routing facts from the MADT, kept by [`set_platform`] for the probe.
struct Routing {
    io_apics: Vec<IoApicInfo>,
    isa_overrides: Vec<(u8, u32)>,
    apic_id: u32,
}
static ROUTING: Once<Routing> = Once::new();
/// The kernel's completion notifier (see [`set_platform`]).
static NOTIFY: Once<fn(u8)> = Once::new();
/// Virtual address of the device's ISR status byte (set by [`Line::route`] before the line is
/// routed; never unmapped).
static ISR: AtomicU64 = AtomicU64::new(0);
/// Set once a device has been claimed: at most one [`VirtioBlk`] (and one transport) exists.
static CLAIMED: AtomicBool = AtomicBool::new(false);

/// Registers the disk's interrupt handler for [`VIRTIO_BLK_VECTOR`] and remembers the I/O
/// APICs and ISA overrides of `platform` (boot, before [`probe`]); the disk's interrupt goes to
/// the CPU with `apic_id`. `notify` is called in interrupt context (interrupts off, before the
/// EOI) on every interrupt of the disk once its line is routed, after the device has been
/// acknowledged, with the ISR status byte it read (bit 0: a used buffer, bit 1: a
/// configuration change; 0: not this device's). Before [`Line::route`] an interrupt on the
/// vector is counted as unexpected. Once: later calls change nothing.
pub fn set_platform(platform: &Platform, apic_id: u32, notify: fn(u8)) {
    crate::interrupts::register(VIRTIO_BLK_VECTOR, interrupt);
    NOTIFY.call_once(|| notify);
    ROUTING.call_once(|| Routing { io_apics: platform.io_apics.clone(), isa_overrides: platform.isa_overrides.clone(), apic_id });
}

/// The disk's interrupt (from the IDT stub, before its EOI): acknowledges the device by reading
/// its ISR status byte, then tells the kernel.
fn interrupt() {
    let isr = ISR.load(Ordering::Acquire);
    if isr == 0 {
        crate::interrupts::count_unexpected(VIRTIO_BLK_VECTOR, 0);
        return;
    }
    // Reading the ISR status byte is how virtio-pci acknowledges an INTx interrupt (it clears
    // the bits and lowers the line).
    // SAFETY: `isr` maps that byte (set by `Line::route` from the probe's mapping of the BAR,
    // which is never unmapped); the transport's own pointer to it is never used (`VirtioBlk`
    // never calls `ack_interrupt`), so no other access races with this one.
    let status = unsafe { core::ptr::read_volatile(isr as *const u8) };
    if let Some(notify) = NOTIFY.get() {
        notify(status);
    }
}

/// Why [`probe`] refused a disk it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeError {
    /// The host bridge (vendor, device at 00:00.0) is not the i440fx: its PCI interrupt
    /// routing is not known.
    Chipset {
        /// The host bridge's vendor id.
        vendor: u16,
        /// The host bridge's device id.
        device: u16,
    },
    /// Any other failure, as a message.
    Failed(&'static str),
}

impl From<&'static str> for ProbeError {
    fn from(why: &'static str) -> Self {
        ProbeError::Failed(why)
    }
}

/// A probed disk: the device, what was found, and its interrupt line (not yet routed).
pub struct Probed {
    /// The device, ready for requests.
    pub device: VirtioBlk,
    /// What the probe found.
    pub info: Info,
    /// The INTx line, to route once the kernel is ready for completions.
    pub line: Line,
}

/// The disk's INTx line, found and checked by [`probe`] but not yet routed.
pub struct Line {
    ioapic: IoApic,
    pin: u32,
    isr: u64,
    apic_id: u32,
}

impl Line {
    /// Lets the interrupt handler acknowledge the device (publishes the ISR byte's address),
    /// then routes the line level-triggered to [`VIRTIO_BLK_VECTOR`] on the CPU named at
    /// [`set_platform`]. From here on every interrupt of the disk reaches the notifier.
    pub fn route(self) {
        ISR.store(self.isr, Ordering::Release);
        self.ioapic.route_level(self.pin, VIRTIO_BLK_VECTOR, self.apic_id);
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

/// Finds and sets up the disk: `Ok(None)` if there is none. Call from task context (BAR
/// mappings and DMA memory need frames), after [`set_platform`]. Returns the one
/// [`VirtioBlk`] there can be (a disk found after a device was claimed is refused), with its
/// interrupt line left unrouted: the caller routes it ([`Line::route`]) once it can take
/// completions.
pub fn probe() -> Result<Option<Probed>, ProbeError> {
    // SAFETY: the PC platform has configuration mechanism #1; only `PortIoCam`s use the ports.
    // This handle only reads (the interrupt line, a bridge's bus numbers).
    let cam = unsafe { PortIoCam::new() };
    // SAFETY: as above; the transport's configuration accesses go through this one.
    let mut root = PciRoot::new(unsafe { PortIoCam::new() });
    let Some(df) = find(&root, &cam) else { return Ok(None) };
    let host = cam.read(DeviceFunction { bus: 0, device: 0, function: 0 }, 0);
    if (host as u16, (host >> 16) as u16) != I440FX {
        return Err(ProbeError::Chipset { vendor: host as u16, device: (host >> 16) as u16 });
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
    let (isr, isr_phys) = isr_address(&root, &cam, &bars, df).ok_or("no ISR status capability")?;

    let intx = cam.read(df, 0x3c);
    let (irq, pin) = (intx as u8, (intx >> 8) as u8);
    if pin == 0 || irq == 0 || irq == 0xff {
        return Err("no INTx line routed by the firmware".into());
    }
    let routing = ROUTING.get().ok_or("no interrupt routing information")?;
    let gsi = routing.isa_overrides.iter().find(|(isa, _)| *isa == irq).map_or(irq as u32, |&(_, g)| g);
    let io = routing.io_apics.iter().find(|io| gsi >= io.gsi_base && gsi < io.gsi_base + 24).ok_or("no I/O APIC for its interrupt")?;
    let ioapic = IoApic::from_platform(io);
    if gsi - io.gsi_base >= ioapic.max_entries() {
        return Err("its interrupt is past the I/O APIC's inputs".into());
    }

    if CLAIMED.swap(true, Ordering::AcqRel) {
        return Err("already probed".into());
    }
    let transport = PciTransport::new::<KernelHal, _>(&mut root, df).map_err(|_| "not a usable virtio-pci device")?;
    let blk = VirtIOBlk::<KernelHal, _>::new(transport).map_err(|_| "device setup failed")?;
    if !virtio_hal::reserve_bounce() {
        return Err("no memory for bounce pages".into());
    }
    let header = DmaPages::new(1).ok_or("no memory for requests")?;
    let bounce = DmaPages::new(BOUNCE_PAGES).ok_or("no memory for requests")?;
    let bars_in_window = virtio_hal::window_mapped() > 0;
    let info = Info { sectors: blk.capacity(), readonly: blk.readonly(), location: df, irq, gsi, isr_phys, bars_in_window };
    let line = Line { ioapic, pin: gsi - io.gsi_base, isr, apic_id: routing.apic_id };
    Ok(Some(Probed { device: VirtioBlk { blk, header, bounce, pending: None }, info, line }))
}

/// Virtual and physical address of the ISR status byte (the vendor capability of `cfg_type` 3).
fn isr_address(root: &PciRoot<PortIoCam>, cam: &PortIoCam, bars: &[Option<BarInfo>; 6], df: DeviceFunction) -> Option<(u64, u64)> {
    let cap = root.capabilities(df).find(|c| c.id == PCI_CAP_ID_VNDR && (c.private_header >> 8) as u8 == VIRTIO_PCI_CAP_ISR_CFG)?;
    let bar = cam.read(df, cap.offset + 4) as u8;
    let offset = cam.read(df, cap.offset + 8) as u64;
    let (address, size) = bars.get(bar as usize)?.as_ref()?.memory_address_size()?;
    if offset >= size {
        return None;
    }
    virtio_hal::map_bar(address, size).map(|base| (base + offset, address + offset))
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// A request is still in flight (its [`Token`] was not given to [`VirtioBlk::complete`]).
    Busy,
    /// A length that is zero, not a whole number of sectors, or above [`BOUNCE_BYTES`].
    Invalid,
    /// A token of another request.
    WrongToken,
    /// The queue or the device reported an error.
    Device(virtio_drivers::Error),
}

impl From<virtio_drivers::Error> for Error {
    fn from(e: virtio_drivers::Error) -> Self {
        Error::Device(e)
    }
}

/// A request for [`VirtioBlk::submit`].
pub enum Op<'a> {
    /// Read `buf.len()` bytes into `buf` (filled at [`VirtioBlk::complete`], if it succeeds).
    Read(&'a mut [u8]),
    /// Write `buf` (copied at submission).
    Write(&'a [u8]),
}

/// The request in flight, returned by [`VirtioBlk::submit`] and consumed by
/// [`VirtioBlk::complete`]. Forgetting it leaves the device busy ([`Error::Busy`]) for good.
#[must_use = "the request stays in flight until its token is completed"]
pub struct Token<'a> {
    id: u16,
    len: usize,
    /// A read's destination (`None`: a write).
    dst: Option<&'a mut [u8]>,
}

/// A request's buffers: the header and the status byte in `header`, the first `len` bytes of
/// `bounce` (a [`VirtioBlk`]'s fields, borrowed apart from its device).
///
/// # Safety
/// `len` is at most [`BOUNCE_BYTES`]; the caller is the owning [`VirtioBlk`]'s only user (its
/// `&mut self`), and the device does not access the buffers unless they are handed back to the
/// crate as the very buffers of the request in flight.
#[allow(clippy::mut_from_ref)]
unsafe fn buffers<'a>(header: &'a DmaPages, bounce: &'a DmaPages, len: usize) -> (&'a mut BlkReq, &'a mut BlkResp, &'a mut [u8]) {
    debug_assert!(len <= bounce.len());
    let req = header.ptr(0).cast::<BlkReq>();
    let resp = header.ptr(RESP_OFFSET).cast::<BlkResp>();
    // `header` and `bounce` are DMA memory the owning `VirtioBlk` alone has (allocated at
    // probe, zeroed: a valid `BlkReq` (type 0, `In`) and `BlkResp`, page-aligned); BlkReq (16
    // bytes, align 8) fits at offset 0 and BlkResp (1 byte) at RESP_OFFSET, apart.
    // SAFETY: as above; `len` is at most the bounce buffer's size and no other reference to the
    // buffers exists (the contract).
    unsafe { (&mut *req, &mut *resp, core::slice::from_raw_parts_mut(bounce.ptr(0), len)) }
}

/// The disk: the crate's device over the PCI transport, and the DMA buffers of its requests.
/// Only [`probe`] makes one, once.
pub struct VirtioBlk {
    // Declared first so dropped first: the crate's drop unsets the queue and the transport's
    // resets the device, so it no longer reaches `header` and `bounce` when they are freed.
    blk: VirtIOBlk<KernelHal, PciTransport>,
    /// The request header (offset 0) and the status byte (offset [`RESP_OFFSET`]).
    header: DmaPages,
    /// The data of a request, at most [`BOUNCE_BYTES`].
    bounce: DmaPages,
    /// The token of the request in flight: the device may access `header` and the first bytes
    /// of `bounce` until it is completed.
    pending: Option<u16>,
}

impl VirtioBlk {
    /// Capacity in 512-byte sectors.
    pub fn capacity(&self) -> u64 {
        self.blk.capacity()
    }

    /// Submits a read or a write of whole sectors from `sector` on, at most [`BOUNCE_BYTES`],
    /// and returns at once: the device notifies completion by interrupt (see [`set_platform`])
    /// and [`VirtioBlk::is_complete`] tells. The caller's buffer is never handed to the device
    /// (a write is copied now, a read at completion). One request at a time: [`Error::Busy`]
    /// while another's token is outstanding; [`Error::Invalid`] for a bad length; the crate's
    /// error if the queue refuses the request (then nothing is in flight).
    pub fn submit<'a>(&mut self, sector: u64, op: Op<'a>) -> Result<Token<'a>, Error> {
        if self.pending.is_some() {
            return Err(Error::Busy);
        }
        let len = match &op {
            Op::Read(b) => b.len(),
            Op::Write(b) => b.len(),
        };
        if len == 0 || len > BOUNCE_BYTES || !len.is_multiple_of(SECTOR_SIZE) {
            return Err(Error::Invalid);
        }
        // SAFETY: `len` is at most BOUNCE_BYTES (checked); no request is in flight (checked), so
        // the device does not access the buffers, and `&mut self` excludes other users.
        let (req, resp, buf) = unsafe { buffers(&self.header, &self.bounce, len) };
        let (id, dst) = match op {
            Op::Write(src) => {
                buf.copy_from_slice(src);
                // The buffers are left untouched until `complete` hands the same ones back
                // (`pending` keeps `submit` and `flush` off them); if the object is dropped
                // first, the device is reset before they are freed (the field order).
                // SAFETY: as above: they are this object's DMA memory, and only `complete` uses them next.
                (unsafe { self.blk.write_blocks_nb(sector as usize, req, buf, resp) }?, None)
            }
            Op::Read(dst) => {
                // SAFETY: as for the write.
                (unsafe { self.blk.read_blocks_nb(sector as usize, req, buf, resp) }?, Some(dst))
            }
        };
        self.pending = Some(id);
        Ok(Token { id, len, dst })
    }

    /// Whether the device has completed `token`'s request (it is next in the used ring). Any
    /// context that owns the device; no side effect.
    pub fn is_complete(&mut self, token: &Token<'_>) -> bool {
        self.blk.peek_used() == Some(token.id)
    }

    /// Collects `token`'s request: spins until the device has completed it (none if
    /// [`VirtioBlk::is_complete`] said so), takes it off the used ring and returns the device's
    /// status; a read's data is copied into its buffer only if it succeeded. The device is free
    /// for the next request afterwards (unless [`Error::WrongToken`]: nothing was done).
    pub fn complete(&mut self, token: Token<'_>) -> Result<(), Error> {
        if self.pending != Some(token.id) {
            return Err(Error::WrongToken);
        }
        while self.blk.peek_used() != Some(token.id) {
            core::hint::spin_loop();
        }
        // SAFETY: `token.len` was checked against BOUNCE_BYTES by `submit`; the device is done
        // with the buffers (its used ring holds the request), and `&mut self` excludes others.
        let (req, resp, buf) = unsafe { buffers(&self.header, &self.bounce, token.len) };
        let result = match token.dst {
            // SAFETY: the very buffers (same addresses and length) `submit` passed with this
            // token, untouched since.
            None => unsafe { self.blk.complete_write_blocks(token.id, req, buf, resp) },
            Some(dst) => {
                // SAFETY: as for the write.
                let r = unsafe { self.blk.complete_read_blocks(token.id, req, buf, resp) };
                if r.is_ok() {
                    dst.copy_from_slice(buf);
                }
                r
            }
        };
        self.pending = None;
        Ok(result?)
    }

    /// Asks the device to make every completed write durable (`VIRTIO_BLK_T_FLUSH`; nothing to
    /// do if the device does not offer it). Blocks: spins on the used ring inside the crate
    /// until the device answers. [`Error::Busy`] while a request's token is outstanding.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.pending.is_some() {
            return Err(Error::Busy);
        }
        Ok(self.blk.flush()?)
    }
}
