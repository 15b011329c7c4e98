//! The reference encoder: the trace as a prost message, built span by span
//! with owned attributes. Simple and slow; the wire encoder ([`super::encode`])
//! and the chunks ([`super::chunks`]) must give its bytes
//! (`message.encode_to_vec()`), which the tests and the `timing_decode`
//! fuzz target check. Compiled only for them (`cfg(test)`, `cfg(fuzzing)`,
//! the `reference-encoder` feature).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

use super::{rule_analytics, unix_nanos, TraceInput, TraceStats, SPAN_FLAGS};
use crate::analytics::BuildAnalytics;
use crate::ids;
use crate::otlp::analytics::RuleValue;
use crate::otlp::attributes::AttrBuilder;
use crate::otlp::scope::{scope, SCOPE_NAME};
use crate::otlp::semconv;
use crate::timing::naming::{write_span_name, ROOT_SPAN_NAME};
use crate::timing::{Clock, Event};
use crate::warnings::Warnings;

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
    s.links = crate::otlp::rebuild::root_links(input.analytics);
    w.emit();
    w.scratch.kind = SpanKind::Internal as i32;
    w.scratch.links.clear();
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
        for (key, value) in rule_analytics(self.analytics, event.id()) {
            match value {
                RuleValue::Double(v) => a.double(key, v),
                RuleValue::Bool(v) => a.bool(key, v),
                RuleValue::Str(v) => a.string(key, v),
                RuleValue::Strs(v) => a.strings(key, v.iter().copied()),
            }
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
