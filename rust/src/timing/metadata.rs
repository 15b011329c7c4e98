//! Decoding a rule's `metadata` object (formats.md §2.6): arbitrary JSON in
//! principle, reduced to what an OTLP attribute can hold (design.md §2:
//! scalars and homogeneous arrays; anything else is kept only as
//! "unsupported" so it can be counted as dropped).
//!
//! Entries go straight into the build's tables (see [`super::model`]): the
//! entries of one object form one contiguous run of the entry table.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::json::{drain_map, drain_seq, CowStr, Loose};
use super::model::{Build, MetaEntry, Run, Stored};

/// What the `metadata` key held.
pub(super) enum MetadataField {
    /// The run of the entry table holding the object's entries.
    Object(Run),
    Null,
    /// Not an object (its JSON type name, for the warning).
    Invalid(&'static str),
}

/// Decodes a `metadata` value into `build`'s tables.
pub(super) struct MetadataSeed<'b> {
    pub(super) build: &'b mut Build,
}

impl<'de> DeserializeSeed<'de> for MetadataSeed<'_> {
    type Value = MetadataField;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MetadataSeed<'_> {
    type Value = MetadataField;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metadata object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let build = self.build;
        let start = build.meta.len();
        let mut index: Option<HashMap<String, usize>> = None;
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            let value = map.next_value_seed(ValueSeed { build: &mut *build })?;
            insert_last_wins(build, start, &mut index, &key, value);
        }
        Ok(MetadataField::Object(Run::new(start, build.meta.len())))
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
/// occurrence, at the position of the first. The object's entries are
/// `build.meta[start..]`. Small maps (all real ones) use a linear scan; a
/// hash index is built only for large ones, so a hostile map with many keys
/// stays linear overall.
fn insert_last_wins(
    build: &mut Build,
    start: usize,
    index: &mut Option<HashMap<String, usize>>,
    key: &str,
    value: Stored,
) {
    const LINEAR_MAX: usize = 16;
    let entries = &build.meta[start..];
    if index.is_none() && entries.len() >= LINEAR_MAX {
        *index = Some(
            entries
                .iter()
                .enumerate()
                .map(|(i, e)| (build.str(e.key).to_owned(), start + i))
                .collect(),
        );
    }
    let existing = match index {
        Some(map) => map.get(key).copied(),
        None => entries
            .iter()
            .position(|e| build.str(e.key) == key)
            .map(|i| start + i),
    };
    match existing {
        Some(i) => build.meta[i].value = value,
        None => {
            if let Some(map) = index {
                map.insert(key.to_owned(), build.meta.len());
            }
            let key = build.push_str_shared(key);
            build.meta.push(MetaEntry { key, value });
        }
    }
}

/// Decodes one metadata value; strings and arrays go into `build`'s tables.
pub(super) struct ValueSeed<'b> {
    pub(super) build: &'b mut Build,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Stored;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Stored;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metadata value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Stored::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Stored::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Stored::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        // OTLP ints are i64; a larger value has no faithful attribute.
        Ok(i64::try_from(v)
            .map(Stored::Int)
            .unwrap_or(Stored::Unsupported { truthy: true }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Stored::Double(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Stored::Str(self.build.push_value_str(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let n = drain_map(map)?;
        Ok(Stored::Unsupported { truthy: n > 0 })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let build = self.build;
        let mut acc = ArrayAcc::Empty;
        let mut len = 0u64;
        while let Some(elem) = seq.next_element::<Loose<'de>>()? {
            len += 1;
            acc = acc.push(build, elem);
        }
        Ok(acc.finish(build, len))
    }
}

/// Accumulates an array into one typed table while it stays homogeneous;
/// each variant holds where its run started.
enum ArrayAcc {
    Empty,
    Bools(usize),
    Ints(usize),
    Doubles(usize),
    Strs(usize),
    /// Mixed types, null or nested containers, out-of-range integers.
    Mixed,
}

impl ArrayAcc {
    fn push(self, b: &mut Build, elem: Loose<'_>) -> Self {
        match (self, elem) {
            (ArrayAcc::Mixed, _) => ArrayAcc::Mixed,
            (ArrayAcc::Empty, Loose::Bool(v)) => {
                b.bools.push(v);
                ArrayAcc::Bools(b.bools.len() - 1)
            }
            (ArrayAcc::Empty, Loose::Int(v)) => {
                b.ints.push(v);
                ArrayAcc::Ints(b.ints.len() - 1)
            }
            (ArrayAcc::Empty, Loose::Float(v)) => {
                b.doubles.push(v);
                ArrayAcc::Doubles(b.doubles.len() - 1)
            }
            (ArrayAcc::Empty, Loose::Str(s)) => {
                let run = b.push_str(&s);
                b.strs.push(run);
                ArrayAcc::Strs(b.strs.len() - 1)
            }
            (acc @ ArrayAcc::Bools(_), Loose::Bool(v)) => {
                b.bools.push(v);
                acc
            }
            (acc @ ArrayAcc::Ints(_), Loose::Int(v)) => {
                b.ints.push(v);
                acc
            }
            (acc @ ArrayAcc::Doubles(_), Loose::Float(v)) => {
                b.doubles.push(v);
                acc
            }
            (acc @ ArrayAcc::Strs(_), Loose::Str(s)) => {
                let run = b.push_str(&s);
                b.strs.push(run);
                acc
            }
            (acc, _) => {
                // Give back what the array had taken (its strings stay in
                // the arena, unreferenced).
                acc.truncate(b);
                ArrayAcc::Mixed
            }
        }
    }

    fn truncate(self, b: &mut Build) {
        match self {
            ArrayAcc::Bools(start) => b.bools.truncate(start),
            ArrayAcc::Ints(start) => b.ints.truncate(start),
            ArrayAcc::Doubles(start) => b.doubles.truncate(start),
            ArrayAcc::Strs(start) => b.strs.truncate(start),
            ArrayAcc::Empty | ArrayAcc::Mixed => {}
        }
    }

    fn finish(self, b: &Build, len: u64) -> Stored {
        match self {
            ArrayAcc::Empty => Stored::StrArray(Run::default()),
            ArrayAcc::Bools(start) => Stored::BoolArray(Run::new(start, b.bools.len())),
            ArrayAcc::Ints(start) => Stored::IntArray(Run::new(start, b.ints.len())),
            ArrayAcc::Doubles(start) => Stored::DoubleArray(Run::new(start, b.doubles.len())),
            ArrayAcc::Strs(start) => Stored::StrArray(Run::new(start, b.strs.len())),
            ArrayAcc::Mixed => Stored::Unsupported { truthy: len > 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{parse_for_test, MetaValue, StrArray};
    use super::*;

    /// The metadata of the only event of a build whose metadata is `json`.
    fn with_meta<T>(json: &str, check: impl FnOnce(Vec<(&str, MetaValue<'_>)>) -> T) -> T {
        let b = parse_for_test(&format!(r#"{{"phases": [{{"name": "p", "metadata": {json}}}]}}"#));
        let event = b.children().next().unwrap();
        check(event.metadata().collect())
    }

    fn value_is(json: &str, want: MetaValue<'_>) {
        with_meta(&format!(r#"{{"v": {json}}}"#), |m| {
            assert_eq!(m, [("v", want)], "{json}")
        });
    }

    #[test]
    fn scalars_keep_their_json_type() {
        value_is("0", MetaValue::Int(0));
        value_is("-7", MetaValue::Int(-7));
        value_is("5e-06", MetaValue::Double(5e-6));
        value_is("1.0", MetaValue::Double(1.0));
        value_is("false", MetaValue::Bool(false));
        value_is(r#""obj""#, MetaValue::Str("obj"));
        value_is(r#""\u00e9\n""#, MetaValue::Str("é\n"));
        value_is("null", MetaValue::Null);
        value_is("18446744073709551615", MetaValue::Unsupported { truthy: true });
    }

    #[test]
    fn homogeneous_arrays_are_kept() {
        value_is("[1, 2]", MetaValue::IntArray(&[1, 2]));
        value_is("[1.5, 2e3]", MetaValue::DoubleArray(&[1.5, 2000.0]));
        value_is("[true]", MetaValue::BoolArray(&[true]));
        with_meta(r#"{"v": ["a", "b\u00e9"]}"#, |m| {
            let MetaValue::StrArray(a) = m[0].1 else {
                panic!("{m:?}")
            };
            assert_eq!(a.iter().collect::<Vec<_>>(), ["a", "bé"]);
        });
        value_is("[]", MetaValue::StrArray(StrArray::empty()));
    }

    #[test]
    fn other_values_are_unsupported() {
        value_is(r#"[1, "a"]"#, MetaValue::Unsupported { truthy: true });
        value_is("[1, 2.5]", MetaValue::Unsupported { truthy: true });
        value_is(r#"["a", null]"#, MetaValue::Unsupported { truthy: true });
        value_is("[[1]]", MetaValue::Unsupported { truthy: true });
        value_is(r#"{"a": 1}"#, MetaValue::Unsupported { truthy: true });
        value_is("{}", MetaValue::Unsupported { truthy: false });
    }

    #[test]
    fn mixed_arrays_leave_no_trace_in_the_tables() {
        let b = parse_for_test(
            r#"{"phases": [{"name": "p", "metadata": {"m": [1, 2, "x"], "n": [3], "s": ["a", 1], "t": ["b"]}}]}"#,
        );
        let m: Vec<_> = b.children().next().unwrap().metadata().collect();
        assert_eq!(m[0].1, MetaValue::Unsupported { truthy: true });
        assert_eq!(m[1].1, MetaValue::IntArray(&[3]));
        assert_eq!(b.ints, [3]);
        assert_eq!(b.strs.len(), 1);
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        with_meta(r#"{"a": 1, "b": 2, "a": "three"}"#, |m| {
            assert_eq!(m, [("a", MetaValue::Str("three")), ("b", MetaValue::Int(2))]);
        });
        let many: String = (0..40).map(|i| format!("\"k{}\": {i},", i % 20)).collect();
        with_meta(&format!("{{{many} \"z\": 0}}"), |m| {
            assert_eq!(m.len(), 21);
            assert_eq!(m[0], ("k0", MetaValue::Int(20)));
            assert_eq!(m[20].0, "z");
        });
    }

    #[test]
    fn non_objects_are_flagged() {
        let mut b = Build::default();
        let field = |b: &mut Build, json: &str| {
            MetadataSeed { build: b }
                .deserialize(&mut serde_json::Deserializer::from_str(json))
                .unwrap()
        };
        assert!(matches!(field(&mut b, "[1]"), MetadataField::Invalid("an array")));
        assert!(matches!(field(&mut b, "null"), MetadataField::Null));
        assert!(matches!(field(&mut b, "3"), MetadataField::Invalid("a number")));
    }
}
