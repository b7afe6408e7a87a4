//! Device drivers: the virtio-blk disk ([`virtio_blk`], `/dev/vda`) and the `virtio-drivers`
//! crate's hardware abstraction over Cadence's memory management ([`virtio_hal`]).

pub mod virtio_blk;
pub mod virtio_hal;
