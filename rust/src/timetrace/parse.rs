//! One `-ftime-trace` file's bytes → [`TraceUnit`], in one streaming pass:
//! `traceEvents` is visited element by element and only the events
//! ClangBuildAnalyzer reads are kept, so no JSON tree is ever built.
//!
//! Which events are kept follows ClangBuildAnalyzer (`BuildEvents.cpp`,
//! `ParseEvent`): a known `name` (see [`EventKind::from_name`]), `ph` of
//! `X`, `b` or `e` when present, and `pid`, `tid`, `ts`, `dur` integers when
//! present (absent ones count as 0). A `b` immediately followed by an `e`
//! (clang 19's `Source` pairs) becomes one complete event; a `b` followed by
//! anything else is dropped. Anything else in the file is skipped without a
//! word, as clang's metadata and `Total ...` events are; what is odd rather
//! than foreign is counted in [`super::ParseWarnings`].

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::{TraceError, TraceLimits};
use super::json::{FirstArg, Key, KeyNames, Scalar};
use super::model::{DetailSpan, EventKind, TraceEvent, TraceUnit};
use super::nesting;

/// Parses one trace within `limits`; see the module documentation.
pub fn parse_trace(bytes: &[u8], limits: &TraceLimits) -> Result<TraceUnit, TraceError> {
    // Detail offsets are u32: text longer than that cannot come from a
    // smaller file.
    let max = limits.max_bytes.min(u64::from(u32::MAX));
    if bytes.len() as u64 > max {
        return Err(TraceError::TooLarge {
            bytes: bytes.len() as u64,
            max,
        });
    }
    if !starts_an_object(bytes) {
        return Err(not_an_object(bytes));
    }
    let mut unit = UnitBuilder::new(limits);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = RootSeed { unit: &mut unit }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Some(failure) = unit.failure.take() {
        return Err(failure);
    }
    parsed.map_err(|e| TraceError::Json(e.to_string()))?;
    unit.finish()
}

fn starts_an_object(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Valid JSON of another type is "not an object"; anything else is not JSON.
fn not_an_object(bytes: &[u8]) -> TraceError {
    match serde_json::from_slice::<IgnoredAny>(bytes) {
        Ok(_) => TraceError::NotAnObject,
        Err(e) => TraceError::Json(e.to_string()),
    }
}

struct UnitBuilder<'l> {
    limits: &'l TraceLimits,
    unit: TraceUnit,
    /// `ph` of the last kept event, for the `b`/`e` pairing.
    last_phase: u8,
    seen_trace_events: bool,
    elements: u64,
    /// Set before a visitor returns an error of its own, which replaces
    /// serde's message.
    failure: Option<TraceError>,
}

impl<'l> UnitBuilder<'l> {
    fn new(limits: &'l TraceLimits) -> Self {
        Self {
            limits,
            unit: TraceUnit::default(),
            last_phase: 0,
            seen_trace_events: false,
            elements: 0,
            failure: None,
        }
    }

    fn fail<E: de::Error>(&mut self, failure: TraceError) -> E {
        let e = E::custom(&failure);
        self.failure = Some(failure);
        e
    }

    fn finish(self) -> Result<TraceUnit, TraceError> {
        if !self.seen_trace_events {
            return Err(TraceError::NoTraceEvents);
        }
        let mut unit = self.unit;
        if unit.events.is_empty() {
            return Err(TraceError::NoEvents);
        }
        unit.preorder = nesting::nest(&mut unit.events, self.limits.max_depth)?;
        Ok(unit)
    }

    fn add(&mut self, draft: EventDraft<'_>) {
        let kind = match (draft.valid, draft.kind) {
            (true, Some(kind)) => kind,
            _ => {
                if draft.mistyped && draft.known_name {
                    self.unit.warnings.mistyped_events += 1;
                }
                return;
            }
        };
        if self.last_phase == b'b' {
            if draft.phase == b'e' {
                if let Some(begin) = self.unit.events.last_mut() {
                    begin.dur = draft.ts.saturating_sub(begin.ts);
                }
                self.last_phase = b'X';
                return;
            }
            if let Some(begin) = self.unit.events.pop() {
                if let Some(span) = begin.detail {
                    self.unit.text.truncate(span.start as usize);
                }
            }
            self.unit.warnings.unpaired_begins += 1;
        }
        let detail = draft.detail.filter(|d| !d.is_empty()).map(|d| {
            let start = self.unit.text.len() as u32;
            self.unit.text.push_str(&d);
            DetailSpan {
                start,
                len: d.len() as u32,
            }
        });
        self.unit.events.push(TraceEvent {
            kind,
            tid: draft.tid,
            ts: draft.ts,
            dur: draft.dur,
            detail,
            parent: None,
            depth: 0,
        });
        self.last_phase = draft.phase;
    }
}

enum RootKey {
    TraceEvents,
    BeginningOfTime,
}

impl KeyNames for RootKey {
    fn from_key(key: &str) -> Option<Self> {
        match key {
            "traceEvents" => Some(Self::TraceEvents),
            "beginningOfTime" => Some(Self::BeginningOfTime),
            _ => None,
        }
    }
}

struct RootSeed<'u, 'l> {
    unit: &'u mut UnitBuilder<'l>,
}

impl<'de> DeserializeSeed<'de> for RootSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RootSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Key(key)) = map.next_key::<Key<RootKey>>()? {
            match key {
                // ClangBuildAnalyzer reads the first `traceEvents` only.
                Some(RootKey::TraceEvents) if !self.unit.seen_trace_events => {
                    self.unit.seen_trace_events = true;
                    map.next_value_seed(EventsSeed {
                        unit: &mut *self.unit,
                    })?;
                }
                Some(RootKey::BeginningOfTime) => match map.next_value::<Scalar<'de>>()? {
                    Scalar::Int(t) => self.unit.unit.beginning_of_time_us = Some(t),
                    _ => self.unit.unit.warnings.mistyped_beginning_of_time = true,
                },
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct EventsSeed<'u, 'l> {
    unit: &'u mut UnitBuilder<'l>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Every non-array `traceEvents` is refused with the same error.
macro_rules! refuse_non_array {
    ($($method:ident($($arg:ty)?)),*) => {$(
        fn $method<E: de::Error>(self, $(_: $arg)?) -> Result<(), E> {
            Err(self.unit.fail(TraceError::TraceEventsNotArray))
        }
    )*};
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.unit.elements += 1;
            if self.unit.elements > self.unit.limits.max_events {
                // One past the limit is only refused if it exists.
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(());
                }
                let max = self.unit.limits.max_events;
                return Err(self.unit.fail(TraceError::TooManyEvents { max }));
            }
            match seq.next_element_seed(EventSeed)? {
                Some(Element::Event(draft)) => self.unit.add(draft),
                Some(Element::NotAnObject) => self.unit.unit.warnings.non_object_events += 1,
                None => return Ok(()),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.unit.fail(TraceError::TraceEventsNotArray))
    }

    refuse_non_array!(
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_f64(f64),
        visit_str(&str),
        visit_unit()
    );
}

/// One `traceEvents` element as read, before the keep-or-drop decision.
struct EventDraft<'de> {
    kind: Option<EventKind>,
    /// `name` was a known one, whatever else was wrong.
    known_name: bool,
    valid: bool,
    /// A field had the wrong JSON type (a `ph` of another value is not that:
    /// metadata events have `ph: "M"`).
    mistyped: bool,
    phase: u8,
    tid: i64,
    ts: i64,
    dur: i64,
    detail: Option<std::borrow::Cow<'de, str>>,
}

enum Element<'de> {
    Event(EventDraft<'de>),
    NotAnObject,
}

enum EventKey {
    Pid,
    Tid,
    Ph,
    Name,
    Ts,
    Dur,
    Args,
}

impl KeyNames for EventKey {
    fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "pid" => Self::Pid,
            "tid" => Self::Tid,
            "ph" => Self::Ph,
            "name" => Self::Name,
            "ts" => Self::Ts,
            "dur" => Self::Dur,
            "args" => Self::Args,
            _ => return None,
        })
    }
}

struct EventSeed;

impl<'de> DeserializeSeed<'de> for EventSeed {
    type Value = Element<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed {
    type Value = Element<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut e = EventDraft {
            kind: None,
            known_name: false,
            valid: true,
            mistyped: false,
            phase: 0,
            tid: 0,
            ts: 0,
            dur: 0,
            detail: None,
        };
        while let Some(Key(key)) = map.next_key::<Key<EventKey>>()? {
            let Some(key) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if let EventKey::Args = key {
                e.detail = map.next_value::<FirstArg<'de>>()?.0;
                continue;
            }
            let value = map.next_value::<Scalar<'de>>()?;
            match (key, value) {
                (EventKey::Pid, Scalar::Int(_)) => {}
                (EventKey::Tid, Scalar::Int(tid)) => e.tid = tid,
                (EventKey::Ts, Scalar::Int(ts)) => e.ts = ts,
                (EventKey::Dur, Scalar::Int(dur)) => e.dur = dur,
                (EventKey::Ph, Scalar::Str(ph)) => match ph.as_bytes() {
                    [p @ (b'X' | b'b' | b'e')] => e.phase = *p,
                    _ => e.valid = false,
                },
                (EventKey::Name, Scalar::Str(name)) => {
                    let kind = EventKind::from_name(&name);
                    e.known_name |= kind.is_some();
                    // As ClangBuildAnalyzer: a name after a bad field is not read.
                    if e.valid && kind.is_some() {
                        e.kind = kind;
                    }
                }
                // A name of another type leaves the event unnamed: dropped.
                (EventKey::Name, _) => {}
                _ => {
                    e.valid = false;
                    e.mistyped = true;
                }
            }
        }
        Ok(Element::Event(e))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Element::NotAnObject)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Element::NotAnObject)
    }
}
