//! The history as bytes, for the receiver's storage extension: Rust writes
//! them, Go only stores and hands them back.
//!
//! Layout (little endian): the magic `CTHIST4\n`; the scope count (u32)
//! and each scope (host NUL variant) as length (u32) and UTF-8; the target
//! count (u64), then per target, least recently used first — its scope's
//! index (u32), identity length (u32), identity (UTF-8), compile count
//! (u8), per compile: build start (i64, Unix ns), build tie (u32), duration
//! (i64, ns); key count (u8), per key: build start, tie, file, dep and
//! macro-state hash (u64 each). Then the build scope count (u32), per
//! scope its name (host NUL variant NUL pipeline: length u32, UTF-8), its
//! build count (u8), per build: start, tie, trace id (16 bytes), duration
//! (i64), critical path present (u8), its length (i64) and hash (u64),
//! rule count (u32) and the rules' identity hashes (u64 each, ascending).
//! Then the PCH/PCM manifests ([`super::manifests`]): their count (u32),
//! per target its scope and identity (length u32, UTF-8 each), its
//! manifest count (u8), per manifest: build start, tie, command hash
//! (u64), header count (u32), per header its path (length u32, UTF-8) and
//! hash (u64); targets in (scope, identity) order.
//! Replaying the targets in that order gives back the same use order; a
//! smaller capacity or window than when saved keeps the most recent.
//!
//! `CTHIST3` is `CTHIST4` without the manifests (before PCH reasons): it
//! is converted — every target, key and build kept — with a note saying
//! that its precompiled headers have no remembered manifest, so their next
//! compile is `not_cas` once (the receiver logs it as one warning).
//!
//! `CTHIST2` (before the rebuild reasons) keyed targets by `ct.target`,
//! which for a CAS build changes exactly when a source is recompiled: its
//! numbers cannot be carried over to the new keys, so it is refused with
//! an error saying so, and the receiver starts an empty history.

use super::builds::{BuildRecord, BuildRecords};
use super::lru::TargetLru;
use super::manifests::{KeptManifest, Manifests};
use super::record::{BuildKey, Compile, Seen};
use crate::rebuild::manifest_hashes::{MAX_HEADER_PATH, MAX_MANIFEST_HEADERS};
use crate::rebuild::{CasKey, HeaderHashes};

const MAGIC: &[u8; 8] = b"CTHIST4\n";
/// The format before the PCH/PCM manifests: converted.
const MAGIC_V3: &[u8; 8] = b"CTHIST3\n";
/// The note of a converted `CTHIST3` history.
pub(crate) const CONVERTED_V3: &str =
    "compile history of an older receiver (CTHIST3, without precompiled headers' manifests): converted; each precompiled header's next compile is not_cas once";
/// The format before the rebuild reasons: keyed by `ct.target`.
const MAGIC_V2: &[u8; 8] = b"CTHIST2\n";
/// What [`decode_into`] says of a `CTHIST2` history.
pub(crate) const OLD_FORMAT: &str =
    "compile history of an older receiver (keyed by ct.target, which a CAS build changes on every recompile): dropped, starting an empty history";
/// Longest scope or path read back.
const MAX_STR: usize = 1 << 16;

/// Serialises `targets`, `builds` and `manifests`.
pub fn encode(targets: &TargetLru, builds: &BuildRecords, manifests: &Manifests) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + targets.len() * 96);
    out.extend_from_slice(MAGIC);
    let scopes = targets.scopes();
    out.extend_from_slice(&(scopes.len() as u32).to_le_bytes());
    for scope in scopes {
        out.extend_from_slice(&(scope.len() as u32).to_le_bytes());
        out.extend_from_slice(scope.as_bytes());
    }
    out.extend_from_slice(&(targets.len() as u64).to_le_bytes());
    for (scope, path, record) in targets.iter_oldest_first() {
        out.extend_from_slice(&scope.to_le_bytes());
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path.as_bytes());
        // The window is at most 255 (config check); a longer record keeps
        // its newest 255.
        let compiles = record.compiles();
        let kept = &compiles[compiles.len().saturating_sub(255)..];
        out.push(kept.len() as u8);
        for c in kept {
            put_build_key(&mut out, c.build);
            out.extend_from_slice(&c.duration_ns.to_le_bytes());
        }
        let seen = record.seen();
        out.push(seen.len().min(255) as u8);
        for s in &seen[..seen.len().min(255)] {
            put_build_key(&mut out, s.build);
            for h in [s.key.file_hash, s.key.dep_hash, s.key.macro_state_hash] {
                out.extend_from_slice(&h.to_le_bytes());
            }
        }
    }
    let scopes: Vec<(&str, &[BuildRecord])> = builds.iter().collect();
    out.extend_from_slice(&(scopes.len() as u32).to_le_bytes());
    for (scope, kept) in scopes {
        put_str(&mut out, scope);
        let kept = &kept[kept.len().saturating_sub(255)..];
        out.push(kept.len() as u8);
        for b in kept {
            put_build_key(&mut out, b.key);
            out.extend_from_slice(&b.trace_id);
            out.extend_from_slice(&b.duration_ns.to_le_bytes());
            let (present, (length, hash)) = match b.critical_path {
                Some(p) => (1u8, p),
                None => (0u8, (0, 0)),
            };
            out.push(present);
            out.extend_from_slice(&length.to_le_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
            // At most u32::MAX rules a build (a 1M-rule build has 1M).
            let rules = &b.rules[..b.rules.len().min(u32::MAX as usize)];
            out.extend_from_slice(&(rules.len() as u32).to_le_bytes());
            for r in rules {
                out.extend_from_slice(&r.to_le_bytes());
            }
        }
    }
    let kept = manifests.iter_sorted();
    out.extend_from_slice(&(kept.len() as u32).to_le_bytes());
    for (scope, identity, list) in kept {
        put_str(&mut out, scope);
        put_str(&mut out, identity);
        let list = &list[list.len().saturating_sub(255)..];
        out.push(list.len() as u8);
        for m in list {
            put_build_key(&mut out, m.build);
            out.extend_from_slice(&m.hashes.cmd_hash.to_le_bytes());
            // Within MAX_MANIFEST_HEADERS (the parser's bound).
            out.extend_from_slice(&(m.hashes.headers.len() as u32).to_le_bytes());
            for (path, hash) in m.hashes.headers.iter() {
                put_str(&mut out, path);
                out.extend_from_slice(&hash.to_le_bytes());
            }
        }
    }
    out
}

fn put_build_key(out: &mut Vec<u8>, key: BuildKey) {
    out.extend_from_slice(&key.start_unix_ns.to_le_bytes());
    out.extend_from_slice(&key.tie.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// What a restore gave: the targets read, and a note when the bytes were
/// of an older format that was converted ([`CONVERTED_V3`]).
pub type Restored = (usize, Option<&'static str>);

/// Reads `bytes` into `targets`, `builds` and `manifests` (normally
/// empty), recording each compile with `window`. All or nothing: on
/// malformed bytes all are left as they were and the error says where; a
/// `CTHIST2` history is refused with [`OLD_FORMAT`], a `CTHIST3` one
/// converted.
pub fn decode_into(
    bytes: &[u8],
    targets: &mut TargetLru,
    builds: &mut BuildRecords,
    manifests: &mut Manifests,
    window: usize,
) -> Result<Restored, String> {
    let parsed = parse(bytes)?;
    let note = parsed.converted.then_some(CONVERTED_V3);
    let ids: Vec<u32> = parsed.scopes.iter().map(|s| targets.intern(s)).collect();
    let n = parsed.entries.len();
    for entry in parsed.entries {
        let record = targets.touch(ids[entry.scope as usize], entry.path);
        for c in entry.compiles {
            record.record(c, window);
        }
        for s in entry.seen {
            record.record_seen(s);
        }
    }
    for (scope, kept) in parsed.builds {
        for b in kept {
            builds.record(scope, b);
        }
    }
    for (scope, identity, kept) in parsed.manifests {
        for m in kept {
            manifests.record(scope, identity, m);
        }
    }
    Ok((n, note))
}

struct Entry<'b> {
    scope: u32,
    path: &'b str,
    compiles: Vec<Compile>,
    seen: Vec<Seen>,
}

struct Parsed<'b> {
    scopes: Vec<&'b str>,
    entries: Vec<Entry<'b>>,
    builds: Vec<(&'b str, Vec<BuildRecord>)>,
    manifests: Vec<(&'b str, &'b str, Vec<KeptManifest>)>,
    /// A `CTHIST3` history (no manifests).
    converted: bool,
}

fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    let mut r = Reader { bytes, at: 0 };
    let magic = r.take(MAGIC.len())?;
    if magic == MAGIC_V2 {
        return Err(OLD_FORMAT.to_owned());
    }
    let converted = magic == MAGIC_V3;
    if magic != MAGIC && !converted {
        return Err("not a compile history (bad magic)".to_owned());
    }
    let scope_count = r.u32()?;
    if scope_count as usize > bytes.len() / 4 {
        return Err(format!(
            "scope count {scope_count} exceeds what {} bytes can hold",
            bytes.len()
        ));
    }
    let mut scopes = Vec::with_capacity(scope_count as usize);
    for _ in 0..scope_count {
        scopes.push(r.str()?);
    }
    let count = r.u64()?;
    // Every target takes at least 9 bytes: a count beyond that is a lie.
    if count > (bytes.len() / 9) as u64 {
        return Err(format!(
            "target count {count} exceeds what {} bytes can hold",
            bytes.len()
        ));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let scope = r.u32()?;
        if scope >= scope_count {
            return Err(format!("scope {scope} of {scope_count} at offset {}", r.at));
        }
        let path = r.str()?;
        let n = r.take(1)?[0];
        let mut compiles = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let build = r.build_key()?;
            let duration_ns = r.i64()?;
            compiles.push(Compile { build, duration_ns });
        }
        let n = r.take(1)?[0];
        let mut seen = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let build = r.build_key()?;
            let key = CasKey {
                file_hash: r.u64()?,
                dep_hash: r.u64()?,
                macro_state_hash: r.u64()?,
            };
            seen.push(Seen { build, key });
        }
        entries.push(Entry {
            scope,
            path,
            compiles,
            seen,
        });
    }
    let build_scopes = r.u32()?;
    if build_scopes as usize > bytes.len() / 5 {
        return Err(format!(
            "build scope count {build_scopes} exceeds what {} bytes can hold",
            bytes.len()
        ));
    }
    let mut builds = Vec::with_capacity(build_scopes as usize);
    for _ in 0..build_scopes {
        let scope = r.str()?;
        let n = r.take(1)?[0];
        let mut kept = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let key = r.build_key()?;
            let trace_id = r.array::<16>()?;
            let duration_ns = r.i64()?;
            let present = r.take(1)?[0];
            let (length, hash) = (r.i64()?, r.u64()?);
            let rule_count = r.u32()? as usize;
            if rule_count > (bytes.len() - r.at) / 8 {
                return Err(format!(
                    "rule count {rule_count} at offset {} exceeds the bytes left",
                    r.at
                ));
            }
            let mut rules = Vec::with_capacity(rule_count);
            for _ in 0..rule_count {
                rules.push(r.u64()?);
            }
            if !rules.is_sorted() {
                return Err(format!("rules of a build not ascending before offset {}", r.at));
            }
            kept.push(BuildRecord {
                key,
                trace_id,
                duration_ns,
                critical_path: (present != 0).then_some((length, hash)),
                rules: rules.into_boxed_slice(),
            });
        }
        builds.push((scope, kept));
    }
    let manifests = if converted {
        Vec::new()
    } else {
        parse_manifests(&mut r)?
    };
    if r.at != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.at));
    }
    Ok(Parsed {
        scopes,
        entries,
        builds,
        manifests,
        converted,
    })
}

type ParsedManifests<'b> = Vec<(&'b str, &'b str, Vec<KeptManifest>)>;

/// The manifest section, within the bounds the receiver keeps them in.
fn parse_manifests<'b>(r: &mut Reader<'b>) -> Result<ParsedManifests<'b>, String> {
    let count = r.u32()? as usize;
    // Each target takes at least 9 bytes.
    if count > (r.bytes.len() - r.at) / 9 {
        return Err(format!(
            "manifest count {count} at offset {} exceeds the bytes left",
            r.at
        ));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let scope = r.str()?;
        let identity = r.str()?;
        let n = r.take(1)?[0];
        let mut kept = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            let build = r.build_key()?;
            let cmd_hash = r.u64()?;
            let headers = r.u32()? as usize;
            if headers > MAX_MANIFEST_HEADERS {
                return Err(format!("{headers} headers of a manifest at offset {}", r.at));
            }
            let mut list = Vec::with_capacity(headers);
            for _ in 0..headers {
                let path = r.str()?;
                if path.len() > MAX_HEADER_PATH {
                    return Err(format!(
                        "a header path of {} bytes at offset {}",
                        path.len(),
                        r.at
                    ));
                }
                list.push((Box::<str>::from(path), r.u64()?));
            }
            if !list.windows(2).all(|w| w[0].0 < w[1].0) {
                return Err(format!(
                    "headers of a manifest not ascending before offset {}",
                    r.at
                ));
            }
            kept.push(KeptManifest {
                build,
                hashes: HeaderHashes {
                    cmd_hash,
                    headers: list.into_boxed_slice(),
                },
            });
        }
        out.push((scope, identity, kept));
    }
    Ok(out)
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("truncated at offset {}", self.at));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn build_key(&mut self) -> Result<BuildKey, String> {
        Ok(BuildKey {
            start_unix_ns: self.i64()?,
            tie: self.u32()?,
        })
    }

    /// A length-prefixed UTF-8 string.
    fn str(&mut self) -> Result<&'b str, String> {
        let len = self.u32()? as usize;
        if len > MAX_STR {
            return Err(format!("string of {len} bytes at offset {}", self.at));
        }
        std::str::from_utf8(self.take(len)?).map_err(|e| format!("not UTF-8 at offset {}: {e}", self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start_unix_ns: i64) -> BuildKey {
        BuildKey {
            start_unix_ns,
            tie: 7,
        }
    }

    fn sample() -> TargetLru {
        let mut lru = TargetLru::new(10);
        let (v, w) = (lru.intern("h\0v"), lru.intern("h\0w"));
        for (i, (scope, path)) in [(v, "a.cpp"), (w, "b.cpp"), (v, "ü.cpp")].into_iter().enumerate() {
            let r = lru.touch(scope, path);
            for b in 0..=i as i64 {
                r.record(
                    Compile {
                        build: key(1000 + b),
                        duration_ns: 10 * b + i as i64,
                    },
                    5,
                );
            }
            r.record_seen(Seen {
                build: key(1000 + i as i64),
                key: CasKey {
                    file_hash: 0x0d99ae76451a,
                    dep_hash: i as u64,
                    macro_state_hash: u64::MAX,
                },
            });
        }
        lru.touch(v, "a.cpp"); // a becomes the most recent
        lru
    }

    fn sample_builds() -> BuildRecords {
        let mut b = BuildRecords::default();
        b.record(
            "h\0v\0geom",
            BuildRecord {
                key: key(5),
                trace_id: [3; 16],
                duration_ns: 12,
                critical_path: Some((9, 0xabc)),
                rules: vec![1, 5, 9].into_boxed_slice(),
            },
        );
        b.record(
            "h\0v\0",
            BuildRecord {
                key: key(6),
                ..BuildRecord::default()
            },
        );
        b
    }

    type Dumped = (String, String, Vec<Compile>, Vec<Seen>);

    fn dump(lru: &TargetLru) -> Vec<Dumped> {
        lru.iter_oldest_first()
            .map(|(s, p, r)| {
                (
                    lru.scope(s).to_owned(),
                    p.to_owned(),
                    r.compiles().to_vec(),
                    r.seen().to_vec(),
                )
            })
            .collect()
    }

    fn dump_builds(b: &BuildRecords) -> Vec<(String, Vec<BuildRecord>)> {
        b.iter().map(|(s, k)| (s.to_owned(), k.to_vec())).collect()
    }

    #[test]
    fn round_trip_keeps_records_keys_builds_and_use_order() {
        let (lru, builds) = (sample(), sample_builds());
        let bytes = encode(&lru, &builds, &Manifests::default());
        let (mut back, mut back_builds) = (TargetLru::new(10), BuildRecords::default());
        assert_eq!(
            decode_into(&bytes, &mut back, &mut back_builds, &mut Manifests::default(), 5),
            Ok((3, None))
        );
        assert_eq!(dump(&back), dump(&lru));
        assert_eq!(dump_builds(&back_builds), dump_builds(&builds));
        assert_eq!(encode(&back, &back_builds, &Manifests::default()), bytes);
    }

    #[test]
    fn smaller_capacity_and_window_keep_the_most_recent() {
        let bytes = encode(&sample(), &BuildRecords::default(), &Manifests::default());
        let mut back = TargetLru::new(2);
        decode_into(
            &bytes,
            &mut back,
            &mut BuildRecords::default(),
            &mut Manifests::default(),
            1,
        )
        .unwrap();
        let d = dump(&back);
        let keys: Vec<(&str, &str)> = d.iter().map(|(s, p, _, _)| (s.as_str(), p.as_str())).collect();
        assert_eq!(keys, [("h\0v", "ü.cpp"), ("h\0v", "a.cpp")]);
        assert_eq!(d[0].2.len(), 1);
        assert_eq!(d[0].2[0].duration_ns, 22);
    }

    /// A history the previous receiver saved (`CTHIST2`, keyed by
    /// `ct.target`): refused with the migration message, nothing changed.
    #[test]
    fn an_old_history_is_dropped_with_a_reason() {
        let mut v2 = MAGIC_V2.to_vec();
        v2.extend_from_slice(&1u32.to_le_bytes());
        v2.extend_from_slice(&3u32.to_le_bytes());
        v2.extend_from_slice(b"h\0v");
        v2.extend_from_slice(&1u64.to_le_bytes());
        v2.extend_from_slice(&0u32.to_le_bytes());
        let target = b"/p/cas-objdir/v/0d/helper_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o";
        v2.extend_from_slice(&(target.len() as u32).to_le_bytes());
        v2.extend_from_slice(target);
        v2.push(1);
        v2.extend_from_slice(&[0; 20]);
        let (mut back, mut builds) = (TargetLru::new(10), BuildRecords::default());
        back.touch(0, "kept");
        assert_eq!(
            decode_into(&v2, &mut back, &mut builds, &mut Manifests::default(), 5),
            Err(OLD_FORMAT.to_owned())
        );
        assert_eq!(back.len(), 1);
        assert_eq!(builds.builds(), 0);
    }

    #[test]
    fn malformed_bytes_are_an_error_and_change_nothing() {
        let bytes = encode(&sample(), &sample_builds(), &Manifests::default());
        let (mut back, mut builds) = (TargetLru::new(10), BuildRecords::default());
        back.touch(0, "kept");
        for bad in [
            &bytes[..bytes.len() - 1],
            &bytes[..5],
            b"CTHIST1\n\0\0\0\0\0\0\0\0".as_slice(),
            b"".as_slice(),
        ] {
            assert!(decode_into(bad, &mut back, &mut builds, &mut Manifests::default(), 5).is_err());
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_into(&trailing, &mut back, &mut builds, &mut Manifests::default(), 5).is_err());
        let mut huge = bytes.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_into(&huge, &mut back, &mut builds, &mut Manifests::default(), 5).is_err());
        // A target naming a scope that is not there.
        let mut bad_scope = bytes.clone();
        let first_target = 8 + 4 + (4 + 3) * 2 + 8;
        bad_scope[first_target..first_target + 4].copy_from_slice(&9u32.to_le_bytes());
        assert!(
            decode_into(&bad_scope, &mut back, &mut builds, &mut Manifests::default(), 5)
                .unwrap_err()
                .contains("scope 9")
        );
        // A rule count beyond the bytes: refused before allocating.
        let mut lying = encode(&TargetLru::new(1), &sample_builds(), &Manifests::default());
        // The end: the rule count, 3 rules, the (empty) manifest section's count.
        let at = lying.len() - 4 - 8 * 3 - 4 - (8 + 4 + 16 + 8 + 1 + 16 + 4);
        let count_at = lying.len() - 4 - 8 * 3 - 4;
        assert!(at < count_at);
        lying[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            decode_into(&lying, &mut back, &mut builds, &mut Manifests::default(), 5)
                .unwrap_err()
                .contains("rule count")
        );
        assert_eq!(back.len(), 1);
        assert_eq!(builds.builds(), 0);
    }

    fn sample_manifests() -> Manifests {
        let mut m = Manifests::default();
        for (t, hash) in [(10, 0xaa), (20, 0xbb)] {
            m.record(
                "h\0v",
                "/p/src/pch.hpp",
                KeptManifest {
                    build: key(t),
                    hashes: HeaderHashes {
                        cmd_hash: 0xcf1e549cce33c0e3,
                        headers: vec![("/p/src/a.hpp".into(), 1), ("/p/src/base.hpp".into(), hash)]
                            .into_boxed_slice(),
                    },
                },
            );
        }
        m.record(
            "h\0w",
            "<vector>",
            KeptManifest {
                build: key(5),
                hashes: HeaderHashes::default(),
            },
        );
        m
    }

    fn dump_manifests(m: &Manifests) -> Vec<(String, String, Vec<KeptManifest>)> {
        m.iter_sorted()
            .into_iter()
            .map(|(s, i, k)| (s.to_owned(), i.to_owned(), k.to_vec()))
            .collect()
    }

    #[test]
    fn manifests_round_trip() {
        let (lru, builds, manifests) = (sample(), sample_builds(), sample_manifests());
        let bytes = encode(&lru, &builds, &manifests);
        assert_eq!(&bytes[..8], b"CTHIST4\n");
        let mut back = Manifests::default();
        let restored = decode_into(
            &bytes,
            &mut TargetLru::new(10),
            &mut BuildRecords::default(),
            &mut back,
            5,
        );
        assert_eq!(restored, Ok((3, None)));
        assert_eq!(dump_manifests(&back), dump_manifests(&manifests));
        assert_eq!(
            back.before("h\0v", "/p/src/pch.hpp", key(20))
                .map(|h| h.headers[1].1),
            Some(0xaa)
        );
    }

    /// A history the previous receiver saved (`CTHIST3`: the same without
    /// the manifest section) is converted: every target, key and build
    /// kept, no manifest, and a note for the one warning.
    #[test]
    fn a_cthist3_history_is_converted_with_a_note() {
        let (lru, builds) = (sample(), sample_builds());
        let v4 = encode(&lru, &builds, &Manifests::default());
        let mut v3 = v4[..v4.len() - 4].to_vec(); // without the empty section's count
        v3[..8].copy_from_slice(MAGIC_V3);
        let (mut back, mut back_builds, mut back_manifests) =
            (TargetLru::new(10), BuildRecords::default(), Manifests::default());
        assert_eq!(
            decode_into(&v3, &mut back, &mut back_builds, &mut back_manifests, 5),
            Ok((3, Some(CONVERTED_V3)))
        );
        assert_eq!(dump(&back), dump(&lru));
        assert_eq!(dump_builds(&back_builds), dump_builds(&builds));
        assert_eq!(back_manifests.len(), 0);
        // Saved again, it is the new format.
        assert_eq!(encode(&back, &back_builds, &back_manifests), v4);
        // A v3 with a manifest section is not a v3: trailing bytes.
        let mut bad = v4.clone();
        bad[..8].copy_from_slice(MAGIC_V3);
        assert!(decode_into(
            &bad,
            &mut TargetLru::new(10),
            &mut BuildRecords::default(),
            &mut Manifests::default(),
            5
        )
        .is_err());
    }

    #[test]
    fn hostile_manifest_sections_are_refused() {
        let bytes = encode(&TargetLru::new(1), &BuildRecords::default(), &sample_manifests());
        // The section starts after magic, 0 scopes, 0 targets, 0 build scopes.
        let section = 8 + 4 + 8 + 4;
        let mut lying = bytes.clone();
        lying[section..section + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        // All or nothing: refused bytes restore no manifest.
        let run = |b: &[u8]| {
            let mut m = Manifests::default();
            let r = decode_into(b, &mut TargetLru::new(1), &mut BuildRecords::default(), &mut m, 5);
            if r.is_err() {
                assert_eq!(m.len(), 0);
            }
            r
        };
        assert!(run(&lying).unwrap_err().contains("manifest count"));
        // A header count past the bound: the first manifest's, after the
        // first target's scope, identity, count, build key and command hash.
        let first = section + 4 + (4 + 3) + (4 + "/p/src/pch.hpp".len()) + 1 + 12 + 8;
        let mut many = bytes.clone();
        many[first..first + 4].copy_from_slice(&(MAX_MANIFEST_HEADERS as u32 + 1).to_le_bytes());
        assert!(run(&many).unwrap_err().contains("headers of a manifest"));
        // Headers out of order.
        let mut swapped = Manifests::default();
        swapped.record(
            "s",
            "i",
            KeptManifest {
                build: key(1),
                hashes: HeaderHashes {
                    cmd_hash: 0,
                    headers: vec![("/b".into(), 1), ("/a".into(), 2)].into_boxed_slice(),
                },
            },
        );
        let unsorted = encode(&TargetLru::new(1), &BuildRecords::default(), &swapped);
        assert!(run(&unsorted).unwrap_err().contains("not ascending"));
        for n in 0..bytes.len() {
            let _ = run(&bytes[..n]);
            let mut flipped = bytes.clone();
            flipped[n] ^= 0xff;
            let _ = run(&flipped);
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        // Every prefix and every single-byte change of a valid history.
        let bytes = encode(&sample(), &sample_builds(), &Manifests::default());
        for n in 0..bytes.len() {
            let _ = decode_into(
                &bytes[..n],
                &mut TargetLru::new(4),
                &mut BuildRecords::default(),
                &mut Manifests::default(),
                5,
            );
            let mut flipped = bytes.clone();
            flipped[n] ^= 0xff;
            let _ = decode_into(
                &flipped,
                &mut TargetLru::new(4),
                &mut BuildRecords::default(),
                &mut Manifests::default(),
                5,
            );
        }
    }
}
