//! The core's two entry points, from files on disk to OTLP bytes: one build
//! ([`process_build`]: timing.json and its side files to a trace and ccache
//! metrics) and one CAS store set ([`scan_set`]: cells to gauges or a
//! snapshot span). The C ABI in `ffi` only decodes a request for them and
//! fills in what they return; tests, examples and benches call them
//! directly.

mod alongside;
mod build;
mod cas;
mod history;
mod identity;
mod live;
mod time_trace;

pub use build::{open_build, process_build, BuildStream};
pub use cas::scan_set;
pub use live::live_records;
// Where the file name has always been public; the timing module owns it.
pub use crate::timing::TIMING_FILE;
