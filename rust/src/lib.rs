//! Parsing core of the compiletools OpenTelemetry receiver.
//!
//! Data flows one way: files on disk → a typed model of the build
//! ([`timing`], plus the side files [`statslog`] and [`outcomes`]) or of a
//! CAS store ([`cas`]) → OTLP protobuf bytes ([`otlp`]), with build
//! [`analytics`] computed from the build model on the way. [`pipeline`] ties
//! the steps together for one invocation directory ([`process_build`]) and
//! for one CAS store set ([`scan_set`]); [`ffi`] exposes those two calls to
//! the Go receiver through a C ABI that never lets a panic escape, and only
//! decodes their requests and fills in their results. [`pytext`] holds the
//! Python text rules compiletools' own parsers follow.
//!
//! Unsafe code is refused everywhere but in the two places that need it:
//! the C ABI ([`ffi`]) and the huge-page advice (`input::pages`). Every
//! unsafe operation sits in its own `unsafe` block with a `SAFETY:` comment,
//! also inside `unsafe fn` (`unsafe_op_in_unsafe_fn` and clippy's
//! `undocumented_unsafe_blocks`, denied for every target in Cargo.toml).
#![deny(unsafe_code)]

pub mod analytics;
pub mod cancel;
pub mod cas;
pub mod cores;
pub mod error;
#[allow(unsafe_code)] // the C ABI: raw pointers from Go
pub mod ffi;
pub mod history;
pub mod ids;
pub mod input;
pub mod live;
pub mod otlp;
pub mod outcomes;
pub mod pipeline;
pub mod pytext;
pub mod request;
pub mod retain;
pub mod statslog;
pub mod timetrace;
pub mod timing;
pub mod warnings;

pub use cancel::CancelToken;
pub use error::{Error, ErrorCode};
pub use pipeline::{process_build, scan_set};
pub use request::{
    BuildOutput, BuildRequest, CasCell, CasOutput, CasRequest, Limits, MetricIdentity, Signals, Summary, Vcs,
};
