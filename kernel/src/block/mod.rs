//! The block layer: the disk's page cache ([`pagecache`]), its writeback and dirty throttle
//! ([`writeback`]) and reclaim ([`reclaim`]), over the virtio disk (`drivers::virtio_blk`) and
//! the framework's frames. They use the scheduler's wait queues, signals and kernel threads,
//! which is why they are the kernel's and not the framework's.

pub mod pagecache;
pub mod reclaim;
pub mod writeback;
