//! The decoder's fast path: a scanner for `timing.json` that makes the very
//! same calls into the model as the serde path, in the same order, without
//! serde's per-token machinery (about half the decoding time of a 100k-rule
//! file).
//!
//! It only ever accepts what serde_json would accept and read the same way.
//! At the first thing it is not sure of it gives up ([`Bail`]) and the
//! caller decodes the whole text again with the serde path, so every error
//! (and every warning of a document that has an error) still comes from
//! serde_json. It gives up at:
//! * any syntax error, and nesting deeper than [`MAX_NESTING`];
//! * a limit or a cancellation (the serde path reports them);
//! * strings with escapes or numbers outside the exact fast range are not a
//!   reason to give up: serde_json itself reads that one token.
//!
//! Numbers: serde_json (without its `float_roundtrip` feature) computes a
//! decimal `m × 10^e` as `(m as f64) * 10^|e|` or `/ 10^|e|`. For
//! `m ≤ 2^53` and `|e| ≤ 22` both operands are exact, so that is one
//! correctly rounded operation, which is what [`exact_number`] does too;
//! everything else is handed to serde_json.

use std::borrow::Cow;

use serde::de::IgnoredAny;

use super::super::json::{CowStr, Loose};
use super::super::metadata::{insert_last_wins, ArrayAcc, MetadataField};
use super::super::model::{Build, Run, Stored};
use super::{
    first_root, root_number, set_timestamp, skip_event, top_string, Children, Decoder, EventFields, EventKey,
    Siblings, TopKey,
};

/// The fast path gave up: decode with the serde path instead.
#[derive(Debug)]
pub(super) struct Bail;

type Scanned<T> = Result<T, Bail>;

/// Containers nested deeper than this are left to serde_json (which stops at
/// 128 with its own error).
const MAX_NESTING: u32 = 100;

/// Fills `d.build` from `text`, or gives up.
pub(super) fn decode(text: &str, d: &mut Decoder) -> Scanned<()> {
    let mut s = Scanner {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        nesting: 0,
    };
    s.top(d)?;
    s.skip_ws();
    if s.pos == s.bytes.len() {
        Ok(())
    } else {
        Err(Bail)
    }
}

/// A limit or cancellation of the serde path's bookkeeping, as a bail.
fn enter_event(d: &mut Decoder, depth: u32) -> Scanned<()> {
    d.enter_event::<serde_json::Error>(depth).map_err(|_| Bail)
}

struct Scanner<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    nesting: u32,
}

impl<'t> Scanner<'t> {
    // ------------------------------------------------------------ structure

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    #[inline]
    fn peek(&mut self) -> Scanned<u8> {
        self.skip_ws();
        self.bytes.get(self.pos).copied().ok_or(Bail)
    }

    #[inline]
    fn expect(&mut self, c: u8) -> Scanned<()> {
        if self.peek()? == c {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Opens a container with `open`; `true` if it has a first element or
    /// entry, `false` if `close` follows at once.
    fn open(&mut self, open: u8, close: u8) -> Scanned<bool> {
        self.expect(open)?;
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(Bail);
        }
        if self.peek()? == close {
            self.close();
            Ok(false)
        } else {
            Ok(true)
        }
    }

    fn close(&mut self) {
        self.pos += 1;
        self.nesting -= 1;
    }

    /// After an element or entry: `true` if a comma announces another one,
    /// `false` at `close`.
    #[inline]
    fn more(&mut self, close: u8) -> Scanned<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            c if c == close => {
                self.close();
                Ok(false)
            }
            _ => Err(Bail),
        }
    }

    /// An object key and its colon.
    #[inline]
    fn key(&mut self) -> Scanned<Cow<'t, str>> {
        let key = self.string()?;
        self.expect(b':')?;
        Ok(key)
    }

    fn literal(&mut self, word: &[u8]) -> Scanned<()> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    // --------------------------------------------------------------- tokens

    /// The string at the cursor, borrowed when it has no escapes.
    fn string(&mut self) -> Scanned<Cow<'t, str>> {
        if self.peek()? != b'"' {
            return Err(Bail);
        }
        let start = self.pos + 1;
        let end = self.plain_end(start);
        match self.bytes.get(end) {
            Some(b'"') => {
                self.pos = end + 1;
                self.text.get(start..end).map(Cow::Borrowed).ok_or(Bail)
            }
            Some(b'\\') => self.escaped(start - 1, end),
            // A control character (serde_json refuses it) or the end.
            _ => Err(Bail),
        }
    }

    /// The first position from `i` on that holds a quote, a backslash or a
    /// control character, or the end of the text. Eight bytes at a time:
    /// a word has such a byte iff one of the three bit tests below is set;
    /// a test can also flag a byte above a true hit, never one without.
    #[inline]
    fn plain_end(&self, mut i: usize) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let Ok(word) = <[u8; 8]>::try_from(chunk) else {
                break;
            };
            let w = u64::from_le_bytes(word);
            let quote = w ^ (ONES * u64::from(b'"'));
            let backslash = w ^ (ONES * u64::from(b'\\'));
            let zero_quote = quote.wrapping_sub(ONES) & !quote;
            let zero_backslash = backslash.wrapping_sub(ONES) & !backslash;
            let below_space = w.wrapping_sub(ONES * 0x20) & !w;
            if (zero_quote | zero_backslash | below_space) & HIGHS != 0 {
                break;
            }
            i += 8;
        }
        while let Some(&c) = self.bytes.get(i) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                break;
            }
            i += 1;
        }
        i
    }

    /// A string with escapes, from its opening quote at `open`; `i` is at
    /// its first backslash. serde_json reads the token: it skips strings
    /// with one reader and decodes them with another, so both must accept
    /// it for the answer to hold wherever the string stands.
    #[cold]
    fn escaped(&mut self, open: usize, mut i: usize) -> Scanned<Cow<'t, str>> {
        loop {
            match self.bytes.get(i) {
                Some(b'\\') => i += 2,
                Some(b'"') => break,
                Some(_) => i += 1,
                None => return Err(Bail),
            }
        }
        let token = self.text.get(open..=i).ok_or(Bail)?;
        serde_json::from_str::<IgnoredAny>(token).map_err(|_| Bail)?;
        let CowStr(s) = serde_json::from_str::<CowStr>(token).map_err(|_| Bail)?;
        self.pos = i + 1;
        Ok(Cow::Owned(s.into_owned()))
    }

    /// The number at the cursor.
    fn number(&mut self) -> Scanned<Loose<'t>> {
        let (start, end) = self.number_token();
        let token = self.bytes.get(start..end).ok_or(Bail)?;
        if let Some(v) = exact_number(token) {
            return Ok(v);
        }
        let token = self.text.get(start..end).ok_or(Bail)?;
        match serde_json::from_str::<Loose>(token) {
            Ok(v @ (Loose::Int(_) | Loose::BigUint(_) | Loose::Float(_))) => Ok(v),
            _ => Err(Bail),
        }
    }

    /// Consumes the bytes a number can have; returns where they are.
    fn number_token(&mut self) -> (usize, usize) {
        let start = self.pos;
        let mut end = start;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.bytes.get(end) {
            end += 1;
        }
        self.pos = end;
        (start, end)
    }

    // --------------------------------------------------------------- values

    /// Any value, as [`Loose`] reads it.
    fn loose(&mut self) -> Scanned<Loose<'t>> {
        Ok(match self.peek()? {
            b'"' => Loose::Str(self.string()?),
            b'n' => {
                self.literal(b"null")?;
                Loose::Null
            }
            b't' => {
                self.literal(b"true")?;
                Loose::Bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                Loose::Bool(false)
            }
            b'[' => Loose::Array(self.skip_array()? > 0),
            b'{' => Loose::Object(self.skip_object()? > 0),
            _ => self.number()?,
        })
    }

    /// Skips a value as serde's `IgnoredAny` does: a number is only
    /// checked against the grammar (`1e400` is out of range as a value,
    /// not as something skipped).
    fn skip_value(&mut self) -> Scanned<()> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => {
                let (start, end) = self.number_token();
                if exact_number(self.bytes.get(start..end).ok_or(Bail)?).is_none() {
                    let token = self.text.get(start..end).ok_or(Bail)?;
                    serde_json::from_str::<IgnoredAny>(token).map_err(|_| Bail)?;
                }
                Ok(())
            }
            _ => self.loose().map(drop),
        }
    }

    /// Skips an array; returns its length.
    fn skip_array(&mut self) -> Scanned<u64> {
        let mut n = 0;
        let mut more = self.open(b'[', b']')?;
        while more {
            self.skip_value()?;
            n += 1;
            more = self.more(b']')?;
        }
        Ok(n)
    }

    /// Skips an object; returns its entry count.
    fn skip_object(&mut self) -> Scanned<u64> {
        let mut n = 0;
        let mut more = self.open(b'{', b'}')?;
        while more {
            self.key()?;
            self.skip_value()?;
            n += 1;
            more = self.more(b'}')?;
        }
        Ok(n)
    }

    // ------------------------------------------------------------ the model

    /// The top-level object (the serde path's `BuildSeed`).
    fn top(&mut self, d: &mut Decoder) -> Scanned<()> {
        let mut more = self.open(b'{', b'}')?;
        while more {
            let key = self.key()?;
            match TopKey::of(&key) {
                TopKey::Timestamp => set_timestamp(d, self.loose()?),
                TopKey::TotalElapsed => {
                    d.build.total_elapsed_s =
                        root_number::<serde_json::Error>(self.loose()?, "total_elapsed_s")
                            .map_err(|_| Bail)?
                }
                TopKey::Start => {
                    d.build.start_s =
                        root_number::<serde_json::Error>(self.loose()?, "start_s").map_err(|_| Bail)?
                }
                TopKey::Variant => d.build.variant = top_string(d, self.loose()?, "variant"),
                TopKey::Backend => d.build.backend = top_string(d, self.loose()?, "backend"),
                TopKey::Phases => {
                    let phases = self.children(d, 1)?;
                    d.build.first_root = first_root::<serde_json::Error>(phases).map_err(|_| Bail)?
                }
                TopKey::Other => self.skip_value()?,
            }
            more = self.more(b'}')?;
        }
        Ok(())
    }

    /// A `phases` / `rules` / `children` value whose events sit at `depth`
    /// (`ChildrenSeed`).
    fn children(&mut self, d: &mut Decoder, depth: u32) -> Scanned<Children> {
        Ok(match self.peek()? {
            b'[' => {
                let mut list = Siblings::new();
                let mut index: u32 = 0;
                let mut more = self.open(b'[', b']')?;
                while more {
                    let event = self.event(d, depth, index)?;
                    list.push(&mut d.build, event);
                    index = index.saturating_add(1);
                    more = self.more(b']')?;
                }
                Children::List(list.first)
            }
            b'{' => {
                self.skip_object()?;
                Children::Invalid("an object")
            }
            _ => match self.loose()? {
                Loose::Null => Children::Null,
                other => Children::Invalid(other.type_name()),
            },
        })
    }

    /// One element of an event array (`EventSeed`).
    fn event(&mut self, d: &mut Decoder, depth: u32, index: u32) -> Scanned<Option<u32>> {
        match self.peek()? {
            b'{' => {}
            b'[' => {
                enter_event(d, depth)?;
                self.skip_array()?;
                return Ok(skip_event(
                    d,
                    index,
                    depth,
                    format_args!("an array, not an object"),
                ));
            }
            _ => {
                let what = self.loose()?.type_name();
                enter_event(d, depth)?;
                return Ok(skip_event(d, index, depth, format_args!("{what}, not an object")));
            }
        }
        let mut more = self.open(b'{', b'}')?;
        enter_event(d, depth)?;
        let mut fields = EventFields::default();
        while more {
            let key = self.key()?;
            match EventKey::of(&key) {
                EventKey::Name => fields.name = Some(self.loose()?),
                EventKey::RuleType => fields.rule_type = Some(self.loose()?),
                EventKey::Target => fields.target = Some(self.loose()?),
                EventKey::Source => fields.source = Some(self.loose()?),
                EventKey::Start => fields.start_s = Some(self.loose()?),
                EventKey::End => fields.end_s = Some(self.loose()?),
                EventKey::Elapsed => fields.elapsed_s = Some(self.loose()?),
                EventKey::Metadata => fields.metadata = Some(self.metadata(&mut d.build)?),
                EventKey::Rules => fields.rules = Some(self.children(d, depth.saturating_add(1))?),
                EventKey::ChildRules => fields.children = Some(self.children(d, depth.saturating_add(1))?),
                EventKey::Other => self.skip_value()?,
            }
            more = self.more(b'}')?;
        }
        Ok(fields.into_event(d, depth, index))
    }

    /// A `metadata` value (`MetadataSeed`).
    fn metadata(&mut self, build: &mut Build) -> Scanned<MetadataField> {
        Ok(match self.peek()? {
            b'{' => {
                let start = build.meta.len();
                let mut index = None;
                let mut more = self.open(b'{', b'}')?;
                while more {
                    let key = self.key()?;
                    let value = self.meta_value(build)?;
                    insert_last_wins(build, start, &mut index, &key, value);
                    more = self.more(b'}')?;
                }
                MetadataField::Object(Run::new(start, build.meta.len()))
            }
            b'[' => {
                self.skip_array()?;
                MetadataField::Invalid("an array")
            }
            _ => match self.loose()? {
                Loose::Null => MetadataField::Null,
                other => MetadataField::Invalid(other.type_name()),
            },
        })
    }

    /// One metadata value (`ValueSeed`).
    fn meta_value(&mut self, build: &mut Build) -> Scanned<Stored> {
        Ok(match self.peek()? {
            b'"' => Stored::Str(build.push_value_str(&self.string()?)),
            b'[' => {
                let mut acc = ArrayAcc::Empty;
                let mut len = 0u64;
                let mut more = self.open(b'[', b']')?;
                while more {
                    let elem = self.loose()?;
                    len += 1;
                    acc = acc.push(build, elem);
                    more = self.more(b']')?;
                }
                acc.finish(build, len)
            }
            b'{' => Stored::Unsupported {
                truthy: self.skip_object()? > 0,
            },
            _ => match self.loose()? {
                Loose::Null => Stored::Null,
                Loose::Bool(b) => Stored::Bool(b),
                Loose::Int(i) => Stored::Int(i),
                // OTLP ints are i64 (as `ValueSeed::visit_u64`).
                Loose::BigUint(_) => Stored::Unsupported { truthy: true },
                Loose::Float(f) => Stored::Double(f),
                Loose::Str(_) | Loose::Array(_) | Loose::Object(_) => return Err(Bail),
            },
        })
    }
}

/// Powers of ten that are exact in an f64.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// A non-negative JSON number whose value serde_json computes exactly the
/// same way (see the module doc); `None` for anything else, valid or not.
fn exact_number(token: &[u8]) -> Option<Loose<'static>> {
    let digit = |i: usize| match token.get(i) {
        Some(&c @ b'0'..=b'9') => Some(u64::from(c - b'0')),
        _ => None,
    };
    let mut i = 0;
    let mut significand: u64 = 0;
    let mut digits = 0u32;
    while let Some(v) = digit(i) {
        significand = significand.wrapping_mul(10).wrapping_add(v);
        digits += 1;
        i += 1;
    }
    // JSON has no leading zeros; more than 18 digits may not fit an i64.
    if digits == 0 || digits > 18 || (token.first() == Some(&b'0') && digits > 1) {
        return None;
    }
    if i == token.len() {
        return i64::try_from(significand).ok().map(Loose::Int);
    }
    let mut exponent: i32 = 0;
    if token.get(i) == Some(&b'.') {
        i += 1;
        let first = i;
        while let Some(v) = digit(i) {
            significand = significand.wrapping_mul(10).wrapping_add(v);
            digits += 1;
            exponent -= 1;
            i += 1;
            if digits > 19 {
                return None;
            }
        }
        if i == first {
            return None;
        }
    }
    if let Some(b'e' | b'E') = token.get(i) {
        i += 1;
        let negative = match token.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let first = i;
        let mut e: i32 = 0;
        while let Some(v) = digit(i) {
            if i - first == 3 {
                return None;
            }
            e = e * 10 + v as i32;
            i += 1;
        }
        if i == first {
            return None;
        }
        exponent += if negative { -e } else { e };
    }
    if i != token.len() || significand > 1 << 53 {
        return None;
    }
    let pow = *EXACT_POW10.get(exponent.unsigned_abs() as usize)?;
    let m = significand as f64;
    Some(Loose::Float(if exponent >= 0 { m * pow } else { m / pow }))
}

#[cfg(test)]
mod tests;
