//! The trace of one build (spec §3.2 plus DESIGN §2 fixes): one resource,
//! one scope `compiletools`, a root span, one span per phase and per
//! anchored rule, parent/child mirroring the timing tree.
//!
//! Two outputs share one walk over the build: [`build_trace_request`]
//! returns the prost message (simple; tests and small builds), and
//! [`encode_trace_request`] streams each span into the output buffer as
//! soon as it is built, so a 100k-rule build never holds 100k `Span`
//! structs (about twice the file size in small allocations, and most of the
//! time: building, encoding and freeing that tree). Both give the same bytes.
//! [`encode_trace_request_into`] does the same in a buffer the caller no
//! longer needs (the file text), whose pages are already resident.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, SpanFlags};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use super::analytics::push_rule_attributes;
use super::attributes::AttrBuilder;
use super::scope::{scope, SCOPE_NAME};
use super::semconv;
use crate::analytics::BuildAnalytics;
use crate::ids;
use crate::input::pages::advise_huge_pages;
use crate::timing::naming::{write_span_name, ROOT_SPAN_NAME};
use crate::timing::{Build, Clock, Event};
use crate::warnings::Warnings;

/// Span flags as compiletools' SDK sets them: "is-remote known, not remote".
pub(crate) const SPAN_FLAGS: u32 = SpanFlags::ContextHasIsRemoteMask as u32;

/// Field numbers of the enclosing messages, from the OTLP protos
/// (`ExportTraceServiceRequest.resource_spans = 1`,
/// `ResourceSpans.scope_spans = 2`, `ScopeSpans.spans = 2`).
const REQUEST_RESOURCE_SPANS: u32 = 1;
const RESOURCE_SPANS_SCOPE_SPANS: u32 = 2;
const SCOPE_SPANS_SPANS: u32 = 2;

/// Counts from building one trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceStats {
    pub spans: u64,
    /// Rules skipped (with their subtrees) as unanchored; each skipped rule
    /// counts once, its descendants do not.
    pub unanchored_rules: u64,
    pub dropped_attributes: u64,
}

/// What the trace of one build is made from.
pub struct TraceInput<'x> {
    pub build: &'x Build,
    pub clock: &'x Clock,
    pub trace_id: [u8; 16],
    pub resource: Resource,
    pub root_attributes: Vec<KeyValue>,
    pub max_attribute_len: u32,
    /// Per-rule analytics attributes, after each rule's metadata.
    pub analytics: Option<&'x BuildAnalytics>,
    /// Root span kind SERVER (the CI/CD conventions' pipeline run) instead
    /// of ct-cake's INTERNAL; every other span stays INTERNAL.
    pub root_span_server: bool,
}

/// Builds the request as a prost message. Spans are in pre-order (root
/// first).
pub fn build_trace_request(
    input: TraceInput,
    warnings: &mut Warnings,
) -> (ExportTraceServiceRequest, TraceStats) {
    build_trace_request_with(input, Vec::new(), warnings)
}

/// [`build_trace_request`] with more `ScopeSpans` after the build's own
/// (the ccache snapshot of metrics-as-spans) in the same `ResourceSpans`;
/// their spans count in [`TraceStats::spans`].
pub fn build_trace_request_with(
    input: TraceInput,
    extra: Vec<ScopeSpans>,
    warnings: &mut Warnings,
) -> (ExportTraceServiceRequest, TraceStats) {
    let mut spans = Vec::new();
    let resource = input.resource.clone();
    let mut stats = walk(&input, &mut |span| spans.push(span.clone()), warnings);
    stats.spans += extra.iter().map(|ss| ss.spans.len() as u64).sum::<u64>();
    let mut scope_spans = vec![ScopeSpans {
        scope: Some(scope(SCOPE_NAME)),
        spans,
        schema_url: String::new(),
    }];
    scope_spans.extend(extra);
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans,
            schema_url: String::new(),
        }],
    };
    (request, stats)
}

/// Builds and serializes the request in one pass, encoding each span as soon
/// as it is built. The bytes are identical to
/// `build_trace_request(..).0.encode_to_vec()`. `size_hint` is the expected
/// output size (the file size is a good upper bound); untouched reserved
/// memory costs no RSS.
pub fn encode_trace_request(
    input: TraceInput,
    size_hint: usize,
    warnings: &mut Warnings,
) -> (Vec<u8>, TraceStats) {
    encode_trace_request_with(input, &[], size_hint, warnings)
}

/// [`encode_trace_request`] with more `ScopeSpans` after the build's own,
/// as [`build_trace_request_with`] (same bytes).
pub fn encode_trace_request_with(
    input: TraceInput,
    extra: &[ScopeSpans],
    size_hint: usize,
    warnings: &mut Warnings,
) -> (Vec<u8>, TraceStats) {
    let mut buf = Vec::new();
    if buf.try_reserve_exact(size_hint).is_ok() {
        advise_huge_pages(&mut buf);
    }
    encode_trace_request_into(input, extra, buf, warnings)
}

/// [`encode_trace_request_with`] into `buf`, whose contents are discarded
/// and whose memory is reused: the pipeline passes the buffer of the file
/// text it no longer needs, which is already resident (no page faults while
/// writing) and usually larger than the output. Its capacity is also the
/// size estimate; what remains unused at the end is given back.
pub fn encode_trace_request_into(
    input: TraceInput,
    extra: &[ScopeSpans],
    mut buf: Vec<u8>,
    warnings: &mut Warnings,
) -> (Vec<u8>, TraceStats) {
    // Everything before the spans is known up front except two lengths,
    // whose varints are sized from the capacity (the estimate): a gap of
    // that size is left in front of the spans and filled in at the end.
    let resource_head = ResourceSpans {
        resource: Some(input.resource.clone()),
        scope_spans: Vec::new(),
        schema_url: String::new(),
    }
    .encode_to_vec();
    let scope_head = ScopeSpans {
        scope: Some(scope(SCOPE_NAME)),
        spans: Vec::new(),
        schema_url: String::new(),
    }
    .encode_to_vec();
    let estimate = buf.capacity() / 4 * 3;
    let gap = head(&resource_head, &scope_head, estimate, 0).len();
    buf.clear();
    buf.resize(gap, 0);
    let mut stats = walk(
        &input,
        &mut |span| prost::encoding::message::encode(SCOPE_SPANS_SPANS, span, &mut buf),
        warnings,
    );
    let spans_len = buf.len() - gap;
    // Further ScopeSpans follow the first one inside the ResourceSpans
    // (prost writes repeated fields in order and the trailing schema_url is
    // empty, so appending them is the same encoding).
    for ss in extra {
        prost::encoding::message::encode(RESOURCE_SPANS_SCOPE_SPANS, ss, &mut buf);
        stats.spans += ss.spans.len() as u64;
    }
    let extra_len = buf.len() - gap - spans_len;
    let head = head(&resource_head, &scope_head, spans_len, extra_len);
    if head.len() == gap {
        buf[..gap].copy_from_slice(&head);
    } else {
        // The estimate was off by a power of 128: move the spans once.
        buf.splice(..gap, head);
    }
    // The rest of a reused buffer is resident memory nobody needs.
    if buf.capacity() - buf.len() > SHRINK_SLACK {
        buf.shrink_to_fit();
    }
    (buf, stats)
}

/// Unused capacity worth giving back at the end of encoding.
const SHRINK_SLACK: usize = 1 << 20;

/// The bytes in front of the spans: the request's `resource_spans` key and
/// length, the resource, then the first `scope_spans` key, length and scope,
/// for spans of `spans_len` bytes followed by `extra_len` bytes of further
/// `ScopeSpans`.
fn head(resource_head: &[u8], scope_head: &[u8], spans_len: usize, extra_len: usize) -> Vec<u8> {
    let mut scope_field = Vec::with_capacity(11 + scope_head.len());
    encode_key(
        RESOURCE_SPANS_SCOPE_SPANS,
        WireType::LengthDelimited,
        &mut scope_field,
    );
    encode_varint((scope_head.len() + spans_len) as u64, &mut scope_field);
    scope_field.extend_from_slice(scope_head);
    let resource_spans_len = resource_head.len() + scope_field.len() + spans_len + extra_len;
    let mut head = Vec::with_capacity(11 + resource_head.len() + scope_field.len());
    encode_key(REQUEST_RESOURCE_SPANS, WireType::LengthDelimited, &mut head);
    encode_varint(resource_spans_len as u64, &mut head);
    head.extend_from_slice(resource_head);
    head.extend_from_slice(&scope_field);
    head
}

/// Builds every span, handing each to `sink` in pre-order. The span passed
/// is a scratch value overwritten for the next one: a sink that keeps spans
/// clones them.
fn walk(input: &TraceInput, sink: &mut dyn FnMut(&Span), warnings: &mut Warnings) -> TraceStats {
    let mut w = SpanWriter {
        ids: ids::SpanIds::new(&input.trace_id),
        clock: input.clock,
        max_attribute_len: input.max_attribute_len,
        analytics: input.analytics,
        sink,
        stats: TraceStats::default(),
        path: Vec::new(),
        scratch: Span {
            trace_id: input.trace_id.to_vec(),
            flags: SPAN_FLAGS,
            kind: SpanKind::Internal as i32,
            ..Default::default()
        },
        spare: Vec::new(),
        warnings,
    };
    let root_id = w.ids.span_id(&[]);
    let (start, end) = input.clock.root_interval();
    let s = &mut w.scratch;
    s.name.clear();
    s.name.push_str(ROOT_SPAN_NAME);
    set_id(&mut s.span_id, &root_id);
    s.parent_span_id.clear();
    (s.start_time_unix_nano, s.end_time_unix_nano) = (unix_nanos(start), unix_nanos(end));
    s.attributes.clone_from(&input.root_attributes);
    s.dropped_attributes_count = 0;
    if input.root_span_server {
        s.kind = SpanKind::Server as i32;
    }
    w.emit();
    w.scratch.kind = SpanKind::Internal as i32;
    for child in input.build.children() {
        w.visit(child, root_id);
    }
    w.stats
}

struct SpanWriter<'x> {
    ids: ids::SpanIds,
    clock: &'x Clock,
    max_attribute_len: u32,
    analytics: Option<&'x BuildAnalytics>,
    sink: &'x mut dyn FnMut(&Span),
    stats: TraceStats,
    /// Index path of the event being visited (input of its span id).
    path: Vec<u32>,
    /// The span being built; its buffers are reused from span to span.
    scratch: Span,
    /// Attribute entries left over from earlier spans, for reuse.
    spare: Vec<KeyValue>,
    warnings: &'x mut Warnings,
}

impl SpanWriter<'_> {
    fn emit(&mut self) {
        self.stats.spans += 1;
        (self.sink)(&self.scratch);
    }

    fn visit(&mut self, event: Event, parent_id: [u8; 8]) {
        if event.is_rule() && !self.clock.is_anchored(&event) {
            self.stats.unanchored_rules += 1;
            return;
        }
        self.path.push(event.index());
        let id = self.ids.span_id(&self.path);
        let ((start, end), repaired) = self.clock.event_interval(&event);
        if repaired {
            self.warnings.push(format!(
                "{:?}: span time before 2000 or end before start; clamped",
                event.name()
            ));
        }
        self.set_attributes(&event);
        let s = &mut self.scratch;
        write_span_name(&mut s.name, &event);
        set_id(&mut s.span_id, &id);
        set_id(&mut s.parent_span_id, &parent_id);
        (s.start_time_unix_nano, s.end_time_unix_nano) = (unix_nanos(start), unix_nanos(end));
        self.stats.dropped_attributes += u64::from(s.dropped_attributes_count);
        self.emit();
        for child in event.children() {
            self.visit(child, id);
        }
        self.path.pop();
    }

    /// `ct.rule_type`, `ct.target`, `ct.source` (non-empty only), then the
    /// metadata in file order, then the rule's analytics, then its CI/CD
    /// task attributes; phases carry only their metadata.
    fn set_attributes(&mut self, event: &Event) {
        let previous = std::mem::take(&mut self.scratch.attributes);
        let spare = std::mem::take(&mut self.spare);
        let mut a = AttrBuilder::recycling(self.max_attribute_len, previous, spare);
        if let Some(rule_type) = event.rule_type() {
            a.string("ct.rule_type", rule_type);
            a.non_empty_string("ct.target", event.target());
            a.non_empty_string("ct.source", event.source());
        }
        for (key, value) in event.metadata() {
            a.metadata(key, value);
        }
        if let Some(facts) = self.analytics.and_then(|an| an.rule(event.id())) {
            push_rule_attributes(&mut a, facts);
        }
        if let Some(h) = self.analytics.and_then(|an| an.history()?.rule(event.id())) {
            super::history::push_rule_history_attributes(&mut a, h);
        }
        semconv::push_rule_attributes(&mut a, event);
        let (attributes, spare, dropped) = a.finish_recycling();
        self.scratch.attributes = attributes;
        self.scratch.dropped_attributes_count = dropped;
        self.spare = spare;
    }
}

fn set_id(dst: &mut Vec<u8>, id: &[u8]) {
    dst.clear();
    dst.extend_from_slice(id);
}

fn unix_nanos(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::timing::model::parse_for_test;

    fn input<'x>(build: &'x Build, clock: &'x Clock, resource: Resource) -> TraceInput<'x> {
        TraceInput {
            build,
            clock,
            trace_id: [9; 16],
            resource,
            root_attributes: vec![KeyValue {
                key: "r".into(),
                ..Default::default()
            }],
            max_attribute_len: 64,
            analytics: None,
            root_span_server: false,
        }
    }

    fn sample_build(rules: usize) -> Build {
        let rule = |i: usize| {
            json!({
                "name": format!("r{i}.cpp"),
                "rule_type": "compile",
                "source": format!("/s/d{}/r{i}.cpp", i % 7),
                "start_s": 101.0 + i as f64 * 1e-3,
                "end_s": 102.0,
                "metadata": {"cas.hit": i % 2 == 0},
            })
        };
        let doc = json!({
            "timestamp": "2026-11-30T03:43:45+00:00",
            "start_s": 100.0,
            "total_elapsed_s": 10.0,
            "phases": [{
                "name": "build_execution",
                "start_s": 100.5,
                "end_s": 109.0,
                "rules": (0..rules).map(rule).collect::<Vec<_>>(),
            }],
        });
        parse_for_test(&doc.to_string())
    }

    #[test]
    fn streamed_bytes_equal_prost_encoding() {
        // Sizes around the varint boundaries of the two streamed lengths.
        for rules in [0, 1, 2, 100, 2000] {
            let build = sample_build(rules);
            let clock = Clock::for_build(&build).unwrap();
            let resource = Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let (request, stats_a) =
                build_trace_request(input(&build, &clock, resource.clone()), &mut Warnings::new());
            // Size hints whose varint estimate is right, too small, too big.
            for hint in [0, 1 << 20, 1 << 30] {
                let (bytes, stats_b) = encode_trace_request(
                    input(&build, &clock, resource.clone()),
                    hint,
                    &mut Warnings::new(),
                );
                assert_eq!(stats_a, stats_b);
                assert_eq!(bytes, request.encode_to_vec(), "{rules} rules, hint {hint}");
            }
            // A reused buffer: old contents never leak into the output.
            let (bytes, _) = encode_trace_request_into(
                input(&build, &clock, resource.clone()),
                &[],
                vec![0xAA; 3 << 20],
                &mut Warnings::new(),
            );
            assert_eq!(bytes, request.encode_to_vec(), "{rules} rules, reused buffer");
            assert!(bytes.capacity() - bytes.len() <= SHRINK_SLACK);
            assert_eq!(stats_a.spans, rules as u64 + 2);
        }
    }

    #[test]
    fn only_the_root_becomes_server() {
        let build = sample_build(3);
        let clock = Clock::for_build(&build).unwrap();
        for server in [false, true] {
            let mut i = input(&build, &clock, Resource::default());
            i.root_span_server = server;
            let (request, _) = build_trace_request(i, &mut Warnings::new());
            let kinds: Vec<i32> = request.resource_spans[0].scope_spans[0]
                .spans
                .iter()
                .map(|s| s.kind)
                .collect();
            let root = if server {
                SpanKind::Server
            } else {
                SpanKind::Internal
            };
            assert_eq!(kinds[0], root as i32);
            assert!(
                kinds[1..].iter().all(|k| *k == SpanKind::Internal as i32),
                "{kinds:?}"
            );
            assert_eq!(kinds.len(), 5);
        }
    }

    #[test]
    fn extra_scope_spans_encode_like_prost() {
        let extra = vec![ScopeSpans {
            scope: Some(scope("compiletools.ccache")),
            spans: vec![Span {
                name: "ct.ccache.snapshot".into(),
                span_id: vec![1; 8],
                ..Default::default()
            }],
            schema_url: String::new(),
        }];
        for rules in [0, 3, 2000] {
            let build = sample_build(rules);
            let clock = Clock::for_build(&build).unwrap();
            let (request, stats_a) = build_trace_request_with(
                input(&build, &clock, Resource::default()),
                extra.clone(),
                &mut Warnings::new(),
            );
            let (bytes, stats_b) = encode_trace_request_with(
                input(&build, &clock, Resource::default()),
                &extra,
                0,
                &mut Warnings::new(),
            );
            assert_eq!(stats_a, stats_b);
            assert_eq!(stats_a.spans, rules as u64 + 3);
            assert_eq!(bytes, request.encode_to_vec(), "{rules} rules");
            assert_eq!(request.resource_spans[0].scope_spans.len(), 2);
        }
    }
}
