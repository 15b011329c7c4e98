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
//! Python text rules compiletools' own parsers follow. A running build's
//! growing files take the same way: [`live`] reads their records and
//! `pipeline::live_records` has them encoded as OTLP logs.
//!
//! Module map, in the order of that flow: each module uses only modules
//! listed before it. `make check-rust-circles` keeps the flow one way: it
//! fails on any import circle, between modules or between the files of one.
//! 1. leaves: [`error`], [`warnings`], [`limits`] (bounds on input),
//!    [`cancel`], [`cores`], [`ids`] (trace and span ids), [`strings`],
//!    [`pytext`], [`retain`] (buffers kept between builds);
//! 2. [`input`]: reading files safely and within bounds;
//! 3. the models: [`timing`] (one build) and [`cas`] (one CAS store), then
//!    what reads or refines a build: [`statslog`], [`outcomes`],
//!    [`rebuild`] (why a compile ran, from the CAS names), [`history`] (the
//!    receiver's compile history), [`analytics`], [`live`] (a running
//!    build) and [`timetrace`] (clang's per-compile `-ftime-trace` files);
//! 4. [`request`]: what the receiver asks for and gets back;
//! 5. [`otlp`]: the models as OTLP protobuf;
//! 6. [`pipeline`]: the steps of one call, from files to bytes;
//! 7. [`ffi`]: the C ABI over the pipeline.
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
pub mod limits;
pub mod live;
pub mod otlp;
pub mod outcomes;
pub mod pipeline;
pub mod pytext;
pub mod rebuild;
pub mod request;
pub mod retain;
pub mod statslog;
pub mod strings;
pub mod timetrace;
pub mod timing;
pub mod warnings;

pub use cancel::CancelToken;
pub use error::{Error, ErrorCode};
pub use limits::Limits;
pub use pipeline::{process_build, scan_set};
pub use request::{
    BuildOutput, BuildRequest, CasCell, CasOutput, CasRequest, MetricIdentity, Signals, Summary, Vcs,
};
