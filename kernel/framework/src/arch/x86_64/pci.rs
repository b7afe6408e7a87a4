//! PCI configuration space through port I/O (configuration mechanism #1): QEMU's default `pc`
//! machine (i440fx) has no ECAM, so every configuration read or write is an address written to
//! `CONFIG_ADDRESS` (0xCF8) followed by a data access at `CONFIG_DATA` (0xCFC).
//!
//! [`PortIoCam`] implements `virtio-drivers`' `ConfigurationAccess` over those two ports, so the
//! crate's `PciRoot` (enumeration, capabilities, BAR sizing) and `PciTransport` work on it. The
//! address/data pair is one critical section under `CONFIG_LOCK` (an `IrqLock`: a CPU taking
//! an interrupt between the two accesses must not have its address overwritten by a handler,
//! and two CPUs must not interleave their pairs).

use crate::sync::IrqLock;
use virtio_drivers::transport::pci::bus::{ConfigurationAccess, DeviceFunction};
use x86_64::instructions::port::Port;

const CONFIG_ADDRESS: u16 = 0xcf8;
const CONFIG_DATA: u16 = 0xcfc;

/// Serialises the address/data port pairs of every configuration access.
static CONFIG_LOCK: IrqLock<()> = IrqLock::new(());

/// Configuration mechanism #1 address of a function's dword at `offset`.
fn address(df: DeviceFunction, offset: u8) -> u32 {
    0x8000_0000
        | (u32::from(df.bus) << 16)
        | (u32::from(df.device & 0x1f) << 11)
        | (u32::from(df.function & 0x7) << 8)
        | u32::from(offset & 0xfc)
}

/// PCI configuration access over ports 0xCF8/0xCFC (a zero-sized handle: the ports are global).
#[derive(Debug)]
pub struct PortIoCam {
    _private: (),
}

impl PortIoCam {
    /// The handle to the machine's configuration ports.
    ///
    /// # Safety
    /// The machine must implement configuration mechanism #1 at 0xCF8/0xCFC (every PC-compatible
    /// chipset QEMU emulates does), and nothing else in the kernel may use those ports except
    /// through a `PortIoCam` (which serialises every access under one lock).
    pub unsafe fn new() -> Self {
        Self { _private: () }
    }

    /// Reads the dword at `offset` (rounded down to a multiple of 4).
    pub fn read(&self, df: DeviceFunction, offset: u8) -> u32 {
        let _pair = CONFIG_LOCK.lock();
        // SAFETY: `new`'s contract: 0xCF8/0xCFC are the configuration ports and only
        // `PortIoCam` uses them, serialised by CONFIG_LOCK (held). Selecting a function and
        // reading its configuration dword has no side effect beyond the read itself.
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(address(df, offset));
            Port::<u32>::new(CONFIG_DATA).read()
        }
    }

    /// Writes the dword at `offset` (rounded down to a multiple of 4).
    pub fn write(&mut self, df: DeviceFunction, offset: u8, value: u32) {
        let _pair = CONFIG_LOCK.lock();
        // SAFETY: as in `read`; `&mut self` is the caller's claim to change the function's
        // configuration (the driver that owns the device).
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(address(df, offset));
            Port::<u32>::new(CONFIG_DATA).write(value);
        }
    }
}

impl ConfigurationAccess for PortIoCam {
    fn read_word(&self, device_function: DeviceFunction, register_offset: u8) -> u32 {
        self.read(device_function, register_offset)
    }

    fn write_word(&mut self, device_function: DeviceFunction, register_offset: u8, data: u32) {
        self.write(device_function, register_offset, data)
    }

    /// # Safety
    /// As the trait says: the clone is used only to read read-only fields. (Every access is
    /// serialised under `CONFIG_LOCK` anyway, so a clone cannot break an address/data pair.)
    unsafe fn unsafe_clone(&self) -> Self {
        Self { _private: () }
    }
}
