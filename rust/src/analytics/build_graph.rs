//! Finding and reading the build file that holds a build's dependency
//! graph: the receiver names it per build (`BuildRequest::build_graph`, from
//! its `analytics.build_graphs` setting), the build's backend says how to
//! read it.
//!
//! | backend | file | method |
//! |---|---|---|
//! | ninja | the generated `build.ninja` (in ct-cake's cwd) | `ninja_graph` |
//! | make | the generated Makefile (`<bindir>/Makefile`) | `make_graph` |
//! | shake, cmake, bazel, others | — (no graph on disk) | `estimate` |
//!
//! The file is read like every other input: bounded by the file size limit,
//! never through a symbolic link (its directory is opened without following
//! one, the file relative to it), never waiting on a FIFO; and as a stream,
//! never whole (see `build_file_lines`), its logical lines bounded. The
//! graph's memory is bounded too (`dep_graph::memory_limit`, which the
//! receiver counts in its parse budget): past either bound the critical
//! path is the estimate, with one warning.
//! It describes the latest ct-cake run in its directory, not necessarily
//! this build, so it is used only when it was not rewritten after this
//! build's `timing.json` and when it lists every rule the build ran (both
//! checked here and in [`super::analyze_with`]); otherwise the critical
//! path stays the estimate, with a warning.

use std::fs::File;
use std::io::{BufReader, Read, Take};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::dep_graph::{memory_limit, DepGraph};
use super::{makefile, ninja_file};
use crate::input::open_in_own_directory;
use crate::timing::Build;
use crate::warnings::Warnings;

/// Placeholder in a configured path for the build's variant (the make
/// backend's Makefile sits in `bin/<variant>/`).
pub(crate) const VARIANT_PLACEHOLDER: &str = "{variant}";

/// Slack on the "not rewritten after this build" check: file systems
/// with coarse timestamps.
const MTIME_SLACK: Duration = Duration::from_secs(1);

/// How the critical path was found (`ct.build.critical_path.method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathMethod {
    /// From the timing alone (see `critical_path`).
    #[default]
    Estimate,
    /// Exact, through the generated `build.ninja`.
    NinjaGraph,
    /// Exact, through the generated Makefile.
    MakeGraph,
}

impl PathMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Estimate => "estimate",
            Self::NinjaGraph => "ninja_graph",
            Self::MakeGraph => "make_graph",
        }
    }
}

/// A build file reader.
type Parser = fn(&mut Reader, usize) -> Result<DepGraph, super::dep_graph::GraphError>;

/// The file as the readers see it: a stream, capped one byte past the limit
/// so that a file growing while it is read is noticed.
type Reader = BufReader<Take<File>>;

/// Read buffer of the stream.
const READ_BUFFER: usize = 1 << 20;

/// A build's dependency graph and where it came from.
#[derive(Debug)]
pub struct BuildGraph {
    pub graph: DepGraph,
    pub method: PathMethod,
    pub path: PathBuf,
}

/// Reads the graph named by `template` for `build`, or `None` (with a
/// warning when the receiver named a file that cannot be used).
/// `timing_modified` is the mtime of the build's `timing.json`.
pub fn load(
    template: &Path,
    build: &Build,
    timing_modified: Option<SystemTime>,
    max_file_bytes: u64,
    warnings: &mut Warnings,
) -> Option<BuildGraph> {
    let (method, parse): (PathMethod, Parser) = match build.backend.as_str() {
        "ninja" => (PathMethod::NinjaGraph, |r, m| ninja_file::parse(r, m)),
        "make" => (PathMethod::MakeGraph, |r, m| makefile::parse(r, m)),
        // No graph on disk for the other backends: the setting does not apply.
        _ => return None,
    };
    let refuse = |warnings: &mut Warnings, path: &Path, why: &str| {
        warnings.push(format!(
            "build graph {} not used, critical path estimated: {why}",
            path.display()
        ));
        None
    };
    let path = match expand(template, &build.variant) {
        Ok(path) => path,
        Err(why) => return refuse(warnings, template, why),
    };
    let file = match open_in_own_directory(&path) {
        Ok(file) => file,
        Err(e) => return refuse(warnings, &path, &e.to_string()),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return refuse(warnings, &path, &e.to_string()),
    };
    if !meta.is_file() {
        return refuse(warnings, &path, "not a regular file; not read");
    }
    if meta.len() > max_file_bytes {
        let why = format!("file is {} bytes, limit is {max_file_bytes}", meta.len());
        return refuse(warnings, &path, &why);
    }
    if let (Some(built), Ok(modified)) = (timing_modified, meta.modified()) {
        if modified > built + MTIME_SLACK {
            return refuse(
                warnings,
                &path,
                "rewritten after this build (a later run in the same directory)",
            );
        }
    }
    let mut reader = BufReader::with_capacity(READ_BUFFER, file.take(max_file_bytes.saturating_add(1)));
    let parsed = parse(&mut reader, memory_limit(meta.len()));
    if reader.get_ref().limit() == 0 {
        return refuse(warnings, &path, "grew past the size limit while it was read");
    }
    match parsed {
        Ok(graph) => Some(BuildGraph { graph, method, path }),
        Err(e) => refuse(warnings, &path, &e.to_string()),
    }
}

/// `template` with [`VARIANT_PLACEHOLDER`] replaced. The variant comes from
/// the build's file, so one that could leave the directory is refused.
fn expand(template: &Path, variant: &str) -> Result<PathBuf, &'static str> {
    let Some(text) = template.to_str().filter(|t| t.contains(VARIANT_PLACEHOLDER)) else {
        return Ok(template.to_path_buf());
    };
    if variant.is_empty() || variant == "." || variant == ".." || variant.contains(['/', '\0']) {
        return Err("the build's variant cannot name a directory");
    }
    Ok(PathBuf::from(text.replace(VARIANT_PLACEHOLDER, variant)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_that_leave_the_directory_are_refused() {
        let t = Path::new("/ws/bin/{variant}/Makefile");
        assert_eq!(
            expand(t, "gcc.debug").unwrap(),
            Path::new("/ws/bin/gcc.debug/Makefile")
        );
        for bad in ["", "..", "a/../../etc", "x\0"] {
            assert!(expand(t, bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            expand(Path::new("/ws/build.ninja"), "..").unwrap(),
            Path::new("/ws/build.ninja")
        );
    }
}
