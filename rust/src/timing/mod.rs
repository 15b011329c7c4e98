//! `timing.json`: the model of one build and its lenient decoder.
//!
//! [`load`] is the entry point: bytes on disk → repaired text
//! ([`text`]) → typed model ([`decode`], [`model`]), which owns its data so
//! that the text can be freed right after decoding. The other
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
pub mod text;

use std::path::Path;

pub use aggregates::{BuildAggregates, CcacheHits};
pub use clock::Clock;
pub use model::{Build, Event, EventId, Events, MetaValue, StrArray, CACHE_LAYER_KEY};
pub use result::{build_result, BuildResult};
pub use text::LenientText;

use crate::error::Error;
use crate::input::read_bounded;
use crate::request::Limits;
use crate::warnings::Warnings;

/// Reads `path` within `limits.max_file_bytes` and repairs its text; the
/// model is then decoded from the returned text with [`decode::decode`].
pub fn load(path: &Path, limits: &Limits, warnings: &mut Warnings) -> Result<LenientText, Error> {
    let bytes = read_bounded(path, limits.max_file_bytes)?;
    let text = LenientText::from_bytes(bytes);
    for w in text.warnings() {
        warnings.push(format!("{}: {w}", path.display()));
    }
    Ok(text)
}
