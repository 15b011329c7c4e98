//! Turning raw file bytes into JSON text that a strict parser accepts,
//! without losing the document (DESIGN §2 fix 6, spec §2.1).
//!
//! compiletools writes file names that are not valid UTF-8 as lone surrogate
//! escapes (`\udcXX`), and other writers may leave raw invalid bytes; serde_json
//! rejects both. Both become U+FFFD here. Valid input is passed through
//! without a copy, so the common case costs one validation scan.

use memchr::memchr_iter;

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

    #[test]
    fn invalid_utf8_becomes_replacement() {
        let t = LenientText::from_bytes(b"{\"a\":\"x\xffy\"}".to_vec());
        assert!(t.invalid_utf8);
        assert_eq!(t.text, "{\"a\":\"x\u{fffd}y\"}");
        assert_eq!(t.warnings().len(), 1);
    }
}
