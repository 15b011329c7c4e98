//! Lenient decoding of `timing.json` text into the typed [`Build`] model.
//!
//! One pass of serde_json over the text, straight into borrowed typed
//! structs (no intermediate `serde_json::Value` tree). Strictness is split
//! on purpose:
//! * the document itself (syntax, top-level object, `phases` array, the
//!   numeric root anchors) must be sound, else the file is `Malformed`;
//! * a bad event (no string `name`, non-string `rule_type`, not an object)
//!   is skipped with its subtree and a warning; a wrongly typed optional
//!   field of an event is treated as absent, with a warning.
//!
//! Limits (events, depth) and cancellation are enforced while parsing, so a
//! hostile file stops early instead of being materialised first.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json::{drain_seq, Loose};
use super::metadata::MetadataField;
use super::model::{Build, Event};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::request::Limits;
use crate::warnings::Warnings;

/// How often (in events) the cancel token is polled.
const CANCEL_POLL_EVENTS: u64 = 4096;

/// Decodes `text` (already repaired by [`super::text::LenientText`]).
/// `path` only names the file in errors.
pub fn decode<'a>(
    text: &'a str,
    path: &Path,
    limits: &Limits,
    cancel: &CancelToken,
    warnings: &mut Warnings,
) -> Result<Build<'a>, Error> {
    let ctx = Ctx {
        limits,
        cancel,
        events: Cell::new(0),
        abort: RefCell::new(None),
        warnings: RefCell::new(Warnings::new()),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let result = BuildSeed { ctx: &ctx }
        .deserialize(&mut de)
        .and_then(|build| de.end().map(|()| build));
    warnings.extend(ctx.warnings.take());
    result.map_err(|e| match ctx.abort.take() {
        Some(Abort::Limit(message)) => Error::LimitExceeded {
            path: path.to_path_buf(),
            message,
        },
        Some(Abort::Cancelled) => Error::Cancelled,
        None if is_recursion_limit(&e) => Error::LimitExceeded {
            path: path.to_path_buf(),
            message: format!("JSON nested deeper than the parser allows ({e})"),
        },
        None => Error::Malformed {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
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

/// State shared by all visitors of one decode.
struct Ctx<'c> {
    limits: &'c Limits,
    cancel: &'c CancelToken,
    events: Cell<u64>,
    abort: RefCell<Option<Abort>>,
    warnings: RefCell<Warnings>,
}

impl Ctx<'_> {
    /// Accounts for one more event at `depth` (phases are depth 1).
    fn enter_event<E: de::Error>(&self, depth: u32) -> Result<(), E> {
        if depth > self.limits.max_depth {
            return self.stop(Abort::Limit(format!(
                "events nested deeper than {} levels",
                self.limits.max_depth
            )));
        }
        let n = self.events.get() + 1;
        self.events.set(n);
        if n > self.limits.max_events {
            return self.stop(Abort::Limit(format!(
                "more than {} events",
                self.limits.max_events
            )));
        }
        if n % CANCEL_POLL_EVENTS == 0 && self.cancel.is_cancelled() {
            return self.stop(Abort::Cancelled);
        }
        Ok(())
    }

    fn stop<E: de::Error>(&self, why: Abort) -> Result<(), E> {
        let message = match &why {
            Abort::Limit(m) => m.clone(),
            Abort::Cancelled => "cancelled".to_owned(),
        };
        *self.abort.borrow_mut() = Some(why);
        Err(E::custom(message))
    }

    fn warn(&self, message: String) {
        self.warnings.borrow_mut().push(message);
    }
}

// ---------------------------------------------------------------- top level

struct BuildSeed<'c> {
    ctx: &'c Ctx<'c>,
}

impl<'de> DeserializeSeed<'de> for BuildSeed<'_> {
    type Value = Build<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BuildSeed<'_> {
    type Value = Build<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a timing.json object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut build = Build::default();
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Timestamp => match map.next_value::<Loose>()? {
                    Loose::Str(s) => build.timestamp = Some(s),
                    other => {
                        build.timestamp = None;
                        ctx.warn(format!("timestamp is {}, not a string", other.type_name()));
                    }
                },
                TopKey::TotalElapsed => {
                    build.total_elapsed_s = root_number(map.next_value()?, "total_elapsed_s")?
                }
                TopKey::Start => build.start_s = root_number(map.next_value()?, "start_s")?,
                TopKey::Variant => build.variant = top_string(ctx, map.next_value()?, "variant"),
                TopKey::Backend => build.backend = top_string(ctx, map.next_value()?, "backend"),
                TopKey::Phases => {
                    build.children = match map.next_value_seed(ChildrenSeed { ctx, depth: 1 })? {
                        Children::List(list) => list,
                        Children::Null => Vec::new(),
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
        Ok(build)
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

fn top_string<'de>(ctx: &Ctx, v: Loose<'de>, key: &str) -> Cow<'de, str> {
    match v {
        Loose::Str(s) => s,
        Loose::Null => Cow::Borrowed(""),
        other => {
            ctx.warn(format!("{key} is {}, not a string; ignored", other.type_name()));
            Cow::Borrowed("")
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
enum Children<'a> {
    List(Vec<Event<'a>>),
    Null,
    Invalid(&'static str),
}

/// An array of events whose elements sit at `depth`.
struct ChildrenSeed<'c> {
    ctx: &'c Ctx<'c>,
    depth: u32,
}

impl<'de> DeserializeSeed<'de> for ChildrenSeed<'_> {
    type Value = Children<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ChildrenSeed<'_> {
    type Value = Children<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        let mut index: u32 = 0;
        while let Some(event) = seq.next_element_seed(EventSeed {
            ctx: self.ctx,
            depth: self.depth,
            index,
        })? {
            if let Some(event) = event {
                list.push(event);
            }
            index = index.saturating_add(1);
        }
        Ok(Children::List(list))
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

/// One element of an event array; `None` when it is skipped as invalid.
struct EventSeed<'c> {
    ctx: &'c Ctx<'c>,
    depth: u32,
    index: u32,
}

impl EventSeed<'_> {
    fn skip<T>(&self, why: fmt::Arguments) -> Option<T> {
        self.ctx.warn(format!(
            "event {} at depth {} skipped: {why}",
            self.index, self.depth
        ));
        None
    }
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = Option<Event<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = Option<Event<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        ctx.enter_event(self.depth)?;
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
                EventKey::Metadata => fields.metadata = Some(map.next_value()?),
                EventKey::Rules => fields.rules = Some(map.next_value_seed(self.children())?),
                EventKey::ChildRules => fields.children = Some(map.next_value_seed(self.children())?),
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields.into_event(&self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.ctx.enter_event(self.depth)?;
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
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        self.not_object("a string")
    }
}

impl<'c> EventSeed<'c> {
    fn children(&self) -> ChildrenSeed<'c> {
        ChildrenSeed {
            ctx: self.ctx,
            depth: self.depth.saturating_add(1),
        }
    }

    fn not_object<T, E: de::Error>(&self, what: &str) -> Result<Option<T>, E> {
        self.ctx.enter_event(self.depth)?;
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
    metadata: Option<MetadataField<'a>>,
    rules: Option<Children<'a>>,
    children: Option<Children<'a>>,
}

impl<'a> EventFields<'a> {
    fn into_event(self, seed: &EventSeed) -> Option<Event<'a>> {
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
        let warn = |what: &str, t: &str| seed.ctx.warn(format!("event {name:?}: {what} is {t}; ignored"));
        let string = |v: Option<Loose<'a>>, what: &str| match v {
            None | Some(Loose::Null) => Cow::Borrowed(""),
            Some(Loose::Str(s)) => s,
            Some(other) => {
                warn(what, other.type_name());
                Cow::Borrowed("")
            }
        };
        let number = |v: Option<Loose<'a>>, what: &str| match v {
            None | Some(Loose::Null) => None,
            Some(other) => {
                let n = other.as_f64();
                if n.is_none() {
                    warn(what, other.type_name());
                }
                n
            }
        };
        let is_rule = rule_type.is_some();
        let (kept, ignored, ignored_key) = if is_rule {
            (self.children, self.rules, "rules")
        } else {
            (self.rules, self.children, "children")
        };
        if let Some(Children::List(list)) = &ignored {
            if !list.is_empty() {
                warn(
                    ignored_key,
                    if is_rule {
                        "not read for a rule"
                    } else {
                        "not read for a phase"
                    },
                );
            }
        }
        let children = match kept {
            None | Some(Children::Null) => Vec::new(),
            Some(Children::List(list)) => list,
            Some(Children::Invalid(t)) => {
                warn(if is_rule { "children" } else { "rules" }, t);
                Vec::new()
            }
        };
        let metadata = match self.metadata {
            None | Some(MetadataField::Null) => Vec::new(),
            Some(MetadataField::Object(m)) => m,
            Some(MetadataField::Invalid(t)) => {
                warn("metadata", t);
                Vec::new()
            }
        };
        Some(Event {
            index: seed.index,
            target: string(self.target, "target"),
            source: string(self.source, "source"),
            start_s: number(self.start_s, "start_s"),
            end_s: number(self.end_s, "end_s"),
            elapsed_s: number(self.elapsed_s, "elapsed_s"),
            name,
            rule_type,
            metadata,
            children,
        })
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
