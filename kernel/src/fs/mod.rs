//! Files: the VFS ([`vfs`]: one ramfs tree, Linux's path walk and errors), the initramfs that
//! fills it at boot ([`initramfs`]), open files and fd tables ([`file`]), native AIO contexts
//! ([`aio`]), pipes ([`pipe`]), the
//! console as a terminal ([`console`]), the virtual terminals' and the disk's device files
//! ([`vt`], [`blockdev`]), timerfd and signalfd ([`timerfd`], [`signalfd`]), pidfds ([`pidfd`]), and the generated trees ([`pseudo`]: `/sys` is [`sysfs`], `/proc` the
//! process layer's `process::procfs`).

pub mod aio;
pub mod blockdev;
pub mod console;
pub mod file;
pub mod initramfs;
pub mod mount;
pub mod mqueue;
pub mod pidfd;
pub mod pipe;
pub mod pseudo;
pub mod signalfd;
pub mod socket;
pub mod sysfs;
pub mod timerfd;
pub mod tracefs;
pub mod vfs;
pub mod vt;

use vfs::{Content, Device, S_IFCHR, S_IFDIR};

/// Makes the directories and devices every boot has (`/dev/{null,zero,console,tty,
/// cpu_dma_latency}`, the virtual terminals `/dev/tty1..63`, `/dev/shm` for POSIX shared
/// memory, `/tmp`), after the initramfs is unpacked. Modes are devtmpfs's (what Linux 6.1
/// shows without udev, as on the peer: 0600 for the consoles and vts, 0666 for null, zero and
/// tty).
pub fn init_devices() {
    for (path, mode, dev) in [
        ("dev/null", 0o666, Device::Null),
        ("dev/zero", 0o666, Device::Zero),
        ("dev/console", 0o600, Device::Console),
        ("dev/tty", 0o666, Device::Tty),
        ("dev/cpu_dma_latency", 0o600, Device::CpuDmaLatency),
    ] {
        let _ = vfs::install(path, S_IFCHR | mode, Content::Device(dev));
    }
    for n in 1..=crate::tty::MAX_VT {
        let _ = vfs::install(&alloc::format!("dev/tty{n}"), S_IFCHR | 0o600, Content::Device(Device::Vt(n)));
    }
    for (dir, mode) in [("tmp", 0o1777), ("dev/shm", 0o1777), ("root", 0o700)] {
        let _ = vfs::install(dir, S_IFDIR | mode, Content::Dir(alloc::collections::BTreeMap::new()));
    }
}

/// Mounts a generated tree at boot: `/proc` from the process layer, `/sys` and, on its
/// directories, debugfs and tracefs (see [`mount`]).
pub fn mount_pseudo(source: &str, path: &str, fstype: &'static str, options: &str, node: pseudo::Node) {
    if let Err(e) = mount::mount_generated(source, path, fstype, options, node) {
        framework::kprintln!("fs: mounting {} on {}: {}", fstype, path, e.strerror());
    }
}
