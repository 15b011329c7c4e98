//! Protobuf wire encoding of the rule and phase spans straight from the
//! build model: borrowed strings, no prost structs, no heap allocation per
//! span. A 100k-rule build is ~10 attributes a span; building a `KeyValue`
//! with owned `String`s for each and encoding it afterwards was half of the
//! encoder's time and one allocation per rule.
//!
//! Field numbers and the order of fields are prost's for the
//! `opentelemetry-proto` types (declaration order, defaults skipped, oneof
//! variants always written); `trace.rs` tests that both give the same bytes.

use prost::encoding::{encoded_len_varint, WireType};

use crate::strings::truncate;
use crate::timing::{MetaValue, StrArray};

/// One attribute value as it goes on the wire, borrowed from the model.
#[derive(Clone, Copy)]
pub(crate) enum WireValue<'b> {
    Str(&'b str),
    Bool(bool),
    Int(i64),
    Double(f64),
    BoolArray(&'b [bool]),
    IntArray(&'b [i64]),
    DoubleArray(&'b [f64]),
    StrArray(StrArray<'b>),
    /// A span id, written as the string of its 16 lowercase hex digits.
    HexId([u8; 8]),
    /// An array of names fixed at compile time (`ct.rule.rebuild_changed`).
    StaticStrs(&'static [&'static str]),
    /// An array of names the history holds (`ct.rule.rebuild_headers`).
    Names(&'b [Box<str>]),
}

impl<'b> WireValue<'b> {
    /// The wire value of a metadata value; `None` for null and unsupported
    /// values (skipped and dropped by the caller).
    pub(crate) fn of_meta(v: MetaValue<'b>) -> Option<Self> {
        Some(match v {
            MetaValue::Null | MetaValue::Unsupported { .. } => return None,
            MetaValue::Bool(b) => WireValue::Bool(b),
            MetaValue::Int(i) => WireValue::Int(i),
            MetaValue::Double(d) => WireValue::Double(d),
            MetaValue::Str(s) => WireValue::Str(s),
            MetaValue::BoolArray(v) => WireValue::BoolArray(v),
            MetaValue::IntArray(v) => WireValue::IntArray(v),
            MetaValue::DoubleArray(v) => WireValue::DoubleArray(v),
            MetaValue::StrArray(v) => WireValue::StrArray(v),
        })
    }
}

// AnyValue oneof field numbers.
const ANY_STRING: u32 = 1;
const ANY_BOOL: u32 = 2;
const ANY_INT: u32 = 3;
const ANY_DOUBLE: u32 = 4;
const ANY_ARRAY: u32 = 5;
// KeyValue and ArrayValue field numbers.
const KV_KEY: u32 = 1;
const KV_VALUE: u32 = 2;
const ARRAY_VALUES: u32 = 1;

/// Length of a key of a field number below 2048 (every field here).
const fn key_len(field: u32) -> usize {
    if field < 16 {
        1
    } else {
        2
    }
}

/// Encoded length of a length-delimited field holding `n` bytes.
pub(crate) fn delimited_len(field: u32, n: usize) -> usize {
    key_len(field) + encoded_len_varint(n as u64) + n
}

/// A varint as prost's `encode_varint` writes it, inlined here: a span is
/// ~40 keys and lengths, nearly all of one byte, and the call into prost
/// for each was ~4 % of `process_build` at 100k rules.
#[inline]
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A field's key, as prost's `encode_key` writes it.
#[inline]
fn key(field: u32, wire_type: WireType, out: &mut Vec<u8>) {
    varint(u64::from(field << 3 | wire_type as u32), out);
}

pub(crate) fn put_bytes(field: u32, bytes: &[u8], out: &mut Vec<u8>) {
    key(field, WireType::LengthDelimited, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// A length-delimited field's key and length; its `n` bytes follow.
pub(crate) fn put_delimited_head(field: u32, n: usize, out: &mut Vec<u8>) {
    key(field, WireType::LengthDelimited, out);
    varint(n as u64, out);
}

pub(crate) fn put_fixed64(field: u32, v: u64, out: &mut Vec<u8>) {
    key(field, WireType::SixtyFourBit, out);
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_fixed32(field: u32, v: u32, out: &mut Vec<u8>) {
    key(field, WireType::ThirtyTwoBit, out);
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_varint(field: u32, v: u64, out: &mut Vec<u8>) {
    key(field, WireType::Varint, out);
    varint(v, out);
}

/// Encoded length of one `AnyValue` message body holding `v`, strings cut
/// at `max` bytes.
fn any_value_len(v: &WireValue, max: usize) -> usize {
    match v {
        WireValue::Str(s) => delimited_len(ANY_STRING, truncate(s, max).len()),
        WireValue::HexId(id) => delimited_len(ANY_STRING, truncate(hex(id).as_str(), max).len()),
        WireValue::Bool(_) => 2,
        WireValue::Int(i) => 1 + encoded_len_varint(*i as u64),
        WireValue::Double(_) => 9,
        array => delimited_len(ANY_ARRAY, array_len(array, max)),
    }
}

/// Encoded length of the `ArrayValue` body of an array value.
fn array_len(v: &WireValue, max: usize) -> usize {
    // Each element is an AnyValue message in field 1 of ArrayValue.
    let element = |body: usize| delimited_len(ARRAY_VALUES, body);
    match v {
        WireValue::BoolArray(a) => a.len() * element(2),
        WireValue::IntArray(a) => a.iter().map(|i| element(1 + encoded_len_varint(*i as u64))).sum(),
        WireValue::DoubleArray(a) => a.len() * element(9),
        WireValue::StrArray(a) => a
            .iter()
            .map(|s| element(delimited_len(ANY_STRING, truncate(s, max).len())))
            .sum(),
        WireValue::StaticStrs(a) => a
            .iter()
            .map(|s| element(delimited_len(ANY_STRING, truncate(s, max).len())))
            .sum(),
        WireValue::Names(a) => a
            .iter()
            .map(|s| element(delimited_len(ANY_STRING, truncate(s, max).len())))
            .sum(),
        _ => 0,
    }
}

fn put_any_value(v: &WireValue, max: usize, out: &mut Vec<u8>) {
    match v {
        WireValue::Str(s) => put_bytes(ANY_STRING, truncate(s, max).as_bytes(), out),
        WireValue::HexId(id) => put_bytes(ANY_STRING, truncate(hex(id).as_str(), max).as_bytes(), out),
        WireValue::Bool(b) => put_varint(ANY_BOOL, u64::from(*b), out),
        WireValue::Int(i) => put_varint(ANY_INT, *i as u64, out),
        WireValue::Double(d) => put_fixed64(ANY_DOUBLE, d.to_bits(), out),
        array => {
            put_delimited_head(ANY_ARRAY, array_len(array, max), out);
            let element = |body: usize, out: &mut Vec<u8>| put_delimited_head(ARRAY_VALUES, body, out);
            match array {
                WireValue::BoolArray(a) => {
                    for b in a.iter() {
                        element(2, out);
                        put_varint(ANY_BOOL, u64::from(*b), out);
                    }
                }
                WireValue::IntArray(a) => {
                    for i in a.iter() {
                        element(1 + encoded_len_varint(*i as u64), out);
                        put_varint(ANY_INT, *i as u64, out);
                    }
                }
                WireValue::DoubleArray(a) => {
                    for d in a.iter() {
                        element(9, out);
                        put_fixed64(ANY_DOUBLE, d.to_bits(), out);
                    }
                }
                WireValue::StrArray(a) => {
                    for s in a.iter() {
                        let s = truncate(s, max);
                        element(delimited_len(ANY_STRING, s.len()), out);
                        put_bytes(ANY_STRING, s.as_bytes(), out);
                    }
                }
                WireValue::StaticStrs(a) => {
                    for s in a.iter() {
                        let s = truncate(s, max);
                        element(delimited_len(ANY_STRING, s.len()), out);
                        put_bytes(ANY_STRING, s.as_bytes(), out);
                    }
                }
                WireValue::Names(a) => {
                    for s in a.iter() {
                        let s = truncate(s, max);
                        element(delimited_len(ANY_STRING, s.len()), out);
                        put_bytes(ANY_STRING, s.as_bytes(), out);
                    }
                }
                _ => {}
            }
        }
    }
}

/// A span id's 16 lowercase hex digits, on the stack.
struct Hex([u8; 16]);

impl Hex {
    fn as_str(&self) -> &str {
        // Only ASCII digits are written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

fn hex(id: &[u8; 8]) -> Hex {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, b) in id.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
    }
    Hex(out)
}

// Status field numbers (trace.proto) and STATUS_CODE_ERROR.
const STATUS_MESSAGE: u32 = 2;
const STATUS_CODE: u32 = 3;
const STATUS_CODE_ERROR: u64 = 2;

/// Writes a `Status` with code ERROR and `message` as field `field` of the
/// enclosing span, as prost encodes it (an empty message left out).
pub(crate) fn put_error_status(field: u32, message: &str, out: &mut Vec<u8>) {
    let message_len = if message.is_empty() {
        0
    } else {
        delimited_len(STATUS_MESSAGE, message.len())
    };
    put_delimited_head(field, message_len + key_len(STATUS_CODE) + 1, out);
    if !message.is_empty() {
        put_bytes(STATUS_MESSAGE, message.as_bytes(), out);
    }
    put_varint(STATUS_CODE, STATUS_CODE_ERROR, out);
}

/// Writes one `KeyValue` as field `field` of the enclosing message (a
/// span's attributes), string values cut at `max` bytes.
pub(crate) fn put_key_value(field: u32, key: &str, v: &WireValue, max: usize, out: &mut Vec<u8>) {
    let value_len = any_value_len(v, max);
    // prost leaves out an empty key (the proto3 default).
    let key_field = if key.is_empty() {
        0
    } else {
        delimited_len(KV_KEY, key.len())
    };
    put_delimited_head(field, key_field + delimited_len(KV_VALUE, value_len), out);
    if !key.is_empty() {
        put_bytes(KV_KEY, key.as_bytes(), out);
    }
    put_delimited_head(KV_VALUE, value_len, out);
    put_any_value(v, max, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_status_and_hex_ids_are_prost_s() {
        use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
        use opentelemetry_proto::tonic::trace::v1::{status::StatusCode, Span, Status};
        use prost::Message;
        for message in ["", "build failed in build_execution"] {
            let span = Span {
                status: Some(Status {
                    message: message.to_owned(),
                    code: StatusCode::Error as i32,
                }),
                ..Default::default()
            };
            let mut got = Vec::new();
            put_error_status(15, message, &mut got);
            assert_eq!(got, span.encode_to_vec(), "{message:?}");
        }
        let id = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        for max in [100, 5] {
            let span = Span {
                attributes: vec![KeyValue {
                    key: "k".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(
                            truncate("0123456789abcdef", max).to_owned(),
                        )),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let mut got = Vec::new();
            put_key_value(9, "k", &WireValue::HexId(id), max, &mut got);
            assert_eq!(got, span.encode_to_vec(), "max {max}");
        }
    }

    #[test]
    fn varints_and_keys_are_prost_s() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let (mut want, mut got) = (Vec::new(), Vec::new());
            prost::encoding::encode_varint(v, &mut want);
            varint(v, &mut got);
            assert_eq!(got, want, "{v}");
        }
        let types = [
            WireType::Varint,
            WireType::SixtyFourBit,
            WireType::LengthDelimited,
            WireType::ThirtyTwoBit,
        ];
        for field in [1, 15, 16, 2047, 2048, (1 << 29) - 1] {
            for wt in types {
                let (mut want, mut got) = (Vec::new(), Vec::new());
                prost::encoding::encode_key(field, wt, &mut want);
                key(field, wt, &mut got);
                assert_eq!(got, want, "{field} {wt:?}");
            }
        }
    }
}
