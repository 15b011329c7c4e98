//! Live builds: what a build's growing files say while it still runs
//! (issue 16). The receiver hands over the bytes appended to one file since
//! its last look; this module turns the complete records among them into
//! events and says how many bytes it consumed, so a torn last line (or a
//! record beyond the per-call cap) is read again next time.
//!
//! Files (formats.md §1.6, §4, §7): an auto `ccache.statslog` (one block per
//! compiler call, [`statslog`]), the make backend's
//! `.ct-make-timing.<pid>.*.jsonl` (one JSON line per finished recipe,
//! [`make_timing`]) and ninja's `.ninja_log` ([`ninja_log`]). The start and
//! end of a build are events too; the end carries the final trace's ids
//! ([`end`]). `crate::pipeline::live_records` runs one call and has the
//! events encoded as OTLP log records (`crate::otlp::logs`).

pub mod end;
pub mod make_timing;
pub mod ninja_log;
pub mod statslog;

use std::path::PathBuf;

use crate::limits::Limits;
use crate::statslog::Primary;

/// Which file the appended bytes come from, or which build event to emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveKind {
    Statslog,
    MakeTiming,
    NinjaLog,
    BuildStart,
    BuildEnd,
}

/// One live call.
#[derive(Debug, Clone)]
pub struct LiveRequest<'a> {
    pub kind: LiveKind,
    /// The invocation directory of the build.
    pub invocation_dir: PathBuf,
    pub host_name: String,
    /// `service.name`; empty: compiletools' default.
    pub service_name: String,
    pub resource_attributes: Vec<(String, String)>,
    /// Bytes appended to the file since the last call (file kinds only).
    pub data: &'a [u8],
    /// No more bytes will come (the build ended): a last line without its
    /// newline is a record too.
    pub final_chunk: bool,
    /// `BuildEnd`: the build died without `timing.json`.
    pub abandoned: bool,
    /// `BuildEnd`: the build's trace was delivered, so link to it.
    pub link_trace: bool,
    /// When the receiver read the bytes, Unix ns.
    pub observed_unix_nano: u64,
    /// Most records this call returns; 0: no cap.
    pub max_records: usize,
    pub limits: Limits,
}

/// What one finished compile, recipe or ninja edge, or a build's start or
/// end, says.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// A statslog block: one compiler call through ccache.
    Compile {
        source: String,
        outcome: Option<Primary>,
    },
    /// A make recipe with its wall-clock times (`None`: the file said 0).
    Recipe {
        target: String,
        start_unix_ns: Option<i64>,
        end_unix_ns: Option<i64>,
    },
    /// A ninja edge, times in ms since ninja started (no wall clock in the file).
    NinjaEdge {
        target: String,
        start_ms: i64,
        end_ms: i64,
    },
    BuildStart,
    BuildEnd {
        abandoned: bool,
        /// The build trace's trace id and root span id.
        trace: Option<([u8; 16], [u8; 8])>,
        /// The build's end (`timing.json`'s `timestamp`), Unix ns.
        end_unix_ns: Option<i64>,
    },
}

/// Live compiles counted by their ccache outcome, for the receiver's counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    pub direct_hits: u64,
    pub preprocessed_hits: u64,
    pub misses: u64,
    /// Calls without a primary outcome (failed, uncacheable, probes).
    pub uncacheable: u64,
}

impl OutcomeCounts {
    pub(crate) fn add(&mut self, outcome: Option<Primary>) {
        match outcome {
            Some(Primary::DirectCacheHit) => self.direct_hits += 1,
            Some(Primary::PreprocessedCacheHit) => self.preprocessed_hits += 1,
            Some(Primary::CacheMiss) => self.misses += 1,
            None => self.uncacheable += 1,
        }
    }
}

/// The records one file's appended bytes held.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    pub events: Vec<LiveEvent>,
    /// Bytes of the input consumed: complete records up to the cap.
    pub consumed: usize,
    /// Lines that were not records (torn, invalid JSON, too few fields).
    pub skipped: u64,
}

/// What one live call returns.
#[derive(Debug, Default)]
pub struct LiveOutput {
    /// `ExportLogsServiceRequest`; `None` when there is no record.
    pub logs: Option<Vec<u8>>,
    pub consumed: u64,
    pub records: u64,
    pub skipped: u64,
    pub outcomes: OutcomeCounts,
    pub warnings: Vec<String>,
}

/// The complete lines of `data` (through the last `\n`), or all of it when
/// no more will come.
pub(crate) fn complete_part(data: &[u8], final_chunk: bool) -> &[u8] {
    if final_chunk {
        return data;
    }
    match memchr::memrchr(b'\n', data) {
        Some(i) => &data[..=i],
        None => &[],
    }
}

/// Lines of `data` with the offset just past each one (its `\n` included).
pub(crate) fn lines_with_ends(data: &[u8]) -> impl Iterator<Item = (&[u8], usize)> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= data.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i + 1);
        let line = &data[start..end];
        start = end;
        Some((line, end))
    })
}

/// compiletools' fallback classification of a make or ninja target by its
/// extension (formats.md §7.1): the build graph is not at hand while it runs.
pub fn rule_type_of(target: &str) -> &'static str {
    let name = target.rsplit('/').next().unwrap_or(target);
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("o" | "obj") => "compile",
        Some("a" | "lib") => "static_library",
        Some("so" | "dylib" | "dll") => "shared_library",
        Some("exe") | None => "link",
        Some(_) => "other",
    }
}

/// Whether a cap of `max` (0: none) is reached with `n` records.
pub(crate) fn capped(n: usize, max: usize) -> bool {
    max > 0 && n >= max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_part_stops_at_the_last_newline_unless_final() {
        assert_eq!(complete_part(b"a\nb", false), b"a\n");
        assert_eq!(complete_part(b"a\nb", true), b"a\nb");
        assert_eq!(complete_part(b"ab", false), b"");
    }

    #[test]
    fn targets_are_classified_by_extension() {
        let got: Vec<_> = [
            "/o/a.o",
            "x.obj",
            "lib/libm.a",
            "libz.so",
            "bin/app",
            "t.exe",
            "gen.h",
            "dir.d/app",
        ]
        .iter()
        .map(|t| rule_type_of(t))
        .collect();
        assert_eq!(
            got,
            [
                "compile",
                "compile",
                "static_library",
                "shared_library",
                "link",
                "link",
                "other",
                "link"
            ]
        );
    }

    #[test]
    fn lines_carry_their_end_offsets() {
        let got: Vec<_> = lines_with_ends(b"a\nbc\nd").collect();
        assert_eq!(got, vec![(&b"a\n"[..], 2), (&b"bc\n"[..], 5), (&b"d"[..], 6)]);
    }
}
