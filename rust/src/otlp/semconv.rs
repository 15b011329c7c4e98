//! OpenTelemetry's CI/CD and VCS semantic conventions (release candidate
//! since semantic conventions v1.43), beside compiletools' own `ct.*` keys,
//! which stay exactly as they are.
//!
//! Where each key goes follows the conventions: the entities `cicd.pipeline`
//! (`cicd.pipeline.name`), `cicd.pipeline.run` (`cicd.pipeline.run.id`),
//! `cicd.worker`, `vcs.repository` and `vcs.ref` are resource attributes —
//! the build's resource already describes one run on one host. The pipeline
//! run span's own attributes (`cicd.pipeline.action.name`,
//! `cicd.pipeline.result`, `error.type`) go on the root span, and the task
//! attributes (with `test.case.*` on tests) on each rule span. All of them
//! come after compiletools' keys and after the build analytics, so
//! everything before them keeps compiletools' order. Which results the
//! files decide is [`super::outcome`]'s.

use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::attributes::AttrBuilder;
use super::outcome::{test_case_name, Outcomes, TEST_PASS};
use crate::request::BuildRequest;
use crate::timing::{build_result, Build, BuildResult, Event};

pub const PIPELINE_NAME: &str = "cicd.pipeline.name";
pub const PIPELINE_RUN_ID: &str = "cicd.pipeline.run.id";
pub const WORKER_ID: &str = "cicd.worker.id";
pub const WORKER_NAME: &str = "cicd.worker.name";
pub const VCS_REPOSITORY_URL_FULL: &str = "vcs.repository.url.full";
pub const VCS_PROVIDER_NAME: &str = "vcs.provider.name";
pub const VCS_REF_HEAD_NAME: &str = "vcs.ref.head.name";
pub const VCS_REF_HEAD_TYPE: &str = "vcs.ref.head.type";
pub const VCS_REF_HEAD_REVISION: &str = "vcs.ref.head.revision";

pub const PIPELINE_ACTION_NAME: &str = "cicd.pipeline.action.name";
pub const PIPELINE_RESULT: &str = "cicd.pipeline.result";
pub const ERROR_TYPE: &str = "error.type";

pub const PIPELINE_RUN_STATE: &str = "cicd.pipeline.run.state";

pub const TASK_NAME: &str = "cicd.pipeline.task.name";
pub const TASK_TYPE: &str = "cicd.pipeline.task.type";
pub const TASK_RUN_ID: &str = "cicd.pipeline.task.run.id";
pub const TASK_RUN_RESULT: &str = "cicd.pipeline.task.run.result";
pub const TEST_CASE_NAME: &str = "test.case.name";
pub const TEST_CASE_RESULT_STATUS: &str = "test.case.result.status";

/// `cicd.pipeline.action.name` of every build.
pub const ACTION_BUILD: &str = "BUILD";

/// `cicd.pipeline.run.state` of a finished build's duration: the file
/// times the run from its start to its end, all of which is the
/// conventions' `executing` (ct-cake neither queues nor finalizes a run
/// apart from it).
pub const STATE_EXECUTING: &str = "executing";

/// The root span's name with `semconv_root_span`: the conventions'
/// `{action} {pipeline}` (`BUILD geom`), or `{action}` without a pipeline
/// name. The pipeline name is the project's, low-cardinality by choice.
pub fn semconv_root_span_name(pipeline_name: &str) -> String {
    if pipeline_name.is_empty() {
        ACTION_BUILD.to_owned()
    } else {
        format!("{ACTION_BUILD} {pipeline_name}")
    }
}

/// The resource keys of this module, in the order they are written.
pub const RESOURCE_KEYS: [&str; 9] = [
    PIPELINE_NAME,
    PIPELINE_RUN_ID,
    WORKER_ID,
    WORKER_NAME,
    VCS_REPOSITORY_URL_FULL,
    VCS_PROVIDER_NAME,
    VCS_REF_HEAD_NAME,
    VCS_REF_HEAD_TYPE,
    VCS_REF_HEAD_REVISION,
];

/// Appends the CI/CD and VCS resource attributes of a build: the pipeline
/// and its run (the invocation id), the worker (the host identity), and
/// what the receiver read from the source tree. Empty values are omitted;
/// `vcs.ref.head.revision` is `git.commit.sha`, under its lag rule.
pub fn push_resource_attributes(a: &mut AttrBuilder, req: &BuildRequest, invocation_id: &str) {
    a.non_empty_string(PIPELINE_NAME, &req.pipeline_name);
    a.non_empty_string(PIPELINE_RUN_ID, invocation_id);
    a.non_empty_string(WORKER_ID, &req.host_name);
    a.non_empty_string(WORKER_NAME, &req.host_name);
    a.non_empty_string(VCS_REPOSITORY_URL_FULL, &req.vcs.repository_url_full);
    a.non_empty_string(VCS_PROVIDER_NAME, &req.vcs.provider_name);
    // A ref type without its name says nothing.
    if !req.vcs.ref_head_name.is_empty() {
        a.string(VCS_REF_HEAD_NAME, &req.vcs.ref_head_name);
        a.non_empty_string(VCS_REF_HEAD_TYPE, &req.vcs.ref_head_type);
    }
    if let Some(sha) = &req.git_commit_sha {
        a.non_empty_string(VCS_REF_HEAD_REVISION, sha);
    }
}

/// The pipeline run attributes of the root span: the action, and the
/// result with `error.type` (the phase the build stopped in) only where
/// the file decides it ([`build_result`]).
pub fn root_attributes(build: &Build, max_attribute_len: u32) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 3);
    a.string(PIPELINE_ACTION_NAME, ACTION_BUILD);
    match build_result(build) {
        Some(BuildResult::Success) => a.string(PIPELINE_RESULT, "success"),
        Some(BuildResult::Failure { stopped_in }) => {
            a.string(PIPELINE_RESULT, "failure");
            a.non_empty_string(ERROR_TYPE, stopped_in);
        }
        None => {}
    }
    a.finish().0
}

/// A value of a rule's task attributes: a string of the model, or the
/// rule span's id (`cicd.pipeline.task.run.id`, in lowercase hex), which
/// each encoder writes without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskValue<'b> {
    Str(&'b str),
    SpanId([u8; 8]),
}

/// A rule span's CI/CD task attributes in the order written: its target
/// as the task name (when it has one), `test` or `build` as the type, the
/// span id as the task run id (unique in the run, the same on every
/// re-read), the result where the files decide it ([`Outcomes`]), and for
/// a test with a result its `test.case.name` and `test.case.result.status`.
/// Both trace encoders write exactly these.
pub(crate) fn rule_task_attributes<'b>(
    rule: &Event<'b>,
    span_id: [u8; 8],
    outcomes: &Outcomes,
) -> impl Iterator<Item = (&'static str, TaskValue<'b>)> {
    let mut out: [Option<(&'static str, TaskValue<'b>)>; 6] = [None; 6];
    if let Some(rule_type) = rule.rule_type() {
        let target = rule.target();
        let is_test = rule_type == "test";
        let result = outcomes.task_result(rule_type);
        out[0] = (!target.is_empty()).then_some((TASK_NAME, TaskValue::Str(target)));
        out[1] = Some((TASK_TYPE, TaskValue::Str(if is_test { "test" } else { "build" })));
        out[2] = Some((TASK_RUN_ID, TaskValue::SpanId(span_id)));
        out[3] = result.map(|r| (TASK_RUN_RESULT, TaskValue::Str(r)));
        if is_test && result.is_some() {
            if let Some(name) = test_case_name(target) {
                out[4] = Some((TEST_CASE_NAME, TaskValue::Str(name)));
                out[5] = Some((TEST_CASE_RESULT_STATUS, TaskValue::Str(TEST_PASS)));
            }
        }
    }
    out.into_iter().flatten()
}

/// Appends a rule span's task attributes ([`rule_task_attributes`]).
pub fn push_rule_attributes(a: &mut AttrBuilder, rule: &Event, span_id: [u8; 8], outcomes: &Outcomes) {
    for (key, value) in rule_task_attributes(rule, span_id, outcomes) {
        match value {
            TaskValue::Str(s) => a.string(key, s),
            TaskValue::SpanId(id) => a.string(key, &crate::ids::to_hex(&id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;

    use super::*;
    use crate::timing::model::parse_for_test;

    fn pairs(attrs: &[KeyValue]) -> Vec<(String, String)> {
        attrs
            .iter()
            .map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::StringValue(s)) => (kv.key.clone(), s.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn doc(phases: &str) -> Build {
        parse_for_test(&format!(
            r#"{{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0, "phases": [{phases}]}}"#
        ))
    }

    #[test]
    fn root_carries_result_only_when_decided() {
        let ok = doc(r#"{"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.0},
               {"name": "postbuild_scripts", "start_s": 101.0, "end_s": 101.0}"#);
        assert_eq!(
            pairs(&root_attributes(&ok, 100)),
            [
                (PIPELINE_ACTION_NAME.to_owned(), "BUILD".to_owned()),
                (PIPELINE_RESULT.to_owned(), "success".to_owned())
            ]
        );
        let failed = doc(r#"{"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.0},
               {"name": "build_execution", "start_s": 101.0, "end_s": 101.0}"#);
        assert_eq!(
            pairs(&root_attributes(&failed, 100)),
            [
                (PIPELINE_ACTION_NAME.to_owned(), "BUILD".to_owned()),
                (PIPELINE_RESULT.to_owned(), "failure".to_owned()),
                (ERROR_TYPE.to_owned(), "build_execution".to_owned())
            ]
        );
        let clean = doc(r#"{"name": "generate", "start_s": 100.0, "end_s": 100.0}"#);
        assert_eq!(
            pairs(&root_attributes(&clean, 100)),
            [(PIPELINE_ACTION_NAME.to_owned(), "BUILD".to_owned())]
        );
    }

    #[test]
    fn rule_tasks_are_build_or_test() {
        let build = doc(
            r#"{"name": "build_execution", "start_s": 100.0, "end_s": 101.0, "rules": [
                 {"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "start_s": 100.0, "end_s": 100.5},
                 {"name": "t", "rule_type": "test", "target": "bin/t", "start_s": 100.5, "end_s": 101.0},
                 {"name": "m", "rule_type": "mkdir", "start_s": 100.5, "end_s": 101.0}]}"#,
        );
        let outcomes = Outcomes::of(&build);
        let mut got = Vec::new();
        build.for_each_phase_rule(&mut |rule| {
            let mut a = AttrBuilder::new(100);
            push_rule_attributes(&mut a, &rule, [0xab; 8], &outcomes);
            got.push(pairs(&a.finish().0));
        });
        let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let id = kv(TASK_RUN_ID, "abababababababab");
        let ok = kv(TASK_RUN_RESULT, "success");
        // An undecided build: a test's result is unknown, so it has none
        // and no test.case.* either.
        assert_eq!(
            got,
            [
                vec![
                    kv(TASK_NAME, "/o/a.o"),
                    kv(TASK_TYPE, "build"),
                    id.clone(),
                    ok.clone()
                ],
                vec![kv(TASK_NAME, "bin/t"), kv(TASK_TYPE, "test"), id.clone()],
                vec![kv(TASK_TYPE, "build"), id, ok],
            ]
        );
    }

    #[test]
    fn tests_of_a_successful_build_passed() {
        let build = doc(r#"{"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.0},
               {"name": "build_execution", "start_s": 100.0, "end_s": 101.0, "rules": [
                 {"name": "t", "rule_type": "test", "target": "/c/a9/test_vec_a91713b1376909ae20a4dc93e2e4720a28c51ce6b28c89c2cba967b7d231c428.exe.e3b0c44298fc1c14.result", "start_s": 100.5, "end_s": 101.0}]},
               {"name": "postbuild_scripts", "start_s": 101.0, "end_s": 101.0}"#);
        let outcomes = Outcomes::of(&build);
        let mut got = Vec::new();
        build.for_each_phase_rule(&mut |rule| {
            let mut a = AttrBuilder::new(100);
            push_rule_attributes(&mut a, &rule, [1; 8], &outcomes);
            got.extend(pairs(&a.finish().0).into_iter().skip(2));
        });
        let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        assert_eq!(
            got,
            [
                kv(TASK_RUN_ID, "0101010101010101"),
                kv(TASK_RUN_RESULT, "success"),
                kv(TEST_CASE_NAME, "test_vec"),
                kv(TEST_CASE_RESULT_STATUS, "pass"),
            ]
        );
    }

    #[test]
    fn semconv_root_name_is_action_and_pipeline() {
        assert_eq!(semconv_root_span_name("geom"), "BUILD geom");
        assert_eq!(semconv_root_span_name(""), "BUILD");
    }

    #[test]
    fn resource_keys_in_order_and_empties_omitted() {
        let mut req = BuildRequest::new("/x/20261130T034340-1", "vm");
        req.pipeline_name = "geom".into();
        req.git_commit_sha = Some("abc".into());
        req.vcs.ref_head_type = "branch".into(); // without a name: dropped
        req.vcs.repository_url_full = "https://github.com/o/r".into();
        let mut a = AttrBuilder::new(100);
        push_resource_attributes(&mut a, &req, "20261130T034340-1");
        let keys: Vec<String> = pairs(&a.finish().0).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                PIPELINE_NAME,
                PIPELINE_RUN_ID,
                WORKER_ID,
                WORKER_NAME,
                VCS_REPOSITORY_URL_FULL,
                VCS_REF_HEAD_REVISION
            ]
        );
    }
}
