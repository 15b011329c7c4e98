//! The transitive header hashes of a precompiled header or module BMI, from
//! its manifest (formats.md §6.4 pch, §6.5 pcm).
//!
//! A PCH's name holds no content hash: `<cell>/<cmd_hash>/<header>.gch`,
//! where `cmd_hash` covers the compiler, the flags and the header's path
//! only. Beside it, `manifest.json` lists every transitive header with its
//! git blob hash (`transitive_hashes`). compiletools rewrites it in place
//! while planning each build that names the header, so the hashes a build
//! sees there are that build's; the previous ones must be remembered
//! (the compile history does).
//!
//! The manifest is found next to the rule's target, a path a build's
//! `timing.json` names: it is read only when the target has the shape of
//! a store entry (`<dir>/<16 hex>/<name>.gch|.pcm|.gcm`), without
//! following a symbolic link ([`crate::input::open_in_own_directory`]),
//! within [`MAX_MANIFEST_BYTES`], and only when it is what compiletools
//! writes (an object with the kind's key field and a `transitive_hashes`
//! object). What leaves the receiver of it is the names of headers whose
//! hash changed, never a hash.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::cas::names::is_hex_name;

use super::cas_key::hex_u64;
use super::stable_hash;

/// Largest manifest read (a 4096-header PCH's is ~600 KiB).
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// Most headers kept of one manifest; a manifest with more is not used
/// (a truncated list would name the wrong headers).
pub(crate) const MAX_MANIFEST_HEADERS: usize = 4096;
/// Longest header path kept; a manifest with a longer one is not used.
pub(crate) const MAX_HEADER_PATH: usize = 4096;

/// What a build's manifest says of one PCH/PCM: its command hash (the
/// store directory's name) and its transitive headers, sorted by path,
/// each with the first 64 bits of its hash.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderHashes {
    pub cmd_hash: u64,
    pub headers: Box<[(Box<str>, u64)]>,
}

impl HeaderHashes {
    /// Heap bytes held (the history's footprint).
    pub fn heap_bytes(&self) -> usize {
        self.headers.len() * std::mem::size_of::<(Box<str>, u64)>()
            + self.headers.iter().map(|(p, _)| p.len()).sum::<usize>()
    }
}

/// Which store a target is an entry of, by its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtefactKind {
    /// `.gch`: the manifest's key field is `header_realpath`.
    Pch,
    /// `.pcm` / `.gcm`: the key field is `bucket_key`.
    Pcm,
}

impl ArtefactKind {
    fn key_field(self) -> &'static str {
        match self {
            ArtefactKind::Pch => "header_realpath",
            ArtefactKind::Pcm => "bucket_key",
        }
    }
}

/// The store directory and command hash of `target` when it is a PCH or
/// PCM store entry (`<dir>/<16 hex>/<name>.gch|.pcm|.gcm`); `None` for any
/// other target (cheap: a suffix test first).
pub fn store_entry_of(target: &str) -> Option<(&str, u64, ArtefactKind)> {
    let kind = if target.ends_with(".gch") {
        ArtefactKind::Pch
    } else if target.ends_with(".pcm") || target.ends_with(".gcm") {
        ArtefactKind::Pcm
    } else {
        return None;
    };
    let (dir, name) = target.rsplit_once('/')?;
    if name.len() <= 4 {
        return None;
    }
    let cmd_hash = dir.rsplit_once('/').map_or(dir, |(_, last)| last);
    if !is_hex_name(cmd_hash.as_bytes(), 16) || cmd_hash.ends_with('\n') {
        return None;
    }
    Some((dir, hex_prefix_u64(cmd_hash.as_bytes())?, kind))
}

/// How much later than its compile's start a manifest may have been
/// modified and still be taken as that compile's: compiletools writes it
/// while planning, before the compile starts; the slack covers coarse
/// file-system timestamps.
pub(crate) const MANIFEST_SLACK_NS: i64 = 1_000_000_000;

/// Reads the manifest beside `target` (see the module docs), refusing one
/// modified after `compile_start_unix_ns` (+ [`MANIFEST_SLACK_NS`]): a
/// later build planned since and rewrote it, so its hashes are not this
/// compile's. `Err` says why none is used.
pub fn read_for_target(target: &str, compile_start_unix_ns: i64) -> Result<HeaderHashes, String> {
    let (dir, cmd_hash, kind) = store_entry_of(target).ok_or("not a PCH/PCM store entry")?;
    let path = Path::new(dir).join("manifest.json");
    let file = crate::input::open_in_own_directory(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return Err(format!(
            "{}: not a regular file within {MAX_MANIFEST_BYTES} bytes",
            path.display()
        ));
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(i64::MAX, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    if modified > compile_start_unix_ns.saturating_add(MANIFEST_SLACK_NS) {
        return Err(format!(
            "{}: rewritten after the build (by a later one)",
            path.display()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err("grew beyond the limit".to_owned());
    }
    parse(&bytes, cmd_hash, kind)
}

/// The hashes of a manifest's bytes (pure: the known-answer tests' entry).
pub fn parse(bytes: &[u8], cmd_hash: u64, kind: ArtefactKind) -> Result<HeaderHashes, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(map) = doc else {
        return Err("not a JSON object".to_owned());
    };
    match map.get(kind.key_field()) {
        Some(Value::String(s)) if !s.is_empty() => {}
        _ => return Err(format!("no {}", kind.key_field())),
    }
    let Some(Value::Object(hashes)) = map.get("transitive_hashes") else {
        return Err("no transitive_hashes object".to_owned());
    };
    if hashes.len() > MAX_MANIFEST_HEADERS {
        return Err(format!("{} headers, limit {MAX_MANIFEST_HEADERS}", hashes.len()));
    }
    let mut headers = Vec::with_capacity(hashes.len());
    for (path, hash) in hashes {
        if path.is_empty() || path.len() > MAX_HEADER_PATH {
            return Err(format!("a header path of {} bytes", path.len()));
        }
        let Value::String(hash) = hash else {
            return Err(format!("the hash of {path:?} is not a string"));
        };
        headers.push((Box::<str>::from(path.as_str()), hash_value(hash)));
    }
    // serde_json keeps the last of duplicate keys, as Python's json.
    headers.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(HeaderHashes {
        cmd_hash,
        headers: headers.into_boxed_slice(),
    })
}

/// A header's hash as a number: the first 16 digits of compiletools'
/// 40-hex git blob hash; any other text by its [`stable_hash`], so a
/// change is still seen.
fn hash_value(text: &str) -> u64 {
    let b = text.as_bytes();
    match b.get(..16) {
        Some(digits) if b.len() == 40 && is_hex_name(b, 40) => hex_prefix_u64(digits).unwrap_or(0),
        _ => stable_hash(b),
    }
}

/// The first sixteen hex digits as a number, as a CAS name's hashes.
fn hex_prefix_u64(digits: &[u8]) -> Option<u64> {
    hex_u64(digits.get(..16)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PCH: &str = "/p/cas-pchdir/gcc.cxx17.debug/cf1e549cce33c0e3/pch.hpp.gch";

    #[test]
    fn store_entries_are_recognised_by_shape() {
        assert_eq!(
            store_entry_of(PCH),
            Some((
                "/p/cas-pchdir/gcc.cxx17.debug/cf1e549cce33c0e3",
                0xcf1e549cce33c0e3,
                ArtefactKind::Pch
            ))
        );
        assert_eq!(
            store_entry_of("/c/aaaaaaaaaaaaaaaa/vector.gcm").map(|e| e.2),
            Some(ArtefactKind::Pcm)
        );
        assert_eq!(
            store_entry_of("aaaaaaaaaaaaaaaa/foo.pcm").map(|e| e.1),
            Some(0xaaaaaaaaaaaaaaaa)
        );
        for other in [
            "",
            ".gch",
            "/p/src/pch.hpp.gch",              // beside the header: legacy layout
            "/p/CF1E549CCE33C0E3/pch.hpp.gch", // upper case
            "/p/cf1e549cce33c0e/pch.hpp.gch",  // 15 digits
            "/p/cf1e549cce33c0e3/.gch",        // no name
            "/p/cas-objdir/v/0c/stats_0c8d944aa09c_6622db1ec0945f_f542d280f7f88864.o",
            "/p/cf1e549cce33c0e3/pch.hpp.gch/",
        ] {
            assert_eq!(store_entry_of(other), None, "{other:?}");
        }
    }

    /// The manifest ct-cake 13.1.4 wrote in a real build (one header).
    #[test]
    fn known_answer_from_a_real_manifest() {
        let real = br#"{"compiler": "ccache g++", "compiler_identity": "ccache g++", "header_realpath": "/home/dev/p/src/pch.hpp", "transitive_hashes": {"/home/dev/p/src/base.hpp": "48724a85207b0bc0b43f0a59b206da5e4759d4f3", "/home/dev/p/src/a.hpp": "def9ae81896b93d7bd902b8bed8eddd488508b6d"}}"#;
        let h = parse(real, 7, ArtefactKind::Pch).unwrap();
        assert_eq!(h.cmd_hash, 7);
        assert_eq!(
            &*h.headers,
            &[
                ("/home/dev/p/src/a.hpp".into(), 0xdef9ae81896b93d7),
                ("/home/dev/p/src/base.hpp".into(), 0x48724a85207b0bc0)
            ]
        );
        // A module manifest keys by bucket_key, not header_realpath.
        let pcm = br#"{"bucket_key": "<vector>", "stage": "gcc_header_unit", "transitive_hashes": {}}"#;
        assert!(parse(pcm, 1, ArtefactKind::Pcm).unwrap().headers.is_empty());
        assert!(parse(pcm, 1, ArtefactKind::Pch).is_err());
        // Not a blob hash: still a value that changes with the text.
        let odd = br#"{"header_realpath": "/h", "transitive_hashes": {"/a": "XYZ", "/b": "xyz"}}"#;
        let h = parse(odd, 1, ArtefactKind::Pch).unwrap();
        assert_ne!(h.headers[0].1, h.headers[1].1);
    }

    #[test]
    fn hostile_manifests_are_refused_without_a_panic() {
        let many: String = (0..=MAX_MANIFEST_HEADERS)
            .map(|i| format!("\"/h{i}\": \"{i}\""))
            .collect::<Vec<_>>()
            .join(",");
        let long_path = format!(
            r#"{{"header_realpath": "/h", "transitive_hashes": {{"{}": "1"}}}}"#,
            "x".repeat(MAX_HEADER_PATH + 1)
        );
        let too_many = format!(r#"{{"header_realpath": "/h", "transitive_hashes": {{{many}}}}}"#);
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for bad in [
            &b""[..],
            b"null",
            b"[1]",
            b"{",
            b"\xff\xfe",
            br#"{"transitive_hashes": {}}"#,
            br#"{"header_realpath": "", "transitive_hashes": {}}"#,
            br#"{"header_realpath": 5, "transitive_hashes": {}}"#,
            br#"{"header_realpath": "/h"}"#,
            br#"{"header_realpath": "/h", "transitive_hashes": ["/a"]}"#,
            br#"{"header_realpath": "/h", "transitive_hashes": {"/a": 5}}"#,
            br#"{"header_realpath": "/h", "transitive_hashes": {"": "1"}}"#,
            long_path.as_bytes(),
            too_many.as_bytes(),
            deep.as_bytes(),
        ] {
            assert!(
                parse(bad, 0, ArtefactKind::Pch).is_err(),
                "{:?}",
                String::from_utf8_lossy(&bad[..bad.len().min(60)])
            );
        }
    }

    #[test]
    fn files_beside_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let cell = dir.path().join("cf1e549cce33c0e3");
        std::fs::create_dir(&cell).unwrap();
        let target = format!("{}/pch.hpp.gch", cell.display());
        assert!(read_for_target(&target, i64::MAX).is_err(), "no manifest");
        std::fs::write(
            cell.join("manifest.json"),
            br#"{"header_realpath": "/h", "transitive_hashes": {"/a": "1"}}"#,
        )
        .unwrap();
        assert_eq!(read_for_target(&target, i64::MAX).unwrap().headers.len(), 1);
        // Written after the compile started (a later build rewrote it): not its.
        let err = read_for_target(&target, 0).unwrap_err();
        assert!(err.contains("rewritten after the build"), "{err}");
        // Too large: not read.
        std::fs::write(
            cell.join("manifest.json"),
            vec![b' '; MAX_MANIFEST_BYTES as usize + 1],
        )
        .unwrap();
        assert!(read_for_target(&target, i64::MAX).unwrap_err().contains("bytes"));
        // A symlinked manifest is not followed.
        std::fs::remove_file(cell.join("manifest.json")).unwrap();
        let elsewhere = dir.path().join("secret.json");
        std::fs::write(
            &elsewhere,
            br#"{"header_realpath": "/h", "transitive_hashes": {"/s": "1"}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&elsewhere, cell.join("manifest.json")).unwrap();
        assert!(read_for_target(&target, i64::MAX).is_err());
        assert!(read_for_target("/etc/passwd", i64::MAX).is_err());
    }
}
