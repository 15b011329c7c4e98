//! A build's trace as requests of at most `max_spans` spans, encoded one
//! at a time on demand from the model it owns (README, "Large builds").

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use prost::Message;

use super::encode::SpanEncoder;
use super::plan::{Plan, TracePlan};
use super::{TraceInput, TraceStats, REQUEST_RESOURCE_SPANS, RESOURCE_SPANS_SCOPE_SPANS};
use crate::analytics::BuildAnalytics;
use crate::otlp::scope::{scope, SCOPE_NAME};
use crate::otlp::wire;
use crate::timetrace::BuildTraces;
use crate::timing::{Build, Clock};
use crate::warnings::Warnings;

/// What [`TraceChunks`] owns: a [`TraceInput`] with the model moved in,
/// plus the further `ScopeSpans` of `build_trace_request_with`.
pub struct TraceParts {
    pub build: Build,
    pub clock: Clock,
    pub analytics: BuildAnalytics,
    pub trace_id: [u8; 16],
    pub resource: Resource,
    pub root_attributes: Vec<KeyValue>,
    pub max_attribute_len: u32,
    pub semconv_root_span: bool,
    pub pipeline_name: String,
    pub extra: Vec<ScopeSpans>,
    /// The compiles' clang traces (`TraceInput::clang`).
    pub clang: Option<BuildTraces>,
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
        let plan = TracePlan::make(&parts.build, &parts.clock, &parts.trace_id, parts.clang.as_ref());
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
            semconv_root_span: p.semconv_root_span,
            pipeline_name: &p.pipeline_name,
            clang: p.clang.as_ref(),
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
