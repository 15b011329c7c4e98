//! Building OTLP attributes: scalar helpers, the metadata lifting of formats.md
//! §3.2 (scalars and homogeneous arrays; everything else dropped and
//! counted), and string truncation at the attribute length limit.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue};

use crate::strings::truncate;
use crate::timing::MetaValue;

/// An attribute built directly, for keys known to be distinct (no
/// [`AttrBuilder`] key search, which is quadratic in the number of keys).
pub fn key_value(key: String, value: Value) -> KeyValue {
    KeyValue {
        key,
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

/// OTLP integers are signed; a count beyond `i64::MAX` cannot occur, but
/// clamping keeps the conversion total.
pub fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Builds attributes for one span or resource, applying the length limit to
/// every string value (array elements included).
///
/// For the 100k spans of a large build, [`AttrBuilder::recycling`] reuses
/// the `KeyValue`s (and their string buffers) of the previous span instead
/// of allocating ~10 small objects per span.
pub struct AttrBuilder {
    max_len: usize,
    attrs: Vec<KeyValue>,
    /// Used `KeyValue`s whose buffers can be overwritten.
    spare: Vec<KeyValue>,
    /// Attributes added by the non-metadata methods; only these can collide
    /// with a metadata key (metadata keys are unique after decoding), so a
    /// metadata map with many keys stays linear.
    builtins: usize,
    dropped: u32,
}

impl AttrBuilder {
    pub fn new(max_attribute_len: u32) -> Self {
        Self::with_capacity(max_attribute_len, 0)
    }

    pub fn with_capacity(max_attribute_len: u32, capacity: usize) -> Self {
        Self::recycling(max_attribute_len, Vec::with_capacity(capacity), Vec::new())
    }

    /// Starts empty, overwriting the entries of `previous` and `spare`
    /// (both as returned by [`AttrBuilder::finish_recycling`]).
    pub fn recycling(max_attribute_len: u32, mut previous: Vec<KeyValue>, mut spare: Vec<KeyValue>) -> Self {
        spare.append(&mut previous);
        Self {
            max_len: usize::try_from(max_attribute_len).unwrap_or(usize::MAX),
            attrs: previous,
            spare,
            builtins: 0,
            dropped: 0,
        }
    }

    pub fn string(&mut self, key: &str, value: &str) {
        let value = truncate(value, self.max_len);
        let search = self.attrs.len();
        let (slot, appended) = self.slot(key, search);
        set_string(slot, value);
        self.builtins += usize::from(appended);
    }

    /// A string attribute that is omitted when empty (formats.md §3.1/§3.2 "only
    /// if non-empty").
    pub fn non_empty_string(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.string(key, value);
        }
    }

    pub fn int(&mut self, key: &str, value: i64) {
        self.put_builtin(key, Value::IntValue(value));
    }

    pub fn double(&mut self, key: &str, value: f64) {
        self.put_builtin(key, Value::DoubleValue(value));
    }

    pub fn bool(&mut self, key: &str, value: bool) {
        self.put_builtin(key, Value::BoolValue(value));
    }

    /// A string array, each element cut at the length limit.
    pub fn strings<'s>(&mut self, key: &str, values: impl IntoIterator<Item = &'s str>) {
        let max_len = self.max_len;
        let values = values
            .into_iter()
            .map(|s| Value::StringValue(truncate(s, max_len).to_owned()));
        self.put_builtin(key, array(values));
    }

    /// Lifts one metadata entry: null is skipped silently (compiletools skips
    /// it too), unsupported values are dropped and counted.
    pub fn metadata(&mut self, key: &str, value: MetaValue) {
        let max_len = self.max_len;
        let v = match value {
            MetaValue::Null => return,
            MetaValue::Unsupported { .. } => {
                self.dropped = self.dropped.saturating_add(1);
                return;
            }
            MetaValue::Str(s) => {
                let builtins = self.builtins;
                set_string(self.slot(key, builtins).0, truncate(s, max_len));
                return;
            }
            MetaValue::Bool(b) => Value::BoolValue(b),
            MetaValue::Int(i) => Value::IntValue(i),
            MetaValue::Double(d) => Value::DoubleValue(d),
            MetaValue::BoolArray(v) => array(v.iter().map(|b| Value::BoolValue(*b))),
            MetaValue::IntArray(v) => array(v.iter().map(|i| Value::IntValue(*i))),
            MetaValue::DoubleArray(v) => array(v.iter().map(|d| Value::DoubleValue(*d))),
            MetaValue::StrArray(v) => array(
                v.iter()
                    .map(|s| Value::StringValue(truncate(s, max_len).to_owned())),
            ),
        };
        let builtins = self.builtins;
        *self.slot(key, builtins).0 = Some(AnyValue { value: Some(v) });
    }

    /// Values dropped so far (for `dropped_attributes_count` and the summary).
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    pub fn finish(self) -> (Vec<KeyValue>, u32) {
        (self.attrs, self.dropped)
    }

    /// Like [`AttrBuilder::finish`], also handing back the unused spare
    /// entries for the next [`AttrBuilder::recycling`].
    pub fn finish_recycling(self) -> (Vec<KeyValue>, Vec<KeyValue>, u32) {
        (self.attrs, self.spare, self.dropped)
    }

    fn put_builtin(&mut self, key: &str, value: Value) {
        let search = self.attrs.len();
        let (slot, appended) = self.slot(key, search);
        *slot = Some(AnyValue { value: Some(value) });
        self.builtins += usize::from(appended);
    }

    /// The value slot of `key`: later values of a key replace earlier ones
    /// in place, as in the SDK's attribute dict (a metadata key equal to
    /// `ct.target` overrides it). Looks for the key among the first `search`
    /// attributes; otherwise appends an entry (recycled when possible) and
    /// reports that it did.
    fn slot(&mut self, key: &str, search: usize) -> (&mut Option<AnyValue>, bool) {
        if let Some(i) = self.attrs[..search].iter().position(|kv| kv.key == key) {
            return (&mut self.attrs[i].value, false);
        }
        let mut kv = self.spare.pop().unwrap_or_default();
        kv.key.clear();
        kv.key.push_str(key);
        self.attrs.push(kv);
        let last = self.attrs.len() - 1;
        (&mut self.attrs[last].value, true)
    }
}

/// Stores a string value, reusing the slot's string buffer if it has one.
fn set_string(slot: &mut Option<AnyValue>, s: &str) {
    if let Some(AnyValue {
        value: Some(Value::StringValue(dst)),
    }) = slot
    {
        dst.clear();
        dst.push_str(s);
    } else {
        *slot = Some(AnyValue {
            value: Some(Value::StringValue(s.to_owned())),
        });
    }
}

fn array(values: impl Iterator<Item = Value>) -> Value {
    Value::ArrayValue(ArrayValue {
        values: values.map(|v| AnyValue { value: Some(v) }).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::model::event_for_test;
    use crate::timing::StrArray;

    fn value_of(kv: &KeyValue) -> &Value {
        kv.value.as_ref().unwrap().value.as_ref().unwrap()
    }

    #[test]
    fn metadata_lifting() {
        let rule = event_for_test(r#"{"name": "r", "metadata": {"a": ["123456"]}}"#);
        let Some(str_array) = rule.metadata_value("a") else {
            panic!("no array")
        };
        let mut b = AttrBuilder::new(4);
        b.metadata("s", MetaValue::Str("abcdefgh"));
        b.metadata("n", MetaValue::Null);
        b.metadata("o", MetaValue::Unsupported { truthy: true });
        b.metadata("i", MetaValue::Int(0));
        b.metadata("d", MetaValue::Double(5e-6));
        b.metadata("a", str_array);
        b.metadata("e", MetaValue::StrArray(StrArray::empty()));
        let (attrs, dropped) = b.finish();
        assert_eq!(dropped, 1);
        let keys: Vec<&str> = attrs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["s", "i", "d", "a", "e"]);
        assert_eq!(value_of(&attrs[0]), &Value::StringValue("abcd".into()));
        assert_eq!(value_of(&attrs[1]), &Value::IntValue(0));
        assert_eq!(value_of(&attrs[2]), &Value::DoubleValue(5e-6));
        let Value::ArrayValue(arr) = value_of(&attrs[3]) else {
            panic!()
        };
        assert_eq!(arr.values[0].value, Some(Value::StringValue("1234".into())));
        assert_eq!(
            value_of(&attrs[4]),
            &Value::ArrayValue(ArrayValue { values: vec![] })
        );
    }

    #[test]
    fn recycling_gives_the_same_attributes() {
        let mut b = AttrBuilder::new(100);
        b.string("a", "first");
        b.metadata("m", MetaValue::Str("meta"));
        b.int("i", 1);
        let (prev, spare, _) = b.finish_recycling();
        let mut b = AttrBuilder::recycling(100, prev, spare);
        b.int("x", 7);
        b.string("y", "why");
        let (attrs, spare, _) = b.finish_recycling();
        let keys: Vec<&str> = attrs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["x", "y"]);
        assert_eq!(value_of(&attrs[0]), &Value::IntValue(7));
        assert_eq!(value_of(&attrs[1]), &Value::StringValue("why".into()));
        assert_eq!(spare.len(), 1);
    }

    #[test]
    fn duplicate_keys_override_in_place() {
        let mut b = AttrBuilder::new(100);
        b.string("ct.target", "a");
        b.int("x", 1);
        b.metadata("ct.target", MetaValue::Int(2));
        let (attrs, _) = b.finish();
        assert_eq!(attrs.len(), 2);
        assert_eq!(attrs[0].key, "ct.target");
        assert_eq!(value_of(&attrs[0]), &Value::IntValue(2));
    }
}
