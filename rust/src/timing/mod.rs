//! `timing.json`: the model of one build and its lenient decoder.
//!
//! [`load`] is the entry point: bytes on disk → repaired text
//! ([`text`]) → typed model ([`decode`], [`model`]; [`decode_owned`] for a
//! large text, on two threads), which owns its data so that the text can
//! be freed right after decoding. The other
//! modules interpret the model: wall-clock times ([`clock`]), span names
//! ([`naming`]) and the root aggregates ([`aggregates`]).

pub mod aggregates;
pub mod clock;
pub mod decode;
mod json;
pub mod metadata;
pub mod model;
pub mod naming;
pub mod result;
mod splice;
mod split;
pub mod text;
mod two_halves;

use std::path::Path;

pub use aggregates::{BuildAggregates, CcacheHits};
pub use clock::{Clock, Interval};
pub use model::{Build, Event, EventId, Events, MetaValue, StrArray, CACHE_LAYER_KEY};
pub use result::{build_result, stopped_phase, BuildResult};
pub use text::{LenientText, TextScan};
pub use two_halves::decode_owned;

use crate::error::Error;
use crate::input::{read_bounded_split_scanning, InvocationDir};
use crate::limits::Limits;
use crate::warnings::Warnings;

/// File name of the timing document inside an invocation directory.
pub const TIMING_FILE: &str = "timing.json";

/// Reads `path` within `limits.max_file_bytes` and repairs its text; the
/// model is then decoded from the returned text with [`decode::decode`].
pub fn load(path: &Path, limits: &Limits, warnings: &mut Warnings) -> Result<LenientText, Error> {
    load_in(None, path, limits, warnings)
}

/// [`load`], with `path` opened relative to its open invocation directory.
pub fn load_in(
    dir: Option<&InvocationDir>,
    path: &Path,
    limits: &Limits,
    warnings: &mut Warnings,
) -> Result<LenientText, Error> {
    load_reserving_in(dir, path, limits, 0, warnings)
}

/// [`load_in`], the text's buffer reserved with `spare_quarters` quarters
/// of the file's size to spare, for a caller that reuses it as the output
/// buffer (see [`crate::input::read_bounded_reserving`]).
pub fn load_reserving_in(
    dir: Option<&InvocationDir>,
    path: &Path,
    limits: &Limits,
    spare_quarters: u64,
    warnings: &mut Warnings,
) -> Result<LenientText, Error> {
    let (bytes, scan) =
        read_bounded_split_scanning::<TextScan>(dir, path, limits.max_file_bytes, spare_quarters)?;
    let text = LenientText::from_scanned(bytes, &scan);
    for w in text.warnings() {
        warnings.push(format!("{}: {w}", path.display()));
    }
    Ok(text)
}
