//! Decoding a rule's `metadata` object (spec §2.6): arbitrary JSON in
//! principle, reduced to what an OTLP attribute can hold (DESIGN §2:
//! scalars and homogeneous arrays; anything else is kept only as
//! "unsupported" so it can be counted as dropped).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::json::{drain_map, drain_seq, CowStr, Loose};
use super::model::MetaValue;

/// Metadata entries in file order.
pub type Metadata<'a> = Vec<(Cow<'a, str>, MetaValue<'a>)>;

/// What the `metadata` key held.
pub enum MetadataField<'a> {
    Object(Metadata<'a>),
    Null,
    /// Not an object (its JSON type name, for the warning).
    Invalid(&'static str),
}

impl<'de> Deserialize<'de> for MetadataField<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MetadataVisitor)
    }
}

struct MetadataVisitor;

impl<'de> Visitor<'de> for MetadataVisitor {
    type Value = MetadataField<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metadata object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Metadata::new();
        let mut index: Option<HashMap<Cow<'de, str>, usize>> = None;
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            let MetaValueDe(value) = map.next_value()?;
            insert_last_wins(&mut entries, &mut index, key, value);
        }
        Ok(MetadataField::Object(entries))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MetadataField::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MetadataField::Invalid("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MetadataField::Invalid("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MetadataField::Invalid("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MetadataField::Invalid("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MetadataField::Invalid("a string"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(MetadataField::Invalid("an array"))
    }
}

/// Python-dict semantics for duplicate keys: the value of the last
/// occurrence, at the position of the first. Small maps (all real ones) use
/// a linear scan; a hash index is built only for large ones, so a hostile
/// map with many keys stays linear overall.
fn insert_last_wins<'a>(
    entries: &mut Metadata<'a>,
    index: &mut Option<HashMap<Cow<'a, str>, usize>>,
    key: Cow<'a, str>,
    value: MetaValue<'a>,
) {
    const LINEAR_MAX: usize = 16;
    if index.is_none() && entries.len() >= LINEAR_MAX {
        *index = Some(
            entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect(),
        );
    }
    let existing = match index {
        Some(map) => map.get(&key).copied(),
        None => entries.iter().position(|(k, _)| *k == key),
    };
    match existing {
        Some(i) => entries[i].1 = value,
        None => {
            if let Some(map) = index {
                map.insert(key.clone(), entries.len());
            }
            entries.push((key, value));
        }
    }
}

/// Deserializes one metadata value.
pub struct MetaValueDe<'a>(pub MetaValue<'a>);

impl<'de> Deserialize<'de> for MetaValueDe<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MetaValueVisitor).map(MetaValueDe)
    }
}

struct MetaValueVisitor;

impl<'de> Visitor<'de> for MetaValueVisitor {
    type Value = MetaValue<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metadata value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MetaValue::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(MetaValue::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(MetaValue::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        // OTLP ints are i64; a larger value has no faithful attribute.
        Ok(i64::try_from(v)
            .map(MetaValue::Int)
            .unwrap_or(MetaValue::Unsupported { truthy: true }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(MetaValue::Double(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(MetaValue::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MetaValue::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(MetaValue::Str(Cow::Owned(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let n = drain_map(map)?;
        Ok(MetaValue::Unsupported { truthy: n > 0 })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut acc = ArrayAcc::Empty;
        let mut len = 0u64;
        while let Some(elem) = seq.next_element::<Loose<'de>>()? {
            len += 1;
            acc = acc.push(elem);
        }
        Ok(acc.finish(len))
    }
}

/// Accumulates an array while it stays homogeneous.
enum ArrayAcc<'a> {
    Empty,
    Bools(Vec<bool>),
    Ints(Vec<i64>),
    Doubles(Vec<f64>),
    Strs(Vec<Cow<'a, str>>),
    /// Mixed types, null or nested containers, out-of-range integers.
    Mixed,
}

impl<'a> ArrayAcc<'a> {
    fn push(self, elem: Loose<'a>) -> Self {
        match (self, elem) {
            (ArrayAcc::Mixed, _) => ArrayAcc::Mixed,
            (ArrayAcc::Empty, Loose::Bool(b)) => ArrayAcc::Bools(vec![b]),
            (ArrayAcc::Empty, Loose::Int(i)) => ArrayAcc::Ints(vec![i]),
            (ArrayAcc::Empty, Loose::Float(f)) => ArrayAcc::Doubles(vec![f]),
            (ArrayAcc::Empty, Loose::Str(s)) => ArrayAcc::Strs(vec![s]),
            (ArrayAcc::Bools(mut v), Loose::Bool(b)) => {
                v.push(b);
                ArrayAcc::Bools(v)
            }
            (ArrayAcc::Ints(mut v), Loose::Int(i)) => {
                v.push(i);
                ArrayAcc::Ints(v)
            }
            (ArrayAcc::Doubles(mut v), Loose::Float(f)) => {
                v.push(f);
                ArrayAcc::Doubles(v)
            }
            (ArrayAcc::Strs(mut v), Loose::Str(s)) => {
                v.push(s);
                ArrayAcc::Strs(v)
            }
            _ => ArrayAcc::Mixed,
        }
    }

    fn finish(self, len: u64) -> MetaValue<'a> {
        match self {
            ArrayAcc::Empty => MetaValue::StrArray(Vec::new()),
            ArrayAcc::Bools(v) => MetaValue::BoolArray(v),
            ArrayAcc::Ints(v) => MetaValue::IntArray(v),
            ArrayAcc::Doubles(v) => MetaValue::DoubleArray(v),
            ArrayAcc::Strs(v) => MetaValue::StrArray(v),
            ArrayAcc::Mixed => MetaValue::Unsupported { truthy: len > 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> Metadata<'_> {
        match serde_json::from_str::<MetadataField>(json).unwrap() {
            MetadataField::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    fn value(json: &str) -> MetaValue<'_> {
        serde_json::from_str::<MetaValueDe>(json).unwrap().0
    }

    #[test]
    fn scalars_keep_their_json_type() {
        assert_eq!(value("0"), MetaValue::Int(0));
        assert_eq!(value("-7"), MetaValue::Int(-7));
        assert_eq!(value("5e-06"), MetaValue::Double(5e-6));
        assert_eq!(value("1.0"), MetaValue::Double(1.0));
        assert_eq!(value("false"), MetaValue::Bool(false));
        assert_eq!(value(r#""obj""#), MetaValue::Str(Cow::Borrowed("obj")));
        assert_eq!(value("null"), MetaValue::Null);
        assert_eq!(
            value("18446744073709551615"),
            MetaValue::Unsupported { truthy: true }
        );
    }

    #[test]
    fn homogeneous_arrays_are_kept() {
        assert_eq!(value("[1, 2]"), MetaValue::IntArray(vec![1, 2]));
        assert_eq!(value("[1.5, 2e3]"), MetaValue::DoubleArray(vec![1.5, 2000.0]));
        assert_eq!(value("[true]"), MetaValue::BoolArray(vec![true]));
        assert_eq!(
            value(r#"["a", "b"]"#),
            MetaValue::StrArray(vec![Cow::Borrowed("a"), Cow::Borrowed("b")])
        );
        assert_eq!(value("[]"), MetaValue::StrArray(Vec::new()));
    }

    #[test]
    fn other_values_are_unsupported() {
        assert_eq!(value(r#"[1, "a"]"#), MetaValue::Unsupported { truthy: true });
        assert_eq!(value("[1, 2.5]"), MetaValue::Unsupported { truthy: true });
        assert_eq!(value(r#"["a", null]"#), MetaValue::Unsupported { truthy: true });
        assert_eq!(value("[[1]]"), MetaValue::Unsupported { truthy: true });
        assert_eq!(value(r#"{"a": 1}"#), MetaValue::Unsupported { truthy: true });
        assert_eq!(value("{}"), MetaValue::Unsupported { truthy: false });
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let m = meta(r#"{"a": 1, "b": 2, "a": 3}"#);
        assert_eq!(
            m,
            vec![
                (Cow::Borrowed("a"), MetaValue::Int(3)),
                (Cow::Borrowed("b"), MetaValue::Int(2))
            ]
        );
        let many: String = (0..40).map(|i| format!("\"k{}\": {i},", i % 20)).collect();
        let text = format!("{{{many} \"z\": 0}}");
        let m = meta(&text);
        assert_eq!(m.len(), 21);
        assert_eq!(m[0], (Cow::Borrowed("k0"), MetaValue::Int(20)));
        assert_eq!(m[20].0, "z");
    }

    #[test]
    fn non_objects_are_flagged() {
        assert!(matches!(
            serde_json::from_str::<MetadataField>("[1]").unwrap(),
            MetadataField::Invalid("an array")
        ));
        assert!(matches!(
            serde_json::from_str::<MetadataField>("null").unwrap(),
            MetadataField::Null
        ));
    }
}
