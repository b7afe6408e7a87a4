//! The crate's error type: a human-readable message, meant to be printed as
//! `cadence-boot: <message>` and never to be matched on.

use std::fmt;

/// A failure with a message that already says what went wrong and, where
/// possible, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Creates an error from a message.
    pub fn new(msg: impl Into<String>) -> Self {
        Error(msg.into())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
