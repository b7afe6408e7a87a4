//! The initramfs: the newc cpio archive the bootloader loaded as its ramdisk
//! (`cadence-boot --initrd`), unpacked at boot into the VFS root ([`super::vfs`]). Regular
//! files keep their bytes where the bootloader put them until first written.

use super::vfs::{self, Content, FileData, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use alloc::collections::BTreeMap;
use alloc::string::String;
use cadence_abi::cpio;

/// Unpacks `archive` into the root (once, at boot). Returns the number of entries unpacked
/// (entry types other than directories, files and symlinks are skipped, as are bad names), or
/// the archive's error.
pub fn init(archive: &'static [u8]) -> Result<usize, cpio::CpioError> {
    let entries = cpio::parse(archive)?;
    let mut n = 0;
    for e in entries {
        let name = e.name.trim_start_matches("./").trim_start_matches('/');
        if name.is_empty() || name == "." || name.split('/').any(|c| c == "..") {
            continue;
        }
        let content = match e.mode & S_IFMT {
            S_IFDIR => Content::Dir(BTreeMap::new()),
            S_IFREG => Content::File(FileData::Static(e.data)),
            S_IFLNK => match core::str::from_utf8(e.data) {
                Ok(t) => Content::Symlink(String::from(t)),
                Err(_) => continue,
            },
            _ => continue,
        };
        if vfs::install(name, e.mode, content).is_ok() {
            n += 1;
        }
    }
    Ok(n)
}
