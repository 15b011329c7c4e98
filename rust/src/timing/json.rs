//! Small serde building blocks for reading JSON whose value types cannot be
//! trusted: they accept any value (consuming containers without building
//! them) so that a wrong type becomes a decision of the caller, not a parse
//! error that loses the document.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string that borrows from the input when it had no escapes.
///
/// serde's own `Cow<str>` impl always allocates; this one does not, which
/// matters for 100k-rule files.
pub struct CowStr<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, reduced to what a lenient reader needs to decide on.
#[derive(Debug, Clone, PartialEq)]
pub enum Loose<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// Non-negative integers above `i64::MAX`.
    BigUint(u64),
    Float(f64),
    Str(Cow<'a, str>),
    /// An array, consumed; `true` when it had elements.
    Array(bool),
    /// An object, consumed; `true` when it had entries.
    Object(bool),
}

impl<'a> Loose<'a> {
    /// The value as seconds, if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Loose::Int(i) => Some(i as f64),
            Loose::BigUint(u) => Some(u as f64),
            Loose::Float(f) => Some(f),
            _ => None,
        }
    }

    /// JSON type name, for warnings.
    pub fn type_name(&self) -> &'static str {
        match self {
            Loose::Null => "null",
            Loose::Bool(_) => "a boolean",
            Loose::Int(_) | Loose::BigUint(_) | Loose::Float(_) => "a number",
            Loose::Str(_) => "a string",
            Loose::Array(_) => "an array",
            Loose::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Loose::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Loose::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Loose::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Loose::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map(Loose::Int).unwrap_or(Loose::BigUint(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Loose::Float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|n| Loose::Array(n > 0))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|n| Loose::Object(n > 0))
    }
}

/// Consumes an array without building it; returns its length.
pub fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<u64, A::Error> {
    let mut n = 0u64;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Consumes an object without building it; returns its entry count.
pub fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<u64, A::Error> {
    let mut n = 0u64;
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_reads_every_type() {
        let v: Vec<Loose> =
            serde_json::from_str(r#"[null, true, -3, 18446744073709551615, 1.5, "a", [1], {}, "\u00e9"]"#)
                .unwrap();
        assert_eq!(
            v,
            vec![
                Loose::Null,
                Loose::Bool(true),
                Loose::Int(-3),
                Loose::BigUint(u64::MAX),
                Loose::Float(1.5),
                Loose::Str(Cow::Borrowed("a")),
                Loose::Array(true),
                Loose::Object(false),
                Loose::Str(Cow::Owned("é".into())),
            ]
        );
    }

    #[test]
    fn cow_str_borrows_without_escapes() {
        let text = r#"["plain", "esc\n"]"#;
        let v: Vec<CowStr> = serde_json::from_str(text).unwrap();
        assert!(matches!(v[0].0, Cow::Borrowed("plain")));
        assert!(matches!(&v[1].0, Cow::Owned(s) if s == "esc\n"));
    }
}
