//! Decoding a large timing.json on two threads.
//!
//! serde_json reads one byte after the other; at 100k rules that is about
//! half of the core's time. Nearly all of such a file is one array of
//! rules, so [`super::split`] cuts the text in that array: one thread
//! decodes the document with the array ending at the cut (the first
//! part), the other the array's remaining elements (the second part), and
//! [`super::splice`] puts the second model's events where the file has
//! them. The result is the model a decode in one piece gives, slot for
//! slot; whenever that cannot be shown (the cut was not where the
//! indentation suggested, the second part has something to warn about, a
//! limit would be crossed, the file is not JSON), this returns `Ok(None)`
//! and the caller decodes the text in one piece, which finds exactly what
//! the file has to say.

use std::path::Path;

use super::decode::{
    check_text_len, decode as decode_whole, decode_arrays, decode_first, ArrayPart, FirstPart, PartFailed,
};
use super::model::{Build, NO_EVENT};
use super::split::{self, SplitText};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::limits::Limits;
use crate::warnings::Warnings;

/// [`super::decode::decode`] for text the caller owns: a large file is
/// decoded by two threads (this module), which rewrite a few bytes of it
/// while they run. The text is the same again when this returns, and so
/// are the model, the warnings and the errors.
pub fn decode_owned(
    text: &mut String,
    path: &Path,
    limits: &Limits,
    cancel: &CancelToken,
    warnings: &mut Warnings,
) -> Result<Build, Error> {
    // Size first: asking for the CPUs reads cgroup files, which no small
    // build should pay for.
    if text.len() < split::MIN_SPLIT_TEXT || !crate::cores::second_core() {
        return decode_whole(text, path, limits, cancel, warnings);
    }
    check_text_len(text, path)?;
    match decode(text, split::MIN_SPLIT_TEXT, limits, cancel) {
        Ok(Some((build, w))) => {
            warnings.extend(w);
            Ok(build)
        }
        Err(PartFailed::Cancelled) => Err(Error::Cancelled),
        // Not shaped for a split, or something to report: one piece, which
        // finds exactly what a file has to say.
        Ok(None) | Err(PartFailed::NotDecoded) => decode_whole(text, path, limits, cancel, warnings),
    }
}

/// Decodes `text` in two parts when it is at least `min_len` bytes and
/// shaped for it; the text is restored before this returns.
pub(super) fn decode(
    text: &mut String,
    min_len: usize,
    limits: &Limits,
    cancel: &CancelToken,
) -> Result<Option<(Build, Warnings)>, PartFailed> {
    decode_with(text, |t| split::prepare(t, min_len), limits, cancel)
}

/// [`decode`] with the text cut by `prepare`.
fn decode_with(
    text: &mut String,
    prepare: impl FnOnce(&mut String) -> Option<SplitText>,
    limits: &Limits,
    cancel: &CancelToken,
) -> Result<Option<(Build, Warnings)>, PartFailed> {
    let Some(split) = prepare(text) else {
        return Ok(None);
    };
    let parts = decode_parts(text, &split, limits, cancel);
    split.restore(text);
    let (first, second) = parts?;
    Ok(join(first, second, limits))
}

/// Runs both decodes, the second part's on a scoped thread.
fn decode_parts(
    text: &str,
    split: &SplitText,
    limits: &Limits,
    cancel: &CancelToken,
) -> Result<(FirstPart, ArrayPart), PartFailed> {
    let mut arrays = Vec::with_capacity(2);
    if !split.between.is_empty() {
        arrays.push(split.between.as_str());
    }
    arrays.push(split.second(text));
    let second_len: usize = arrays.iter().map(|a| a.len()).sum();
    let (first, second) = std::thread::scope(|s| {
        let second = s.spawn(|| decode_arrays(&arrays, second_len, limits, cancel));
        let first = decode_first(split.first(text), text.len(), limits, cancel);
        // A panic on the second thread goes on here, where the FFI's
        // guard catches it as it would on this one.
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    });
    match (first, second) {
        (Ok(first), Ok(second)) => Ok((first, second)),
        (Err(PartFailed::Cancelled), _) | (_, Err(PartFailed::Cancelled)) => Err(PartFailed::Cancelled),
        _ => Err(PartFailed::NotDecoded),
    }
}

/// The whole file's model, or `None` when the parts do not show it.
fn join(first: FirstPart, second: ArrayPart, limits: &Limits) -> Option<(Build, Warnings)> {
    let cut = first.cut?;
    // Its warnings would name elements by their index and depth in the
    // part; the whole decode names them right.
    if !second.warnings.is_empty() {
        return None;
    }
    if first.events + second.events > limits.max_events || cut.depth - 1 + second.deepest > limits.max_depth {
        return None;
    }
    let mut build = first.build;
    let base = build.splice_events(cut.events_before, second.build);
    let mut last = cut.last;
    let mut index = cut.index;
    for &first_of_array in &second.firsts {
        if first_of_array == NO_EVENT {
            continue;
        }
        let first_id = first_of_array + base;
        build.link_sibling(last, first_id);
        index = index.saturating_add(build.shift_indexes(first_id, index));
        last = build.last_sibling(first_id);
    }
    Some((build, first.warnings))
}

#[cfg(test)]
mod tests;
