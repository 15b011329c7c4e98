//! Differential check of our trace against what ct-cake's own exporter sent
//! for the same build (corpus `cases/*/reference/001-traces.json`, proto3
//! JSON: base64 ids, 64-bit integers as strings).
//!
//! What must agree: the multiset of span names; spans matched by
//! (name, `ct.target`) with the same parent; the same span attributes; the
//! same resource attributes; start/end within [`TIME_TOLERANCE_NS`]; scope,
//! kind and flags. What may differ is listed in exactly two places:
//! [`PendingStatslog`] (data the core does not read yet) and
//! [`is_intended_difference`] (DESIGN §2 fixes), plus the resource keys in
//! [`IGNORED_RESOURCE_KEYS`] that depend on the recording machine.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use compiletools_core::{process_build, BuildRequest, CancelToken, Summary};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as PValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use prost::Message;
use serde_json::Value as Json;

/// ct-cake anchors at the build start, we at its end (spec §2.8: 5.6 µs
/// apart in the verified run), and quantises to 256 ns.
pub const TIME_TOLERANCE_NS: i64 = 50_000;

/// Resource keys not compared: the SDK's own, and `git.commit.sha`, which
/// the receiver reads from the source tree (the test passes none).
pub const IGNORED_RESOURCE_KEYS: &[&str] = &[
    "telemetry.sdk.language",
    "telemetry.sdk.name",
    "telemetry.sdk.version",
    "git.commit.sha",
];

/// Root attributes that need the ccache statslog, which the core does not
/// parse yet. THE one place to shrink when the statslog lands:
/// * `ct.ccache.*` — the statslog summary, never comparable yet;
/// * the `ct.build.*` values derived from H (ccache hits) — comparable only
///   when the reference's H is 0, since we compute with H = 0.
///
/// `ct.build.cas_avoided_count` never depends on the statslog and is always
/// compared.
pub struct PendingStatslog {
    reference_h: i64,
}

impl PendingStatslog {
    const H_DERIVED: [&'static str; 4] = [
        "ct.build.ccache_avoided_count",
        "ct.build.recompiled_count",
        "ct.build.compile_avoided_rate",
        "ct.build.aggregate_warning",
    ];

    fn for_reference_root(root: &RefSpan) -> Self {
        let reference_h = match root.attributes.get("ct.build.ccache_avoided_count") {
            Some(Attr::Int(h)) => *h,
            _ => 0,
        };
        Self { reference_h }
    }

    pub fn is_pending(&self, key: &str) -> bool {
        key.starts_with("ct.ccache.") || (self.reference_h != 0 && Self::H_DERIVED.contains(&key))
    }
}

/// DESIGN §2 fix 3: a rule outside [root start − 1 s, root end + 1 s] is
/// unanchored and skipped by us, while ct-cake exports it (it skips only a
/// 0.0 start, which it never exports either). Such a reference span may be
/// missing from ours; the count must equal our `unanchored_rules`. (Fix 1,
/// ct-cake losing spans above ~2k, would make ours a superset; no corpus
/// case is that large, so it is not tolerated here.)
fn is_intended_difference(span: &RefSpan, root: &RefSpan) -> bool {
    let lo = root.start - 1_000_000_000;
    let hi = root.end + 1_000_000_000;
    span.attributes.contains_key("ct.rule_type") && !(lo <= span.start && span.end <= hi)
}

/// A comparable attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Array(Vec<Attr>),
}

/// One span, from either side, in a form both can be compared in.
#[derive(Debug, Clone)]
pub struct RefSpan {
    pub span_id: Vec<u8>,
    pub parent_id: Vec<u8>,
    pub trace_id: Vec<u8>,
    pub name: String,
    pub kind: String,
    pub flags: u64,
    pub start: i64,
    pub end: i64,
    /// In order; keys are unique on both sides.
    pub attributes: BTreeMap<String, Attr>,
    pub attribute_order: Vec<String>,
}

impl RefSpan {
    fn key(&self) -> (String, String) {
        let target = match self.attributes.get("ct.target") {
            Some(Attr::Str(s)) => s.clone(),
            _ => String::new(),
        };
        (self.name.clone(), target)
    }
}

/// A decoded trace request.
#[derive(Debug, Clone)]
pub struct Trace {
    pub resource: BTreeMap<String, Attr>,
    pub scope_name: String,
    pub scope_version: String,
    pub spans: Vec<RefSpan>,
}

// ------------------------------------------------------------- corpus paths

/// The corpus: `$CT_CORPUS_DIR`, else `<workspace>/../shared/corpus`.
pub fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CT_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("shared")
        .join("corpus")
}

/// Every case directory that has `reference/001-traces.json`, sorted.
pub fn cases_with_reference() -> Vec<PathBuf> {
    let cases = corpus_dir().join("cases");
    let entries = fs::read_dir(&cases)
        .unwrap_or_else(|e| panic!("corpus not found at {}: {e}", cases.display()));
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("reference").join("001-traces.json").is_file())
        .collect();
    out.sort();
    out
}

/// The single invocation directory of a case.
pub fn invocation_dir(case: &Path) -> PathBuf {
    let diag = case.join("diagnostics");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&diag)
        .unwrap_or_else(|e| panic!("{}: {e}", diag.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("timing.json").is_file())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "{}: expected one invocation dir",
        diag.display()
    );
    dirs.remove(0)
}

// ------------------------------------------------------------ the reference

pub fn load_reference(case: &Path) -> Trace {
    let path = case.join("reference").join("001-traces.json");
    let doc: Json = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let rs = &doc["resourceSpans"];
    assert_eq!(
        rs.as_array().map(Vec::len),
        Some(1),
        "{}: one ResourceSpans",
        path.display()
    );
    let rs = &rs[0];
    let ss = &rs["scopeSpans"];
    assert_eq!(
        ss.as_array().map(Vec::len),
        Some(1),
        "{}: one ScopeSpans",
        path.display()
    );
    let ss = &ss[0];
    Trace {
        resource: json_attrs(&rs["resource"]["attributes"]).0,
        scope_name: ss["scope"]["name"].as_str().unwrap_or("").to_owned(),
        scope_version: ss["scope"]["version"].as_str().unwrap_or("").to_owned(),
        spans: ss["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(json_span)
            .collect(),
    }
}

fn b64(v: &Json) -> Vec<u8> {
    match v.as_str() {
        Some(s) => base64::engine::general_purpose::STANDARD.decode(s).unwrap(),
        None => Vec::new(),
    }
}

fn json_u64(v: &Json) -> i64 {
    match v {
        Json::String(s) => s.parse().unwrap(),
        Json::Number(n) => n.as_i64().unwrap(),
        _ => 0,
    }
}

fn json_span(s: &Json) -> RefSpan {
    let (attributes, attribute_order) = json_attrs(&s["attributes"]);
    RefSpan {
        span_id: b64(&s["spanId"]),
        parent_id: b64(&s["parentSpanId"]),
        trace_id: b64(&s["traceId"]),
        name: s["name"].as_str().unwrap().to_owned(),
        kind: s["kind"]
            .as_str()
            .unwrap_or("SPAN_KIND_UNSPECIFIED")
            .to_owned(),
        flags: s["flags"].as_u64().unwrap_or(0),
        start: json_u64(&s["startTimeUnixNano"]),
        end: json_u64(&s["endTimeUnixNano"]),
        attributes,
        attribute_order,
    }
}

fn json_attrs(v: &Json) -> (BTreeMap<String, Attr>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut order = Vec::new();
    for kv in v.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let key = kv["key"].as_str().unwrap().to_owned();
        order.push(key.clone());
        map.insert(key, json_value(&kv["value"]));
    }
    (map, order)
}

fn json_value(v: &Json) -> Attr {
    let obj = v.as_object().unwrap();
    let (kind, x) = obj.iter().next().unwrap();
    match kind.as_str() {
        "stringValue" => Attr::Str(x.as_str().unwrap().to_owned()),
        "intValue" => Attr::Int(json_u64(x)),
        "doubleValue" => Attr::Double(x.as_f64().unwrap()),
        "boolValue" => Attr::Bool(x.as_bool().unwrap()),
        "arrayValue" => Attr::Array(
            x["values"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(json_value)
                .collect(),
        ),
        other => panic!("unexpected attribute kind {other}"),
    }
}

// ------------------------------------------------------------------ our side

pub fn decode_ours(bytes: &[u8]) -> Trace {
    let req = ExportTraceServiceRequest::decode(bytes).expect("our bytes decode");
    assert_eq!(req.resource_spans.len(), 1, "one ResourceSpans");
    let rs = &req.resource_spans[0];
    assert_eq!(rs.scope_spans.len(), 1, "one ScopeSpans");
    let ss = &rs.scope_spans[0];
    let scope = ss.scope.clone().unwrap_or_default();
    Trace {
        resource: proto_attrs(&rs.resource.clone().unwrap_or_default().attributes).0,
        scope_name: scope.name,
        scope_version: scope.version,
        spans: ss
            .spans
            .iter()
            .map(|s| {
                let (attributes, attribute_order) = proto_attrs(&s.attributes);
                RefSpan {
                    span_id: s.span_id.clone(),
                    parent_id: s.parent_span_id.clone(),
                    trace_id: s.trace_id.clone(),
                    name: s.name.clone(),
                    kind: opentelemetry_proto::tonic::trace::v1::span::SpanKind::try_from(s.kind)
                        .map(|k| k.as_str_name().to_owned())
                        .unwrap_or_default(),
                    flags: u64::from(s.flags),
                    start: s.start_time_unix_nano as i64,
                    end: s.end_time_unix_nano as i64,
                    attributes,
                    attribute_order,
                }
            })
            .collect(),
    }
}

fn proto_attrs(kvs: &[KeyValue]) -> (BTreeMap<String, Attr>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut order = Vec::new();
    for kv in kvs {
        assert!(!map.contains_key(&kv.key), "duplicate attribute {}", kv.key);
        order.push(kv.key.clone());
        map.insert(
            kv.key.clone(),
            proto_value(kv.value.as_ref().expect("attribute has a value")),
        );
    }
    (map, order)
}

fn proto_value(v: &AnyValue) -> Attr {
    match v.value.as_ref().expect("value set") {
        PValue::StringValue(s) => Attr::Str(s.clone()),
        PValue::IntValue(i) => Attr::Int(*i),
        PValue::DoubleValue(d) => Attr::Double(*d),
        PValue::BoolValue(b) => Attr::Bool(*b),
        PValue::ArrayValue(a) => Attr::Array(a.values.iter().map(proto_value).collect()),
        other => panic!("unexpected attribute value {other:?}"),
    }
}

// ------------------------------------------------------------- the request

/// The request that reproduces the reference: its host name, and the
/// service name / resource attributes the case passed on the command line.
pub fn request_for(case: &Path, reference: &Trace) -> BuildRequest {
    let host = match reference.resource.get("host.name") {
        Some(Attr::Str(h)) => h.clone(),
        _ => panic!("reference has no host.name"),
    };
    let mut req = BuildRequest::new(invocation_dir(case), host);
    let meta: Json = serde_json::from_slice(&fs::read(case.join("case.json")).unwrap()).unwrap();
    for arg in meta["argv"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let arg = arg.as_str().unwrap_or("");
        if let Some(name) = arg.strip_prefix("--otel-service-name=") {
            req.service_name = name.to_owned();
        } else if let Some(list) = arg.strip_prefix("--otel-resource-attr=") {
            // spec §3.1: comma lists, trimmed, pieces without '=' or with an
            // empty key skipped, split at the first '='.
            for piece in list.split(',').map(str::trim) {
                if let Some((k, v)) = piece.split_once('=') {
                    if !k.is_empty() {
                        req.resource_attributes.push((k.to_owned(), v.to_owned()));
                    }
                }
            }
        }
    }
    req
}

// -------------------------------------------------------------- comparison

/// Runs the core on a case and compares with its reference. `Ok` carries a
/// one-line summary, `Err` every difference found.
pub fn check_case(case: &Path) -> Result<String, String> {
    let reference = load_reference(case);
    let req = request_for(case, &reference);
    let out = process_build(&req, &CancelToken::new())
        .map_err(|e| format!("process_build failed: {e}"))?;
    let bytes = out.traces.as_deref().ok_or("no traces produced")?;
    let ours = decode_ours(bytes);
    let diffs = compare(&reference, &ours, &out.summary);
    if diffs.is_empty() {
        Ok(format!(
            "{} spans, max |Δt| {} ns, {} unanchored, {} dropped attrs, {} warnings",
            ours.spans.len(),
            max_time_delta(&reference, &ours),
            out.summary.unanchored_rules,
            out.summary.dropped_attributes,
            out.summary.warnings.len()
        ))
    } else {
        Err(diffs)
    }
}

/// Largest start/end difference over spans matched by key, in ns.
pub fn max_time_delta(reference: &Trace, ours: &Trace) -> i64 {
    let ours_by_key: HashMap<(String, String), &RefSpan> =
        ours.spans.iter().map(|s| (s.key(), s)).collect();
    reference
        .spans
        .iter()
        .filter_map(|r| {
            ours_by_key
                .get(&r.key())
                .map(|o| (o.start - r.start).abs().max((o.end - r.end).abs()))
        })
        .max()
        .unwrap_or(0)
}

/// Every difference between the reference and our trace, one per line;
/// empty when they agree.
pub fn compare(reference: &Trace, ours: &Trace, summary: &Summary) -> String {
    let mut d = String::new();
    compare_into(reference, ours, summary, &mut d);
    d
}

fn compare_into(reference: &Trace, ours: &Trace, summary: &Summary, d: &mut String) {
    // Scope.
    if (ours.scope_name.as_str(), ours.scope_version.as_str())
        != (
            reference.scope_name.as_str(),
            reference.scope_version.as_str(),
        )
    {
        let _ = writeln!(
            d,
            "scope {:?}/{:?} != {:?}/{:?}",
            ours.scope_name, ours.scope_version, reference.scope_name, reference.scope_version
        );
    }

    // Resource.
    let strip = |m: &BTreeMap<String, Attr>| -> BTreeMap<String, Attr> {
        m.iter()
            .filter(|(k, _)| !IGNORED_RESOURCE_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (rr, or) = (strip(&reference.resource), strip(&ours.resource));
    if rr != or {
        let _ = writeln!(
            d,
            "resource differs:\n  reference {rr:?}\n  ours      {or:?}"
        );
    }

    // Ids: one non-zero trace id, unique non-zero span ids.
    let trace_ids: std::collections::BTreeSet<&Vec<u8>> =
        ours.spans.iter().map(|s| &s.trace_id).collect();
    if trace_ids.len() != 1
        || trace_ids
            .iter()
            .any(|t| t.len() != 16 || t.iter().all(|b| *b == 0))
    {
        let _ = writeln!(d, "trace ids are not one valid id: {trace_ids:?}");
    }
    let span_ids: std::collections::BTreeSet<&Vec<u8>> =
        ours.spans.iter().map(|s| &s.span_id).collect();
    if span_ids.len() != ours.spans.len()
        || span_ids
            .iter()
            .any(|s| s.len() != 8 || s.iter().all(|b| *b == 0))
    {
        let _ = writeln!(d, "span ids are not unique valid ids");
    }

    // Index both sides by (name, ct.target).
    let index = |t: &Trace, side: &str, d: &mut String| -> HashMap<(String, String), usize> {
        let mut m = HashMap::new();
        for (i, s) in t.spans.iter().enumerate() {
            if m.insert(s.key(), i).is_some() {
                let _ = writeln!(d, "{side}: duplicate span key {:?}", s.key());
            }
        }
        m
    };
    let ref_index = index(reference, "reference", d);
    let our_index = index(ours, "ours", d);
    let by_id = |t: &Trace| -> HashMap<Vec<u8>, usize> {
        t.spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_id.clone(), i))
            .collect()
    };
    let (ref_by_id, our_by_id) = (by_id(reference), by_id(ours));
    let parent_key =
        |t: &Trace, ids: &HashMap<Vec<u8>, usize>, s: &RefSpan| -> Option<(String, String)> {
            if s.parent_id.is_empty() {
                None
            } else {
                Some(
                    ids.get(&s.parent_id)
                        .map(|&i| t.spans[i].key())
                        .unwrap_or(("<missing parent>".into(), String::new())),
                )
            }
        };

    let Some(ref_root) = reference.spans.iter().find(|s| s.parent_id.is_empty()) else {
        let _ = writeln!(d, "reference has no root");
        return;
    };
    let pending = PendingStatslog::for_reference_root(ref_root);

    // Span sets (names as multisets follow from unique keys).
    let mut intended = 0u64;
    for (key, &ri) in &ref_index {
        if !our_index.contains_key(key) {
            if is_intended_difference(&reference.spans[ri], ref_root) {
                intended += 1;
            } else {
                let _ = writeln!(d, "missing span {key:?}");
            }
        }
    }
    if intended != summary.unanchored_rules {
        let _ = writeln!(
            d,
            "{intended} reference rules outside the window, but unanchored_rules = {}",
            summary.unanchored_rules
        );
    }
    for key in our_index.keys() {
        if !ref_index.contains_key(key) {
            let _ = writeln!(d, "extra span {key:?}");
        }
    }
    let mut ref_names: Vec<&str> = reference
        .spans
        .iter()
        .filter(|s| !is_intended_difference(s, ref_root))
        .map(|s| s.name.as_str())
        .collect();
    let mut our_names: Vec<&str> = ours.spans.iter().map(|s| s.name.as_str()).collect();
    ref_names.sort_unstable();
    our_names.sort_unstable();
    if ref_names != our_names {
        let _ = writeln!(d, "span name multisets differ");
    }
    if summary.spans != ours.spans.len() as u64 {
        let _ = writeln!(
            d,
            "summary.spans {} != {} spans sent",
            summary.spans,
            ours.spans.len()
        );
    }

    // Matched spans.
    for (key, &ri) in &ref_index {
        let Some(&oi) = our_index.get(key) else {
            continue;
        };
        let (r, o) = (&reference.spans[ri], &ours.spans[oi]);
        let (rp, op) = (
            parent_key(reference, &ref_by_id, r),
            parent_key(ours, &our_by_id, o),
        );
        if rp != op {
            let _ = writeln!(d, "{key:?}: parent {op:?} != reference {rp:?}");
        }
        if (o.kind.as_str(), o.flags) != (r.kind.as_str(), r.flags) {
            let _ = writeln!(
                d,
                "{key:?}: kind/flags {}/{} != {}/{}",
                o.kind, o.flags, r.kind, r.flags
            );
        }
        for (what, ov, rv) in [("start", o.start, r.start), ("end", o.end, r.end)] {
            if (ov - rv).abs() > TIME_TOLERANCE_NS {
                let _ = writeln!(
                    d,
                    "{key:?}: {what} {ov} vs reference {rv} ({} ns apart)",
                    ov - rv
                );
            }
        }
        let keep = |k: &&String| !pending.is_pending(k);
        let r_order: Vec<&String> = r.attribute_order.iter().filter(keep).collect();
        let o_order: Vec<&String> = o.attribute_order.iter().filter(keep).collect();
        if r_order != o_order {
            let _ = writeln!(
                d,
                "{key:?}: attribute keys {o_order:?} != reference {r_order:?}"
            );
        }
        for k in r_order {
            if r.attributes.get(k) != o.attributes.get(k) {
                let _ = writeln!(
                    d,
                    "{key:?}: {k} = {:?} != reference {:?}",
                    o.attributes.get(k),
                    r.attributes.get(k)
                );
            }
        }
    }
}
