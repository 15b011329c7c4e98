//! How each span of a build ended, as far as the files decide it
//! (docs/telemetry.md "Standard names"). The build's result comes from its
//! phases ([`build_result`]); from it follow the status of the root span
//! and of the phase a failed build stopped in, and each rule's task result.
//!
//! A rule's own failure is never in the files: shake records a rule only
//! once its command returned (compiletools 13.1.4 `trace_backend`:
//! `_record_rule_timing` runs after `execute_*_rule`, which raises on a
//! failed command), and make and ninja builds that fail record no rules at
//! all (formats.md §7.1, §7.2). So every recorded rule that is not a test
//! finished its command: `success`. A test is the exception: shake records
//! a test rule whatever its exit code (the build fails afterwards), so a
//! test's result is `success` only in a build that succeeded, and unknown
//! (absent, never guessed) in any other.

use crate::strings::truncate;
use crate::timing::{build_result, stopped_phase, Build, BuildResult, EventId};

/// `cicd.pipeline.task.run.result` of a rule that finished its command.
pub const TASK_SUCCESS: &str = "success";
/// `test.case.result.status` of a test that passed.
pub const TEST_PASS: &str = "pass";

/// The outcomes of one build's spans.
#[derive(Debug, Clone, Copy)]
pub struct Outcomes<'b> {
    result: Option<BuildResult<'b>>,
    stopped_phase: Option<EventId>,
}

impl<'b> Outcomes<'b> {
    pub fn of(build: &'b Build) -> Self {
        Self {
            result: build_result(build),
            stopped_phase: stopped_phase(build),
        }
    }

    /// The phase a failed build stopped in (its `error.type`), for the root.
    pub fn root_failure(&self) -> Option<&'b str> {
        match self.result? {
            BuildResult::Failure { stopped_in } => Some(stopped_in),
            BuildResult::Success => None,
        }
    }

    /// The phase's `error.type` if it is the one the build stopped in.
    pub fn phase_failure(&self, phase: EventId) -> Option<&'b str> {
        (self.stopped_phase == Some(phase))
            .then(|| self.root_failure())
            .flatten()
    }

    /// A rule's task result: `success` for a rule that is not a test (it
    /// finished its command), and for a test in a build that succeeded;
    /// `None` (unknown) for a test in any other build.
    pub fn task_result(&self, rule_type: &str) -> Option<&'static str> {
        if rule_type != "test" || self.result == Some(BuildResult::Success) {
            Some(TASK_SUCCESS)
        } else {
            None
        }
    }
}

/// The status message of a failed span: short, and cut like an attribute
/// value (a phase name comes from the file).
pub fn failure_message(stopped_in: &str, max_attribute_len: u32) -> String {
    let max = usize::try_from(max_attribute_len).unwrap_or(usize::MAX);
    truncate(&format!("build failed in {stopped_in}"), max).to_owned()
}

/// `test.case.name` of a test rule: its target's file name without what
/// compiletools adds to the test executable's name — the result file's
/// `.result`, the argument hash (`.<16 hex digits>`), `.exe`, and the CAS
/// content hash (`_<64 hex digits>`): `…/test_vec_a917…c428.exe.e3b0c44298fc1c14.result`
/// → `test_vec`. Each part is removed only where it is there; `None` for
/// a target without a file name.
pub fn test_case_name(target: &str) -> Option<&str> {
    let mut name = target.rsplit('/').next().unwrap_or(target);
    name = name.strip_suffix(".result").unwrap_or(name);
    name = strip_hex_suffix(name, '.', 16);
    name = name.strip_suffix(".exe").unwrap_or(name);
    name = strip_hex_suffix(name, '_', 64);
    (!name.is_empty()).then_some(name)
}

/// `s` without a trailing `<sep><digits hex digits>`, if it ends so.
fn strip_hex_suffix(s: &str, sep: char, digits: usize) -> &str {
    match s.rsplit_once(sep) {
        Some((head, tail)) if tail.len() == digits && tail.bytes().all(|b| b.is_ascii_hexdigit()) => head,
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::model::parse_for_test;

    fn build(phases: &str) -> Build {
        parse_for_test(&format!(
            r#"{{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [{phases}]}}"#
        ))
    }

    const FAILED: &str = r#"{"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.0},
        {"name": "build_execution", "start_s": 101.0, "end_s": 102.0}"#;
    const SUCCEEDED: &str = r#"{"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.0},
        {"name": "build_execution", "start_s": 101.0, "end_s": 102.0},
        {"name": "postbuild_scripts", "start_s": 102.0, "end_s": 102.0}"#;
    const UNDECIDED: &str = r#"{"name": "generate", "start_s": 100.0, "end_s": 101.0}"#;

    #[test]
    fn a_failed_build_fails_its_root_and_the_phase_it_stopped_in() {
        let b = build(FAILED);
        let o = Outcomes::of(&b);
        assert_eq!(o.root_failure(), Some("build_execution"));
        let phases: Vec<_> = b
            .children()
            .map(|e| (e.name(), o.phase_failure(e.id())))
            .collect();
        assert_eq!(
            phases,
            [
                ("prebuild_scripts", None),
                ("build_execution", Some("build_execution"))
            ]
        );
        for ok in [SUCCEEDED, UNDECIDED] {
            let b = build(ok);
            let o = Outcomes::of(&b);
            assert_eq!(o.root_failure(), None);
            assert!(b.children().all(|e| o.phase_failure(e.id()).is_none()));
        }
    }

    #[test]
    fn tests_succeed_only_in_a_successful_build_other_rules_always() {
        for (phases, test) in [(SUCCEEDED, Some("success")), (FAILED, None), (UNDECIDED, None)] {
            let b = build(phases);
            let o = Outcomes::of(&b);
            assert_eq!(o.task_result("test"), test, "{phases}");
            for other in ["compile", "link", "mkdir", "unknown"] {
                assert_eq!(o.task_result(other), Some("success"));
            }
        }
    }

    #[test]
    fn failure_message_is_short_and_cut() {
        assert_eq!(
            failure_message("build_execution", 100),
            "build failed in build_execution"
        );
        assert_eq!(failure_message("build_execution", 5), "build");
    }

    #[test]
    fn test_case_names_lose_compiletools_suffixes() {
        let cas = "/p/cas-exedir/ccache-gcc.cxx17.debug/a9/\
                   test_vec_a91713b1376909ae20a4dc93e2e4720a28c51ce6b28c89c2cba967b7d231c428.exe.e3b0c44298fc1c14.result";
        assert_eq!(test_case_name(cas), Some("test_vec"));
        assert_eq!(
            test_case_name("bin/gcc.debug/test_parse.result"),
            Some("test_parse")
        );
        assert_eq!(test_case_name("test_hull"), Some("test_hull"));
        // Not hashes: kept.
        assert_eq!(
            test_case_name("t/test_a_b.exe.notahash.result"),
            Some("test_a_b.exe.notahash")
        );
        assert_eq!(test_case_name("dir/"), None);
        assert_eq!(test_case_name(""), None);
    }
}
