//! Device drivers: the virtio-blk disk ([`virtio_blk`], `/dev/vda`), over the framework's
//! `virtio-drivers` hardware abstraction ([`virtio_hal`]).

pub mod virtio_blk;
pub use framework::virtio_hal;
