//! Disk images for a kernel ELF.
//!
//! [`disk_image`] returns `<elf>.bios.img` or `<elf>.uefi.img` next to the
//! ELF, (re)building it when it is missing or older than the ELF. Images are
//! written to a unique temporary name and renamed into place, so concurrent
//! callers (parallel tests) never see a half-written image.

use crate::{Error, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Which firmware the image is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Firmware {
    /// Legacy BIOS boot (MBR disk, bootloader stages 1-4). QEMU's default.
    Bios,
    /// UEFI boot (GPT disk with an EFI system partition); needs OVMF.
    Uefi,
}

impl Firmware {
    /// "BIOS" or "UEFI".
    pub fn name(self) -> &'static str {
        match self {
            Firmware::Bios => "BIOS",
            Firmware::Uefi => "UEFI",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Firmware::Bios => "bios.img",
            Firmware::Uefi => "uefi.img",
        }
    }
}

/// Checks that `kernel` is an existing ELF file, with a helpful error.
pub(crate) fn check_kernel(kernel: &Path) -> Result<()> {
    let mut magic = [0u8; 4];
    let read = fs::File::open(kernel).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::new(format!("kernel ELF {} does not exist (build it with `make kernel`)", kernel.display())))
        }
        Err(e) => Err(Error::new(format!("cannot read kernel {}: {e}", kernel.display()))),
        Ok(()) if magic != *b"\x7fELF" => Err(Error::new(format!("{} is not an ELF file", kernel.display()))),
        Ok(()) => Ok(()),
    }
}

/// Returns the cached disk image for `kernel`, building it if it is missing
/// or older than the kernel.
pub fn disk_image(kernel: &Path, firmware: Firmware) -> Result<PathBuf> {
    disk_image_with(kernel, firmware, None)
}

/// [`disk_image`] with `ramdisk` as the bootloader's ramdisk (the kernel's initramfs): the
/// image is `<elf>.<ramdisk name>.<firmware>.img`, rebuilt when the kernel or the ramdisk is
/// newer.
pub fn disk_image_with(kernel: &Path, firmware: Firmware, ramdisk: Option<&Path>) -> Result<PathBuf> {
    check_kernel(kernel)?;
    let mut name = kernel.as_os_str().to_owned();
    if let Some(r) = ramdisk {
        if !r.is_file() {
            return Err(Error::new(format!("initrd {} does not exist", r.display())));
        }
        name.push(".");
        name.push(r.file_name().unwrap_or_default());
    }
    name.push(".");
    name.push(firmware.suffix());
    let image = PathBuf::from(name);
    let mtime = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (mtime(kernel), mtime(&image)) {
        (Some(k), Some(i)) => i >= k && ramdisk.is_none_or(|r| mtime(r).is_some_and(|rm| i >= rm)),
        _ => false,
    };
    if !fresh {
        build_image_with(kernel, firmware, ramdisk, &image)?;
    }
    Ok(image)
}

/// Builds a disk image for `kernel` at `out` (atomically replacing it).
pub fn build_image(kernel: &Path, firmware: Firmware, out: &Path) -> Result<()> {
    build_image_with(kernel, firmware, None, out)
}

/// [`build_image`] with a ramdisk.
pub fn build_image_with(kernel: &Path, firmware: Firmware, ramdisk: Option<&Path>, out: &Path) -> Result<()> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    check_kernel(kernel)?;
    let tmp = {
        let mut s = out.as_os_str().to_owned();
        s.push(format!(".tmp{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
        PathBuf::from(s)
    };
    let built = match firmware {
        Firmware::Bios => {
            let mut b = bootloader::BiosBoot::new(kernel);
            if let Some(r) = ramdisk {
                b.set_ramdisk(r);
            }
            b.create_disk_image(&tmp)
        }
        Firmware::Uefi => {
            let mut b = bootloader::UefiBoot::new(kernel);
            if let Some(r) = ramdisk {
                b.set_ramdisk(r);
            }
            b.create_disk_image(&tmp)
        }
    };
    let result = built.map_err(|e| format!("{e:#}")).and_then(|()| fs::rename(&tmp, out).map_err(|e| e.to_string()));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(Error::new(format!("cannot build {} disk image {} from {}: {e}", firmware.name(), out.display(), kernel.display())));
    }
    Ok(())
}
