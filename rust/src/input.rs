//! Reading one untrusted input file within the size limit.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::error::Error;

/// Reads the whole regular file at `path` in one allocation, refusing files
/// larger than `max_bytes`.
///
/// The size is checked on the open descriptor before reading, so a huge file
/// costs nothing; the read itself is capped too, because a file that grows
/// after the check (a build still writing, a hostile writer) must not get
/// past the limit either. Anything but a regular file (a FIFO would block
/// the call forever, a directory cannot be read) is an I/O error.
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, Error> {
    let io_err = |source: io::Error| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    if meta.len() > max_bytes {
        return Err(too_big(path, meta.len(), max_bytes));
    }
    // One spare byte lets a file that grew past the limit be detected without
    // a second allocation.
    let capacity = usize::try_from(meta.len().saturating_add(1)).unwrap_or(usize::MAX);
    let mut buf = Vec::new();
    buf.try_reserve_exact(capacity)
        .map_err(|e| io_err(io::Error::new(io::ErrorKind::OutOfMemory, e)))?;
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io_err)?;
    if buf.len() as u64 > max_bytes {
        return Err(too_big(path, buf.len() as u64, max_bytes));
    }
    Ok(buf)
}

fn too_big(path: &Path, size: u64, max: u64) -> Error {
    Error::LimitExceeded {
        path: path.to_path_buf(),
        message: format!("file is {size} bytes, limit is {max}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_small_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_bounded(&p, 5).unwrap(), b"hello");
    }

    #[test]
    fn refuses_large_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello!").unwrap();
        assert!(matches!(read_bounded(&p, 5), Err(Error::LimitExceeded { .. })));
    }

    #[test]
    fn missing_file_and_directory_are_io_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_bounded(&dir.path().join("nope"), 5),
            Err(Error::Io { .. })
        ));
        assert!(matches!(read_bounded(dir.path(), 5), Err(Error::Io { .. })));
    }
}
