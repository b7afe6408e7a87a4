//! `/dev/vda` as a block device file (254:0, virtio-blk's major on Linux 6.1): reads and
//! writes at the file offset go through the disk's page cache (`block::pagecache`, written
//! back by `block::writeback` and throttled as every other writer of the disk), `fsync` is the
//! disk's `sync`. The file exists only when the kernel found a disk ([`install`]).
//!
//! Linux's block-device file rules (`block/fops.c`): a read at or past the end returns 0 and
//! one crossing it is shortened; a write at or past the end is ENOSPC and one crossing it is
//! shortened; `lseek` cannot go past the end (EINVAL). O_DIRECT is accepted and served from
//! the page cache (the data is the same; Linux's alignment rules are not checked).

use crate::block::{pagecache, writeback};
use crate::drivers::virtio_blk::{self, BlkError};
use cadence_abi::errno::Errno;

/// The errno of a block-layer error.
fn errno(e: BlkError) -> Errno {
    match e {
        BlkError::NoDevice => Errno::ENODEV,
        BlkError::NoSpace => Errno::ENOSPC,
        BlkError::Io => Errno::EIO,
        // `blkdev_write_iter` on a read-only disk.
        BlkError::ReadOnly => Errno::EPERM,
        BlkError::Invalid => Errno::EINVAL,
        BlkError::Interrupted => Errno::EINTR,
        BlkError::NoMemory => Errno::ENOMEM,
    }
}

/// The disk's size in bytes (0 without one): `lseek`'s SEEK_END, `BLKGETSIZE64`.
pub fn size() -> u64 {
    pagecache::disk_bytes().unwrap_or(0)
}

/// Reads at byte `pos` into `buf`: the count (0 at or past the end).
pub fn read_at(pos: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let size = size();
    if pos >= size || buf.is_empty() {
        return Ok(0);
    }
    let n = (buf.len() as u64).min(size - pos) as usize;
    pagecache::read(pos, &mut buf[..n]).map_err(errno)?;
    Ok(n)
}

/// Writes `data` at byte `pos` through the cache: the count (ENOSPC at or past the end).
pub fn write_at(pos: u64, data: &[u8]) -> Result<usize, Errno> {
    if data.is_empty() {
        return Ok(0);
    }
    let size = size();
    if pos >= size {
        return Err(Errno::ENOSPC);
    }
    let n = (data.len() as u64).min(size - pos) as usize;
    writeback::write(pos, &data[..n], false).map_err(errno)?;
    Ok(n)
}

/// `fsync` / `fdatasync`: every dirty page written back and the device's cache flushed
/// (Linux's `blkdev_fsync`); EIO once if a write-back failed since the last sync.
pub fn fsync() -> Result<(), Errno> {
    writeback::sync().map_err(errno)
}

/// `sync(2)`'s part: the disk's cache written back and flushed, if there is a disk (errors
/// are not reported: `sync` returns nothing).
pub fn sync_all() {
    if virtio_blk::info().is_some() {
        let _ = writeback::sync();
    }
}

/// Makes `/dev/vda` if the kernel found a disk (at boot, after the driver's probe). Mode 0600
/// root's, as devtmpfs makes it.
pub fn install() {
    if virtio_blk::info().is_some() {
        let _ = super::vfs::install("dev/vda", super::vfs::S_IFBLK | 0o600, super::vfs::Content::Device(super::vfs::Device::Vda));
    }
}
