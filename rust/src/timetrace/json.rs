//! Lenient readings of single JSON values: each accepts any JSON value and
//! says what it was, so that a field of the wrong type is a fact to act on
//! rather than a parse error. Nested values are skipped with
//! [`IgnoredAny`]; serde_json's recursion limit bounds how deep.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A field's value: an integer that fits `i64`, a string, or anything else.
#[derive(Debug)]
pub(crate) enum Scalar<'de> {
    Int(i64),
    Str(Cow<'de, str>),
    Other,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Scalar::Other, Scalar::Int))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// An event's `args`: the value of its first member when that is a string.
/// clang names it `detail`; ClangBuildAnalyzer takes the first member
/// whatever its name, and so does this.
pub(crate) struct FirstArg<'de>(pub Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for FirstArg<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FirstArgVisitor)
    }
}

struct FirstArgVisitor;

impl<'de> Visitor<'de> for FirstArgVisitor {
    type Value = FirstArg<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let first = match map.next_entry::<IgnoredAny, Scalar<'de>>()? {
            Some((_, Scalar::Str(s))) => Some(s),
            _ => None,
        };
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(FirstArg(first))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(FirstArg(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(FirstArg(None))
    }
}

/// A member name, matched against a fixed list without allocating.
pub(crate) struct Key<K>(pub Option<K>);

/// The member names a reader looks for.
pub(crate) trait KeyNames: Sized {
    fn from_key(key: &str) -> Option<Self>;
}

impl<'de, K: KeyNames> Deserialize<'de> for Key<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(KeyVisitor(std::marker::PhantomData))
    }
}

struct KeyVisitor<K>(std::marker::PhantomData<K>);

impl<K: KeyNames> Visitor<'_> for KeyVisitor<K> {
    type Value = Key<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Key(K::from_key(v)))
    }
}
