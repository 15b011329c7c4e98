//! Where a large timing.json can be cut so that two threads decode it at
//! once (see [`super::two_halves`]).
//!
//! compiletools writes timing.json with `json.dump(..., indent=2)`: nearly
//! all of a large file is one array of rule objects, one key per line. In
//! such text a raw newline is always whitespace (JSON strings cannot hold
//! one), so `"\n" + n spaces + "},\n" + n spaces + "{"` is, in a
//! consistently indented file, the boundary between two sibling objects
//! at indentation `n`, and the first later line indented less than `n`
//! closes their array. Nothing here trusts that guess: the decoder checks
//! it (both halves must parse, the second must end exactly at the guessed
//! `]`), and any doubt decodes the file in one piece.
//!
//! The cut rewrites a few bytes of the text in place, so that each thread
//! gets one contiguous `&str` without copying either half:
//!
//! ```text
//! original:  HEAD … e_k },\n    { e_k+1 … e_j },\n    { e_j+1 … e_n }\n  ] TAIL
//!                       ^C          ^P                  ^G             ^R
//! first:     HEAD … e_k ,"ct:split-marker"] TAIL        (text[..first_end])
//! second:    [ e_j+1 … e_n ]                            (text[G-1..=R])
//! between:   [ e_k+1 … e_j ]                            (a small copy)
//! ```
//!
//! The first part ends the array with a marker element the decoder
//! recognises, then continues with the tail of the document; the second
//! part is the rest of the array. The elements `e_k+1 … e_j` whose bytes
//! the first part's tail overwrote are decoded from a copy, before the
//! second part. [`SplitText::restore`] puts every byte back.

use memchr::memmem;

/// The element the first part's array ends with (see the module doc). Only
/// recognised in the first part of a split decode; a file that holds it
/// itself is decoded in one piece.
pub(super) const MARKER: &str = "ct:split-marker";

/// No split for less text: the thread costs more than it saves.
pub(super) const MIN_SPLIT_TEXT: usize = 4 << 20;

/// How far past the middle a boundary is looked for.
const BOUNDARY_WINDOW: usize = 1 << 20;

/// The tail after the array may be at most this share of the text: it is
/// moved, and the elements it overwrites are copied.
const MAX_TAIL_DIVISOR: usize = 16;

/// The three parts of a text prepared for a split decode.
pub(super) struct SplitText {
    /// Where the rewritten bytes start (the comma after `e_k`).
    comma: usize,
    /// The original bytes of `comma..comma + saved.len()`.
    saved: String,
    /// End of the first part: `text[..first_end]`.
    first_end: usize,
    /// The second part: `text[second]` (the `[` written over a space).
    second: std::ops::RangeInclusive<usize>,
    /// `[ e_k+1 … e_j ]`, empty when nothing was overwritten.
    pub(super) between: String,
}

impl SplitText {
    /// The first part: the document up to the cut, the marker, the tail.
    pub(super) fn first<'t>(&self, text: &'t str) -> &'t str {
        text.get(..self.first_end).unwrap_or("")
    }

    /// The second part: the array's remaining elements.
    pub(super) fn second<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.second.clone()).unwrap_or("")
    }

    /// Puts the original bytes back.
    pub(super) fn restore(self, text: &mut String) {
        let end = self.comma + self.saved.len();
        if text.is_char_boundary(self.comma) && text.is_char_boundary(end) && end <= text.len() {
            text.replace_range(self.comma..end, &self.saved);
        }
    }
}

/// Rewrites `text` for a split decode (module doc), or leaves it untouched
/// and returns `None` when it is too small or not shaped for one.
pub(super) fn prepare(text: &mut String, min_len: usize) -> Option<SplitText> {
    if text.len() < min_len.max(1) {
        return None;
    }
    let middle = text.len() / 2;
    prepare_at(text, middle)
}

/// [`prepare`] with the cut at the first element boundary from `from` on.
pub(super) fn prepare_at(text: &mut String, from: usize) -> Option<SplitText> {
    let t = text.as_bytes();
    let (comma, first_elem, indent) = boundary_after(t, from, None)?;
    let close = array_close(t, indent, first_elem)?;
    let tail = text.get(close + 1..)?;
    if tail.len() > t.len() / MAX_TAIL_DIVISOR {
        return None;
    }
    // The first part: text[..comma] + `,"MARKER"]` + tail.
    let first_end = comma + 2 + MARKER.len() + 2 + tail.len();
    // The second part starts with a `[` written over the space before an
    // element's `{`, past everything the first part overwrites.
    let second_elem = if first_elem > first_end {
        first_elem
    } else {
        boundary_after(t, first_end, Some(indent))?.1
    };
    if second_elem >= close {
        return None;
    }
    let between = if second_elem == first_elem {
        String::new()
    } else {
        // The elements from first_elem up to the comma before second_elem.
        let (before_second, _, _) = boundary_before(t, second_elem, indent)?;
        let elems = text.get(first_elem..before_second)?;
        let mut b = String::with_capacity(elems.len() + 2);
        b.push('[');
        b.push_str(elems);
        b.push(']');
        b
    };
    let saved = text.get(comma..second_elem)?.to_owned();
    let mut new = String::with_capacity(saved.len());
    new.push_str(",\"");
    new.push_str(MARKER);
    new.push_str("\"]");
    new.push_str(tail);
    // Spaces keep the text valid UTF-8 (and JSON whitespace) between the
    // first part's end and the second part's `[`.
    let spaces = saved.len().saturating_sub(new.len() + 1);
    new.extend(std::iter::repeat_n(' ', spaces));
    new.push('[');
    if new.len() != saved.len() || comma + new.len() - spaces - 1 != first_end {
        return None;
    }
    text.replace_range(comma..second_elem, &new);
    Some(SplitText {
        comma,
        saved,
        first_end,
        second: second_elem - 1..=close,
        between,
    })
}

/// The first element boundary (module doc) whose `}` line starts at or
/// after `from`, within [`BOUNDARY_WINDOW`]: returns the comma's position,
/// the next element's `{` and the indentation. With `indent`, only a
/// boundary at that indentation counts.
fn boundary_after(t: &[u8], from: usize, indent: Option<usize>) -> Option<(usize, usize, usize)> {
    let end = from.saturating_add(BOUNDARY_WINDOW).min(t.len());
    let window = t.get(from..end)?;
    memmem::find_iter(window, b"},\n")
        .map(|i| from + i)
        .find_map(|brace| boundary_at(t, brace).filter(|b| indent.is_none_or(|n| n == b.2)))
}

/// The last element boundary at `indent` whose next element starts before
/// `elem`: the comma ending the element before `elem`'s run of copies.
fn boundary_before(t: &[u8], elem: usize, indent: usize) -> Option<(usize, usize, usize)> {
    // `elem` itself is the `{` after a boundary: its comma is just before
    // the newline and the indentation.
    let comma = elem.checked_sub(indent + 2)?;
    let b = boundary_at(t, comma.checked_sub(1)?)?;
    (b.1 == elem && b.2 == indent).then_some(b)
}

/// Whether `t[brace..]` starts `},\n` + n spaces + `{` with the `}` alone
/// on its line at indentation n; returns (comma, next `{`, n).
fn boundary_at(t: &[u8], brace: usize) -> Option<(usize, usize, usize)> {
    if t.get(brace..brace + 3)? != b"},\n" {
        return None;
    }
    let line = t.get(..brace)?;
    let n = line.iter().rev().take_while(|&&b| b == b' ').count();
    if n == 0 || line.len() <= n || line[line.len() - n - 1] != b'\n' {
        return None;
    }
    let next = brace + 3;
    let spaces = t.get(next..next + n)?;
    if !spaces.iter().all(|&b| b == b' ') || t.get(next + n) != Some(&b'{') {
        return None;
    }
    Some((brace + 1, next + n, n))
}

/// The `]` closing the array whose elements are indented by `indent`,
/// found from the end of the text: the line after the last line indented
/// `indent` or more must start with it. `None` when that line is not a
/// `]` indented less, or the search would pass `after` or read more than
/// the tail allows.
fn array_close(t: &[u8], indent: usize, after: usize) -> Option<usize> {
    let lowest = t.len().saturating_sub(t.len() / MAX_TAIL_DIVISOR).max(after);
    let mut end = t.len();
    // The first non-blank line below the current one: (its first byte's
    // position, that byte, its indentation).
    let mut below: Option<(usize, u8, usize)> = None;
    loop {
        let start = memchr::memrchr(b'\n', t.get(..end)?).map_or(0, |i| i + 1);
        if start < lowest {
            return None;
        }
        let line = t.get(start..end)?;
        let n = line.iter().take_while(|&&b| b == b' ').count();
        if let Some(&first) = line.get(n) {
            if n >= indent {
                let (at, byte, m) = below?;
                return (byte == b']' && m < indent).then_some(at);
            }
            below = Some((start + n, first, n));
        }
        end = start.checked_sub(1)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// A phase with `n` rules, then a phase without, indented as
    /// compiletools writes them.
    fn doc(n: usize) -> String {
        let rules: Vec<Value> = (0..n)
            .map(|i| json!({"name": format!("r{i}"), "x": [1, {"y": "é"}]}))
            .collect();
        let v = json!({"phases": [{"name": "p", "rules": rules}, {"name": "q"}], "version": 1});
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            serde_json::ser::PrettyFormatter::with_indent(b"  "),
        );
        serde::Serialize::serialize(&v, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn names(v: &Value) -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn every_cut_gives_the_parts_of_the_array_and_restores() {
        let original = doc(12);
        let want: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
        let mut splits = 0;
        for from in 0..original.len() {
            let mut text = original.clone();
            let Some(split) = prepare_at(&mut text, from) else {
                assert_eq!(text, original);
                continue;
            };
            splits += 1;
            let first: Value = serde_json::from_str(split.first(&text)).expect("first part is JSON");
            let rules = &first["phases"][0]["rules"];
            let mut got = names(rules);
            assert_eq!(
                rules.as_array().and_then(|a| a.last()),
                Some(&json!(MARKER)),
                "{first}"
            );
            assert_eq!(first["phases"][1]["name"], "q");
            assert_eq!(first["version"], 1);
            if !split.between.is_empty() {
                let between: Value = serde_json::from_str(&split.between).expect("between is JSON");
                got.extend(names(&between));
            }
            let second: Value = serde_json::from_str(split.second(&text)).expect("second part is JSON");
            got.extend(names(&second));
            assert_eq!(got, want, "cut from {from}");
            split.restore(&mut text);
            assert_eq!(text, original);
        }
        assert!(splits > 100, "{splits} cuts");
    }

    #[test]
    fn no_split_without_the_shape() {
        let original = doc(12);
        let mut compact = serde_json::to_string(&serde_json::from_str::<Value>(&original).unwrap()).unwrap();
        assert!(prepare_at(&mut compact, 0).is_none());
        let mut small = original.clone();
        assert!(prepare(&mut small, MIN_SPLIT_TEXT).is_none());
        assert_eq!(small, original);
        // A tail indented like the elements: the close is not where the
        // guess looks, so no split.
        let mut odd = original.replace("\"q\"", "\"q\",\n          \"deep\": 1");
        assert!(prepare_at(&mut odd, 0).is_none());
    }
}
