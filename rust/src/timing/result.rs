//! The build's result, where `timing.json` decides it (formats.md §1.4, §1.5,
//! §2.4). The file has no exit status; the phases are the evidence:
//!
//! * compiletools 10.0.4+ runs `target_discovery`, `prebuild_scripts`,
//!   `build_graph`, `generate`, `build_execution`, `postbuild_scripts` on a
//!   build (clean runs stop after `generate` and have no `prebuild_scripts`;
//!   `--filelist` runs have `target_discovery` only);
//! * a failure inside a phase closes that phase and no later phase starts.
//!
//! So a build whose last phase is `postbuild_scripts` ran to its end:
//! success. A build that has `prebuild_scripts` (so it is neither a clean
//! nor a filelist run, and from a version that writes `postbuild_scripts`)
//! but does not end with `postbuild_scripts` stopped in its last phase:
//! failure. Anything else — no `prebuild_scripts` (clean, filelist, older
//! versions, a failure in `target_discovery`) — is undecided: no result
//! rather than a guess. Two cases the file cannot tell apart are taken
//! as they look: a failing post-build script still ends with
//! `postbuild_scripts` (success), and Ctrl-C unwinds like a failure
//! (failure).

use super::{Build, EventId};

/// Phase compiletools runs first after discovery on every non-clean build.
const PREBUILD: &str = "prebuild_scripts";
/// Phase that ends every successful non-clean build.
const POSTBUILD: &str = "postbuild_scripts";

/// What the phases say about a build's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildResult<'b> {
    Success,
    /// Stopped inside this phase (the last one the file records).
    Failure {
        stopped_in: &'b str,
    },
}

/// The result of `build`, or `None` when the file does not decide it.
/// Only the root's phases count; rules directly under the root (formats.md §2.4)
/// are not phases.
pub fn build_result(build: &Build) -> Option<BuildResult<'_>> {
    let mut has_prebuild = false;
    let mut last = None;
    for event in build.children().filter(|e| !e.is_rule()) {
        has_prebuild |= event.name() == PREBUILD;
        last = Some(event.name());
    }
    match last? {
        POSTBUILD => Some(BuildResult::Success),
        phase if has_prebuild => Some(BuildResult::Failure { stopped_in: phase }),
        _ => None,
    }
}

/// The phase a failed build stopped in — the last phase of the root, which
/// [`build_result`] names — or `None` when the build did not fail.
pub fn stopped_phase(build: &Build) -> Option<EventId> {
    match build_result(build)? {
        BuildResult::Success => None,
        BuildResult::Failure { .. } => build.children().filter(|e| !e.is_rule()).last().map(|e| e.id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::model::parse_for_test;

    /// The result of a build with these phases, as text ("success",
    /// "failure in <phase>"), so that it outlives the build.
    fn result_of(phases: &[&str]) -> Option<String> {
        let phases: Vec<String> = phases
            .iter()
            .enumerate()
            .map(|(i, name)| {
                format!(
                    r#"{{"name": "{name}", "start_s": {s}, "end_s": {s}}}"#,
                    s = 100 + i
                )
            })
            .collect();
        let doc = format!(
            r#"{{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [{}]}}"#,
            phases.join(",")
        );
        build_result(&parse_for_test(&doc)).map(|r| match r {
            BuildResult::Success => "success".to_owned(),
            BuildResult::Failure { stopped_in } => format!("failure in {stopped_in}"),
        })
    }

    const FULL: [&str; 6] = [
        "target_discovery",
        "prebuild_scripts",
        "build_graph",
        "generate",
        "build_execution",
        "postbuild_scripts",
    ];

    #[test]
    fn a_build_that_reached_postbuild_succeeded() {
        assert_eq!(result_of(&FULL).as_deref(), Some("success"));
    }

    #[test]
    fn a_build_that_stopped_early_failed_in_its_last_phase() {
        for stop in 1..5 {
            assert_eq!(
                result_of(&FULL[..=stop]),
                Some(format!("failure in {}", FULL[stop]))
            );
        }
    }

    #[test]
    fn clean_filelist_and_old_builds_are_undecided() {
        // clean / realclean
        assert_eq!(result_of(&["target_discovery", "build_graph", "generate"]), None);
        // --filelist, or a failure in target_discovery
        assert_eq!(result_of(&["target_discovery"]), None);
        // before 10.0.4: no pre/post-build phases at all
        assert_eq!(
            result_of(&["target_discovery", "build_graph", "generate", "build_execution"]),
            None
        );
        assert_eq!(result_of(&[]), None);
    }

    #[test]
    fn root_rules_are_not_phases() {
        let build = parse_for_test(
            r#"{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [
                {"name": "prebuild_scripts", "start_s": 100.0, "end_s": 101.0},
                {"name": "postbuild_scripts", "start_s": 101.0, "end_s": 102.0},
                {"name": "late.o", "rule_type": "compile", "start_s": 102.0, "end_s": 103.0}]}"#,
        );
        assert_eq!(build_result(&build), Some(BuildResult::Success));
    }

    #[test]
    fn the_stopped_phase_is_the_last_phase_of_a_failed_build_only() {
        let failed = parse_for_test(
            r#"{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [
                {"name": "prebuild_scripts", "start_s": 100.0, "end_s": 101.0},
                {"name": "build_execution", "start_s": 101.0, "end_s": 102.0},
                {"name": "late.o", "rule_type": "compile", "start_s": 102.0, "end_s": 103.0}]}"#,
        );
        let phase = stopped_phase(&failed).and_then(|id| failed.event(id));
        assert_eq!(phase.map(|e| e.name()), Some("build_execution"));
        let ok = parse_for_test(
            r#"{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [
                {"name": "prebuild_scripts", "start_s": 100.0, "end_s": 101.0},
                {"name": "postbuild_scripts", "start_s": 101.0, "end_s": 102.0}]}"#,
        );
        assert_eq!(stopped_phase(&ok), None);
        let undecided = parse_for_test(
            r#"{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [
                {"name": "target_discovery", "start_s": 100.0, "end_s": 101.0}]}"#,
        );
        assert_eq!(stopped_phase(&undecided), None);
    }
}
