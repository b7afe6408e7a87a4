//! Connected Unix stream sockets, as `socketpair(AF_UNIX, SOCK_STREAM)` makes them (Linux
//! `net/unix/af_unix.c`): two pipes crosswise, so each end reads what the other wrote. What a
//! program sees is a stream socket's: EOF once the peer is closed, EPIPE (and SIGPIPE) writing
//! to a closed peer, `fstat` mode S_IFSOCK, ESPIPE for offsets. Named sockets (`socket`,
//! `bind`, `connect`) and the datagram types are not there (see `syscall::fs::socketpair`).

use super::pipe::{self, Broken, PipeEnd};
use cadence_abi::errno::Errno;

/// One end of a connected pair.
pub struct UnixStream {
    rx: PipeEnd,
    tx: PipeEnd,
}

/// A connected pair.
pub fn pair() -> Result<(UnixStream, UnixStream), Errno> {
    let (a_rx, b_tx) = pipe::new()?;
    let (b_rx, a_tx) = pipe::new()?;
    Ok((UnixStream { rx: a_rx, tx: a_tx }, UnixStream { rx: b_rx, tx: b_tx }))
}

impl UnixStream {
    /// Reads what the peer wrote (0 at EOF: the peer is closed and nothing is left).
    pub fn read(&self, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        self.rx.read(buf, nonblock)
    }

    /// Writes for the peer; `Err(Ok(Broken))` once the peer is closed.
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Result<Broken, Errno>> {
        self.tx.write(data, nonblock)
    }

    /// `poll`'s view: (readable, writable, hung up, error).
    pub fn poll(&self) -> (bool, bool, bool, bool) {
        let (readable, _, peer_gone, _) = self.rx.poll();
        let (_, writable, _, _) = self.tx.poll();
        (readable, writable, peer_gone, false)
    }

    /// Bytes waiting (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.rx.available()
    }

    /// An inode-like number for `fstat`.
    pub fn id(&self) -> u64 {
        self.rx.id()
    }
}
