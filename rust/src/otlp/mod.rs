//! Mapping of the build model to OTLP protobuf messages (prost types of the
//! `opentelemetry-proto` crate; never hand-rolled protobuf).

pub mod attributes;
pub mod resource;
pub mod root;
pub mod trace;

pub use resource::build_resource;
pub use root::root_attributes;
pub use trace::{build_trace_request, encode_trace_request, TraceInput, TraceStats};
