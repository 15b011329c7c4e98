//! The typed model of one `timing.json` (spec §2.2–§2.6), borrowing its
//! strings from the file text wherever the JSON had no escapes.
//!
//! The model keeps what the file says (`Option` for absent values); the
//! defaults of spec §2.9 are applied by accessors, so later consumers
//! (metrics, outcomes merge) see the same interpretation.

use std::borrow::Cow;

/// The top-level object.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Build<'a> {
    /// Wall clock of the root end, as written (spec §2.2); `None` if absent
    /// or not a string.
    pub timestamp: Option<Cow<'a, str>>,
    pub total_elapsed_s: Option<f64>,
    pub variant: Cow<'a, str>,
    pub backend: Cow<'a, str>,
    /// Root start on the monotonic clock; absent in legacy (< 8.3.0) files.
    pub start_s: Option<f64>,
    /// The root's children (the top-level `phases` array).
    pub children: Vec<Event<'a>>,
}

impl Build<'_> {
    /// Root start, default 0.0 (spec §2.9).
    pub fn root_start_s(&self) -> f64 {
        self.start_s.unwrap_or(0.0)
    }

    /// Root duration, default 0.0.
    pub fn total_elapsed(&self) -> f64 {
        self.total_elapsed_s.unwrap_or(0.0)
    }
}

impl<'a> Build<'a> {
    /// Calls `f` for every rule reachable from the root through phases only:
    /// sub-phases are descended into, rule `children` are not. These are the
    /// rules compiletools' post-build annotation reaches (spec §2.6) and,
    /// restricted to `compile`, the `C` of the aggregates (spec §3.4).
    pub fn for_each_phase_rule_mut(&mut self, f: &mut impl FnMut(&mut Event<'a>)) {
        fn walk<'a>(events: &mut [Event<'a>], f: &mut impl FnMut(&mut Event<'a>)) {
            for event in events {
                if event.is_rule() {
                    f(event);
                } else {
                    walk(&mut event.children, f);
                }
            }
        }
        walk(&mut self.children, f);
    }

    /// Calls `f` for every rule (non-phase event) at any depth, rule
    /// `children` included, parents before their children.
    pub fn for_each_rule_mut(&mut self, f: &mut impl FnMut(&mut Event<'a>)) {
        fn walk<'a>(events: &mut [Event<'a>], f: &mut impl FnMut(&mut Event<'a>)) {
            for event in events {
                if event.is_rule() {
                    f(event);
                }
                walk(&mut event.children, f);
            }
        }
        walk(&mut self.children, f);
    }
}

/// One element of `phases`, `rules` or `children`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Event<'a> {
    /// Position inside the parent's array as stored in the file, counting
    /// elements that were skipped as invalid (input of the span id).
    pub index: u32,
    pub name: Cow<'a, str>,
    /// Present ⇒ rule, absent ⇒ phase (spec §2.4), wherever the event sits.
    pub rule_type: Option<Cow<'a, str>>,
    pub target: Cow<'a, str>,
    pub source: Cow<'a, str>,
    /// Metadata in file order, duplicate keys resolved (last value wins, in
    /// the first key's position, as a Python dict does).
    pub metadata: Vec<(Cow<'a, str>, MetaValue<'a>)>,
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    pub elapsed_s: Option<f64>,
    /// A phase's `rules` or a rule's `children`, whichever applies.
    pub children: Vec<Event<'a>>,
}

impl Event<'_> {
    pub fn is_rule(&self) -> bool {
        self.rule_type.is_some()
    }

    pub fn rule_type(&self) -> Option<&str> {
        self.rule_type.as_deref()
    }

    /// Monotonic start, default 0.0 (which marks a rule unanchored).
    pub fn start(&self) -> f64 {
        self.start_s.unwrap_or(0.0)
    }

    /// Monotonic end. Without `end_s`: `start_s + elapsed_s` when `start_s`
    /// exists (spec §2.9 judgement call: compiletools' `elapsed_s`-as-instant
    /// fallback would give garbage there), else `elapsed_s` (legacy files,
    /// where it yields the right duration from a 0.0 start).
    pub fn end(&self) -> f64 {
        let elapsed = self.elapsed_s.unwrap_or(0.0);
        match (self.end_s, self.start_s) {
            (Some(end), _) => end,
            (None, Some(start)) => start + elapsed,
            (None, None) => elapsed,
        }
    }

    pub fn metadata_value(&self, key: &str) -> Option<&MetaValue<'_>> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `cas.hit` is truthy (Python truthiness, spec §3.4).
    pub fn is_cas_hit(&self) -> bool {
        self.metadata_value("cas.hit").is_some_and(MetaValue::is_truthy)
    }
}

impl<'a> Event<'a> {
    /// Sets one metadata key the way a Python dict assignment does, which is
    /// how compiletools updates rule metadata: an existing key keeps its
    /// position and gets the new value, a new key is appended.
    pub fn set_metadata(&mut self, key: &'static str, value: MetaValue<'a>) {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = value,
            None => self.metadata.push((Cow::Borrowed(key), value)),
        }
    }
}

/// A metadata value as far as OTLP attributes can carry it.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(Cow<'a, str>),
    BoolArray(Vec<bool>),
    IntArray(Vec<i64>),
    DoubleArray(Vec<f64>),
    /// Also holds the empty array, whose element type is unknown.
    StrArray(Vec<Cow<'a, str>>),
    /// Objects, mixed or nested arrays, arrays with null, integers outside
    /// i64: no attribute. `truthy` is Python's truth value of the original,
    /// which the aggregates need (`cas.hit` is tested for truthiness).
    Unsupported {
        truthy: bool,
    },
}

impl MetaValue<'_> {
    /// Python truthiness, as compiletools applies it to `cas.hit` (spec §3.4).
    pub fn is_truthy(&self) -> bool {
        match self {
            MetaValue::Null => false,
            MetaValue::Bool(b) => *b,
            MetaValue::Int(i) => *i != 0,
            MetaValue::Double(d) => *d != 0.0,
            MetaValue::Str(s) => !s.is_empty(),
            MetaValue::BoolArray(v) => !v.is_empty(),
            MetaValue::IntArray(v) => !v.is_empty(),
            MetaValue::DoubleArray(v) => !v.is_empty(),
            MetaValue::StrArray(v) => !v.is_empty(),
            MetaValue::Unsupported { truthy } => *truthy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_fallbacks() {
        let e = Event {
            start_s: Some(10.0),
            elapsed_s: Some(2.5),
            ..Default::default()
        };
        assert_eq!(e.end(), 12.5);
        let e = Event {
            elapsed_s: Some(2.5),
            ..Default::default()
        };
        assert_eq!((e.start(), e.end()), (0.0, 2.5));
        let e = Event {
            start_s: Some(10.0),
            end_s: Some(11.0),
            elapsed_s: Some(2.5),
            ..Default::default()
        };
        assert_eq!(e.end(), 11.0);
        let e = Event::default();
        assert_eq!((e.start(), e.end()), (0.0, 0.0));
    }

    #[test]
    fn set_metadata_keeps_dict_order() {
        let mut e = Event {
            metadata: vec![
                (Cow::Borrowed("cas.hit"), MetaValue::Bool(false)),
                (Cow::Borrowed("queue_wait_s"), MetaValue::Double(1e-6)),
            ],
            ..Default::default()
        };
        e.set_metadata("ct.rule.cache_layer", MetaValue::Str(Cow::Borrowed("other")));
        e.set_metadata("cas.hit", MetaValue::Bool(true));
        let keys: Vec<&str> = e.metadata.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["cas.hit", "queue_wait_s", "ct.rule.cache_layer"]);
        assert!(e.is_cas_hit());
    }

    #[test]
    fn walks_reach_the_documented_rules() {
        let rule = |name: &'static str, children: Vec<Event<'static>>| Event {
            name: Cow::Borrowed(name),
            rule_type: Some(Cow::Borrowed("compile")),
            children,
            ..Default::default()
        };
        let phase = |children| Event {
            children,
            ..Default::default()
        };
        let mut b = Build {
            children: vec![
                rule("top", vec![]),
                phase(vec![
                    rule("r", vec![rule("child", vec![])]),
                    phase(vec![rule("sub", vec![])]),
                ]),
            ],
            ..Default::default()
        };
        let mut seen = Vec::new();
        b.for_each_phase_rule_mut(&mut |e| seen.push(e.name.to_string()));
        assert_eq!(seen, ["top", "r", "sub"]);
        seen.clear();
        b.for_each_rule_mut(&mut |e| seen.push(e.name.to_string()));
        assert_eq!(seen, ["top", "r", "child", "sub"]);
    }

    #[test]
    fn truthiness() {
        assert!(!MetaValue::Null.is_truthy());
        assert!(MetaValue::Bool(true).is_truthy());
        assert!(!MetaValue::Int(0).is_truthy());
        assert!(MetaValue::Str(Cow::Borrowed("x")).is_truthy());
        assert!(!MetaValue::StrArray(Vec::new()).is_truthy());
        assert!(MetaValue::Unsupported { truthy: true }.is_truthy());
    }
}
