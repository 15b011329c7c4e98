//! The trace of one build (formats.md §3.2 plus design.md §2 fixes): one resource,
//! one scope `compiletools`, a root span, one span per phase and per
//! anchored rule, parent/child mirroring the timing tree.
//!
//! Three outputs, one set of bytes:
//! - `build_trace_request` (`reference`) returns the prost message, built
//!   span by span with owned attributes: simple, the reference the tests
//!   and the fuzzer compare the others with, and compiled only for them
//!   (`cfg(test)`, `cfg(fuzzing)` or the `reference-encoder` feature);
//! - [`encode_trace_request`] / [`encode_trace_request_into`] ([`encode`])
//!   write the whole request in one buffer, each span straight from the
//!   model onto the wire ([`super::wire`]: borrowed strings, no allocation
//!   per span);
//! - [`TraceChunks`] ([`chunks`]) owns the model and writes the trace as
//!   requests of at most `max_spans` spans, one at a time and in any order,
//!   so the FFI can hand a 1M-rule build over without the whole trace ever
//!   existing as bytes (README, "Large builds").
//!
//! Under a compile span whose rule left a clang `-ftime-trace` file, the
//! trace's longer events are child spans ([`clang`]).
//!
//! The encoders work from a plan ([`plan`]): the spans in pre-order (event,
//! span id, parent), made in one walk that also counts and warns. Chunk
//! `k` is spans `k·max_spans ..` of the plan, so it is the same bytes on
//! every re-read of the same build.

mod chunks;
pub(crate) mod clang;
mod encode;
mod plan;
#[cfg(any(test, fuzzing, feature = "reference-encoder"))]
mod reference;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::SpanFlags;

pub use chunks::{TraceChunks, TraceParts};
pub(crate) use encode::encode_planned_into;
pub use encode::{encode_trace_request, encode_trace_request_into, encode_trace_request_with};
pub(crate) use plan::TracePlan;
#[cfg(any(test, fuzzing, feature = "reference-encoder"))]
pub use reference::{build_trace_request, build_trace_request_with};

use super::analytics::{rule_attributes, RuleValue};
use super::rebuild::rule_rebuild_attributes;
use crate::analytics::BuildAnalytics;
use crate::timetrace::BuildTraces;
use crate::timing::naming::ROOT_SPAN_NAME;
use crate::timing::{Build, Clock, EventId};

/// Span flags as compiletools' SDK sets them: "is-remote known, not remote".
pub(crate) const SPAN_FLAGS: u32 = SpanFlags::ContextHasIsRemoteMask as u32;

/// Field numbers of the enclosing messages, from the OTLP protos
/// (`ExportTraceServiceRequest.resource_spans = 1`,
/// `ResourceSpans.scope_spans = 2`, `ScopeSpans.spans = 2`).
pub(super) const REQUEST_RESOURCE_SPANS: u32 = 1;
pub(super) const RESOURCE_SPANS_SCOPE_SPANS: u32 = 2;
pub(super) const SCOPE_SPANS_SPANS: u32 = 2;

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
    /// The root span as the CI/CD conventions' pipeline run: named
    /// `{action} {pipeline}` ([`super::semconv::semconv_root_span_name`])
    /// and of kind SERVER, instead of ct-cake's `compiletools.build`,
    /// INTERNAL; every other span stays INTERNAL.
    pub semconv_root_span: bool,
    /// `cicd.pipeline.name`, for the semconv root span's name.
    pub pipeline_name: &'x str,
    /// The compiles' clang traces: child spans and `ct.clang.*` attributes.
    pub clang: Option<&'x BuildTraces>,
}

/// The root span's name and kind ([`TraceInput::semconv_root_span`]).
pub(super) fn root_name_and_kind(input: &TraceInput) -> (std::borrow::Cow<'static, str>, SpanKind) {
    if input.semconv_root_span {
        (
            super::semconv::semconv_root_span_name(input.pipeline_name).into(),
            SpanKind::Server,
        )
    } else {
        (ROOT_SPAN_NAME.into(), SpanKind::Internal)
    }
}

/// A rule's analytics and history attributes ([`rule_attributes`]), then
/// its rebuild reason ([`rule_rebuild_attributes`]), as every encoder
/// writes them.
pub(super) fn rule_analytics<'a>(
    analytics: Option<&'a BuildAnalytics>,
    id: EventId,
) -> impl Iterator<Item = (&'static str, RuleValue<'a>)> + 'a {
    let facts = analytics.and_then(|an| an.rule(id));
    let history = analytics.and_then(|an| an.history()?.rule(id));
    let headers = analytics.and_then(|an| an.history()?.rebuild_headers(id));
    let widen =
        |(key, value): (&'static str, RuleValue<'static>)| -> (&'static str, RuleValue<'a>) { (key, value) };
    rule_attributes(facts, history)
        .map(widen)
        .chain(rule_rebuild_attributes(history.and_then(|h| h.rebuild), headers))
}

/// A time of the clock as a span's Unix nanoseconds (a negative one, which
/// the year-2000 floor rules out, as 0).
pub(super) fn unix_nanos(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}

#[cfg(test)]
mod tests;
