//! Independent reference models of compiletools' Python line parsing
//! (formats.md §4.3, §5.3), written from the spec and CPython 3.11's behaviour,
//! not from the core's `pytext` module, for differential fuzzing.

#![allow(dead_code)] // each target uses a part

/// `str.isspace()` (CPython 3.11, Unicode 14.0), from
/// `[hex(i) for i in range(0x110000) if chr(i).isspace()]`.
pub fn py_isspace(c: char) -> bool {
    matches!(
        c as u32,
        0x09..=0x0d | 0x1c..=0x20 | 0x85 | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
    )
}

/// Lines as `for line in open(p, newline=None)` yields them, without the
/// terminator: `\r\n`, `\r` and `\n` each end a line; no empty line after a
/// final terminator.
pub fn universal_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out.push(&text[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                out.push(&text[start..i]);
                i += if b.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

/// Statslog event counts in first-seen order (a Python `Counter`).
pub fn statslog_counts(text: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for line in universal_lines(text) {
        let s = line.trim_matches(py_isspace);
        if s.is_empty() || s.starts_with('#') || s.contains(py_isspace) {
            continue;
        }
        match out.iter_mut().find(|(n, _)| n == s) {
            Some((_, c)) => *c += 1,
            None => out.push((s.to_owned(), 1)),
        }
    }
    out
}

/// Result of Python's `int(s)` on an ASCII string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyIntRef {
    Small(i64),
    /// Valid, outside i64.
    Big,
    /// `int()` raises.
    Invalid,
}

/// `int(s)` for ASCII `s` (checked against CPython 3.11: surrounding
/// ` \t\n\v\f\r` only — not `\x1c`–`\x1f` —, one optional sign, digits with
/// single `_` between digits, at most 4300 digits, leading zeros counted).
pub fn py_int_ascii(s: &str) -> PyIntRef {
    assert!(s.is_ascii());
    let s = s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return PyIntRef::Invalid;
    }
    if !body.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return PyIntRef::Invalid;
    }
    let digits: String = body.chars().filter(|c| *c != '_').collect();
    if digits.len() > 4300 {
        return PyIntRef::Invalid;
    }
    let mut v: i128 = 0;
    for d in digits.bytes() {
        v = match v
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(d - b'0')))
        {
            Some(v) if v <= i128::from(u64::MAX) => v,
            _ => return PyIntRef::Big,
        };
    }
    let v = if negative { -v } else { v };
    i64::try_from(v).map_or(PyIntRef::Big, PyIntRef::Small)
}

/// Records by target: (hit, bytes_reused, kind).
pub type OutcomeMap = std::collections::HashMap<String, (bool, i64, Option<String>)>;

/// `rule_outcomes.log` records by target (last wins) and the number of
/// non-empty lines skipped, for ASCII text.
pub fn outcomes(text: &str) -> (OutcomeMap, u64) {
    let mut map = std::collections::HashMap::new();
    let mut skipped = 0;
    for line in universal_lines(text) {
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let rec = if f.len() == 4 {
            match (py_int_ascii(f[2]), py_int_ascii(f[3])) {
                (PyIntRef::Invalid, _) | (_, PyIntRef::Invalid) | (_, PyIntRef::Big) => None,
                (hit, PyIntRef::Small(bytes)) => Some((hit != PyIntRef::Small(0), bytes)),
            }
        } else {
            None
        };
        match rec {
            Some((hit, bytes)) => {
                map.insert(
                    f[0].to_owned(),
                    (hit, bytes, (!f[1].is_empty()).then(|| f[1].to_owned())),
                );
            }
            None => skipped += 1,
        }
    }
    (map, skipped)
}
