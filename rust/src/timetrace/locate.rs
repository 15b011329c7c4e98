//! Where compiletools leaves the trace of one compile, and whether a trace
//! found there belongs to the build being read.
//!
//! With the `time-trace` variant axis clang writes its trace beside the
//! `-o` it was given, a temporary that is renamed to the object after, so
//! the trace is that temporary's name with `.json` appended (found by real
//! ct-cake 13.1.4 builds with clang 14):
//! * shake backend: the temporary is `<object>.<ct-cake pid>.<4 hex>`, so
//!   the trace is `<object>.<pid>.<4 hex>.json`, a new file per compile,
//!   never removed ([`TraceNaming::Shake`]);
//! * make and ninja backends when util-linux `flock` is on PATH: the
//!   temporary is `<object>.compiletools`, so the trace is
//!   `<object>.compiletools.json`, overwritten by every compile of that
//!   object in any build ([`TraceNaming::Flock`]);
//! * make and ninja backends without `flock`, where each rule runs through
//!   `ct-lock-helper`: the temporary is `<object>.<helper pid>.<4 hex>`,
//!   the pid of that compile's helper, not ct-cake's
//!   ([`TraceNaming::LockHelper`]): new files, never removed.
//!
//! Where the name cannot tell this build's trace from another build's
//! (`Flock`: overwritten; `LockHelper`: any pid), check the trace's time
//! against the rule's ([`in_window`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::{TraceError, TraceLimits};
use super::model::TraceUnit;
use super::parse::parse_trace;

/// How the backend that ran the compile names the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceNaming {
    /// Shake backend: `<object>.<pid>.<4 hex>.json`, `pid` the build's
    /// ct-cake process id (the invocation id's suffix).
    Shake { pid: u32 },
    /// Make or ninja backend with util-linux `flock`: `<object>.compiletools.json`.
    Flock,
    /// Make or ninja backend through `ct-lock-helper`:
    /// `<object>.<any pid>.<4 hex>.json`.
    LockHelper,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located<'a> {
    Found(&'a str),
    Missing,
    /// Several files fit (`LockHelper`: every build's compile of the object;
    /// shake: the same object compiled twice under one pid); [`in_window`]
    /// tells them apart.
    Ambiguous(Vec<&'a str>),
}

/// The trace name, with `flock`, for the object file named `object`.
pub fn flock_trace_name(object: &str) -> String {
    format!("{object}.compiletools.json")
}

/// Whether `candidate` is the shake backend's trace of `object` compiled by
/// ct-cake process `pid`: `<object>.<pid>.<4 lowercase hex>.json`.
pub fn is_shake_trace_name(object: &str, pid: u32, candidate: &str) -> bool {
    pid_in_trace_name(object, candidate).is_some_and(|p| p == pid)
}

/// The pid in `<object>.<pid>.<4 lowercase hex>.json`, if `candidate` is
/// that name.
pub fn pid_in_trace_name(object: &str, candidate: &str) -> Option<u32> {
    let rest = candidate
        .strip_prefix(object)?
        .strip_prefix('.')?
        .strip_suffix(".json")?;
    let (pid_text, hex) = rest.split_once('.')?;
    let hex_ok = hex.len() == 4 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    // A pid as Python prints it: decimal, no sign, no leading zero.
    let pid_ok =
        !pid_text.is_empty() && pid_text.bytes().all(|b| b.is_ascii_digit()) && !pid_text.starts_with('0');
    if !(hex_ok && pid_ok) {
        return None;
    }
    pid_text.parse().ok()
}

/// The trace of the object file named `object` among `listing`, the file
/// names of the object's directory.
pub fn locate<'a>(
    object: &str,
    naming: TraceNaming,
    listing: impl IntoIterator<Item = &'a str>,
) -> Located<'a> {
    let mut found: Vec<&'a str> = match naming {
        TraceNaming::Flock => {
            let name = flock_trace_name(object);
            listing.into_iter().filter(|n| *n == name).take(1).collect()
        }
        TraceNaming::Shake { pid } => listing
            .into_iter()
            .filter(|n| is_shake_trace_name(object, pid, n))
            .collect(),
        TraceNaming::LockHelper => listing
            .into_iter()
            .filter(|n| pid_in_trace_name(object, n).is_some())
            .collect(),
    };
    match found.len() {
        0 => Located::Missing,
        1 => Located::Found(found.remove(0)),
        _ => {
            found.sort_unstable();
            Located::Ambiguous(found)
        }
    }
}

/// A compile rule's time span on the wall clock, µs since the Unix epoch
/// (timing.json's monotonic times converted as in the format formats.md §2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleWindow {
    pub start_us: i64,
    pub end_us: i64,
    /// The build's end: every compile of this build ended by then. ninja's
    /// rule times are its own, shifted by its start-up, which on a loaded
    /// machine makes every rule look hundreds of ms early (measured: the
    /// traces of one real ninja build all ended 280–285 ms after their
    /// rules, past the slack), so the end of the trace is held to the
    /// build's end instead of the rule's. Another build's trace still does
    /// not fit: an earlier build's compile started before this rule (the
    /// start bound is the rule's), a later build's ended after this one.
    pub build_end_us: i64,
}

impl RuleWindow {
    /// Slack for [`in_window`]. Measured on real builds: a trace starts
    /// 20-640 ms after its rule (the later with `ct-lock-helper` on a loaded
    /// machine) and, with shake or make, ends 5-270 ms before it; ninja's
    /// rules, whose times are ninja's own shifted by its start-up, look
    /// early, so their traces end up to 61 ms after the rule. Another
    /// build's compile of the same object is seconds away (ct-cake's
    /// start-up alone is most of a second).
    // A function, not a constant: cbindgen puts every public integer
    // constant of the crate in the C header.
    pub const fn default_slack_us() -> i64 {
        250_000
    }
}

/// Whether the compile the trace records started within `slack_us` before
/// the rule and ended by the rule's or the build's end (whichever is
/// later), give or take `slack_us`. A trace without `beginningOfTime`
/// never fits.
pub fn in_window(unit: &TraceUnit, window: RuleWindow, slack_us: i64) -> bool {
    let Some((start, end)) = unit.compile_span_us() else {
        return false;
    };
    let latest_end = window.end_us.max(window.build_end_us);
    start >= window.start_us.saturating_sub(slack_us) && end <= latest_end.saturating_add(slack_us)
}

/// The names of the files in `dir`, at most `max_entries` of them (a shake
/// shard directory keeps every trace ever written: it only grows).
/// Names that are not UTF-8 cannot be trace names and are left out.
pub fn list_names(dir: &Path, max_entries: usize) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)?.take(max_entries) {
        if let Ok(name) = entry?.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Reads and parses the trace at `path`: opened without following a
/// symlink in its name and without blocking on a FIFO, and refused past
/// `limits.max_bytes` before reading (see `crate::input`).
pub fn read_trace(path: &Path, limits: &TraceLimits) -> Result<TraceUnit, TraceError> {
    read_trace_owned_by(path, limits, None)
}

/// [`read_trace`] of a trace that must belong to the user `owner` (when
/// given), checked on the open descriptor: another user's file is an I/O
/// error, never read (see `crate::input::read_bounded_owned_by`).
pub fn read_trace_owned_by(
    path: &Path,
    limits: &TraceLimits,
    owner: Option<u32>,
) -> Result<TraceUnit, TraceError> {
    let bytes = crate::input::read_bounded_owned_by(path, limits.max_bytes, owner).map_err(|e| match e {
        crate::Error::LimitExceeded { .. } => TraceError::TooLarge {
            bytes: fs::symlink_metadata(path).map_or(0, |m| m.len()),
            max: limits.max_bytes,
        },
        e => TraceError::Io(e),
    })?;
    parse_trace(&bytes, limits)
}

/// The path of the trace of the compile whose `-o` was `target`, found in
/// the target's directory (listing at most `max_entries` names).
pub fn find_trace(
    target: &Path,
    naming: TraceNaming,
    max_entries: usize,
) -> io::Result<Option<Vec<PathBuf>>> {
    let (Some(dir), Some(object)) = (target.parent(), target.file_name().and_then(|n| n.to_str())) else {
        return Ok(None);
    };
    let names = list_names(dir, max_entries)?;
    Ok(match locate(object, naming, names.iter().map(String::as_str)) {
        Located::Missing => None,
        Located::Found(name) => Some(vec![dir.join(name)]),
        Located::Ambiguous(found) => Some(found.into_iter().map(|n| dir.join(n)).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJ: &str = "util_9ccc0c05943c_343461f7629959_c8791e4fb5410122.o";

    #[test]
    fn shake_names() {
        let name = format!("{OBJ}.11761.d462.json");
        assert!(is_shake_trace_name(OBJ, 11761, &name));
        assert!(!is_shake_trace_name(OBJ, 1176, &name));
        assert!(!is_shake_trace_name(OBJ, 11761, &format!("{OBJ}.11761.d46.json")));
        assert!(!is_shake_trace_name(
            OBJ,
            11761,
            &format!("{OBJ}.11761.D462.json")
        ));
        assert!(!is_shake_trace_name(
            OBJ,
            11761,
            &format!("{OBJ}.11761.d462.jsonx")
        ));
        assert!(!is_shake_trace_name(
            OBJ,
            11761,
            &format!("x{OBJ}.11761.d462.json")
        ));
        assert!(!is_shake_trace_name(
            OBJ,
            11761,
            &format!("{OBJ}.compiletools.json")
        ));
        assert!(!is_shake_trace_name(OBJ, 11761, OBJ));
        assert!(!is_shake_trace_name(
            OBJ,
            11761,
            &format!("{OBJ}.011761.d462.json")
        ));
        assert_eq!(
            pid_in_trace_name(OBJ, &format!("{OBJ}.26417.c2d6.json")),
            Some(26417)
        );
        assert_eq!(pid_in_trace_name(OBJ, &format!("{OBJ}.+1.c2d6.json")), None);
        assert_eq!(
            pid_in_trace_name(OBJ, &format!("{OBJ}.99999999999.c2d6.json")),
            None
        );
    }

    #[test]
    fn the_window_starts_at_the_rule_and_ends_with_the_build() {
        let unit = |start: i64, dur: i64| {
            let doc = format!(
                r#"{{"beginningOfTime": {start}, "traceEvents": [{{"pid":1,"tid":1,"ph":"X","name":"ExecuteCompiler","ts":0,"dur":{dur}}}]}}"#
            );
            crate::timetrace::parse_trace(doc.as_bytes(), &TraceLimits::default())
        };
        let window = RuleWindow {
            start_us: 10_000_000,
            end_us: 11_000_000,
            build_end_us: 20_000_000,
        };
        let slack = RuleWindow::default_slack_us();
        let fits = |start: i64, dur: i64| unit(start, dur).is_ok_and(|u| in_window(&u, window, slack));
        assert!(fits(10_100_000, 800_000), "inside the rule");
        // ninja on a loaded machine: the rule looks 300 ms early.
        assert!(
            fits(10_300_000, 1_000_000),
            "ends after the rule, before the build's end"
        );
        assert!(
            !fits(9_700_000, 500_000),
            "started before the rule: an earlier build's"
        );
        assert!(
            !fits(19_900_000, 500_000),
            "ended after the build: a later build's"
        );
        let no_build_end = RuleWindow {
            build_end_us: 0,
            ..window
        };
        assert!(unit(10_300_000, 900_000).is_ok_and(|u| in_window(&u, no_build_end, slack)));
        assert!(!unit(10_300_000, 1_000_000).is_ok_and(|u| in_window(&u, no_build_end, slack)));
    }

    #[test]
    fn locate_by_backend() {
        let shake = format!("{OBJ}.11761.d462.json");
        let other_build = format!("{OBJ}.999.0a0b.json");
        let flock = flock_trace_name(OBJ);
        let listing = [OBJ, shake.as_str(), other_build.as_str(), flock.as_str()];
        assert_eq!(
            locate(OBJ, TraceNaming::Shake { pid: 11761 }, listing),
            Located::Found(shake.as_str())
        );
        assert_eq!(
            locate(OBJ, TraceNaming::Shake { pid: 999 }, listing),
            Located::Found(other_build.as_str())
        );
        assert_eq!(
            locate(OBJ, TraceNaming::Shake { pid: 5 }, listing),
            Located::Missing
        );
        assert_eq!(
            locate(OBJ, TraceNaming::Flock, listing),
            Located::Found(flock.as_str())
        );
        assert_eq!(locate("other.o", TraceNaming::Flock, listing), Located::Missing);
        assert_eq!(
            locate(OBJ, TraceNaming::LockHelper, listing),
            Located::Ambiguous(vec![shake.as_str(), other_build.as_str()])
        );
        let twice = format!("{OBJ}.11761.0000.json");
        let listing = [shake.as_str(), twice.as_str()];
        assert_eq!(
            locate(OBJ, TraceNaming::Shake { pid: 11761 }, listing),
            Located::Ambiguous(vec![twice.as_str(), shake.as_str()])
        );
    }
}
