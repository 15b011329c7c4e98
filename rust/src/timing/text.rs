//! Turning raw file bytes into JSON text that a strict parser accepts,
//! without losing the document (design.md §2 fix 6, formats.md §2.1).
//!
//! compiletools writes file names that are not valid UTF-8 as lone surrogate
//! escapes (`\udcXX`), and other writers may leave raw invalid bytes; serde_json
//! rejects both. Both become U+FFFD here. Valid input is passed through
//! without a copy, so the common case costs one validation scan.

use memchr::memchr_iter;

use crate::input::SplitScan;

/// The JSON text of a file, plus what had to be repaired.
pub struct LenientText {
    pub text: String,
    /// Byte sequences that were not UTF-8 (each became U+FFFD).
    pub invalid_utf8: bool,
    /// `\uD800`–`\uDFFF` escapes that were not part of a valid pair.
    pub lone_surrogates: u64,
}

impl LenientText {
    /// Repairs `bytes`; consumes them so that valid UTF-8 needs no copy.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let (text, invalid_utf8) = match String::from_utf8(bytes) {
            Ok(s) => (s, false),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
        };
        let (text, lone_surrogates) = replace_lone_surrogates(text);
        Self {
            text,
            invalid_utf8,
            lone_surrogates,
        }
    }

    /// [`Self::from_bytes`] for bytes that `scan` saw arrive: the same
    /// result, without checking them again when the scan found them valid
    /// and without escapes.
    pub fn from_scanned(bytes: Vec<u8>, scan: &TextScan) -> Self {
        if !scan.checked_all(bytes.len()) {
            return Self::from_bytes(bytes);
        }
        let text = utf8_string(bytes);
        let (text, lone_surrogates) = if scan.backslash {
            replace_lone_surrogates(text)
        } else {
            // No backslash, no escape: nothing to replace.
            (text, 0)
        };
        Self {
            text,
            invalid_utf8: false,
            lone_surrogates,
        }
    }

    /// Human-readable notes about the repairs, for the build's warnings.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.invalid_utf8 {
            out.push("invalid UTF-8 replaced by U+FFFD".to_owned());
        }
        if self.lone_surrogates > 0 {
            out.push(format!(
                "{} lone surrogate escape(s) replaced by U+FFFD",
                self.lone_surrogates
            ));
        }
        out
    }
}

/// What [`LenientText::from_bytes`] would find, learnt piece by piece while
/// the file is read (see [`crate::input::read_bounded_split_scanning`]): each
/// piece is checked right after it arrived, while it is still in the CPU's
/// cache, instead of in two more passes over the whole text from memory
/// afterwards (~8 ms for a 60 MB file).
#[derive(Debug, Default)]
pub struct TextScan {
    /// Bytes checked to be UTF-8 so far (a sequence cut by the end of a
    /// piece is checked again with the next piece).
    valid_up_to: usize,
    /// A byte sequence that is not UTF-8 was found: the scan stops and
    /// [`LenientText::from_scanned`] takes the slow path.
    invalid: bool,
    /// A backslash was seen: escapes, so lone surrogates are possible.
    backslash: bool,
}

impl TextScan {
    /// Checks the bytes of `read` (everything read so far) that arrived
    /// since the last call.
    pub fn feed(&mut self, read: &[u8]) {
        if self.invalid {
            return;
        }
        let Some(new) = read.get(self.valid_up_to..) else {
            self.invalid = true;
            return;
        };
        if !self.backslash {
            self.backslash = memchr::memchr(b'\\', new).is_some();
        }
        match std::str::from_utf8(new) {
            Ok(_) => self.valid_up_to = read.len(),
            // Cut at the end of the piece: the rest comes with the next one.
            Err(e) if e.error_len().is_none() => self.valid_up_to += e.valid_up_to(),
            Err(_) => self.invalid = true,
        }
    }
}

impl TextScan {
    /// Whether the scan found all of a text of `len` bytes valid UTF-8.
    pub(crate) fn checked_all(&self, len: usize) -> bool {
        !self.invalid && self.valid_up_to == len
    }
}

/// The scan of a large file is split at its middle, each half scanned by
/// its own thread (see `crate::input::read_bounded_split_scanning`); the
/// joined scan concludes what one scan of the whole file would have.
impl SplitScan for TextScan {
    /// The longest UTF-8 sequence: within its first 4 bytes, the part after
    /// the cut shows where its first whole character starts.
    const HEAD: usize = 4;

    fn feed(&mut self, read: &[u8]) {
        TextScan::feed(self, read);
    }

    /// Starts after the bytes that continue a character begun before the
    /// cut: those are checked with that character by [`SplitScan::join`].
    fn after_cut(head: &[u8]) -> Self {
        Self {
            valid_up_to: continuation_bytes(head),
            ..Self::default()
        }
    }

    fn join(self, second: Self, whole: &[u8], cut: usize) -> Self {
        let mut joined = self;
        // Where the second scan began (as after_cut chose): everything from
        // the first scan's end up to there is checked now, so the character
        // cut in two (if any) is checked whole.
        let resumed = cut + continuation_bytes(whole.get(cut..).unwrap_or_default());
        joined.feed(whole.get(..resumed).unwrap_or_default());
        if joined.invalid {
            return joined;
        }
        if joined.valid_up_to != resumed {
            // A sequence cut short right before a byte that cannot continue
            // it is invalid, as the next piece would have shown the single
            // scan; only at the end of the file it is merely cut short.
            joined.invalid = resumed < whole.len();
            return joined;
        }
        Self {
            valid_up_to: cut + second.valid_up_to,
            invalid: second.invalid,
            backslash: joined.backslash || second.backslash,
        }
    }
}

/// How many of the first bytes of `bytes` continue a character (bit
/// pattern `10xxxxxx`), at most 3: no character has more, so a fourth is
/// invalid wherever the scan starts.
fn continuation_bytes(bytes: &[u8]) -> usize {
    bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count()
}

/// `bytes` as a `String` without checking them again.
///
/// Only called by [`LenientText::from_scanned`] when a [`TextScan`] checked
/// all of `bytes`: each piece from where the previous valid prefix ended
/// (a character boundary) to the end of what had been read, and the read
/// only ever appends. A scan in two halves ([`SplitScan::join`]) checked
/// `[0, a)`, `[a, r)` and `[r, len)` the same way, `a` and `r` character
/// boundaries, and its threads were joined before the bytes came here.
/// Valid UTF-8 pieces joined at character boundaries are valid UTF-8.
#[allow(unsafe_code)]
fn utf8_string(bytes: Vec<u8>) -> String {
    debug_assert!(std::str::from_utf8(&bytes).is_ok());
    // SAFETY: see above; the scan covered bytes[..bytes.len()] and found
    // every piece valid.
    unsafe { String::from_utf8_unchecked(bytes) }
}

/// Rewrites every lone surrogate escape as `\ufffd`; returns the text
/// unchanged (no copy) when there is none.
fn replace_lone_surrogates(text: String) -> (String, u64) {
    let lone = find_lone_surrogates(text.as_bytes());
    if lone.is_empty() {
        return (text, 0);
    }
    // `\ufffd` has the same length as `\udXXX`, so positions stay valid and
    // the rewrite is in place on a byte copy.
    let mut bytes = text.into_bytes();
    for &at in &lone {
        bytes[at + 2..at + 6].copy_from_slice(b"fffd");
    }
    let count = lone.len() as u64;
    // Only ASCII hex digits were overwritten with ASCII, so this cannot fail;
    // the fallback keeps the function panic-free regardless.
    let text =
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    (text, count)
}

/// Byte offsets of the backslashes of lone surrogate escapes.
///
/// Scanning from one backslash to the next and skipping the escaped
/// character keeps `\\udc80` (an escaped backslash followed by text) from
/// being mistaken for an escape. Outside strings a backslash is invalid JSON
/// anyway, so string boundaries need not be tracked.
fn find_lone_surrogates(b: &[u8]) -> Vec<usize> {
    let mut lone = Vec::new();
    let mut skip_until = 0;
    for at in memchr_iter(b'\\', b) {
        if at < skip_until {
            continue;
        }
        match surrogate_at(b, at) {
            Some(Surrogate::High) if surrogate_at(b, at + 6) == Some(Surrogate::Low) => skip_until = at + 12,
            Some(_) => {
                lone.push(at);
                skip_until = at + 6;
            }
            None => skip_until = at + 2,
        }
    }
    lone
}

#[derive(Debug, PartialEq, Eq)]
enum Surrogate {
    High,
    Low,
}

/// Classifies a `\uXXXX` escape starting at `at` if it encodes a surrogate.
fn surrogate_at(b: &[u8], at: usize) -> Option<Surrogate> {
    let esc = b.get(at..at + 6)?;
    if esc[0] != b'\\' || esc[1] != b'u' || !esc[2..].iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    if !esc[2].eq_ignore_ascii_case(&b'd') {
        return None;
    }
    match esc[3].to_ascii_lowercase() {
        b'8' | b'9' | b'a' | b'b' => Some(Surrogate::High),
        b'c' | b'd' | b'e' | b'f' => Some(Surrogate::Low),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(s: &str) -> (String, u64) {
        let t = LenientText::from_bytes(s.as_bytes().to_vec());
        (t.text, t.lone_surrogates)
    }

    #[test]
    fn lone_surrogates_become_replacement() {
        assert_eq!(fix(r#"{"a":"x\udc80y"}"#), (r#"{"a":"x\ufffdy"}"#.to_owned(), 1));
        assert_eq!(fix(r#"["\uD800"]"#), (r#"["\ufffd"]"#.to_owned(), 1));
        // A low surrogate first, then a high one at the very end.
        assert_eq!(fix(r#""\udc00\ud800""#), (r#""\ufffd\ufffd""#.to_owned(), 2));
        let parsed: String = serde_json::from_str(&fix(r#""a\udcffb""#).0).unwrap();
        assert_eq!(parsed, "a\u{fffd}b");
    }

    #[test]
    fn valid_pairs_and_escaped_backslashes_are_untouched() {
        let pair = r#""\ud83d\ude00""#;
        assert_eq!(fix(pair), (pair.to_owned(), 0));
        let escaped = r#""\\udc80""#;
        assert_eq!(fix(escaped), (escaped.to_owned(), 0));
        let plain = r#""\u00e9\n\"""#;
        assert_eq!(fix(plain), (plain.to_owned(), 0));
    }

    #[test]
    fn truncated_escape_is_left_for_the_parser() {
        assert_eq!(fix(r#""\udc"#), (r#""\udc"#.to_owned(), 0));
    }

    /// Feeds `bytes` to a scan in pieces of `piece` bytes, as the read does.
    fn scanned(bytes: &[u8], piece: usize) -> LenientText {
        let mut scan = TextScan::default();
        let mut read = Vec::new();
        for p in bytes.chunks(piece.max(1)) {
            read.extend_from_slice(p);
            scan.feed(&read);
        }
        LenientText::from_scanned(read, &scan)
    }

    #[test]
    fn scanned_pieces_give_what_from_bytes_gives() {
        let cases: [&[u8]; 6] = [
            "{\"a\":\"é€😀 plain\"}".as_bytes(),
            br#"{"a":"x\udc80y","b":"\ud83d\ude00"}"#,
            b"{\"a\":\"x\xffy\"}",
            // A sequence cut short at the very end of the file.
            b"{\"a\":\"\xe2\x82",
            br#"no\\udc80escape"#,
            b"",
        ];
        for bytes in cases {
            let whole = LenientText::from_bytes(bytes.to_vec());
            for piece in 1..=bytes.len().max(1) {
                let t = scanned(bytes, piece);
                assert_eq!(
                    (&t.text, t.invalid_utf8, t.lone_surrogates),
                    (&whole.text, whole.invalid_utf8, whole.lone_surrogates),
                    "{bytes:?} in pieces of {piece}"
                );
            }
        }
    }

    /// What a scan concluded about a text of `len` bytes: all of it valid,
    /// an invalid sequence found, and (only meaningful when all was
    /// valid) a backslash seen.
    fn conclusion(scan: &TextScan, len: usize) -> (bool, bool, bool) {
        let all = scan.checked_all(len);
        (all, scan.invalid, all && scan.backslash)
    }

    /// Scans `bytes` as the threads of a split read do: the parts between
    /// `cuts` (ascending) each in pieces of `piece` bytes, each but the
    /// first begun once it has its head, then joined in order.
    fn split_scanned(bytes: &[u8], cuts: &[usize], piece: usize) -> TextScan {
        let starts: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).collect();
        let ends: Vec<usize> = cuts.iter().copied().chain([bytes.len()]).collect();
        let mut joined: Option<TextScan> = None;
        for (&start, &end) in starts.iter().zip(&ends) {
            let part = &bytes[start..end];
            let head = <TextScan as SplitScan>::HEAD.min(part.len());
            let mut scan: Option<TextScan> = None;
            for filled in (piece..part.len()).step_by(piece).chain([part.len()]) {
                if scan.is_none() && filled >= head {
                    scan = Some(if start == 0 {
                        TextScan::default()
                    } else {
                        TextScan::after_cut(&part[..filled])
                    });
                }
                if let Some(scan) = scan.as_mut() {
                    SplitScan::feed(scan, &part[..filled]);
                }
            }
            let scan = scan.unwrap_or_default();
            joined = Some(match joined {
                None => scan,
                Some(before) => before.join(scan, &bytes[..end], start),
            });
        }
        joined.unwrap_or_default()
    }

    #[test]
    fn a_scan_split_anywhere_concludes_what_one_scan_does() {
        let cases: [&[u8]; 12] = [
            "{\"a\":\"é€😀 plain\"}".as_bytes(),
            "😀😀€é".as_bytes(),
            br#"{"a":"x\udc80y","b":"\ud83d\ude00"}"#,
            b"{\"a\":\"x\xffy\"}",
            // Cut short at the very end, and in the middle.
            b"{\"a\":\"\xe2\x82",
            b"ab\xe2\x82cd",
            // A stray continuation byte; four in a row after a lead byte.
            b"ab\x80cd",
            b"a\xf0\x9f\x98\x80\x80b",
            b"a\xe2\x82\xac\x80\x80\x80b",
            // An overlong encoding and an encoded surrogate.
            b"a\xc0\xafb\xed\xa0\x80c",
            br#"no\\udc80escape"#,
            b"",
        ];
        for bytes in cases {
            let mut whole = TextScan::default();
            whole.feed(bytes);
            let expected = conclusion(&whole, bytes.len());
            let text = LenientText::from_bytes(bytes.to_vec());
            let one_cut = (0..=bytes.len()).map(|cut| vec![cut]);
            let two_cuts = (0..=bytes.len()).flat_map(|a| (a..=bytes.len()).map(move |b| vec![a, b]));
            for cut in one_cut.chain(two_cuts) {
                for piece in 1..=bytes.len().max(1) {
                    let split = split_scanned(bytes, &cut, piece);
                    assert_eq!(
                        conclusion(&split, bytes.len()),
                        expected,
                        "{bytes:?} cut at {cut:?}, pieces of {piece}"
                    );
                    let t = LenientText::from_scanned(bytes.to_vec(), &split);
                    assert_eq!(
                        (&t.text, t.invalid_utf8, t.lone_surrogates),
                        (&text.text, text.invalid_utf8, text.lone_surrogates),
                        "{bytes:?} cut at {cut:?}, pieces of {piece}"
                    );
                }
            }
        }
    }

    #[test]
    fn scan_finds_what_it_must() {
        let mut scan = TextScan::default();
        scan.feed("a€".as_bytes().get(..2).unwrap());
        assert_eq!(
            (scan.valid_up_to, scan.invalid, scan.backslash),
            (1, false, false)
        );
        scan.feed("a€\\".as_bytes());
        assert_eq!((scan.valid_up_to, scan.invalid, scan.backslash), (5, false, true));
        scan.feed(b"a\xe2\x82\xac\\\xff");
        assert!(scan.invalid);
    }

    #[test]
    fn invalid_utf8_becomes_replacement() {
        let t = LenientText::from_bytes(b"{\"a\":\"x\xffy\"}".to_vec());
        assert!(t.invalid_utf8);
        assert_eq!(t.text, "{\"a\":\"x\u{fffd}y\"}");
        assert_eq!(t.warnings().len(), 1);
    }
}
