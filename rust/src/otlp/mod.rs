//! Mapping of the build model to OTLP protobuf messages (prost types of the
//! `opentelemetry-proto` crate; never hand-rolled protobuf): the build's
//! trace ([`trace`], root attributes in [`root`], build analytics in
//! [`analytics`]), the ccache metrics
//! ([`metrics`]) or their metrics-as-spans form ([`snapshot`]).

pub mod analytics;
pub mod attributes;
pub mod metrics;
pub mod resource;
pub mod root;
pub mod snapshot;
pub mod trace;

pub use analytics::analytics_root_attributes;
pub use metrics::{build_metrics_request, encode_metrics_request, MetricsInput};
pub use resource::{build_resource, store_resource, with_invocation_id};
pub use root::{ccache_attributes, root_attributes, root_attributes_with_ccache};
pub use snapshot::{snapshot_scope_spans, SnapshotInput};
pub use trace::{
    build_trace_request, build_trace_request_with, encode_trace_request, encode_trace_request_into,
    encode_trace_request_with, TraceInput, TraceStats,
};
