//! Parsing core of the compiletools OpenTelemetry receiver.
//!
//! Data flows one way: files on disk → a typed model of the build
//! ([`timing`], plus the side files [`statslog`] and [`outcomes`]) → OTLP
//! protobuf bytes ([`otlp`]), with build [`analytics`] computed from the
//! model on the way. [`pipeline`] ties the steps together for one
//! invocation directory; [`ffi`] exposes that single call to the Go receiver
//! through a C ABI that never lets a panic escape. [`pytext`] holds the
//! Python text rules compiletools' own parsers follow.

pub mod analytics;
pub mod cancel;
pub mod cas;
pub mod error;
pub mod ffi;
pub mod ids;
pub mod input;
pub mod otlp;
pub mod outcomes;
pub mod pipeline;
pub mod pytext;
pub mod request;
pub mod statslog;
pub mod timing;
pub mod warnings;

pub use cancel::CancelToken;
pub use error::{Error, ErrorCode};
pub use pipeline::process_build;
pub use request::{BuildOutput, BuildRequest, Limits, Signals, Summary};
