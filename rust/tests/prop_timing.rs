//! Property tests of timing.json → OTLP traces through `process_build`.
//!
//! * Generated valid timing trees (phases, rules nested in phases and in
//!   rules, anchored and unanchored rules, odd names and metadata): the span
//!   count is 1 + emitted phases + anchored rules reachable through emitted
//!   events, every parent id exists, span ids are unique, the bytes decode
//!   with prost and re-encode identically, and a second run gives the same
//!   bytes.
//! * Arbitrary bytes, and generated documents cut short or with a byte
//!   changed or inserted: `process_build` returns `Ok` or `Err`, never
//!   panics, and any trace it returns is well formed.
//!
//! Cases default to a modest number (seconds in `cargo test`);
//! `PROPTEST_CASES=N` runs more (`make prop-long`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::common::proptest_config::config;
use compiletools_core::{process_build, BuildRequest, CancelToken, Limits, Signals};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use proptest::prelude::*;
use prost::Message;
use serde_json::{json, Map, Value};

const INVOCATION_ID: &str = "20260101T120000-4242";
const TIMESTAMP: &str = "2026-01-01T12:00:00+00:00";

// ------------------------------------------------------------- generation

/// Where a generated rule lies relative to the root window
/// [start_s, start_s + total_elapsed_s] (the core accepts 1 s of slack).
#[derive(Debug, Clone, Copy)]
enum Anchor {
    /// Inside the window: always exported.
    Inside,
    /// `start_s` is 0.0, the "never started" sentinel.
    ZeroStart,
    /// No `start_s` at all (defaults to 0.0).
    NoStart,
    /// Starts well before the root.
    Before,
    /// Ends well after the root.
    After,
}

impl Anchor {
    fn anchored(self) -> bool {
        matches!(self, Anchor::Inside)
    }
}

/// A generated event: a rule when `rule_type` is set, else a phase.
#[derive(Debug, Clone)]
struct GenEvent {
    name: String,
    rule_type: Option<String>,
    anchor: Anchor,
    /// Fractions of the root window for start and duration.
    at: (f64, f64),
    metadata: Vec<(String, Value)>,
    children: Vec<GenEvent>,
}

#[derive(Debug, Clone)]
struct GenBuild {
    start_s: f64,
    total_s: f64,
    phases: Vec<GenEvent>,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,12}(\\.(cpp|o|exe))?",
        // Escapes, quotes, non-ASCII and control characters in names.
        any::<String>().prop_map(|s| s.chars().take(24).collect()),
        Just("".to_owned()),
        Just("dir/with \"quotes\"\\and\\backslashes".to_owned()),
    ]
}

fn meta_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        text().prop_map(Value::from),
        Just(Value::Null),
        prop::collection::vec(any::<i32>(), 0..4).prop_map(Value::from),
        prop::collection::vec(text(), 0..3).prop_map(Value::from),
        Just(json!([1, "mixed", null])),
        Just(json!({"nested": {"object": [1.5]}})),
    ]
}

fn metadata() -> impl Strategy<Value = Vec<(String, Value)>> {
    let key = prop_oneof![
        Just("cas.hit".to_owned()),
        Just("cas.bytes_reused".to_owned()),
        Just("cas.kind".to_owned()),
        Just("queue_wait_s".to_owned()),
        Just("ct.rule.cache_layer".to_owned()),
        text(),
    ];
    prop::collection::vec((key, meta_value()), 0..4)
}

fn anchor() -> impl Strategy<Value = Anchor> {
    prop_oneof![
        6 => Just(Anchor::Inside),
        1 => Just(Anchor::ZeroStart),
        1 => Just(Anchor::NoStart),
        1 => Just(Anchor::Before),
        1 => Just(Anchor::After),
    ]
}

fn rule_type() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("compile".to_owned()),
        Just("link".to_owned()),
        Just("test".to_owned()),
        Just("symlink".to_owned()),
        text(),
    ]
}

/// An event tree: rules and phases nested up to a few levels.
fn event() -> impl Strategy<Value = GenEvent> {
    let leaf = (
        text(),
        prop::option::weighted(0.8, rule_type()),
        anchor(),
        (0.0f64..1.0, 0.0f64..1.0),
        metadata(),
    )
        .prop_map(|(name, rule_type, anchor, at, metadata)| GenEvent {
            name,
            rule_type,
            anchor,
            at,
            metadata,
            children: Vec::new(),
        });
    leaf.prop_recursive(3, 40, 5, |inner| {
        (
            text(),
            prop::option::weighted(0.6, rule_type()),
            anchor(),
            (0.0f64..1.0, 0.0f64..1.0),
            metadata(),
            prop::collection::vec(inner, 0..5),
        )
            .prop_map(|(name, rule_type, anchor, at, metadata, children)| GenEvent {
                name,
                rule_type,
                anchor,
                at,
                metadata,
                children,
            })
    })
}

fn build() -> impl Strategy<Value = GenBuild> {
    (
        prop_oneof![Just(10_000.0f64), 1.0f64..1e6],
        prop_oneof![Just(0.0f64), 0.001f64..5_000.0],
        prop::collection::vec(
            event().prop_map(|mut e| {
                // Top-level events are phases, as compiletools writes them
                // (a rule there is legal and tested through `event()` nesting).
                e.rule_type = None;
                e
            }),
            0..7,
        ),
    )
        .prop_map(|(start_s, total_s, phases)| GenBuild {
            start_s,
            total_s,
            phases,
        })
}

// ------------------------------------------------------- document and model

fn event_json(e: &GenEvent, b: &GenBuild) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), e.name.clone().into());
    let (lo, hi) = (b.start_s, b.start_s + b.total_s);
    let start = lo + e.at.0 * (hi - lo);
    let end = start + e.at.1 * (hi - start);
    let (start, end) = match e.anchor {
        Anchor::Inside => (Some(start), end),
        Anchor::ZeroStart => (Some(0.0), end),
        Anchor::NoStart => (None, end),
        Anchor::Before => (Some(lo - 5.0 - e.at.0 * 100.0), end),
        Anchor::After => (Some(start), hi + 5.0 + e.at.1 * 100.0),
    };
    if let Some(rt) = &e.rule_type {
        o.insert("rule_type".into(), rt.clone().into());
        o.insert("target".into(), format!("/t/{}", e.name).into());
        o.insert("source".into(), e.name.clone().into());
    }
    o.insert("elapsed_s".into(), (end - start.unwrap_or(0.0)).into());
    if let Some(s) = start {
        o.insert("start_s".into(), s.into());
    }
    o.insert("end_s".into(), end.into());
    if !e.metadata.is_empty() {
        o.insert(
            "metadata".into(),
            Value::Object(e.metadata.iter().cloned().collect()),
        );
    }
    if !e.children.is_empty() {
        // A phase's sub-events are `rules`, a rule's are `children`.
        let key = if e.rule_type.is_some() {
            "children"
        } else {
            "rules"
        };
        o.insert(key.into(), e.children.iter().map(|c| event_json(c, b)).collect());
    }
    Value::Object(o)
}

fn document(b: &GenBuild) -> String {
    json!({
        "version": 1,
        "timestamp": TIMESTAMP,
        "total_elapsed_s": b.total_s,
        "variant": "gcc.debug",
        "backend": "shake",
        "start_s": b.start_s,
        "phases": b.phases.iter().map(|p| event_json(p, b)).collect::<Vec<_>>(),
    })
    .to_string()
}

/// (spans, unanchored) the trace must have: phases always, rules when
/// anchored; nothing below a skipped rule; each skipped rule counts once.
fn expected(events: &[GenEvent]) -> (u64, u64) {
    let mut spans = 0;
    let mut unanchored = 0;
    for e in events {
        if e.rule_type.is_some() && !e.anchor.anchored() {
            unanchored += 1;
            continue;
        }
        let (s, u) = expected(&e.children);
        spans += 1 + s;
        unanchored += u;
    }
    (spans, unanchored)
}

// ---------------------------------------------------------------- checking

struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

fn invocation_dir(timing: &[u8]) -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(INVOCATION_ID);
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("timing.json"), timing).unwrap();
    Dir { _tmp: tmp, path }
}

fn request(dir: &Path) -> BuildRequest {
    let mut req = BuildRequest::new(dir, "prop-host");
    req.signals = Signals {
        traces: true,
        metrics: false,
    };
    req.limits = Limits {
        max_attribute_len: 64,
        ..Limits::default()
    };
    req
}

/// Decodes the trace and checks its structure; returns its span count.
fn check_trace(bytes: &[u8]) -> Result<u64, TestCaseError> {
    let req = ExportTraceServiceRequest::decode(bytes)
        .map_err(|e| TestCaseError::fail(format!("trace bytes do not decode: {e}")))?;
    prop_assert_eq!(req.resource_spans.len(), 1);
    let spans: Vec<_> = req.resource_spans[0]
        .scope_spans
        .iter()
        .flat_map(|ss| &ss.spans)
        .collect();
    let ids: HashSet<&[u8]> = spans.iter().map(|s| s.span_id.as_slice()).collect();
    prop_assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let mut roots = 0;
    for s in &spans {
        prop_assert_eq!(s.span_id.len(), 8);
        prop_assert_eq!(&s.trace_id, &spans[0].trace_id, "one trace");
        if s.parent_span_id.is_empty() {
            roots += 1;
        } else {
            prop_assert!(
                ids.contains(s.parent_span_id.as_slice()),
                "parent of {:?} is missing",
                s.name
            );
        }
        prop_assert!(s.start_time_unix_nano <= s.end_time_unix_nano, "{:?}", s.name);
    }
    prop_assert_eq!(roots, 1, "one root span");
    prop_assert_eq!(req.encode_to_vec(), bytes, "prost re-encodes the same bytes");
    Ok(spans.len() as u64)
}

/// Mutations of a valid document: cut, overwrite one byte, insert bytes.
#[derive(Debug, Clone)]
enum Mutation {
    Truncate(prop::sample::Index),
    Overwrite(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just(b"\\udc80".to_vec()),
        Just(b"\xff".to_vec()),
        Just(b"null".to_vec()),
        Just(b"[".to_vec()),
        Just(b"{}".to_vec()),
        Just(b",".to_vec()),
        Just(b"1e999".to_vec()),
        Just(b"\"".to_vec()),
        prop::collection::vec(any::<u8>(), 1..4),
    ];
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Overwrite(i, b)),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| Mutation::Insert(i, t)),
    ]
}

fn apply(doc: &str, m: &Mutation) -> Vec<u8> {
    let mut bytes = doc.as_bytes().to_vec();
    match m {
        Mutation::Truncate(i) => bytes.truncate(i.index(bytes.len() + 1)),
        Mutation::Overwrite(i, b) => {
            let i = i.index(bytes.len());
            bytes[i] = *b;
        }
        Mutation::Insert(i, t) => {
            let i = i.index(bytes.len() + 1);
            bytes.splice(i..i, t.iter().copied());
        }
    }
    bytes
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn valid_trees_give_one_span_per_phase_and_anchored_rule(b in build()) {
        let doc = document(&b);
        let dir = invocation_dir(doc.as_bytes());
        let req = request(&dir.path);
        let out = process_build(&req, &CancelToken::new())
            .map_err(|e| TestCaseError::fail(format!("valid document refused: {e}")))?;
        let (spans, unanchored) = expected(&b.phases);
        prop_assert_eq!(out.summary.spans, 1 + spans, "1 + phases + anchored rules");
        prop_assert_eq!(out.summary.unanchored_rules, unanchored);
        let bytes = out.traces.expect("traces were asked for");
        prop_assert_eq!(check_trace(&bytes)?, 1 + spans);
        let again = process_build(&req, &CancelToken::new()).unwrap();
        prop_assert_eq!(again.traces.unwrap(), bytes, "deterministic");
    }

    #[test]
    fn damaged_documents_never_panic(b in build(), m in mutation()) {
        let bytes = apply(&document(&b), &m);
        let dir = invocation_dir(&bytes);
        if let Ok(out) = process_build(&request(&dir.path), &CancelToken::new()) {
            let spans = check_trace(out.traces.as_deref().expect("traces"))?;
            prop_assert_eq!(spans, out.summary.spans);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let dir = invocation_dir(&bytes);
        if let Ok(out) = process_build(&request(&dir.path), &CancelToken::new()) {
            check_trace(out.traces.as_deref().expect("traces"))?;
        }
    }
}
