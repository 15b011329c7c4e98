//! Why a precompiled header or module BMI was compiled again: its
//! manifest's header hashes ([`HeaderHashes`]) against the ones the same
//! header's previous compile had.

use super::{Changed, HeaderHashes, RebuildReason};

/// Most header names `ct.rule.rebuild_headers` lists.
pub(crate) const MAX_NAMED_HEADERS: usize = 16;

/// The headers whose hash changed between `previous` and `now`, the most
/// relevant first — edited (in both, another hash), then added, then
/// removed; by path within each — at most `max` of them, and how many
/// there were in all. One merge of the two sorted lists.
pub fn changed_headers<'n>(
    previous: &'n HeaderHashes,
    now: &'n HeaderHashes,
    max: usize,
) -> (Vec<&'n str>, usize) {
    let (mut edited, mut added, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    let (a, b) = (&previous.headers, &now.headers);
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                if x.1 != y.1 {
                    edited.push(&*y.0);
                }
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                removed.push(&*x.0);
                i += 1;
            }
            (Some(_), Some(y)) | (None, Some(y)) => {
                added.push(&*y.0);
                j += 1;
            }
            (Some(x), None) => {
                removed.push(&*x.0);
                i += 1;
            }
            (None, None) => break,
        }
    }
    let total = edited.len() + added.len() + removed.len();
    let mut named = edited;
    named.extend(added);
    named.extend(removed);
    named.truncate(max);
    (named, total)
}

/// The reason of a PCH/PCM compile whose manifest says `now`, against its
/// header's previous compile: `previous` the hashes it had then (`None`:
/// not remembered), `compiled_before` whether the history knows an earlier
/// compile at all. Headers before flags (the order of [`super::classify`];
/// the header itself is not in its manifest, so `source` is never told).
pub fn classify_manifest(
    previous: Option<&HeaderHashes>,
    now: &HeaderHashes,
    compiled_before: bool,
) -> (RebuildReason, Changed) {
    let Some(previous) = previous else {
        // Compiled before, but from a history without its manifest (an
        // older receiver's, or bounds): what changed cannot be told.
        let reason = if compiled_before {
            RebuildReason::NotCas
        } else {
            RebuildReason::New
        };
        return (reason, Changed::default());
    };
    let mut bits = 0;
    if previous.headers.len() != now.headers.len()
        || previous
            .headers
            .iter()
            .zip(now.headers.iter())
            .any(|(x, y)| x != y)
    {
        bits |= Changed::HEADERS;
    }
    if previous.cmd_hash != now.cmd_hash {
        bits |= Changed::FLAGS;
    }
    let reason = if bits & Changed::HEADERS != 0 {
        RebuildReason::HeadersChanged
    } else if bits & Changed::FLAGS != 0 {
        RebuildReason::FlagsChanged
    } else {
        RebuildReason::Evicted
    };
    (reason, Changed::from_bits(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(cmd_hash: u64, headers: &[(&str, u64)]) -> HeaderHashes {
        let mut h: Vec<(Box<str>, u64)> = headers.iter().map(|(p, v)| ((*p).into(), *v)).collect();
        h.sort();
        HeaderHashes {
            cmd_hash,
            headers: h.into_boxed_slice(),
        }
    }

    #[test]
    fn known_answers() {
        use RebuildReason::*;
        let was = hashes(1, &[("/p/a.hpp", 10), ("/p/b.hpp", 20), ("/p/c.hpp", 30)]);
        let edited_b = hashes(1, &[("/p/a.hpp", 10), ("/p/b.hpp", 21), ("/p/c.hpp", 30)]);
        assert_eq!(changed_headers(&was, &edited_b, 16), (vec!["/p/b.hpp"], 1));
        assert_eq!(classify_manifest(Some(&was), &edited_b, true).0, HeadersChanged);
        // Edited first, then added, then removed.
        let mixed = hashes(
            1,
            &[
                ("/p/0.hpp", 1),
                ("/p/b.hpp", 21),
                ("/p/c.hpp", 31),
                ("/p/d.hpp", 40),
            ],
        );
        assert_eq!(
            changed_headers(&was, &mixed, 16),
            (
                vec!["/p/b.hpp", "/p/c.hpp", "/p/0.hpp", "/p/d.hpp", "/p/a.hpp"],
                5
            )
        );
        assert_eq!(
            changed_headers(&was, &mixed, 2),
            (vec!["/p/b.hpp", "/p/c.hpp"], 5)
        );
        assert_eq!(changed_headers(&was, &mixed, 0), (vec![], 5));
        // Nothing changed: evicted; another command hash: flags.
        assert_eq!(changed_headers(&was, &was, 16), (vec![], 0));
        assert_eq!(
            classify_manifest(Some(&was), &was, true),
            (Evicted, Changed::default())
        );
        let flags = hashes(2, &[("/p/a.hpp", 10), ("/p/b.hpp", 20), ("/p/c.hpp", 30)]);
        assert_eq!(classify_manifest(Some(&was), &flags, true).0, FlagsChanged);
        let both = hashes(2, &[("/p/a.hpp", 11), ("/p/b.hpp", 20), ("/p/c.hpp", 30)]);
        let (r, c) = classify_manifest(Some(&was), &both, true);
        assert_eq!((r, c.names()), (HeadersChanged, &["headers", "flags"][..]));
        // A header removed only.
        let fewer = hashes(1, &[("/p/a.hpp", 10), ("/p/c.hpp", 30)]);
        assert_eq!(changed_headers(&was, &fewer, 16), (vec!["/p/b.hpp"], 1));
        assert_eq!(classify_manifest(Some(&was), &fewer, true).0, HeadersChanged);
        // No remembered manifest.
        assert_eq!(classify_manifest(None, &was, false).0, New);
        assert_eq!(classify_manifest(None, &was, true).0, NotCas);
        let empty = hashes(1, &[]);
        assert_eq!(changed_headers(&empty, &was, 16).1, 3);
        assert_eq!(changed_headers(&was, &empty, 16).1, 3);
    }

    #[test]
    fn large_lists_are_one_merge_and_bounded() {
        let a: Vec<(String, u64)> = (0..4096).map(|i| (format!("/h/{i:05}"), i)).collect();
        let b: Vec<(String, u64)> = (0..4096).map(|i| (format!("/h/{i:05}"), i ^ 1)).collect();
        let ra: Vec<(&str, u64)> = a.iter().map(|(p, h)| (p.as_str(), *h)).collect();
        let rb: Vec<(&str, u64)> = b.iter().map(|(p, h)| (p.as_str(), *h)).collect();
        let (x, y) = (hashes(0, &ra), hashes(0, &rb));
        let (named, total) = changed_headers(&x, &y, MAX_NAMED_HEADERS);
        assert_eq!((named.len(), total), (MAX_NAMED_HEADERS, 4096));
        assert_eq!(named[0], "/h/00000");
    }
}
