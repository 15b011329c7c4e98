//! One invocation directory in, OTLP bytes out.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::cancel::CancelToken;
use crate::error::Error;
use crate::ids;
use crate::otlp::{build_resource, encode_trace_request, root_attributes, TraceInput};
use crate::request::{BuildOutput, BuildRequest, Summary};
use crate::timing::{self, aggregates, Clock};
use crate::warnings::Warnings;

/// File name of the timing document inside an invocation directory.
pub const TIMING_FILE: &str = "timing.json";

/// Reads the build in `req.invocation_dir` and returns its OTLP requests.
pub fn process_build(req: &BuildRequest, cancel: &CancelToken) -> Result<BuildOutput, Error> {
    cancel.check()?;
    let path = req.invocation_dir.join(TIMING_FILE);
    let mut warnings = Warnings::new();
    let text = timing::load(&path, &req.limits, &mut warnings)?;
    let build = timing::decode::decode(&text.text, &path, &req.limits, cancel, &mut warnings)?;
    cancel.check()?;

    let mut output = BuildOutput::default();
    if req.signals.traces {
        let clock = Clock::for_build(&build).map_err(|e| Error::Malformed {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let dir = canonical_dir(&req.invocation_dir);
        let invocation_id = invocation_id(&dir);
        let trace_id = ids::trace_id(
            &req.host_name,
            &path_bytes(&dir),
            build.timestamp.as_deref().unwrap_or(""),
        );
        // The statslog is not parsed yet: H = 0 until it is.
        let aggregates = aggregates::compute(&build, None);
        let input = TraceInput {
            build: &build,
            clock: &clock,
            trace_id,
            resource: build_resource(req, &build, &invocation_id, &mut warnings),
            root_attributes: root_attributes(&aggregates, req.limits.max_attribute_len),
            max_attribute_len: req.limits.max_attribute_len,
        };
        let size_hint = text.text.len();
        let (bytes, stats) = encode_trace_request(input, size_hint, &mut warnings);
        output.traces = Some(bytes);
        output.summary.spans = stats.spans;
        output.summary.unanchored_rules = stats.unanchored_rules;
        output.summary.dropped_attributes = stats.dropped_attributes;
    }
    output.summary = Summary {
        warnings: warnings.into_lines(),
        ..output.summary
    };
    Ok(output)
}

/// The invocation directory as the trace id names it: canonical (symlinks
/// resolved, absolute), or as given when it cannot be canonicalised.
fn canonical_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The directory name, which is the invocation id (spec §1.2).
fn invocation_id(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    match p.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}
