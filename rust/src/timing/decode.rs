//! Lenient decoding of `timing.json` text into the typed [`Build`] model.
//!
//! One pass of serde_json over the text, straight into the model's tables
//! (no intermediate `serde_json::Value` tree). Strictness is split on
//! purpose:
//! * the document itself (syntax, top-level object, `phases` array, the
//!   numeric root anchors) must be sound, else the file is `Malformed`;
//! * a bad event (no string `name`, non-string `rule_type`, not an object)
//!   is skipped with its subtree and a warning; a wrongly typed optional
//!   field of an event is treated as absent, with a warning.
//!
//! Limits (events, depth) and cancellation are enforced while parsing, so a
//! hostile file stops early instead of being materialised first.
//!
//! The model copies what it keeps into its own tables (see
//! [`super::model`]): once decoded, the text can be freed.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json::{drain_seq, Loose};
use super::metadata::{MetadataField, MetadataSeed};
use super::model::{Build, EventData, Run, NO_EVENT};
use super::split::MARKER;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::limits::Limits;
use crate::warnings::Warnings;

/// How often (in events) the cancel token is polled.
const CANCEL_POLL_EVENTS: u64 = 4096;

/// Decodes `text` (already repaired by [`super::text::LenientText`]).
/// `path` only names the file in errors.
pub fn decode(
    text: &str,
    path: &Path,
    limits: &Limits,
    cancel: &CancelToken,
    warnings: &mut Warnings,
) -> Result<Build, Error> {
    check_text_len(text, path)?;
    let mut d = Decoder::new(limits, cancel);
    d.build.reserve_for_text(text.len());
    let mut de = serde_json::Deserializer::from_str(text);
    let result = BuildSeed { d: &mut d }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    warnings.extend(d.warnings);
    match result {
        Ok(()) => Ok(d.build),
        Err(e) => Err(d
            .abort
            .map_or_else(|| syntax_error(e, path), |why| why.into_error(path))),
    }
}

/// Every offset of the model is a u32; the strings and tables it fills
/// from the text are never larger than the text itself.
pub(super) fn check_text_len(text: &str, path: &Path) -> Result<(), Error> {
    if u32::try_from(text.len()).is_err() {
        return Err(Error::LimitExceeded {
            path: path.to_path_buf(),
            message: format!(
                "{} bytes of JSON text is more than the model can index",
                text.len()
            ),
        });
    }
    Ok(())
}

fn syntax_error(e: serde_json::Error, path: &Path) -> Error {
    if is_recursion_limit(&e) {
        Error::LimitExceeded {
            path: path.to_path_buf(),
            message: format!("JSON nested deeper than the parser allows ({e})"),
        }
    } else {
        Error::Malformed {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// Why a part of a split decode gave no model.
pub(super) enum PartFailed {
    Cancelled,
    /// Not JSON of the expected shape, or a limit: the whole text will
    /// tell in one piece.
    NotDecoded,
}

impl Decoder<'_> {
    fn part_failed(&self) -> PartFailed {
        match self.abort {
            Some(Abort::Cancelled) => PartFailed::Cancelled,
            _ => PartFailed::NotDecoded,
        }
    }
}

/// The first part of a split decode (see [`super::two_halves`]): the
/// whole document with the marker ending one array.
pub(super) struct FirstPart {
    pub(super) build: Build,
    pub(super) warnings: Warnings,
    pub(super) events: u64,
    /// Where the marker was; `None` unless it was seen exactly once, as an
    /// element of an events array after at least one event.
    pub(super) cut: Option<Cut>,
}

/// What the first part knew where its array ended at the marker.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cut {
    /// The array's last event before the marker.
    pub(super) last: u32,
    /// The marker's position in the array: the index of the second part's
    /// first element.
    pub(super) index: u32,
    /// Depth of the array's elements.
    pub(super) depth: u32,
    /// Events in the table when the marker was met: the second part's
    /// events go after these.
    pub(super) events_before: usize,
}

/// Decodes the first part of a split text; `Err` when it is not JSON, hit
/// a limit or was cancelled.
pub(super) fn decode_first(
    text: &str,
    reserve_for: usize,
    limits: &Limits,
    cancel: &CancelToken,
) -> Result<FirstPart, PartFailed> {
    let mut d = Decoder::new(limits, cancel);
    d.split = Some(SplitState::default());
    d.build.reserve_for_text(reserve_for);
    let mut de = serde_json::Deserializer::from_str(text);
    let result = BuildSeed { d: &mut d }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if result.is_err() {
        return Err(d.part_failed());
    }
    let cut = d.split.filter(|s| s.markers == 1).and_then(|s| s.cut);
    Ok(FirstPart {
        build: d.build,
        warnings: d.warnings,
        events: d.events,
        cut,
    })
}

/// The arrays of a split decode's second part, decoded into one model.
pub(super) struct ArrayPart {
    pub(super) build: Build,
    pub(super) warnings: Warnings,
    pub(super) events: u64,
    /// Deepest event, its elements counting as depth 1.
    pub(super) deepest: u32,
    /// Each array's first event ([`NO_EVENT`] when it had none).
    pub(super) firsts: Vec<u32>,
}

/// Decodes each of `texts` as one array of events at depth 1; `Err` when
/// one is not exactly that, hit a limit or was cancelled.
pub(super) fn decode_arrays(
    texts: &[&str],
    reserve_for: usize,
    limits: &Limits,
    cancel: &CancelToken,
) -> Result<ArrayPart, PartFailed> {
    let mut d = Decoder::new(limits, cancel);
    d.build.reserve_fresh_for_text(reserve_for);
    let mut firsts = Vec::with_capacity(texts.len());
    for text in texts {
        let mut de = serde_json::Deserializer::from_str(text);
        let result = ChildrenSeed { d: &mut d, depth: 1 }
            .deserialize(&mut de)
            .and_then(|children| de.end().map(|()| children));
        match result {
            Ok(Children::List(first)) => firsts.push(first),
            Ok(_) => return Err(PartFailed::NotDecoded),
            Err(_) => return Err(d.part_failed()),
        }
    }
    Ok(ArrayPart {
        build: d.build,
        warnings: d.warnings,
        events: d.events,
        deepest: d.deepest,
        firsts,
    })
}

/// serde_json stops at 128 nested containers with this (stable, public)
/// message; that is a depth limit, not a syntax error.
fn is_recursion_limit(e: &serde_json::Error) -> bool {
    e.to_string().starts_with("recursion limit exceeded")
}

/// Why parsing was stopped on purpose (as opposed to a syntax error).
enum Abort {
    Limit(String),
    Cancelled,
}

impl Abort {
    fn into_error(self, path: &Path) -> Error {
        match self {
            Abort::Limit(message) => Error::LimitExceeded {
                path: path.to_path_buf(),
                message,
            },
            Abort::Cancelled => Error::Cancelled,
        }
    }
}

/// State of one decode: the build being filled, the counters behind the
/// limits, and the warnings. The seeds below borrow it mutably in turn.
struct Decoder<'c> {
    limits: &'c Limits,
    cancel: &'c CancelToken,
    events: u64,
    /// Deepest event entered.
    deepest: u32,
    abort: Option<Abort>,
    warnings: Warnings,
    build: Build,
    /// Set when decoding the first part of a split text: the marker
    /// element is recognised.
    split: Option<SplitState>,
}

/// The marker as the first part's decoder met it.
#[derive(Default, Clone, Copy)]
struct SplitState {
    markers: u32,
    /// The marker was just decoded as an element; the array decoding it
    /// takes note (the innermost one: it sees its element end first).
    pending: bool,
    cut: Option<Cut>,
}

impl<'c> Decoder<'c> {
    fn new(limits: &'c Limits, cancel: &'c CancelToken) -> Self {
        Decoder {
            limits,
            cancel,
            events: 0,
            deepest: 0,
            abort: None,
            warnings: Warnings::new(),
            build: Build::default(),
            split: None,
        }
    }

    /// Whether `s` is the split marker of a first part (then counted).
    fn is_marker(&mut self, s: &str) -> bool {
        match &mut self.split {
            Some(split) if s == MARKER => {
                split.markers += 1;
                split.pending = true;
                true
            }
            _ => false,
        }
    }

    /// Called by an events array after each element: notes the cut when
    /// that element was the marker.
    fn after_element(&mut self, last: u32, index: u32, depth: u32) {
        let Some(split) = self.split.as_mut().filter(|s| s.pending) else {
            return;
        };
        split.pending = false;
        split.cut = (last != NO_EVENT).then_some(Cut {
            last,
            index,
            depth,
            events_before: self.build.events.len(),
        });
    }
    /// Accounts for one more event at `depth` (phases are depth 1).
    fn enter_event<E: de::Error>(&mut self, depth: u32) -> Result<(), E> {
        if depth > self.limits.max_depth {
            return self.stop(Abort::Limit(format!(
                "events nested deeper than {} levels",
                self.limits.max_depth
            )));
        }
        self.deepest = self.deepest.max(depth);
        self.events += 1;
        if self.events > self.limits.max_events {
            return self.stop(Abort::Limit(format!(
                "more than {} events",
                self.limits.max_events
            )));
        }
        if self.events % CANCEL_POLL_EVENTS == 0 && self.cancel.is_cancelled() {
            return self.stop(Abort::Cancelled);
        }
        Ok(())
    }

    fn stop<E: de::Error>(&mut self, why: Abort) -> Result<(), E> {
        let message = match &why {
            Abort::Limit(m) => m.clone(),
            Abort::Cancelled => "cancelled".to_owned(),
        };
        self.abort = Some(why);
        Err(E::custom(message))
    }

    fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }
}

// ---------------------------------------------------------------- top level

struct BuildSeed<'d, 'c> {
    d: &'d mut Decoder<'c>,
}

impl<'de> DeserializeSeed<'de> for BuildSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BuildSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a timing.json object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let d = self.d;
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Timestamp => match map.next_value::<Loose>()? {
                    Loose::Str(s) => d.build.timestamp = Some(s.into_owned()),
                    other => {
                        d.build.timestamp = None;
                        d.warn(format!("timestamp is {}, not a string", other.type_name()));
                    }
                },
                TopKey::TotalElapsed => {
                    d.build.total_elapsed_s = root_number(map.next_value()?, "total_elapsed_s")?
                }
                TopKey::Start => d.build.start_s = root_number(map.next_value()?, "start_s")?,
                TopKey::Variant => d.build.variant = top_string(d, map.next_value()?, "variant"),
                TopKey::Backend => d.build.backend = top_string(d, map.next_value()?, "backend"),
                TopKey::Phases => {
                    let seed = ChildrenSeed { d: &mut *d, depth: 1 };
                    d.build.first_root = match map.next_value_seed(seed)? {
                        Children::List(first) => first,
                        Children::Null => NO_EVENT,
                        Children::Invalid(t) => {
                            return Err(de::Error::custom(format_args!("phases is {t}, not an array")))
                        }
                    }
                }
                TopKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The root anchors decide every span's time: a wrong type there is a broken
/// document, not a detail to skip.
fn root_number<E: de::Error>(v: Loose, key: &str) -> Result<Option<f64>, E> {
    match v {
        Loose::Null => Ok(None),
        other => match other.as_f64() {
            Some(f) => Ok(Some(f)),
            None => Err(E::custom(format_args!(
                "{key} is {}, not a number",
                other.type_name()
            ))),
        },
    }
}

fn top_string(d: &mut Decoder, v: Loose, key: &str) -> String {
    match v {
        Loose::Str(s) => s.into_owned(),
        Loose::Null => String::new(),
        other => {
            d.warn(format!("{key} is {}, not a string; ignored", other.type_name()));
            String::new()
        }
    }
}

enum TopKey {
    Timestamp,
    TotalElapsed,
    Start,
    Variant,
    Backend,
    Phases,
    Other,
}

impl<'de> de::Deserialize<'de> for TopKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(KeyVisitor(|k: &str| match k {
            "timestamp" => TopKey::Timestamp,
            "total_elapsed_s" => TopKey::TotalElapsed,
            "start_s" => TopKey::Start,
            "variant" => TopKey::Variant,
            "backend" => TopKey::Backend,
            "phases" => TopKey::Phases,
            _ => TopKey::Other,
        }))
    }
}

/// Maps an object key to a field enum without allocating.
struct KeyVisitor<F>(F);

impl<T, F: FnOnce(&str) -> T> Visitor<'_> for KeyVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(v))
    }
}

// ------------------------------------------------------------- event arrays

/// What a `phases` / `rules` / `children` key held.
enum Children {
    /// The first event of the list ([`NO_EVENT`] when empty); the others
    /// follow through their sibling links.
    List(u32),
    Null,
    Invalid(&'static str),
}

/// An array of events whose elements sit at `depth`.
struct ChildrenSeed<'d, 'c> {
    d: &'d mut Decoder<'c>,
    depth: u32,
}

impl<'de> DeserializeSeed<'de> for ChildrenSeed<'_, '_> {
    type Value = Children;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChildrenSeed<'_, '_> {
    type Value = Children;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut first, mut last) = (NO_EVENT, NO_EVENT);
        let mut index: u32 = 0;
        while let Some(event) = seq.next_element_seed(EventSeed {
            d: &mut *self.d,
            depth: self.depth,
            index,
        })? {
            self.d.after_element(last, index, self.depth);
            if let Some(id) = event {
                match self.d.build.events.get_mut(last as usize) {
                    Some(prev) => prev.next_sibling = id,
                    None => first = id,
                }
                last = id;
            }
            index = index.saturating_add(1);
        }
        Ok(Children::List(first))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Children::Null)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Children::Invalid("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Children::Invalid("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Children::Invalid("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Children::Invalid("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Children::Invalid("a string"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        super::json::drain_map(map)?;
        Ok(Children::Invalid("an object"))
    }
}

// ------------------------------------------------------------------- events

/// One element of an event array: the id of the stored event, `None` when
/// it is skipped as invalid (whatever it already stored stays unreferenced).
struct EventSeed<'d, 'c> {
    d: &'d mut Decoder<'c>,
    depth: u32,
    index: u32,
}

impl EventSeed<'_, '_> {
    fn skip<T>(&mut self, why: fmt::Arguments) -> Option<T> {
        self.d.warn(format!(
            "event {} at depth {} skipped: {why}",
            self.index, self.depth
        ));
        None
    }
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_, '_> {
    type Value = Option<u32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_, '_> {
    type Value = Option<u32>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        self.d.enter_event(self.depth)?;
        let mut fields = EventFields::default();
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Name => fields.name = Some(map.next_value()?),
                EventKey::RuleType => fields.rule_type = Some(map.next_value()?),
                EventKey::Target => fields.target = Some(map.next_value()?),
                EventKey::Source => fields.source = Some(map.next_value()?),
                EventKey::Start => fields.start_s = Some(map.next_value()?),
                EventKey::End => fields.end_s = Some(map.next_value()?),
                EventKey::Elapsed => fields.elapsed_s = Some(map.next_value()?),
                EventKey::Metadata => {
                    let seed = MetadataSeed {
                        build: &mut self.d.build,
                    };
                    fields.metadata = Some(map.next_value_seed(seed)?)
                }
                EventKey::Rules => fields.rules = Some(map.next_value_seed(self.children())?),
                EventKey::ChildRules => fields.children = Some(map.next_value_seed(self.children())?),
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields.into_event(&mut self))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, seq: A) -> Result<Self::Value, A::Error> {
        self.d.enter_event(self.depth)?;
        drain_seq(seq)?;
        Ok(self.skip(format_args!("an array, not an object")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.not_object("null")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.not_object("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.not_object("a number")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.not_object("a number")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.not_object("a number")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if self.d.is_marker(v) {
            return Ok(None);
        }
        self.not_object("a string")
    }
}

impl<'c> EventSeed<'_, 'c> {
    fn children(&mut self) -> ChildrenSeed<'_, 'c> {
        ChildrenSeed {
            d: &mut *self.d,
            depth: self.depth.saturating_add(1),
        }
    }

    fn not_object<T, E: de::Error>(mut self, what: &str) -> Result<Option<T>, E> {
        self.d.enter_event(self.depth)?;
        Ok(self.skip(format_args!("{what}, not an object")))
    }
}

/// The raw fields of one event, before classification and validation.
#[derive(Default)]
struct EventFields<'a> {
    name: Option<Loose<'a>>,
    rule_type: Option<Loose<'a>>,
    target: Option<Loose<'a>>,
    source: Option<Loose<'a>>,
    start_s: Option<Loose<'a>>,
    end_s: Option<Loose<'a>>,
    elapsed_s: Option<Loose<'a>>,
    metadata: Option<MetadataField>,
    rules: Option<Children>,
    children: Option<Children>,
}

impl<'a> EventFields<'a> {
    /// Validates the fields and stores the event; returns its id.
    fn into_event(self, seed: &mut EventSeed) -> Option<u32> {
        let name = match self.name {
            Some(Loose::Str(s)) => s,
            None => return seed.skip(format_args!("no name")),
            Some(other) => return seed.skip(format_args!("name is {}, not a string", other.type_name())),
        };
        let rule_type = match self.rule_type {
            None | Some(Loose::Null) => None,
            Some(Loose::Str(s)) => Some(s),
            // Guessing phase or rule would misplace the whole subtree.
            Some(other) => {
                return seed.skip(format_args!(
                    "{name:?}: rule_type is {}, not a string",
                    other.type_name()
                ))
            }
        };
        let d = &mut *seed.d;
        let is_rule = rule_type.is_some();
        let (kept, ignored, ignored_key) = if is_rule {
            (self.children, self.rules, "rules")
        } else {
            (self.rules, self.children, "children")
        };
        if let Some(Children::List(first)) = ignored {
            if first != NO_EVENT {
                let why = if is_rule {
                    "not read for a rule"
                } else {
                    "not read for a phase"
                };
                ignored_field(d, &name, ignored_key, why);
            }
        }
        let first_child = match kept {
            None | Some(Children::Null) => NO_EVENT,
            Some(Children::List(first)) => first,
            Some(Children::Invalid(t)) => {
                ignored_field(d, &name, if is_rule { "children" } else { "rules" }, t);
                NO_EVENT
            }
        };
        let metadata = match self.metadata {
            None | Some(MetadataField::Null) => Run::default(),
            Some(MetadataField::Object(run)) => run,
            Some(MetadataField::Invalid(t)) => {
                ignored_field(d, &name, "metadata", t);
                Run::default()
            }
        };
        let target = string_field(d, &name, self.target, "target");
        let source = string_field(d, &name, self.source, "source");
        let start_s = number_field(d, &name, self.start_s, "start_s");
        let end_s = number_field(d, &name, self.end_s, "end_s");
        let elapsed_s = number_field(d, &name, self.elapsed_s, "elapsed_s");
        let b = &mut d.build;
        let target = b.push_str(&target);
        let source = b.push_str(&source);
        let event = EventData {
            index: seed.index,
            is_rule,
            name: b.push_str_or_suffix(&name, &[source, target]),
            rule_type: rule_type.map(|t| b.push_str_shared(&t)).unwrap_or_default(),
            target,
            source,
            metadata,
            first_child,
            next_sibling: NO_EVENT,
            start: start_s.unwrap_or(0.0),
            end: end_time(start_s, end_s, elapsed_s),
        };
        // Cannot fail: the text cap keeps the event count far below u32::MAX.
        let id = u32::try_from(b.events.len()).ok().filter(|id| *id != NO_EVENT)?;
        b.events.push(event);
        Some(id)
    }
}

/// Warns that a field of event `name` of JSON type `t` is ignored.
fn ignored_field(d: &mut Decoder, name: &str, what: &str, t: &str) {
    d.warn(format!("event {name:?}: {what} is {t}; ignored"));
}

/// An optional string field: absent or null is empty, another type is
/// ignored with a warning.
fn string_field<'a>(d: &mut Decoder, name: &str, v: Option<Loose<'a>>, what: &str) -> Cow<'a, str> {
    match v {
        None | Some(Loose::Null) => Cow::Borrowed(""),
        Some(Loose::Str(s)) => s,
        Some(other) => {
            ignored_field(d, name, what, other.type_name());
            Cow::Borrowed("")
        }
    }
}

/// An optional number field: absent or null is `None`, another type is
/// ignored with a warning.
fn number_field(d: &mut Decoder, name: &str, v: Option<Loose>, what: &str) -> Option<f64> {
    match v {
        None | Some(Loose::Null) => None,
        Some(other) => {
            let n = other.as_f64();
            if n.is_none() {
                ignored_field(d, name, what, other.type_name());
            }
            n
        }
    }
}

/// Monotonic end (formats.md §2.9). Without `end_s`: `start_s + elapsed_s` when
/// `start_s` exists (a judgement call: compiletools' `elapsed_s`-as-instant
/// fallback would give garbage there), else `elapsed_s` (legacy files, where
/// it yields the right duration from a 0.0 start).
fn end_time(start_s: Option<f64>, end_s: Option<f64>, elapsed_s: Option<f64>) -> f64 {
    let elapsed = elapsed_s.unwrap_or(0.0);
    match (end_s, start_s) {
        (Some(end), _) => end,
        (None, Some(start)) => start + elapsed,
        (None, None) => elapsed,
    }
}

enum EventKey {
    Name,
    RuleType,
    Target,
    Source,
    Start,
    End,
    Elapsed,
    Metadata,
    Rules,
    ChildRules,
    Other,
}

impl<'de> de::Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(KeyVisitor(|k: &str| match k {
            "name" => EventKey::Name,
            "rule_type" => EventKey::RuleType,
            "target" => EventKey::Target,
            "source" => EventKey::Source,
            "start_s" => EventKey::Start,
            "end_s" => EventKey::End,
            "elapsed_s" => EventKey::Elapsed,
            "metadata" => EventKey::Metadata,
            "rules" => EventKey::Rules,
            "children" => EventKey::ChildRules,
            _ => EventKey::Other,
        }))
    }
}
