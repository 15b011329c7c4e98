//! Reading the bucket key out of a manifest (pch/pcm `manifest.json`, exe
//! `<entry>.manifest`; formats.md §6.4–§6.6, §6.8).
//!
//! compiletools does `json.load(open(path))` and catches only `OSError` and
//! `JSONDecodeError`; it then calls `.get(field)` on whatever came out. So:
//!
//! | manifest | compiletools | here |
//! |---|---|---|
//! | absent, unreadable, a directory, not JSON, JSON `null` | unknown key | same |
//! | object, field absent / `null` / `""` (falsy) | unknown key | same |
//! | object, field a non-empty string | that string | same |
//! | invalid UTF-8 | crash (`UnicodeDecodeError`) | unknown key, counted |
//! | top level not an object (`[1]`, `5`, `"x"`, `true`) | crash (`AttributeError`) | unknown key, counted |
//! | pch/pcm field a non-empty array/object | crash (unhashable) | unknown key, counted |
//! | pch/pcm field a truthy number / `true` | used verbatim as key | unknown key, counted (formats.md §6.8 judgement call) |
//! | exe field any non-string | unknown key | same |
//! | FIFO / device, or larger than the limit | blocks / reads it all | not read, unknown key, counted |
//!
//! Known residual differences, all on manifests compiletools never writes:
//! Python's `json` accepts `NaN`/`Infinity` literals, lone surrogate escapes
//! (`"\ud800"`) and nesting deeper than 128 levels, which `serde_json`
//! rejects; such manifests get the unknown key here.
//!
//! Symlinked manifests are not followed (`ct-cache-report` follows them):
//! a manifest is opened relative to a handle of its own directory, itself
//! opened without following a link, so a member directory (a command-hash
//! directory, an exe shard) swapped for a link to another user's directory
//! after it was listed redirects nothing (issue 22, defect 2). The cell
//! above it is configuration.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use serde_json::Value;

/// What a manifest yields for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ManifestKey {
    /// The key field held a non-empty string: its UTF-8 bytes.
    Key(Vec<u8>),
    /// Fall back to the kind's `<unknown:…>` key, for this reason.
    Unknown(Fallback),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// No file (or a broken symlink).
    Missing,
    /// Unreadable, a directory, not JSON, or JSON `null`; compiletools also
    /// falls back.
    Invalid(String),
    /// An object whose field is absent, `null` or `""`.
    WithoutKey,
    /// Invalid UTF-8 or a top level that is not an object: compiletools
    /// would crash.
    CrashCompat(String),
    /// The field is neither a string nor `null`. `unhashable` is set for a
    /// non-empty array/object, which crashes compiletools' pch/pcm grouping.
    NonString { what: &'static str, unhashable: bool },
    /// Not read because of our limits.
    Skipped(String),
}

/// The key of a manifest whose directory could not be opened (`error`):
/// the fallback its open would have given.
pub(crate) fn read_key_failed(error: std::io::Error, field: &str, max_bytes: u64) -> ManifestKey {
    key_from(Err(error), field, max_bytes)
}

/// Reads the manifest `name` of the directory `dir` (an open handle, the
/// one its sibling was listed through) and returns the bucket key held in
/// `field`.
pub(crate) fn read_key_at(dir: BorrowedFd<'_>, name: &Path, field: &str, max_bytes: u64) -> ManifestKey {
    let opened = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(|e| crate::input::explain_symlink(e.into()));
    key_from(opened, field, max_bytes)
}

fn key_from(opened: std::io::Result<File>, field: &str, max_bytes: u64) -> ManifestKey {
    match read_bounded(opened, max_bytes).and_then(|bytes| key_of(&bytes, field)) {
        Ok(key) => ManifestKey::Key(key),
        Err(fallback) => ManifestKey::Unknown(fallback),
    }
}

/// The file's bytes, at most `max_bytes` of them.
fn read_bounded(opened: std::io::Result<File>, max_bytes: u64) -> Result<Vec<u8>, Fallback> {
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(Fallback::Missing),
        // ct-cache-report follows it; reading a file outside the store that
        // a store writer pointed at is not worth that parity.
        Err(e) if crate::input::is_refused_symlink(&e) => return Err(Fallback::Skipped(e.to_string())),
        Err(e) => return Err(Fallback::Invalid(format!("unreadable: {e}"))),
    };
    let meta = file
        .metadata()
        .map_err(|e| Fallback::Invalid(format!("unreadable: {e}")))?;
    if meta.is_dir() {
        // Python's open() raises IsADirectoryError, an OSError.
        return Err(Fallback::Invalid("is a directory".to_owned()));
    }
    if !meta.is_file() {
        return Err(Fallback::Skipped("not a regular file".to_owned()));
    }
    if meta.len() > max_bytes {
        return Err(Fallback::Skipped(format!(
            "{} bytes, limit {max_bytes}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    // +1 notices a file that grew past the limit after the fstat.
    (&mut file)
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Fallback::Invalid(format!("unreadable: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Fallback::Skipped(format!(
            "grew beyond the limit of {max_bytes} bytes"
        )));
    }
    Ok(bytes)
}

fn key_of(bytes: &[u8], field: &str) -> Result<Vec<u8>, Fallback> {
    // Python decodes the whole file before parsing, so invalid UTF-8 fails
    // even where the JSON would have been invalid anyway.
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Fallback::CrashCompat(format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
    let doc: Value = serde_json::from_str(text).map_err(|e| Fallback::Invalid(format!("not JSON: {e}")))?;
    let map = match doc {
        Value::Object(map) => map,
        Value::Null => return Err(Fallback::Invalid("JSON null".to_owned())),
        other => {
            return Err(Fallback::CrashCompat(format!(
                "top level is {}, not an object",
                type_name(&other)
            )));
        }
    };
    match map.get(field) {
        None | Some(Value::Null) => Err(Fallback::WithoutKey),
        Some(Value::String(s)) if s.is_empty() => Err(Fallback::WithoutKey),
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(other) => {
            let unhashable = match other {
                Value::Array(a) => !a.is_empty(),
                Value::Object(o) => !o.is_empty(),
                _ => false,
            };
            Err(Fallback::NonString {
                what: type_name(other),
                unhashable,
            })
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn key(text: &[u8]) -> Result<Vec<u8>, Fallback> {
        key_of(text, "bucket_key")
    }

    #[test]
    fn classification() {
        assert_eq!(
            key(br#"{"bucket_key": "/src/foo.cppm", "stage": "x"}"#),
            Ok(b"/src/foo.cppm".to_vec())
        );
        assert_eq!(key(br#"{"bucket_key": "<vector>"}"#), Ok(b"<vector>".to_vec()));
        // last duplicate wins, as in Python's json
        assert_eq!(
            key(br#"{"bucket_key": "a", "bucket_key": "b"}"#),
            Ok(b"b".to_vec())
        );
        assert_eq!(key(br#"{"bucket_key": ""}"#), Err(Fallback::WithoutKey));
        assert_eq!(key(br#"{"bucket_key": null}"#), Err(Fallback::WithoutKey));
        assert_eq!(key(br#"{}"#), Err(Fallback::WithoutKey));
        assert!(matches!(key(b"null"), Err(Fallback::Invalid(_))));
        assert!(matches!(key(b""), Err(Fallback::Invalid(_))));
        assert!(matches!(key(b"{"), Err(Fallback::Invalid(_))));
        assert!(matches!(key(b"\0\0\0\0"), Err(Fallback::Invalid(_))));
        assert!(
            matches!(key(b"\xef\xbb\xbf{}"), Err(Fallback::Invalid(_))),
            "BOM: JSONDecodeError in Python"
        );
        assert!(matches!(key(b"[1]"), Err(Fallback::CrashCompat(_))));
        assert!(matches!(key(b"5"), Err(Fallback::CrashCompat(_))));
        assert!(matches!(key(b"\"x\""), Err(Fallback::CrashCompat(_))));
        assert!(matches!(
            key(b"{\"bucket_key\": \"\xff\"}"),
            Err(Fallback::CrashCompat(_))
        ));
        assert_eq!(
            key(br#"{"bucket_key": 5}"#),
            Err(Fallback::NonString {
                what: "a number",
                unhashable: false
            })
        );
        assert_eq!(
            key(br#"{"bucket_key": true}"#),
            Err(Fallback::NonString {
                what: "a boolean",
                unhashable: false
            })
        );
        assert_eq!(
            key(br#"{"bucket_key": []}"#),
            Err(Fallback::NonString {
                what: "an array",
                unhashable: false
            })
        );
        assert_eq!(
            key(br#"{"bucket_key": [1]}"#),
            Err(Fallback::NonString {
                what: "an array",
                unhashable: true
            })
        );
        assert_eq!(
            key(br#"{"bucket_key": {"a": 1}}"#),
            Err(Fallback::NonString {
                what: "an object",
                unhashable: true
            })
        );
    }

    /// The manifest at `path` read the way `cmd_hash` reads it: its
    /// directory opened relative to a handle of the one above, not
    /// following a link, and the manifest relative to that.
    fn read_key(path: &Path, field: &str, max: u64) -> ManifestKey {
        let member = path.parent().unwrap();
        let above = rustix::fs::open(
            member.parent().unwrap(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        match crate::cas::scan::open_member(above.as_fd(), member.file_name().unwrap()) {
            Ok(fd) => read_key_at(fd.as_fd(), Path::new(path.file_name().unwrap()), field, max),
            Err(e) => read_key_failed(e, field, max),
        }
    }

    #[test]
    fn files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        assert_eq!(read_key(&p, "k", 100), ManifestKey::Unknown(Fallback::Missing));
        std::fs::write(&p, br#"{"k": "v"}"#).unwrap();
        assert_eq!(read_key(&p, "k", 100), ManifestKey::Key(b"v".to_vec()));
        assert!(matches!(
            read_key(&p, "k", 5),
            ManifestKey::Unknown(Fallback::Skipped(_))
        ));
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(matches!(
            read_key(&p, "k", 100),
            ManifestKey::Unknown(Fallback::Invalid(_))
        ));
    }

    /// A member directory swapped for a link to another user's directory
    /// between its listing and the manifest's open: the manifest there is
    /// not read.
    #[test]
    fn swapped_member_directory_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("manifest.json"), br#"{"k": "secret"}"#).unwrap();
        let member = dir.path().join("0123456789abcdef");
        std::os::unix::fs::symlink(&victim, &member).unwrap();
        match read_key(&member.join("manifest.json"), "k", 100) {
            ManifestKey::Unknown(Fallback::Skipped(why)) => assert!(why.contains("symbolic link"), "{why}"),
            other => panic!("read through the link: {other:?}"),
        }
        // A symlinked manifest itself is not followed either.
        let own = dir.path().join("own");
        std::fs::create_dir(&own).unwrap();
        std::os::unix::fs::symlink(victim.join("manifest.json"), own.join("manifest.json")).unwrap();
        assert!(matches!(
            read_key(&own.join("manifest.json"), "k", 100),
            ManifestKey::Unknown(Fallback::Skipped(_))
        ));
    }

    #[test]
    fn fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        let status = std::process::Command::new("mkfifo").arg(&p).status();
        if !matches!(status, Ok(s) if s.success()) {
            eprintln!("mkfifo unavailable; skipped");
            return;
        }
        assert!(matches!(
            read_key(&p, "k", 100),
            ManifestKey::Unknown(Fallback::Skipped(_))
        ));
    }
}
