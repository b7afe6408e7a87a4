//! Files: the VFS ([`vfs`]: one ramfs tree, Linux's path walk and errors), the initramfs that
//! fills it at boot ([`initramfs`]), open files and fd tables ([`file`]), pipes ([`pipe`]), the
//! console as a terminal ([`console`]).

pub mod console;
pub mod file;
pub mod initramfs;
pub mod pipe;
pub mod socket;
pub mod vfs;

use vfs::{Content, Device, S_IFCHR, S_IFDIR};

/// Makes the directories and devices every boot has (`/dev/{null,zero,console,tty,
/// cpu_dma_latency}`, `/dev/shm` for POSIX shared memory, `/tmp`, `/proc`, `/sys`), after the initramfs is unpacked.
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
    for (dir, mode) in [("tmp", 0o1777), ("dev/shm", 0o1777), ("proc", 0o555), ("sys", 0o555), ("root", 0o700)] {
        let _ = vfs::install(dir, S_IFDIR | mode, Content::Dir(alloc::collections::BTreeMap::new()));
    }
}

/// The CPU and NUMA-node files libnuma reads (`numa_node_of_cpu`: cyclictest and oslat
/// ask it once `get_mempolicy` answers), written once the CPUs are up, as files of the ramfs:
/// `/sys/devices/system/cpu/{online,possible,present}`, a `cpuN` directory per CPU, and node 0
/// (`/sys/devices/system/node/{online,possible}`, `node0/{cpumap,cpulist}`). A stopgap: CPUs
/// do not change after boot; the sysfs generated from the kernel's tables replaces it.
pub fn init_sys_topology(online: cadence_sched::CpuMask) {
    let list = alloc::format!("{}\n", online.to_list());
    let file = |path: &str, text: &str| {
        let _ = vfs::install(path, vfs::S_IFREG | 0o444, Content::File(vfs::FileData::Owned(text.as_bytes().to_vec())));
    };
    for name in ["online", "possible", "present"] {
        file(&alloc::format!("sys/devices/system/cpu/{name}"), &list);
    }
    for cpu in (0..64).filter(|&c| online.contains(c)) {
        let _ = vfs::install(
            &alloc::format!("sys/devices/system/cpu/cpu{cpu}"),
            S_IFDIR | 0o755,
            Content::Dir(alloc::collections::BTreeMap::new()),
        );
    }
    file("sys/devices/system/node/online", "0\n");
    file("sys/devices/system/node/possible", "0\n");
    file("sys/devices/system/node/node0/cpumap", &alloc::format!("{:x}\n", online.0));
    file("sys/devices/system/node/node0/cpulist", &list);
}
