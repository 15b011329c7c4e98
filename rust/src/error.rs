//! Errors of the core and the numeric codes they carry across the C ABI.

use std::fmt;
use std::path::PathBuf;

/// Stable numeric error codes returned by the C ABI. `Ok` is zero.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    Ok = 0,
    /// The request itself was malformed (null pointers, bad UTF-8 in names).
    InvalidRequest = 1,
    /// A file could not be read (missing, permission denied, not a file).
    Io = 2,
    /// A file was read but its content is not a valid document.
    Malformed = 3,
    /// A configured limit (size, events, depth) was exceeded.
    LimitExceeded = 4,
    /// The cancel token was set while the call ran.
    Cancelled = 5,
    /// A panic was caught at the boundary: a bug in the core.
    Panic = 6,
}

#[derive(Debug)]
pub enum Error {
    InvalidRequest(String),
    Io { path: PathBuf, source: std::io::Error },
    Malformed { path: PathBuf, message: String },
    LimitExceeded { path: PathBuf, message: String },
    Cancelled,
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidRequest(_) => ErrorCode::InvalidRequest,
            Error::Io { .. } => ErrorCode::Io,
            Error::Malformed { .. } => ErrorCode::Malformed,
            Error::LimitExceeded { .. } => ErrorCode::LimitExceeded,
            Error::Cancelled => ErrorCode::Cancelled,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidRequest(msg) => write!(f, "invalid request: {msg}"),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Malformed { path, message } => write!(f, "{}: malformed: {message}", path.display()),
            Error::LimitExceeded { path, message } => {
                write!(f, "{}: limit exceeded: {message}", path.display())
            }
            Error::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
