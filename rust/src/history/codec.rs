//! The history as bytes, for the receiver's storage extension: Rust writes
//! them, Go only stores and hands them back.
//!
//! Layout (little endian): the magic `CTHIST2\n`; the scope count (u32)
//! and each scope (host NUL variant) as length (u32) and UTF-8; the target
//! count (u64), then per target, least recently used first — its scope's
//! index (u32), path length (u32), path (UTF-8), compile count (u8), and
//! per compile: build start (i64, Unix ns), build tie (u32), duration (i64,
//! ns). Replaying the targets in that order gives back the same use order;
//! a smaller capacity or window than when saved keeps the most recent.

use super::lru::TargetLru;
use super::record::{BuildKey, Compile};

const MAGIC: &[u8; 8] = b"CTHIST2\n";
/// Longest scope or path read back.
const MAX_STR: usize = 1 << 16;

/// Serialises `targets`.
pub fn encode(targets: &TargetLru) -> Vec<u8> {
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
            out.extend_from_slice(&c.build.start_unix_ns.to_le_bytes());
            out.extend_from_slice(&c.build.tie.to_le_bytes());
            out.extend_from_slice(&c.duration_ns.to_le_bytes());
        }
    }
    out
}

/// Reads `bytes` into `targets` (normally empty), recording each compile
/// with `window`. All or nothing: on malformed bytes `targets` is left as
/// it was and the error says where.
pub fn decode_into(bytes: &[u8], targets: &mut TargetLru, window: usize) -> Result<usize, String> {
    let (scopes, entries) = parse(bytes)?;
    let ids: Vec<u32> = scopes.iter().map(|s| targets.intern(s)).collect();
    let n = entries.len();
    for (scope, path, compiles) in entries {
        let record = targets.touch(ids[scope as usize], path);
        for c in compiles {
            record.record(c, window);
        }
    }
    Ok(n)
}

type Entry<'b> = (u32, &'b str, Vec<Compile>);

fn parse(bytes: &[u8]) -> Result<(Vec<&str>, Vec<Entry<'_>>), String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(MAGIC.len())? != MAGIC {
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
            let start_unix_ns = r.i64()?;
            let tie = r.u32()?;
            let duration_ns = r.i64()?;
            compiles.push(Compile {
                build: BuildKey { start_unix_ns, tie },
                duration_ns,
            });
        }
        entries.push((scope, path, compiles));
    }
    if r.at != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.at));
    }
    Ok((scopes, entries))
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

    fn sample() -> TargetLru {
        let mut lru = TargetLru::new(10);
        let (v, w) = (lru.intern("h\0v"), lru.intern("h\0w"));
        for (i, (scope, path)) in [(v, "a.o"), (w, "b.o"), (v, "ü.o")].into_iter().enumerate() {
            let r = lru.touch(scope, path);
            for b in 0..=i as i64 {
                r.record(
                    Compile {
                        build: BuildKey {
                            start_unix_ns: 1000 + b,
                            tie: 7,
                        },
                        duration_ns: 10 * b + i as i64,
                    },
                    5,
                );
            }
        }
        lru.touch(v, "a.o"); // a becomes the most recent
        lru
    }

    fn dump(lru: &TargetLru) -> Vec<(String, String, Vec<Compile>)> {
        lru.iter_oldest_first()
            .map(|(s, p, r)| (lru.scope(s).to_owned(), p.to_owned(), r.compiles().to_vec()))
            .collect()
    }

    #[test]
    fn round_trip_keeps_records_and_use_order() {
        let lru = sample();
        let bytes = encode(&lru);
        let mut back = TargetLru::new(10);
        assert_eq!(decode_into(&bytes, &mut back, 5), Ok(3));
        assert_eq!(dump(&back), dump(&lru));
        assert_eq!(encode(&back), bytes);
    }

    #[test]
    fn smaller_capacity_and_window_keep_the_most_recent() {
        let bytes = encode(&sample());
        let mut back = TargetLru::new(2);
        decode_into(&bytes, &mut back, 1).unwrap();
        let d = dump(&back);
        let keys: Vec<(&str, &str)> = d.iter().map(|(s, p, _)| (s.as_str(), p.as_str())).collect();
        assert_eq!(keys, [("h\0v", "ü.o"), ("h\0v", "a.o")]);
        assert_eq!(d[0].2.len(), 1);
        assert_eq!(d[0].2[0].duration_ns, 22);
    }

    #[test]
    fn malformed_bytes_are_an_error_and_change_nothing() {
        let bytes = encode(&sample());
        let mut back = TargetLru::new(10);
        back.touch(0, "kept");
        for bad in [
            &bytes[..bytes.len() - 1],
            &bytes[..5],
            b"CTHIST1\n\0\0\0\0\0\0\0\0".as_slice(),
            b"".as_slice(),
        ] {
            assert!(decode_into(bad, &mut back, 5).is_err());
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_into(&trailing, &mut back, 5).is_err());
        let mut huge = bytes.clone();
        huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_into(&huge, &mut back, 5).is_err());
        // A target naming a scope that is not there.
        let mut bad_scope = encode(&sample());
        let first_target = 8 + 4 + (4 + 3) * 2 + 8;
        bad_scope[first_target..first_target + 4].copy_from_slice(&9u32.to_le_bytes());
        assert!(decode_into(&bad_scope, &mut back, 5)
            .unwrap_err()
            .contains("scope 9"));
        assert_eq!(back.len(), 1);
    }
}
