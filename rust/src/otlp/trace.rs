//! The trace of one build (spec §3.2 plus DESIGN §2 fixes): one resource,
//! one scope `compiletools`, a root span, one span per phase and per
//! anchored rule, parent/child mirroring the timing tree.
//!
//! Three outputs, one set of bytes:
//! - [`build_trace_request`] returns the prost message, built span by span
//!   with owned attributes (simple; the tests' reference encoding);
//! - [`encode_trace_request`] / [`encode_trace_request_into`] write the
//!   whole request in one buffer, each span straight from the model onto
//!   the wire ([`super::wire`]: borrowed strings, no allocation per span);
//! - [`TraceChunks`] owns the model and writes the trace as requests of at
//!   most `max_spans` spans, one at a time and in any order, so the FFI can
//!   hand a 1M-rule build over without the whole trace ever existing as
//!   bytes (README, "Large builds").
//!
//! The encoders work from a [`Plan`]: the spans in pre-order (event, span
//! id, parent), made in one walk that also counts and warns. Chunk `k` is
//! spans `k·max_spans ..` of the plan, so it is the same bytes on every
//! re-read of the same build.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, SpanFlags};
use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use super::analytics::{rule_attributes, RuleValue};
use super::attributes::AttrBuilder;
use super::scope::{scope, SCOPE_NAME};
use super::semconv;
use super::wire::{self, WireValue};
use crate::analytics::BuildAnalytics;
use crate::ids;
use crate::input::pages::advise_huge_pages;
use crate::timing::naming::{write_span_name, ROOT_SPAN_NAME};
use crate::timing::{Build, Clock, Event, EventId};
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
    let plan = TracePlan::make(input.build, input.clock, &input.trace_id);
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
const SHRINK_SLACK: usize = 1 << 20;

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

/// One span of the trace: its event (`None` for the root), its id, and the
/// plan index of its parent (unused for the root).
#[derive(Debug, Clone, Copy)]
struct Planned {
    event: Option<EventId>,
    span_id: [u8; 8],
    parent: u32,
}

/// Every span of a build in pre-order, with its id and its parent's: what
/// the encoders write, in the order they write it. 24 bytes a span, so a
/// 1M-rule build's plan is 24 MB beside a model of several hundred.
struct Plan {
    spans: Vec<Planned>,
}

impl Plan {
    /// One walk over the build: skips unanchored rules (and their
    /// subtrees), warns about repaired intervals and counts what the
    /// summary reports, so that nothing the encoders do later can warn or
    /// count (chunks are encoded in any order, some of them twice).
    fn make(
        build: &Build,
        clock: &Clock,
        trace_id: &[u8; 16],
        warnings: &mut Warnings,
    ) -> (Self, TraceStats) {
        let mut p = Planner {
            ids: ids::SpanIds::new(trace_id),
            clock,
            path: Vec::new(),
            spans: Vec::with_capacity(build.event_count() + 1),
            stats: TraceStats::default(),
            warnings,
        };
        p.spans.push(Planned {
            event: None,
            span_id: p.ids.span_id(&[]),
            parent: 0,
        });
        for child in build.children() {
            p.visit(child, 0);
        }
        p.stats.spans = p.spans.len() as u64;
        (Plan { spans: p.spans }, p.stats)
    }
}

/// The [`Plan`] of a build's trace with what planning counted and warned,
/// made apart from the encoding: it needs the build (side files merged),
/// its clock and its trace id, and none of the analytics or root
/// attributes the encoders need, so the pipeline can make it on a second
/// thread while it computes those (`pipeline/build.rs`). Handed to an
/// encoder of the same build, clock and trace id.
pub(crate) struct TracePlan {
    plan: Plan,
    stats: TraceStats,
    /// Kept apart until encoding, so that they follow the warnings pushed
    /// before it, as when the encoder plans.
    warnings: Warnings,
}

impl TracePlan {
    pub(crate) fn make(build: &Build, clock: &Clock, trace_id: &[u8; 16]) -> Self {
        let mut warnings = Warnings::new();
        let (plan, stats) = Plan::make(build, clock, trace_id, &mut warnings);
        Self {
            plan,
            stats,
            warnings,
        }
    }

    /// The plan and its counts, its warnings appended to `warnings` (after
    /// those pushed since it was made, as when the encoder plans).
    fn take(self, warnings: &mut Warnings) -> (Plan, TraceStats) {
        warnings.extend(self.warnings);
        (self.plan, self.stats)
    }
}

struct Planner<'x> {
    ids: ids::SpanIds,
    clock: &'x Clock,
    path: Vec<u32>,
    spans: Vec<Planned>,
    stats: TraceStats,
    warnings: &'x mut Warnings,
}

impl Planner<'_> {
    fn visit(&mut self, event: Event, parent: u32) {
        if event.is_rule() && !self.clock.is_anchored(&event) {
            self.stats.unanchored_rules += 1;
            return;
        }
        self.path.push(event.index());
        let (_, repaired) = self.clock.event_interval(&event);
        if repaired {
            self.warnings.push(format!(
                "{:?}: span time before 2000 or end before start; clamped",
                event.name()
            ));
        }
        self.stats.dropped_attributes += u64::from(dropped_metadata(&event));
        let me = u32::try_from(self.spans.len()).unwrap_or(u32::MAX);
        self.spans.push(Planned {
            event: Some(event.id()),
            span_id: self.ids.span_id(&self.path),
            parent,
        });
        for child in event.children() {
            self.visit(child, me);
        }
        self.path.pop();
    }
}

/// Metadata values that cannot become attributes (the span's
/// `dropped_attributes_count`).
fn dropped_metadata(event: &Event) -> u32 {
    let n = event
        .metadata()
        .filter(|(_, v)| matches!(v, crate::timing::MetaValue::Unsupported { .. }))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
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
const SPAN_FLAGS_FIELD: u32 = 16;

/// Writes planned spans onto the wire, as prost would encode the `Span`
/// structs [`build_trace_request`] builds (`ScopeSpans.spans` fields).
struct SpanEncoder<'x> {
    build: &'x Build,
    clock: &'x Clock,
    trace_id: [u8; 16],
    root_attributes: &'x [KeyValue],
    max_len: usize,
    analytics: Option<&'x BuildAnalytics>,
    root_kind: SpanKind,
}

impl<'x> SpanEncoder<'x> {
    fn of(input: &'x TraceInput) -> Self {
        Self {
            build: input.build,
            clock: input.clock,
            trace_id: input.trace_id,
            root_attributes: &input.root_attributes,
            max_len: usize::try_from(input.max_attribute_len).unwrap_or(usize::MAX),
            analytics: input.analytics,
            root_kind: if input.root_span_server {
                SpanKind::Server
            } else {
                SpanKind::Internal
            },
        }
    }

    /// Appends the spans `range` of `plan` to `out`. Allocates a few
    /// buffers per call, none per span.
    fn encode(&self, plan: &[Planned], range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        let mut body = Vec::with_capacity(1024);
        let mut name = String::with_capacity(256);
        let mut attrs: Vec<(&'x str, WireValue<'x>)> = Vec::with_capacity(16);
        for planned in plan.get(range).unwrap_or(&[]) {
            body.clear();
            match planned.event.and_then(|id| self.build.event(id)) {
                None => self.root(planned, &mut body),
                Some(event) => {
                    let parent = plan.get(planned.parent as usize).map_or([0; 8], |p| p.span_id);
                    self.event(event, planned, &parent, &mut name, &mut attrs, &mut body);
                }
            }
            wire::put_bytes(SCOPE_SPANS_SPANS, &body, out);
        }
    }

    fn root(&self, planned: &Planned, out: &mut Vec<u8>) {
        use prost::encoding::message;
        let (start, end) = self.clock.root_interval();
        self.head(&planned.span_id, None, ROOT_SPAN_NAME, self.root_kind, out);
        self.times(start, end, out);
        for kv in self.root_attributes {
            message::encode(SPAN_ATTRIBUTES, kv, out);
        }
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
        let dropped = self.attributes(event, attrs);
        for (key, value) in attrs.iter() {
            wire::put_key_value(SPAN_ATTRIBUTES, key, value, self.max_len, out);
        }
        if dropped > 0 {
            wire::put_varint(SPAN_DROPPED_ATTRIBUTES_COUNT, u64::from(dropped), out);
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
    fn attributes(&self, event: Event<'x>, attrs: &mut Vec<(&'x str, WireValue<'x>)>) -> u32 {
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
            };
            builtin(attrs, key, v);
        }
        if let Some(rule_type) = rule_type {
            if !target.is_empty() {
                builtin(attrs, semconv::TASK_NAME, WireValue::Str(target));
            }
            let task = if rule_type == "test" { "test" } else { "build" };
            builtin(attrs, semconv::TASK_TYPE, WireValue::Str(task));
        }
        dropped
    }
}

/// What [`TraceChunks`] owns: a [`TraceInput`] with the model moved in,
/// plus the further `ScopeSpans` of [`build_trace_request_with`].
pub struct TraceParts {
    pub build: Build,
    pub clock: Clock,
    pub analytics: BuildAnalytics,
    pub trace_id: [u8; 16],
    pub resource: Resource,
    pub root_attributes: Vec<KeyValue>,
    pub max_attribute_len: u32,
    pub root_span_server: bool,
    pub extra: Vec<ScopeSpans>,
}

/// A build's trace as requests of at most `max_spans` spans each, encoded
/// on demand: request `k` holds spans `k·max_spans ..` of the trace in
/// pre-order (the build's spans, then those of the further scopes), under
/// the build's resource and the scope each span belongs to. Every parent
/// is in the same request as its child or an earlier one; the bytes of
/// request `k` depend only on the build and `max_spans`.
pub struct TraceChunks {
    parts: TraceParts,
    resource_head: Vec<u8>,
    scope_head: Vec<u8>,
    plan: Plan,
    max_spans: usize,
    total: usize,
    stats: TraceStats,
}

impl Drop for TraceChunks {
    /// The model's tables serve the next build's (crate::retain).
    fn drop(&mut self) {
        std::mem::take(&mut self.parts.build).recycle();
    }
}

impl TraceChunks {
    /// Plans the trace (warnings go to `warnings` now, none later);
    /// `max_spans` 0 means one request.
    pub fn new(parts: TraceParts, max_spans: usize, warnings: &mut Warnings) -> Self {
        let plan = TracePlan::make(&parts.build, &parts.clock, &parts.trace_id);
        Self::planned(parts, plan, max_spans, warnings)
    }

    /// [`TraceChunks::new`] with the spans planned beforehand by
    /// [`TracePlan::make`] for the parts' build, clock and trace id.
    pub(crate) fn planned(
        parts: TraceParts,
        plan: TracePlan,
        max_spans: usize,
        warnings: &mut Warnings,
    ) -> Self {
        let (plan, mut stats) = plan.take(warnings);
        let extra_spans: usize = parts.extra.iter().map(|ss| ss.spans.len()).sum();
        stats.spans += extra_spans as u64;
        let resource_head = ResourceSpans {
            resource: Some(parts.resource.clone()),
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
        let total = plan.spans.len() + extra_spans;
        Self {
            parts,
            resource_head,
            scope_head,
            plan,
            max_spans: if max_spans == 0 { total.max(1) } else { max_spans },
            total,
            stats,
        }
    }

    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    pub fn trace_id(&self) -> [u8; 16] {
        self.parts.trace_id
    }

    /// Number of requests (at least one: the root).
    pub fn len(&self) -> usize {
        self.total.div_ceil(self.max_spans)
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Request `k` as `ExportTraceServiceRequest` bytes; `None` past the end.
    pub fn chunk(&self, k: usize) -> Option<Vec<u8>> {
        let start = k.checked_mul(self.max_spans).filter(|s| *s < self.total)?;
        let end = start.saturating_add(self.max_spans).min(self.total);
        let planned = self.plan.spans.len();
        let p = &self.parts;
        let input = TraceInput {
            build: &p.build,
            clock: &p.clock,
            trace_id: p.trace_id,
            resource: Resource::default(),
            root_attributes: Vec::new(),
            max_attribute_len: p.max_attribute_len,
            analytics: Some(&p.analytics),
            root_span_server: p.root_span_server,
        };
        let mut encoder = SpanEncoder::of(&input);
        encoder.root_attributes = &p.root_attributes;
        let mut spans = Vec::with_capacity((end - start) * 1024);
        if start < planned {
            encoder.encode(&self.plan.spans, start..end.min(planned), &mut spans);
        }
        // Spans of the further scopes, each part under its own scope.
        let mut more = Vec::new();
        let mut first = planned;
        for ss in &p.extra {
            let (lo, hi) = (start.max(first), end.min(first + ss.spans.len()));
            if lo < hi {
                let part = ScopeSpans {
                    scope: ss.scope.clone(),
                    spans: ss.spans[lo - first..hi - first].to_vec(),
                    schema_url: ss.schema_url.clone(),
                };
                prost::encoding::message::encode(RESOURCE_SPANS_SCOPE_SPANS, &part, &mut more);
            }
            first += ss.spans.len();
        }
        let first_scope = if spans.is_empty() {
            0
        } else {
            wire::delimited_len(RESOURCE_SPANS_SCOPE_SPANS, self.scope_head.len() + spans.len())
        };
        let resource_spans = self.resource_head.len() + first_scope + more.len();
        let mut out = Vec::with_capacity(wire::delimited_len(REQUEST_RESOURCE_SPANS, resource_spans));
        wire::put_delimited_head(REQUEST_RESOURCE_SPANS, resource_spans, &mut out);
        out.extend_from_slice(&self.resource_head);
        if !spans.is_empty() {
            wire::put_delimited_head(
                RESOURCE_SPANS_SCOPE_SPANS,
                self.scope_head.len() + spans.len(),
                &mut out,
            );
            out.extend_from_slice(&self.scope_head);
            out.extend_from_slice(&spans);
        }
        out.extend_from_slice(&more);
        Some(out)
    }
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
        for (key, value) in rule_analytics(self.analytics, event.id()) {
            match value {
                RuleValue::Double(v) => a.double(key, v),
                RuleValue::Bool(v) => a.bool(key, v),
            }
        }
        semconv::push_rule_attributes(&mut a, event);
        let (attributes, spare, dropped) = a.finish_recycling();
        self.scratch.attributes = attributes;
        self.scratch.dropped_attributes_count = dropped;
        self.spare = spare;
    }
}

/// A rule's analytics and history attributes ([`rule_attributes`]).
fn rule_analytics(
    analytics: Option<&BuildAnalytics>,
    id: EventId,
) -> impl Iterator<Item = (&'static str, RuleValue)> {
    let facts = analytics.and_then(|an| an.rule(id));
    let history = analytics.and_then(|an| an.history()?.rule(id));
    rule_attributes(facts, history)
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

    /// Rules whose metadata collides with every built-in key, values of
    /// every type, cut strings, unsupported values, an empty key, a test
    /// rule and a rule without target: the wire encoder must give prost's
    /// bytes for all of them.
    fn tricky_build() -> Build {
        let doc = json!({
            "timestamp": "2026-11-30T03:43:45+00:00",
            "start_s": 100.0,
            "total_elapsed_s": 10.0,
            "phases": [{
                "name": "build_execution",
                "start_s": 100.5,
                "end_s": 109.0,
                "metadata": {"phase.key": "v", "n": null},
                "rules": [
                    {"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp",
                     "start_s": 101.0, "end_s": 102.0,
                     "metadata": {"ct.target": 7, "ct.rule.weighted_s": "x", "cicd.pipeline.task.name": "y",
                                  "": "empty key", "obj": {"a": 1}, "mixed": [1, "a"],
                                  "s": "a string much longer than the limit of sixty-four bytes, cut there",
                                  "b": false, "i": -5, "d": 0.0, "ba": [true, false], "ia": [0, -1, 300],
                                  "da": [1.5], "sa": ["x", "", "é".repeat(40)], "e": []}},
                    {"name": "t", "rule_type": "test", "target": "bin/t", "start_s": 102.0, "end_s": 103.0,
                     "metadata": {"ct.rule_type": "override", "ct.critical_path": false}},
                    {"name": "m", "rule_type": "mkdir", "start_s": 103.0, "end_s": 103.0,
                     "children": [{"name": "c", "rule_type": "x", "start_s": 103.0, "end_s": 103.0}]},
                    {"name": "unanchored", "rule_type": "compile", "start_s": 0.0, "end_s": 1.0},
                    {"name": "early", "rule_type": "compile", "start_s": 101.0, "end_s": 100.0}
                ],
            }, {"name": "postbuild_scripts", "start_s": 109.0, "end_s": 109.5}],
        });
        parse_for_test(&doc.to_string())
    }

    #[test]
    fn wire_encoder_equals_prost_on_tricky_attributes() {
        let build = tricky_build();
        let clock = Clock::for_build(&build).unwrap();
        let analytics = crate::analytics::analyze(&build, &clock);
        for with_analytics in [false, true] {
            let make = || {
                let mut i = input(&build, &clock, Resource::default());
                i.analytics = with_analytics.then_some(&analytics);
                i
            };
            let (request, stats_a) = build_trace_request(make(), &mut Warnings::new());
            let (bytes, stats_b) = encode_trace_request(make(), 0, &mut Warnings::new());
            assert_eq!(stats_a, stats_b);
            assert_eq!(stats_a.dropped_attributes, 2);
            assert_eq!(stats_a.unanchored_rules, 1);
            assert_eq!(bytes, request.encode_to_vec(), "analytics {with_analytics}");
        }
    }

    fn parts(build: Build, extra: Vec<ScopeSpans>) -> TraceParts {
        let clock = Clock::for_build(&build).unwrap();
        let analytics = crate::analytics::analyze(&build, &clock);
        TraceParts {
            build,
            clock,
            analytics,
            trace_id: [9; 16],
            resource: Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
            root_attributes: vec![KeyValue {
                key: "r".into(),
                ..Default::default()
            }],
            max_attribute_len: 64,
            root_span_server: false,
            extra,
        }
    }

    /// The whole request the chunks must add up to, from the reference
    /// encoder.
    fn whole(p: &TraceParts) -> ExportTraceServiceRequest {
        let i = TraceInput {
            build: &p.build,
            clock: &p.clock,
            trace_id: p.trace_id,
            resource: p.resource.clone(),
            root_attributes: p.root_attributes.clone(),
            max_attribute_len: p.max_attribute_len,
            analytics: Some(&p.analytics),
            root_span_server: p.root_span_server,
        };
        build_trace_request_with(i, p.extra.clone(), &mut Warnings::new()).0
    }

    fn snapshot_scope() -> ScopeSpans {
        ScopeSpans {
            scope: Some(scope("compiletools.ccache")),
            spans: vec![Span {
                name: "ct.ccache.snapshot".into(),
                span_id: vec![1; 8],
                ..Default::default()
            }],
            schema_url: String::new(),
        }
    }

    #[test]
    fn chunks_cut_the_whole_trace_at_span_boundaries() {
        for (rules, extra) in [
            (0, vec![]),
            (5, vec![snapshot_scope()]),
            (300, vec![]),
            (300, vec![snapshot_scope()]),
        ] {
            let build = if rules == 5 {
                tricky_build()
            } else {
                sample_build(rules)
            };
            let p = parts(build, extra);
            let reference = whole(&p);
            let rs = &reference.resource_spans[0];
            // (scope name, span) in trace order.
            let expected: Vec<(String, Span)> = rs
                .scope_spans
                .iter()
                .flat_map(|ss| {
                    let name = ss.scope.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                    ss.spans.iter().map(move |sp| (name.clone(), sp.clone()))
                })
                .collect();
            for max in [0, 1, 2, 3, 7, 128, 1000] {
                let chunks = TraceChunks::new(parts_clone(&p), max, &mut Warnings::new());
                assert_eq!(chunks.stats().spans as usize, expected.len());
                let mut got = Vec::new();
                for k in 0..chunks.len() {
                    let bytes = chunks.chunk(k).unwrap();
                    assert_eq!(chunks.chunk(k).unwrap(), bytes, "chunk {k} is not deterministic");
                    let req = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
                    assert_eq!(req.resource_spans.len(), 1);
                    let chunk_rs = &req.resource_spans[0];
                    assert_eq!(chunk_rs.resource, rs.resource, "chunk {k} lacks the resource");
                    let n: usize = chunk_rs.scope_spans.iter().map(|ss| ss.spans.len()).sum();
                    assert!(
                        n >= 1 && (max == 0 || n <= max),
                        "chunk {k} has {n} spans (max {max})"
                    );
                    for ss in &chunk_rs.scope_spans {
                        assert!(!ss.spans.is_empty(), "empty scope in chunk {k}");
                        let name = ss.scope.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                        got.extend(ss.spans.iter().map(|sp| (name.clone(), sp.clone())));
                    }
                }
                assert!(chunks.chunk(chunks.len()).is_none());
                assert_eq!(got, expected, "{rules} rules, max {max}");
                // Every parent is in the same chunk or an earlier one.
                let mut seen = std::collections::HashSet::new();
                for (_, span) in &got {
                    assert!(span.parent_span_id.is_empty() || seen.contains(&span.parent_span_id));
                    seen.insert(span.span_id.clone());
                }
            }
        }
    }

    fn parts_clone(p: &TraceParts) -> TraceParts {
        TraceParts {
            build: p.build.clone(),
            clock: p.clock,
            analytics: p.analytics.clone(),
            trace_id: p.trace_id,
            resource: p.resource.clone(),
            root_attributes: p.root_attributes.clone(),
            max_attribute_len: p.max_attribute_len,
            root_span_server: p.root_span_server,
            extra: p.extra.clone(),
        }
    }
}
