//! The wire encoder: the whole trace request in one buffer, each planned
//! span written straight from the model onto the wire ([`SpanEncoder`]),
//! the same bytes as prost's encoding of the reference encoder's message.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use super::clang;
use super::plan::{Planned, SpanOf, TracePlan};
use super::{
    root_name_and_kind, rule_analytics, unix_nanos, TraceInput, TraceStats, REQUEST_RESOURCE_SPANS,
    RESOURCE_SPANS_SCOPE_SPANS, SCOPE_SPANS_SPANS, SPAN_FLAGS,
};
use crate::analytics::BuildAnalytics;
use crate::input::pages::advise_huge_pages;
use crate::otlp::analytics::RuleValue;
use crate::otlp::outcome::{failure_message, Outcomes};
use crate::otlp::scope::{scope, SCOPE_NAME};
use crate::otlp::semconv::{self, TaskValue};
use crate::otlp::wire::{self, WireValue};
use crate::timetrace::BuildTraces;
use crate::timing::naming::write_span_name;
use crate::timing::{Build, Clock, Event};
use crate::warnings::Warnings;

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
/// as `build_trace_request_with` (same bytes).
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
/// and whose memory is reused. Its capacity is also the size estimate;
/// what remains unused at the end is given back. (The pipeline passes the
/// file text's buffer, read with a quarter to spare so that the output,
/// ~1.1× the file, fits; see `pipeline/build.rs`.)
pub fn encode_trace_request_into(
    input: TraceInput,
    extra: &[ScopeSpans],
    buf: Vec<u8>,
    warnings: &mut Warnings,
) -> (Vec<u8>, TraceStats) {
    let plan = TracePlan::make(input.build, input.clock, &input.trace_id, input.clang);
    encode_planned_into(input, plan, extra, buf, warnings)
}

/// [`encode_trace_request_into`] with the spans planned beforehand by
/// [`TracePlan::make`] for the same build, clock and trace id; the plan's
/// warnings go to `warnings` now, where planning here would have put them.
pub(crate) fn encode_planned_into(
    input: TraceInput,
    plan: TracePlan,
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
    let (plan, mut stats) = plan.take(warnings);
    SpanEncoder::of(&input).encode(&plan.spans, 0..plan.spans.len(), &mut buf);
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
    // The rest of a reused buffer is resident memory nobody needs; some
    // room is left, since the buffer may come back for the next build's
    // text and output (crate::retain): a kept buffer that must grow is
    // reallocated, and measured here that costs more than a new one.
    if buf.capacity() - buf.len() > SHRINK_SLACK {
        buf.shrink_to(buf.len() + KEEP_SLACK);
    }
    (buf, stats)
}

/// Unused capacity worth giving back at the end of encoding.
pub(super) const SHRINK_SLACK: usize = 1 << 20;

/// What is left of it: the output of a following build up to that much
/// larger fits.
const KEEP_SLACK: usize = SHRINK_SLACK / 2;

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

// Field numbers of `Span` (opentelemetry/proto/trace/v1/trace.proto).
const SPAN_TRACE_ID: u32 = 1;
const SPAN_SPAN_ID: u32 = 2;
const SPAN_PARENT_SPAN_ID: u32 = 4;
const SPAN_NAME: u32 = 5;
const SPAN_KIND: u32 = 6;
const SPAN_START: u32 = 7;
const SPAN_END: u32 = 8;
const SPAN_ATTRIBUTES: u32 = 9;
const SPAN_DROPPED_ATTRIBUTES_COUNT: u32 = 10;
const SPAN_LINKS: u32 = 13;
const SPAN_STATUS: u32 = 15;
const SPAN_FLAGS_FIELD: u32 = 16;

/// Writes planned spans onto the wire, as prost would encode the `Span`
/// structs `build_trace_request` builds (`ScopeSpans.spans` fields).
pub(super) struct SpanEncoder<'x> {
    build: &'x Build,
    clock: &'x Clock,
    trace_id: [u8; 16],
    pub(super) root_attributes: &'x [KeyValue],
    max_len: usize,
    max_attribute_len: u32,
    analytics: Option<&'x BuildAnalytics>,
    root_name: std::borrow::Cow<'static, str>,
    clang: Option<&'x BuildTraces>,
    root_kind: SpanKind,
    outcomes: Outcomes<'x>,
}

impl<'x> SpanEncoder<'x> {
    pub(super) fn of(input: &'x TraceInput) -> Self {
        let (root_name, root_kind) = root_name_and_kind(input);
        Self {
            build: input.build,
            clock: input.clock,
            trace_id: input.trace_id,
            root_attributes: &input.root_attributes,
            max_len: usize::try_from(input.max_attribute_len).unwrap_or(usize::MAX),
            max_attribute_len: input.max_attribute_len,
            analytics: input.analytics,
            root_name,
            root_kind,
            outcomes: Outcomes::of(input.build),
            clang: input.clang,
        }
    }

    /// Appends the spans `range` of `plan` to `out`. Allocates a few
    /// buffers per call, none per span.
    pub(super) fn encode(&self, plan: &[Planned], range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let mut body = Vec::with_capacity(1024);
        let mut name = String::with_capacity(256);
        let mut attrs: Vec<(&'x str, WireValue<'x>)> = Vec::with_capacity(16);
        for planned in plan.get(range).unwrap_or(&[]) {
            body.clear();
            let parent = plan.get(planned.parent as usize).map_or([0; 8], |p| p.span_id);
            match planned.event {
                SpanOf::Root => self.root(planned, &mut body),
                SpanOf::Event(id) => {
                    if let Some(event) = self.build.event(id) {
                        self.event(event, planned, &parent, &mut name, &mut attrs, &mut body);
                    } else {
                        self.root(planned, &mut body);
                    }
                }
                SpanOf::Clang(i) => self.clang_span(i, planned, &parent, &mut body),
            }
            wire::put_bytes(SCOPE_SPANS_SPANS, &body, out);
        }
    }

    fn root(&self, planned: &Planned, out: &mut Vec<u8>) {
        use prost::encoding::message;
        let (start, end) = self.clock.root_interval();
        self.head(&planned.span_id, None, &self.root_name, self.root_kind, out);
        self.times(start, end, out);
        for kv in self.root_attributes {
            message::encode(SPAN_ATTRIBUTES, kv, out);
        }
        for link in crate::otlp::rebuild::root_links(self.analytics) {
            message::encode(SPAN_LINKS, &link, out);
        }
        self.status(self.outcomes.root_failure(), out);
        wire::put_fixed32(SPAN_FLAGS_FIELD, SPAN_FLAGS, out);
    }

    fn event(
        &self,
        event: Event<'x>,
        planned: &Planned,
        parent: &[u8; 8],
        name: &mut String,
        attrs: &mut Vec<(&'x str, WireValue<'x>)>,
        out: &mut Vec<u8>,
    ) {
        let ((start, end), _) = self.clock.event_interval(&event);
        write_span_name(name, &event);
        self.head(&planned.span_id, Some(parent), name, SpanKind::Internal, out);
        self.times(start, end, out);
        let dropped = self.attributes(event, planned.span_id, attrs);
        for (key, value) in attrs.iter() {
            wire::put_key_value(SPAN_ATTRIBUTES, key, value, self.max_len, out);
        }
        if dropped > 0 {
            wire::put_varint(SPAN_DROPPED_ATTRIBUTES_COUNT, u64::from(dropped), out);
        }
        if !event.is_rule() {
            self.status(self.outcomes.phase_failure(event.id()), out);
        }
        wire::put_fixed32(SPAN_FLAGS_FIELD, SPAN_FLAGS, out);
    }

    /// Field 15: status ERROR for a span that failed (the build stopped
    /// in `stopped_in`), else nothing (UNSET).
    fn status(&self, stopped_in: Option<&str>, out: &mut Vec<u8>) {
        if let Some(phase) = stopped_in {
            wire::put_error_status(SPAN_STATUS, &failure_message(phase, self.max_attribute_len), out);
        }
    }

    /// A clang child span: its event's name and times, its detail.
    fn clang_span(&self, index: u32, planned: &Planned, parent: &[u8; 8], out: &mut Vec<u8>) {
        let Some((traces, span)) = self.clang.and_then(|c| Some((c, c.span(index)?))) else {
            return;
        };
        self.head(
            &planned.span_id,
            Some(parent),
            clang::span_name(span),
            SpanKind::Internal,
            out,
        );
        self.times(span.start_unix_ns, span.end_unix_ns, out);
        if let Some(detail) = traces.detail(span) {
            wire::put_key_value(
                SPAN_ATTRIBUTES,
                clang::DETAIL,
                &WireValue::Str(detail),
                self.max_len,
                out,
            );
        }
        wire::put_fixed32(SPAN_FLAGS_FIELD, SPAN_FLAGS, out);
    }

    /// Fields 1 to 6: ids, name, kind (trace_state is always empty).
    fn head(
        &self,
        span_id: &[u8; 8],
        parent: Option<&[u8; 8]>,
        name: &str,
        kind: SpanKind,
        out: &mut Vec<u8>,
    ) {
        wire::put_bytes(SPAN_TRACE_ID, &self.trace_id, out);
        wire::put_bytes(SPAN_SPAN_ID, span_id, out);
        if let Some(parent) = parent {
            wire::put_bytes(SPAN_PARENT_SPAN_ID, parent, out);
        }
        if !name.is_empty() {
            wire::put_bytes(SPAN_NAME, name.as_bytes(), out);
        }
        wire::put_varint(SPAN_KIND, kind as i32 as u64, out);
    }

    fn times(&self, start: i64, end: i64, out: &mut Vec<u8>) {
        for (field, t) in [(SPAN_START, start), (SPAN_END, end)] {
            let t = unix_nanos(t);
            if t != 0 {
                wire::put_fixed64(field, t, out);
            }
        }
    }

    /// The attributes of a phase or rule span in the order and with the
    /// overrides of [`SpanWriter::set_attributes`] (`AttrBuilder`'s rules:
    /// a later value of a key replaces the earlier one in its place; a
    /// metadata key is looked up among the built-in keys before it only).
    /// Returns the number of dropped metadata values.
    fn attributes(
        &self,
        event: Event<'x>,
        span_id: [u8; 8],
        attrs: &mut Vec<(&'x str, WireValue<'x>)>,
    ) -> u32 {
        attrs.clear();
        let mut builtins = 0;
        let mut builtin =
            |attrs: &mut Vec<(&'x str, WireValue<'x>)>, key: &'x str, v: WireValue<'x>| match attrs
                .iter_mut()
                .find(|(k, _)| *k == key)
            {
                Some(slot) => slot.1 = v,
                None => {
                    attrs.push((key, v));
                    builtins += 1;
                }
            };
        let rule_type = event.rule_type();
        let (target, source) = (event.target(), event.source());
        if let Some(rule_type) = rule_type {
            builtin(attrs, "ct.rule_type", WireValue::Str(rule_type));
            if !target.is_empty() {
                builtin(attrs, "ct.target", WireValue::Str(target));
            }
            if !source.is_empty() {
                builtin(attrs, "ct.source", WireValue::Str(source));
            }
        }
        let metadata_from = attrs.len();
        let mut dropped = 0u32;
        for (key, value) in event.metadata() {
            if matches!(value, crate::timing::MetaValue::Unsupported { .. }) {
                dropped = dropped.saturating_add(1);
            }
            let Some(v) = WireValue::of_meta(value) else {
                continue;
            };
            match attrs[..metadata_from].iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => attrs.push((key, v)),
            }
        }
        for (key, value) in rule_analytics(self.analytics, event.id()) {
            let v = match value {
                RuleValue::Double(v) => WireValue::Double(v),
                RuleValue::Bool(v) => WireValue::Bool(v),
                RuleValue::Str(v) => WireValue::Str(v),
                RuleValue::Strs(v) => WireValue::StaticStrs(v),
                RuleValue::Int(v) => WireValue::Int(v),
                RuleValue::Names(v) => WireValue::Names(v),
            };
            builtin(attrs, key, v);
        }
        for (key, value) in semconv::rule_task_attributes(&event, span_id, &self.outcomes) {
            let v = match value {
                TaskValue::Str(s) => WireValue::Str(s),
                TaskValue::SpanId(id) => WireValue::HexId(id),
            };
            builtin(attrs, key, v);
        }
        if let Some(stopped_in) = self.outcomes.phase_failure(event.id()) {
            builtin(attrs, semconv::ERROR_TYPE, WireValue::Str(stopped_in));
        }
        for (key, v) in clang::compile_attributes(self.clang, event.id()) {
            builtin(attrs, key, WireValue::Double(v));
        }
        dropped
    }
}
