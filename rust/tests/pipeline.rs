//! `process_build` on synthetic files: tree shape, time, leniency, errors,
//! limits, ids.

use crate::common;

use common::fixture::{attr, names, span, timing_doc, wall_ns, Fixture, INVOCATION_ID};
use compiletools_core::{process_build, BuildRequest, CancelToken, Error, Limits, Signals};
use opentelemetry_proto::tonic::common::v1::any_value::Value;

fn rule(name: &str, rule_type: &str, source: &str, start: f64, end: f64) -> String {
    format!(
        r#"{{"name": "{name}", "rule_type": "{rule_type}", "target": "/o/{name}.o", "source": "{source}",
            "elapsed_s": {}, "start_s": {start}, "end_s": {end}}}"#,
        end - start
    )
}

fn is_malformed(r: Result<compiletools_core::BuildOutput, Error>) -> bool {
    matches!(r, Err(Error::Malformed { .. }))
}

#[test]
fn root_phases_and_rules() {
    let doc = timing_doc(&format!(
        r#"[{{"name": "target_discovery", "elapsed_s": 1.0, "start_s": 100.5, "end_s": 101.5}},
            {{"name": "build_execution", "elapsed_s": 5.0, "start_s": 102.0, "end_s": 107.0,
              "rules": [{}]}}]"#,
        rule("helper.cpp", "compile", "/p/util/helper.cpp", 102.25, 103.5)
    ));
    let (spans, out) = Fixture::new(doc).trace();
    assert_eq!(
        names(&spans),
        [
            "compiletools.build",
            "phase.target_discovery",
            "phase.build_execution",
            "compile.util/helper.cpp"
        ]
    );
    assert_eq!(out.summary.spans, 4);
    let root = span(&spans, "compiletools.build");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(
        (root.start_time_unix_nano, root.end_time_unix_nano),
        (wall_ns(100.0), wall_ns(110.0))
    );
    let be = span(&spans, "phase.build_execution");
    assert_eq!(be.parent_span_id, root.span_id);
    let r = span(&spans, "compile.util/helper.cpp");
    assert_eq!(r.parent_span_id, be.span_id);
    assert_eq!(
        (r.start_time_unix_nano, r.end_time_unix_nano),
        (wall_ns(102.25), wall_ns(103.5))
    );
    for s in &spans {
        assert_eq!(
            (s.kind, s.flags, s.trace_id.as_slice()),
            (1, 256, root.trace_id.as_slice())
        );
        assert!(s.status.is_none());
    }
    let keys: Vec<&str> = r.attributes.iter().map(|kv| kv.key.as_str()).collect();
    // The build analytics follow compiletools' keys (the only rule is the
    // critical path), then the CI/CD task keys.
    assert_eq!(
        keys,
        [
            "ct.rule_type",
            "ct.target",
            "ct.source",
            "ct.rule.weighted_s",
            "ct.critical_path",
            "cicd.pipeline.task.name",
            "cicd.pipeline.task.type",
            "cicd.pipeline.task.run.id",
            "cicd.pipeline.task.run.result"
        ]
    );
    // Root aggregates without statslog: H = 0; then the analytics, then
    // the pipeline run's action (these phases decide no result).
    let root_keys: Vec<&str> = root.attributes.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(
        root_keys,
        [
            "ct.build.cas_avoided_count",
            "ct.build.ccache_avoided_count",
            "ct.build.recompiled_count",
            "ct.build.compile_avoided_rate",
            "ct.build.parallelism.avg",
            "ct.build.parallelism.max",
            "ct.build.critical_path_s",
            "ct.build.critical_path.method",
            "ct.build.top_weighted_rules",
            "cicd.pipeline.action.name"
        ]
    );
    assert_eq!(attr(root, "ct.build.recompiled_count"), Some(&Value::IntValue(1)));
}

#[test]
fn classification_by_rule_type_wherever_it_sits() {
    // A rule directly under the root, a sub-phase inside a phase's rules,
    // and a sub-phase inside a rule's children; `rules` of a rule and
    // `children` of a phase are not read.
    let doc = timing_doc(&format!(
        r#"[{top},
            {{"name": "outer", "start_s": 101.0, "end_s": 108.0, "rules": [
               {{"name": "inner", "start_s": 101.5, "end_s": 102.0, "rules": [{deep}]}},
               {{"name": "parent.cpp", "rule_type": "compile", "source": "/s/a/parent.cpp", "start_s": 103.0, "end_s": 104.0,
                 "children": [{{"name": "sub", "start_s": 103.1, "end_s": 103.2}}],
                 "rules": [{ignored}]}}],
              "children": [{ignored}]}}]"#,
        top = rule("top.cpp", "compile", "/s/t/top.cpp", 100.5, 101.0),
        deep = rule("deep.cpp", "link", "deep.cpp", 101.6, 101.7),
        ignored = rule("ignored.cpp", "compile", "/s/x/ignored.cpp", 105.0, 106.0),
    ));
    let (spans, out) = Fixture::new(doc).trace();
    let mut got = names(&spans);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "compile.a/parent.cpp",
            "compile.t/top.cpp",
            "compiletools.build",
            "link.deep.cpp",
            "phase.inner",
            "phase.outer",
            "phase.sub"
        ]
    );
    let parent_of = |n: &str| {
        let p = &span(&spans, n).parent_span_id;
        spans.iter().find(|s| &s.span_id == p).map(|s| s.name.as_str())
    };
    assert_eq!(parent_of("compile.t/top.cpp"), Some("compiletools.build"));
    assert_eq!(parent_of("link.deep.cpp"), Some("phase.inner"));
    assert_eq!(parent_of("phase.inner"), Some("phase.outer"));
    assert_eq!(parent_of("phase.sub"), Some("compile.a/parent.cpp"));
    assert_eq!(out.summary.warnings.len(), 2, "{:?}", out.summary.warnings);
    // C = compile rules through phases only: top.cpp and parent.cpp.
    let root = span(&spans, "compiletools.build");
    assert_eq!(attr(root, "ct.build.recompiled_count"), Some(&Value::IntValue(2)));
}

#[test]
fn unanchored_rules_are_skipped_with_their_subtree() {
    let doc = timing_doc(&format!(
        r#"[{{"name": "build_execution", "start_s": 0.0, "end_s": 0.0, "rules": [
              {zero}, {early}, {late}, {edge}, {ok},
              {{"name": "nostart.cpp", "rule_type": "compile", "source": "/s/a/nostart.cpp", "elapsed_s": 1.0}},
              {{"name": "p.cpp", "rule_type": "compile", "source": "/s/a/p.cpp", "start_s": 0.0, "end_s": 1.0,
                "children": [{child}]}}]}}]"#,
        zero = rule("zero.cpp", "compile", "/s/a/zero.cpp", 0.0, 101.0),
        early = rule("early.cpp", "compile", "/s/a/early.cpp", 98.9, 101.0),
        late = rule("late.cpp", "compile", "/s/a/late.cpp", 109.0, 111.2),
        edge = rule("edge.cpp", "compile", "/s/a/edge.cpp", 99.0, 111.0),
        ok = rule("ok.cpp", "compile", "/s/a/ok.cpp", 101.0, 102.0),
        child = rule("child.cpp", "compile", "/s/a/child.cpp", 101.0, 102.0),
    ));
    let (spans, out) = Fixture::new(doc).trace();
    let mut got = names(&spans);
    got.sort_unstable();
    // The phase is kept although its own times are 0.0.
    assert_eq!(
        got,
        [
            "compile.a/edge.cpp",
            "compile.a/ok.cpp",
            "compiletools.build",
            "phase.build_execution"
        ]
    );
    assert_eq!(out.summary.unanchored_rules, 5);
    let phase = span(&spans, "phase.build_execution");
    assert!(phase.start_time_unix_nano >= 946_684_800_000_000_000);
}

#[test]
fn end_s_fallbacks() {
    let doc = timing_doc(
        r#"[{"name": "p", "start_s": 101.0, "elapsed_s": 2.5, "rules": [
              {"name": "a.cpp", "rule_type": "compile", "source": "/s/a/a.cpp", "start_s": 102.0, "elapsed_s": 0.25}]}]"#,
    );
    let (spans, _) = Fixture::new(doc).trace();
    let p = span(&spans, "phase.p");
    assert_eq!(
        (p.start_time_unix_nano, p.end_time_unix_nano),
        (wall_ns(101.0), wall_ns(103.5))
    );
    let r = span(&spans, "compile.a/a.cpp");
    assert_eq!(
        (r.start_time_unix_nano, r.end_time_unix_nano),
        (wall_ns(102.0), wall_ns(102.25))
    );
}

#[test]
fn legacy_file_without_start_s() {
    // 8.0.x: no root start_s, phases without times; phases start at the
    // root start (0.0) and last elapsed_s.
    let doc = r#"{"version": 1, "timestamp": "2026-11-30T03:43:45.5+00:00", "total_elapsed_s": 3.0,
                  "phases": [{"name": "target_discovery", "elapsed_s": 1.0}]}"#;
    let (spans, _) = Fixture::new(doc).trace();
    let t_end = 1_796_010_225_500_000_000u64;
    let root = span(&spans, "compiletools.build");
    assert_eq!(
        (root.start_time_unix_nano, root.end_time_unix_nano),
        (t_end - 3_000_000_000, t_end)
    );
    let p = span(&spans, "phase.target_discovery");
    assert_eq!(
        (p.start_time_unix_nano, p.end_time_unix_nano),
        (t_end - 3_000_000_000, t_end - 2_000_000_000)
    );
}

#[test]
fn timestamps_with_other_offsets() {
    for ts in [
        "2026-11-30T03:43:45.000000+00:00",
        "2026-11-30T03:43:45Z",
        "2026-11-30T05:43:45+02:00",
    ] {
        let doc = timing_doc("[]").replace("2026-11-30T03:43:45+00:00", ts);
        let (spans, _) = Fixture::new(doc).trace();
        assert_eq!(
            span(&spans, "compiletools.build").end_time_unix_nano,
            wall_ns(110.0),
            "{ts}"
        );
    }
}

#[test]
fn missing_or_bad_timestamp_is_malformed() {
    let no_ts = r#"{"total_elapsed_s": 1.0, "start_s": 5.0, "phases": []}"#;
    assert!(is_malformed(Fixture::new(no_ts).run()));
    let bad = timing_doc("[]").replace("2026-11-30T03:43:45+00:00", "last tuesday");
    assert!(is_malformed(Fixture::new(bad).run()));
    let ancient = timing_doc("[]").replace("2026-11-30T03:43:45+00:00", "1970-01-01T00:00:00+00:00");
    assert!(is_malformed(Fixture::new(ancient).run()));
    let number = timing_doc("[]").replace("\"2026-11-30T03:43:45+00:00\"", "12");
    assert!(is_malformed(Fixture::new(number).run()));
}

#[test]
fn lone_surrogates_and_invalid_utf8_become_replacement_characters() {
    let doc = timing_doc(
        r#"[{"name": "p", "start_s": 101.0, "end_s": 102.0, "rules": [
              {"name": "b\udcffd.cpp", "rule_type": "compile", "source": "/s/\udc80/x.cpp", "start_s": 101.0, "end_s": 101.5}]}]"#,
    );
    let mut bytes = doc.into_bytes();
    // Splice a raw invalid byte into the phase name.
    let at = bytes.windows(5).position(|w| w == b"\"p\", ").unwrap() + 2;
    bytes.insert(at, 0xff);
    let (spans, out) = Fixture::new(bytes).trace();
    let r = span(&spans, "compile.\u{fffd}/b\u{fffd}d.cpp");
    assert_eq!(
        attr(r, "ct.source"),
        Some(&Value::StringValue("/s/\u{fffd}/x.cpp".into()))
    );
    span(&spans, "phase.p\u{fffd}");
    assert_eq!(out.summary.warnings.len(), 2, "{:?}", out.summary.warnings);
}

#[test]
fn bad_events_are_skipped_not_the_file() {
    let doc = timing_doc(&format!(
        r#"[{{"elapsed_s": 1.0}}, 42, {{"name": 7}},
            {{"name": "p", "start_s": 101.0, "end_s": 102.0, "rules": [
               {{"name": "x.cpp", "rule_type": 5}},
               {{"name": "y.cpp", "rule_type": "compile", "source": ["no"], "start_s": "soon", "end_s": 101.5}},
               {ok}]}}]"#,
        ok = rule("ok.cpp", "compile", "/s/a/ok.cpp", 101.0, 101.5)
    ));
    let (spans, out) = Fixture::new(doc).trace();
    let mut got = names(&spans);
    got.sort_unstable();
    // y.cpp survives its bad fields but, without a start, is unanchored.
    assert_eq!(got, ["compile.a/ok.cpp", "compiletools.build", "phase.p"]);
    assert_eq!(out.summary.unanchored_rules, 1);
    assert!(out.summary.warnings.len() >= 6, "{:?}", out.summary.warnings);
    // Skipped elements keep their index: "p" is element 3 of phases.
    let (spans2, _) =
        Fixture::new(timing_doc(r#"[{"name": "p", "start_s": 101.0, "end_s": 102.0}]"#)).trace();
    assert_ne!(span(&spans, "phase.p").span_id, span(&spans2, "phase.p").span_id);
}

#[test]
fn malformed_and_truncated_documents() {
    for doc in [
        "",
        "not json",
        "[1, 2]",
        "{\"timestamp\": \"2026-11-30T03:43:45+00:00\",",
        "{} trailing",
        "\"str\"",
    ] {
        assert!(is_malformed(Fixture::new(doc).run()), "{doc:?}");
    }
    let bad_phases = timing_doc("{}");
    assert!(is_malformed(Fixture::new(bad_phases).run()));
    let bad_total = timing_doc("[]").replace("\"total_elapsed_s\": 10.0", "\"total_elapsed_s\": \"10\"");
    assert!(is_malformed(Fixture::new(bad_total).run()));
}

#[test]
fn every_prefix_of_a_real_file_is_an_error_or_a_trace_never_a_panic() {
    let case = common::reference::cases_with_reference()
        .into_iter()
        .next()
        .expect("a corpus case");
    let text = std::fs::read(common::reference::invocation_dir(&case).join("timing.json")).unwrap();
    let full = Fixture::new(&text).run();
    assert!(full.is_ok());
    for cut in (0..text.len() - 1).step_by(97) {
        let r = Fixture::new(&text[..cut]).run();
        assert!(is_malformed(r), "prefix of {cut} bytes");
    }
}

#[test]
fn limits_are_enforced() {
    let rules: Vec<String> = (0..10)
        .map(|i| rule(&format!("r{i}.cpp"), "compile", "/s/a/x.cpp", 101.0, 102.0))
        .collect();
    let doc = timing_doc(&format!(
        r#"[{{"name": "p", "start_s": 101.0, "end_s": 102.0, "rules": [{}]}}]"#,
        rules.join(",")
    ));
    let fx = Fixture::new(&doc);
    let with = |limits: Limits| {
        let mut req = fx.request();
        req.limits = limits;
        fx.run_with(&req)
    };
    let limited = |r| matches!(r, Err(Error::LimitExceeded { .. }));
    assert!(limited(with(Limits {
        max_file_bytes: doc.len() as u64 - 1,
        ..Limits::default()
    })));
    assert!(with(Limits {
        max_file_bytes: doc.len() as u64,
        ..Limits::default()
    })
    .is_ok());
    assert!(limited(with(Limits {
        max_events: 10,
        ..Limits::default()
    })));
    assert!(with(Limits {
        max_events: 11,
        ..Limits::default()
    })
    .is_ok());
    assert!(limited(with(Limits {
        max_depth: 1,
        ..Limits::default()
    })));
    assert!(with(Limits {
        max_depth: 2,
        ..Limits::default()
    })
    .is_ok());

    // Nesting beyond what the JSON parser allows is a limit, not a crash.
    let mut deep = String::from(r#"{"name": "leaf", "start_s": 101.0, "end_s": 102.0}"#);
    for _ in 0..200 {
        deep = format!(r#"{{"name": "n", "start_s": 101.0, "end_s": 102.0, "rules": [{deep}]}}"#);
    }
    let fx = Fixture::new(timing_doc(&format!("[{deep}]")));
    let mut req = fx.request();
    req.limits.max_depth = 1000;
    assert!(limited(fx.run_with(&req)));
    // A deeply nested metadata value is skipped by serde_json without
    // recursion: it is just a dropped attribute, and no stack overflow.
    let nested_meta = timing_doc(&format!(
        r#"[{{"name": "p", "metadata": {{"x": {}1{}}}}}]"#,
        "[".repeat(1_000_000),
        "]".repeat(1_000_000)
    ));
    let out = Fixture::new(nested_meta).run().unwrap();
    assert_eq!(out.summary.dropped_attributes, 1);
}

#[test]
fn attribute_strings_are_truncated() {
    let long = "é".repeat(10);
    let doc = timing_doc(&format!(
        r#"[{{"name": "p", "start_s": 101.0, "end_s": 102.0, "rules": [
              {{"name": "a.cpp", "rule_type": "compile", "source": "/s/a/a.cpp", "target": "/{long}",
                "start_s": 101.0, "end_s": 101.5, "metadata": {{"k": "{long}", "arr": ["{long}"]}}}}]}}]"#
    ));
    let fx = Fixture::new(doc);
    let mut req = fx.request();
    req.limits.max_attribute_len = 6;
    let out = fx.run_with(&req).unwrap();
    let decoded = <opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest as prost::Message>::decode(
        out.traces.as_deref().unwrap(),
    )
    .unwrap();
    let spans = &decoded.resource_spans[0].scope_spans[0].spans;
    let r = span(spans, "compile.a/a.cpp");
    assert_eq!(attr(r, "ct.target"), Some(&Value::StringValue("/éé".into())));
    assert_eq!(attr(r, "k"), Some(&Value::StringValue("ééé".into())));
    let Some(Value::ArrayValue(a)) = attr(r, "arr") else {
        panic!()
    };
    assert_eq!(a.values[0].value, Some(Value::StringValue("ééé".into())));
}

#[test]
fn metadata_lifting_and_dropped_count() {
    let doc = timing_doc(
        r#"[{"name": "p", "start_s": 101.0, "end_s": 102.0, "rules": [
              {"name": "a.cpp", "rule_type": "compile", "source": "/s/a/a.cpp", "start_s": 101.0, "end_s": 101.5,
               "metadata": {"cas.hit": true, "cas.bytes_reused": 12, "queue_wait_s": 4e-06, "n": null,
                            "strs": ["a", "b"], "ints": [1, 2], "dbls": [0.5], "bools": [false],
                            "mixed": [1, "a"], "withnull": [1, null], "obj": {"a": 1}, "nested": [[1]],
                            "big": 18446744073709551615, "last": "x"}}]}]"#,
    );
    let (spans, out) = Fixture::new(doc).trace();
    let r = span(&spans, "compile.a/a.cpp");
    let keys: Vec<&str> = r.attributes.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "ct.rule_type",
            "ct.source",
            "cas.hit",
            "cas.bytes_reused",
            "queue_wait_s",
            "strs",
            "ints",
            "dbls",
            "bools",
            "last",
            "ct.rule.weighted_s",
            "ct.critical_path",
            "cicd.pipeline.task.type",
            "cicd.pipeline.task.run.id",
            "cicd.pipeline.task.run.result"
        ]
    );
    assert_eq!(attr(r, "cas.bytes_reused"), Some(&Value::IntValue(12)));
    assert_eq!(attr(r, "queue_wait_s"), Some(&Value::DoubleValue(4e-6)));
    assert_eq!(r.dropped_attributes_count, 5);
    assert_eq!(out.summary.dropped_attributes, 5);
    // cas.hit is truthy: A = 1 of |C| = 1.
    let root = span(&spans, "compiletools.build");
    assert_eq!(
        attr(root, "ct.build.cas_avoided_count"),
        Some(&Value::IntValue(1))
    );
    assert_eq!(
        attr(root, "ct.build.compile_avoided_rate"),
        Some(&Value::DoubleValue(1.0))
    );
}

#[test]
fn ids_are_deterministic_and_follow_the_canonical_directory() {
    let fx = Fixture::new(timing_doc(r#"[{"name": "p", "start_s": 101.0, "end_s": 102.0}]"#));
    let (a, _) = fx.trace();
    let (b, _) = fx.trace();
    assert_eq!(a, b, "two runs give identical spans");

    // The same directory under another spelling (`..`, a symlinked parent):
    // same canonical path, same ids. (A symlinked invocation directory
    // itself is refused: tests/no_symlinks.rs.)
    let link_root = tempfile::tempdir().unwrap();
    let link = link_root.path().join("link");
    std::os::unix::fs::symlink(fx.dir.parent().unwrap(), &link).unwrap();
    let other = link.join("x").join("..").join(fx.dir.file_name().unwrap());
    std::fs::create_dir(fx.dir.parent().unwrap().join("x")).unwrap();
    let out = process_build(&BuildRequest::new(&other, "host-a"), &CancelToken::new()).unwrap();
    assert_eq!(out.traces.as_deref(), fx.run().unwrap().traces.as_deref());

    // Another host: other ids.
    let out = process_build(&BuildRequest::new(&fx.dir, "host-b"), &CancelToken::new()).unwrap();
    assert_ne!(out.traces.as_deref(), fx.run().unwrap().traces.as_deref());

    // The ids are the documented scheme.
    let canonical = std::fs::canonicalize(&fx.dir).unwrap();
    let tid = compiletools_core::ids::trace_id(
        "host-a",
        std::os::unix::ffi::OsStrExt::as_bytes(canonical.as_os_str()),
        "2026-11-30T03:43:45+00:00",
    );
    assert_eq!(a[0].trace_id, tid);
    assert_eq!(
        span(&a, "compiletools.build").span_id,
        compiletools_core::ids::span_id(&tid, &[])
    );
    assert_eq!(
        span(&a, "phase.p").span_id,
        compiletools_core::ids::span_id(&tid, &[0])
    );
}

#[test]
fn resource_and_invocation_id() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    let fx = Fixture::new(timing_doc("[]"));
    let mut req = fx.request();
    req.git_commit_sha = Some("8a2c".into());
    req.resource_attributes = vec![
        ("team".into(), "build".into()),
        ("ct.variant".into(), "user".into()),
    ];
    let out = fx.run_with(&req).unwrap();
    let t = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
    let got: Vec<(String, Option<Value>)> = t.resource_spans[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.clone().and_then(|v| v.value)))
        .collect();
    let s = |k: &str, v: &str| (k.to_owned(), Some(Value::StringValue(v.to_owned())));
    assert_eq!(
        got,
        [
            s("service.name", "compiletools"),
            s("service.namespace", "compiletools"),
            s("host.name", "host-a"),
            s("service.instance.id", "host-a:4242"),
            s("ct.variant", "gcc.debug"),
            s("ct.backend", "shake"),
            s("ct.invocation_id", INVOCATION_ID),
            s("git.commit.sha", "8a2c"),
            s("cicd.pipeline.run.id", INVOCATION_ID),
            s("cicd.worker.id", "host-a"),
            s("cicd.worker.name", "host-a"),
            s("vcs.ref.head.revision", "8a2c"),
            s("team", "build"),
        ]
    );
    let scope = t.resource_spans[0].scope_spans[0].scope.as_ref().unwrap();
    assert_eq!(
        (scope.name.as_str(), scope.version.as_str()),
        ("compiletools", "")
    );

    // A directory that is not an invocation id: no instance id, a warning.
    let odd = Fixture::named("latest", timing_doc("[]"));
    let out = odd.run().unwrap();
    let t = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
    let keys: Vec<String> = t.resource_spans[0]
        .resource
        .as_ref()
        .unwrap()
        .attributes
        .iter()
        .map(|kv| kv.key.clone())
        .collect();
    assert!(!keys.contains(&"service.instance.id".to_owned()));
    assert!(keys.contains(&"ct.invocation_id".to_owned()));
    assert_eq!(out.summary.warnings.len(), 1);
}

#[test]
fn io_errors_cancellation_and_signals() {
    let missing = process_build(
        &BuildRequest::new("/nonexistent/20261130T034340-1", "h"),
        &CancelToken::new(),
    );
    assert!(matches!(missing, Err(Error::Io { .. })));

    let fx = Fixture::new(timing_doc("[]"));
    let cancel = CancelToken::new();
    cancel.cancel();
    assert!(matches!(
        process_build(&fx.request(), &cancel),
        Err(Error::Cancelled)
    ));

    let mut req = fx.request();
    req.signals = Signals {
        traces: false,
        metrics: false,
    };
    let out = fx.run_with(&req).unwrap();
    assert!(out.traces.is_none() && out.metrics.is_none());
}

#[test]
fn random_byte_mutations_never_panic() {
    let case = common::reference::cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("12-geom-ninja-cold-native-flock"))
        .expect("corpus case 12");
    let text = std::fs::read(common::reference::invocation_dir(&case).join("timing.json")).unwrap();
    // A fixed-seed xorshift, so a failure reproduces.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let interesting = b"{}[]\",:0.-eE\\u\xff\xc3 ";
    let fx = Fixture::new(&text);
    let path = fx.dir.join("timing.json");
    let (mut ok, mut err) = (0, 0);
    for _ in 0..300 {
        let mut bytes = text.clone();
        for _ in 0..(1 + next() % 4) {
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = interesting[(next() % interesting.len() as u64) as usize];
        }
        std::fs::write(&path, &bytes).unwrap();
        match fx.run() {
            Ok(_) => ok += 1,
            Err(Error::Malformed { .. }) => err += 1,
            Err(e) => panic!("unexpected error kind: {e}"),
        }
    }
    assert!(
        ok > 0 && err > 0,
        "mutations should give both outcomes ({ok} ok, {err} malformed)"
    );
}
