//! The reference encoder: the trace as a prost message, built span by span
//! with owned attributes. Simple and slow; the wire encoder ([`super::encode`])
//! and the chunks ([`super::chunks`]) must give its bytes
//! (`message.encode_to_vec()`), which the tests and the `timing_decode`
//! fuzz target check. Compiled only for them (`cfg(test)`, `cfg(fuzzing)`,
//! the `reference-encoder` feature).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use super::{clang, root_name_and_kind, rule_analytics, unix_nanos, TraceInput, TraceStats, SPAN_FLAGS};
use crate::analytics::BuildAnalytics;
use crate::ids;
use crate::otlp::analytics::RuleValue;
use crate::otlp::attributes::AttrBuilder;
use crate::otlp::outcome::{failure_message, Outcomes};
use crate::otlp::scope::{scope, SCOPE_NAME};
use crate::otlp::semconv;
use crate::timetrace::BuildTraces;
use crate::timing::naming::write_span_name;
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
        trace_id: input.trace_id,
        clang: input.clang,
        clock: input.clock,
        max_attribute_len: input.max_attribute_len,
        analytics: input.analytics,
        outcomes: Outcomes::of(input.build),
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
    let (root_name, root_kind) = root_name_and_kind(input);
    let root_status = error_status(w.outcomes.root_failure(), input.max_attribute_len);
    let s = &mut w.scratch;
    s.name.clear();
    s.name.push_str(&root_name);
    set_id(&mut s.span_id, &root_id);
    s.parent_span_id.clear();
    (s.start_time_unix_nano, s.end_time_unix_nano) = (unix_nanos(start), unix_nanos(end));
    s.attributes.clone_from(&input.root_attributes);
    s.dropped_attributes_count = 0;
    s.kind = root_kind as i32;
    s.status = root_status;
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
    trace_id: [u8; 16],
    clang: Option<&'x BuildTraces>,
    clock: &'x Clock,
    max_attribute_len: u32,
    analytics: Option<&'x BuildAnalytics>,
    outcomes: Outcomes<'x>,
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
        self.set_attributes(&event, id);
        let failed_phase = (!event.is_rule())
            .then(|| self.outcomes.phase_failure(event.id()))
            .flatten();
        self.scratch.status = error_status(failed_phase, self.max_attribute_len);
        let s = &mut self.scratch;
        write_span_name(&mut s.name, &event);
        set_id(&mut s.span_id, &id);
        set_id(&mut s.parent_span_id, &parent_id);
        (s.start_time_unix_nano, s.end_time_unix_nano) = (unix_nanos(start), unix_nanos(end));
        self.stats.dropped_attributes += u64::from(s.dropped_attributes_count);
        self.emit();
        self.clang_children(&event, id);
        for child in event.children() {
            self.visit(child, id);
        }
        self.path.pop();
    }

    /// The compile's clang spans, each parent before its children.
    fn clang_children(&mut self, event: &Event, compile_id: [u8; 8]) {
        let Some((traces, trace)) = self.clang.and_then(|t| Some((t, t.compile(event.id().slot())?))) else {
            return;
        };
        let spans = traces.spans_of(trace);
        let mut span_ids: Vec<[u8; 8]> = Vec::with_capacity(spans.len());
        for span in spans {
            let id = ids::clang_span_id(&self.trace_id, &self.path, span.ordinal);
            let parent = span
                .parent
                .and_then(|p| span_ids.get(p as usize).copied())
                .unwrap_or(compile_id);
            span_ids.push(id);
            let mut a = AttrBuilder::new(self.max_attribute_len);
            if let Some(detail) = traces.detail(span) {
                a.string(clang::DETAIL, detail);
            }
            let (attributes, dropped) = a.finish();
            let s = &mut self.scratch;
            s.name.clear();
            s.name.push_str(clang::span_name(span));
            set_id(&mut s.span_id, &id);
            set_id(&mut s.parent_span_id, &parent);
            s.start_time_unix_nano = unix_nanos(span.start_unix_ns);
            s.end_time_unix_nano = unix_nanos(span.end_unix_ns);
            s.attributes = attributes;
            s.dropped_attributes_count = dropped;
            self.emit();
        }
    }

    /// `ct.rule_type`, `ct.target`, `ct.source` (non-empty only), then the
    /// metadata in file order, then the rule's analytics, then its CI/CD
    /// task attributes; phases carry only their metadata, and `error.type`
    /// on the one a failed build stopped in.
    fn set_attributes(&mut self, event: &Event, span_id: [u8; 8]) {
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
                RuleValue::Int(v) => a.int(key, v),
                RuleValue::Names(v) => a.strings(key, v.iter().map(|s| &**s)),
            }
        }
        semconv::push_rule_attributes(&mut a, event, span_id, &self.outcomes);
        if let Some(stopped_in) = self.outcomes.phase_failure(event.id()) {
            a.string(semconv::ERROR_TYPE, stopped_in);
        }
        for (key, value) in clang::compile_attributes(self.clang, event.id()) {
            a.double(key, value);
        }
        let (attributes, spare, dropped) = a.finish_recycling();
        self.scratch.attributes = attributes;
        self.scratch.dropped_attributes_count = dropped;
        self.spare = spare;
    }
}

/// Status ERROR for a span that failed (the build stopped in
/// `stopped_in`), else none (UNSET).
fn error_status(stopped_in: Option<&str>, max_attribute_len: u32) -> Option<Status> {
    stopped_in.map(|phase| Status {
        message: failure_message(phase, max_attribute_len),
        code: StatusCode::Error as i32,
    })
}

fn set_id(dst: &mut Vec<u8>, id: &[u8]) {
    dst.clear();
    dst.extend_from_slice(id);
}
