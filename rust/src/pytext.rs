//! The Python text semantics compiletools' own parsers rely on (formats.md §8
//! item 25), so that the statslog and `rule_outcomes.log` readers count and
//! reject exactly the lines compiletools does.
//!
//! Rust's notions differ in ways that matter on real, torn or hostile input:
//! `char::is_whitespace` does not include `\x1c`–`\x1f`, `str::lines` does
//! not end a line at a lone `\r`, and `str::parse::<i64>` rejects `" 2 "`,
//! `1_000` and non-ASCII decimal digits that Python's `int()` accepts.
//! Everything here is checked against CPython 3.11.7 (Unicode 14.0.0, the
//! corpus' interpreter).

use memchr::memchr2;

/// Python's `str.isspace()` for one character (CPython 3.11, Unicode 14.0):
/// ASCII `\t \n \v \f \r` and space, the information separators
/// `\x1c`–`\x1f`, NEL `\x85`, NBSP `\xa0`, and the Unicode `Zs` / line /
/// paragraph separators. The list was generated with
/// `[c for c in map(chr, range(0x110000)) if c.isspace()]`.
pub fn is_python_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\x1c'..='\x20'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `str.strip()` without arguments.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_python_whitespace)
}

/// Splits `text` into lines the way Python's text mode with universal
/// newlines does (`for line in f`): `\n`, `\r\n` and a lone `\r` each end a
/// line. Lines are yielded without their terminator; text after the last
/// terminator is a final line, and a terminator at the very end does not
/// start an empty one.
pub fn universal_lines(text: &str) -> UniversalLines<'_> {
    UniversalLines { rest: text }
}

/// Iterator of [`universal_lines`].
#[derive(Debug, Clone)]
pub struct UniversalLines<'t> {
    rest: &'t str,
}

impl<'t> Iterator for UniversalLines<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        if self.rest.is_empty() {
            return None;
        }
        let bytes = self.rest.as_bytes();
        let Some(end) = memchr2(b'\n', b'\r', bytes) else {
            let line = self.rest;
            self.rest = "";
            return Some(line);
        };
        let terminator = if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        // `end` and `end + terminator` sit on ASCII bytes, so both splits are
        // on character boundaries.
        let line = &self.rest[..end];
        self.rest = &self.rest[end + terminator..];
        Some(line)
    }
}

/// The part of `bytes` up to and including the last line terminator (`\n`
/// or `\r`): what a line-by-line reader had surely handed out before a read
/// error cut the file short. The torn last line is dropped, as a Python
/// `for line in f` loop never yields it when the next read raises.
pub fn complete_lines(bytes: &[u8]) -> &[u8] {
    match memchr::memrchr2(b'\n', b'\r', bytes) {
        Some(i) => &bytes[..=i],
        None => &[],
    }
}

/// A value Python's `int(s)` accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyInt {
    /// Fits in `i64`.
    Small(i64),
    /// Outside the `i64` range (so never zero); `negative` is its sign.
    Big { negative: bool },
}

impl PyInt {
    /// Python truthiness: `int(s) != 0`.
    pub fn is_nonzero(self) -> bool {
        match self {
            PyInt::Small(v) => v != 0,
            PyInt::Big { .. } => true,
        }
    }
}

/// CPython refuses to convert decimal strings with more digits than this
/// (`sys.int_info.default_max_str_digits`, since 3.11): `int()` raises
/// `ValueError`, so such a record is invalid for compiletools too.
const MAX_STR_DIGITS: usize = 4300;

/// Python's `int(s)` (base 10) as CPython 3.11 implements it: optional
/// surrounding whitespace, an optional `+`/`-`, decimal digits with single
/// `_` separators between digits (`1_000`; not `_1`, `1_`, `1__0`), at most
/// 4300 digits. Non-ASCII Python whitespace and non-ASCII decimal digits
/// (`'٣'`, fullwidth `'１'`) count as their ASCII equivalents, but ASCII
/// `\x1c`–`\x1f` are *not* whitespace here (CPython only maps non-ASCII
/// characters before its ASCII parser). `None` where Python raises.
pub fn parse_int(s: &str) -> Option<PyInt> {
    // CPython first maps the string to ASCII (`_PyUnicode_TransformDecimal
    // AndSpaceToASCII`), then parses bytes; the mapping is done on the fly.
    let mut chars = s.chars().map(to_ascii).peekable();
    let is_space = |b: u8| matches!(b, b' ' | b'\t'..=b'\r');
    while chars.next_if(|b| b.is_some_and(is_space)).is_some() {}
    let negative = chars.peek() == Some(&Some(b'-'));
    chars.next_if(|b| matches!(b, Some(b'-' | b'+')));
    parse_digits(&mut chars, negative, is_space)
}

fn parse_digits(
    chars: &mut std::iter::Peekable<impl Iterator<Item = Option<u8>>>,
    negative: bool,
    is_space: impl Fn(u8) -> bool,
) -> Option<PyInt> {
    // Accumulate the magnitude in i128: one more than i64::MAX in magnitude
    // must still be representable for i64::MIN.
    let mut magnitude: i128 = 0;
    let mut big = false;
    let mut digits = 0usize;
    let mut after_underscore = false;
    loop {
        match chars.peek().copied() {
            Some(Some(b @ b'0'..=b'9')) => {
                chars.next();
                digits += 1;
                after_underscore = false;
                if !big {
                    magnitude = magnitude * 10 + i128::from(b - b'0');
                    if magnitude > i128::from(i64::MAX) + 1 {
                        big = true;
                    }
                }
            }
            // A separator needs a digit before it (and after, checked below).
            Some(Some(b'_')) if digits > 0 && !after_underscore => {
                chars.next();
                after_underscore = true;
            }
            _ => break,
        }
    }
    if digits == 0 || after_underscore || digits > MAX_STR_DIGITS {
        return None;
    }
    while chars.next_if(|b| b.is_some_and(&is_space)).is_some() {}
    if chars.next().is_some() {
        return None;
    }
    let value = if negative { -magnitude } else { magnitude };
    match i64::try_from(value) {
        Ok(v) if !big => Some(PyInt::Small(v)),
        _ => Some(PyInt::Big { negative }),
    }
}

/// CPython's pre-mapping of one character: ASCII below DEL stays, other
/// whitespace becomes a space, other decimal digits become ASCII digits;
/// anything else (`None`) makes the conversion fail.
fn to_ascii(c: char) -> Option<u8> {
    if (c as u32) < 127 {
        return Some(c as u8);
    }
    if is_python_whitespace(c) {
        return Some(b' ');
    }
    decimal_value(c).map(|d| b'0' + d)
}

/// Code points of the digit zero of every run of Unicode decimal digits
/// (`Nd`, each run is `0`–`9` consecutively), Unicode 14.0 as in CPython
/// 3.11; generated with `[c for c in range(0x110000) if
/// unicodedata.decimal(chr(c), None) == 0]` and checked to cover every
/// character with a decimal value.
const DECIMAL_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50,
    0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40,
    0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10, 0x104A0, 0x10D30, 0x11066,
    0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950,
    0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// `unicodedata.decimal(c)`: the digit value of a decimal digit character.
fn decimal_value(c: char) -> Option<u8> {
    let cp = c as u32;
    let run = DECIMAL_ZEROS.partition_point(|&zero| zero <= cp).checked_sub(1)?;
    let offset = cp - DECIMAL_ZEROS[run];
    u8::try_from(offset).ok().filter(|d| *d < 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_pythons() {
        for c in [
            '\t', '\n', '\x0b', '\x0c', '\r', '\x1c', '\x1d', '\x1e', '\x1f', ' ', '\u{85}', '\u{a0}',
        ] {
            assert!(is_python_whitespace(c), "{c:?}");
        }
        for c in [
            '\u{1680}', '\u{2000}', '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
        ] {
            assert!(is_python_whitespace(c), "{c:?}");
        }
        // Not whitespace for Python, though some are "space-like".
        for c in [
            'a', '\0', '\x08', '\x7f', '\u{200b}', '\u{feff}', '\u{180e}', '_', '#',
        ] {
            assert!(!is_python_whitespace(c), "{c:?}");
        }
        // The difference from Rust that matters.
        assert!(!'\x1c'.is_whitespace() && is_python_whitespace('\x1c'));
        assert_eq!(strip("\x1c\u{a0} x y\u{3000}\x1f"), "x y");
        assert_eq!(strip(" \t "), "");
    }

    #[test]
    fn universal_newlines() {
        let lines: Vec<&str> = universal_lines("a\nb\r\nc\rd\n\ne").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "", "e"]);
        let lines: Vec<&str> = universal_lines("a\r\r\nb\r").collect();
        assert_eq!(lines, ["a", "", "b"]);
        assert_eq!(universal_lines("").count(), 0);
        assert_eq!(universal_lines("\n").collect::<Vec<_>>(), [""]);
        // Other separators do not end a line in text mode (str.splitlines
        // would split at them; file iteration does not).
        assert_eq!(universal_lines("a\x1cb\u{2028}c\x0bd").count(), 1);
    }

    #[test]
    fn complete_lines_drop_the_torn_tail() {
        assert_eq!(complete_lines(b"a\nb\nto"), b"a\nb\n");
        assert_eq!(complete_lines(b"a\rto"), b"a\r");
        assert_eq!(complete_lines(b"torn"), b"");
        assert_eq!(complete_lines(b"a\n"), b"a\n");
    }

    #[test]
    fn python_int_forms() {
        // Each expectation was checked with CPython 3.11.7's int().
        let ok: [(&str, i64); 16] = [
            ("0", 0),
            ("+1", 1),
            (" 2 ", 2),
            ("1_000", 1000),
            ("-0", 0),
            ("-17", -17),
            ("007", 7),
            ("0_0", 0),
            ("\t5\n", 5),
            ("1\x0b", 1),
            ("\x0c1", 1),
            ("\u{85}1", 1),
            ("1\u{a0}", 1),
            ("\u{2000}1", 1),
            ("٣", 3),
            ("１_２", 12),
        ];
        for (s, want) in ok {
            assert_eq!(parse_int(s), Some(PyInt::Small(want)), "{s:?}");
        }
        let bad = [
            "", "  ", "+", "-", "1__0", "_1", "1_", "+_1", "+-1", "- 1", "+ 1", "1 2", "0x10", "1.0", "1e3",
            "\x1c1", "1\x1c", "１__２", "²", "1\0", "\x7f1", "abc",
        ];
        for s in bad {
            assert_eq!(parse_int(s), None, "{s:?}");
        }
    }

    #[test]
    fn python_int_range_and_digit_limit() {
        assert_eq!(parse_int("9223372036854775807"), Some(PyInt::Small(i64::MAX)));
        assert_eq!(parse_int("-9223372036854775808"), Some(PyInt::Small(i64::MIN)));
        assert_eq!(
            parse_int("9223372036854775808"),
            Some(PyInt::Big { negative: false })
        );
        assert_eq!(
            parse_int("-9_223_372_036_854_775_809"),
            Some(PyInt::Big { negative: true })
        );
        assert!(parse_int(&"9".repeat(100)).is_some_and(PyInt::is_nonzero));
        assert!(parse_int(&"1".repeat(4300)).is_some());
        assert_eq!(parse_int(&"1".repeat(4301)), None);
        assert_eq!(parse_int(&"0".repeat(4301)), None);
        assert_eq!(parse_int(&format!("{}1", "1_".repeat(4300))), None);
        assert!(!PyInt::Small(0).is_nonzero());
    }

    #[test]
    fn decimal_digit_runs() {
        assert_eq!(decimal_value('0'), Some(0));
        assert_eq!(decimal_value('9'), Some(9));
        assert_eq!(decimal_value('\u{0669}'), Some(9)); // ARABIC-INDIC NINE
        assert_eq!(decimal_value('\u{1FBF9}'), Some(9)); // SEGMENTED DIGIT NINE
        assert_eq!(decimal_value('\u{066A}'), None); // just after a run
        assert_eq!(decimal_value('/'), None);
        assert_eq!(decimal_value('\u{10FFFF}'), None);
    }
}
