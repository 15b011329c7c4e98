//! Mapping of the models to OTLP protobuf messages (prost types of the
//! `opentelemetry-proto` crate; never hand-rolled protobuf), the only place
//! that builds them: the build's trace ([`trace`], root attributes in
//! [`root`]), the ccache metrics ([`metrics`]) or their metrics-as-spans
//! form ([`snapshot`]), the build metrics ([`build_metrics`], histograms
//! with exemplars in [`histogram`]), a build's clang traces' rollup
//! ([`clang`]), and the CAS gauges or snapshot span ([`cas`]); all
//! on one vocabulary of attributes ([`attributes`]), resources
//! ([`resource`]) and scopes ([`scope`]).

pub mod analytics;
pub mod attributes;
pub mod build_metrics;
pub mod cas;
pub mod clang;
pub mod histogram;
pub mod history;
pub mod logs;
pub mod metrics;
pub mod outcome;
pub mod rebuild;
pub mod resource;
pub mod root;
pub mod scope;
pub mod semconv;
pub mod snapshot;
pub mod sum_request;
pub mod trace;
mod wire;

pub use analytics::analytics_root_attributes;
pub use build_metrics::{build_scope_metrics, BuildMetricsInput};
pub use cas::{
    build_cas_metrics_request, build_cas_snapshot_span_request, encode_cas_metrics_request,
    encode_cas_snapshot_span_request,
};
pub use metrics::{build_metrics_request, ccache_scope_metrics, encode_metrics_request, MetricsInput};
pub use resource::{build_resource, host_resource, store_resource, with_invocation_id};
pub use root::{ccache_attributes, root_attributes, root_attributes_with_ccache};
pub use snapshot::{snapshot_scope_spans, SnapshotInput};
/// The reference encoder, for the tests and the fuzzer (see [`trace`]).
#[cfg(any(test, fuzzing, feature = "reference-encoder"))]
pub use trace::{build_trace_request, build_trace_request_with};
pub use trace::{
    encode_trace_request, encode_trace_request_into, encode_trace_request_with, TraceChunks, TraceInput,
    TraceParts, TraceStats,
};
