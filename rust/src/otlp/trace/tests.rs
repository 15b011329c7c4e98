//! The three encoders against each other: the wire encoder's and the
//! chunks' bytes are the reference encoder's.

use serde_json::json;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ScopeSpans, Span};
use prost::Message;

use super::encode::SHRINK_SLACK;
use super::*;
use crate::otlp::scope::scope;
use crate::timing::model::parse_for_test;
use crate::timing::Build;
use crate::warnings::Warnings;

fn input<'x>(build: &'x Build, clock: &'x Clock, resource: Resource) -> TraceInput<'x> {
    TraceInput {
        build,
        clock,
        trace_id: [9; 16],
        resource,
        root_attributes: vec![KeyValue {
            key: "r".into(),
            ..Default::default()
        }],
        max_attribute_len: 64,
        analytics: None,
        semconv_root_span: false,
        pipeline_name: "geom",
        clang: None,
    }
}

fn sample_build(rules: usize) -> Build {
    let rule = |i: usize| {
        json!({
            "name": format!("r{i}.cpp"),
            "rule_type": "compile",
            "source": format!("/s/d{}/r{i}.cpp", i % 7),
            "start_s": 101.0 + i as f64 * 1e-3,
            "end_s": 102.0,
            "metadata": {"cas.hit": i % 2 == 0},
        })
    };
    let doc = json!({
        "timestamp": "2026-11-30T03:43:45+00:00",
        "start_s": 100.0,
        "total_elapsed_s": 10.0,
        "phases": [{
            "name": "build_execution",
            "start_s": 100.5,
            "end_s": 109.0,
            "rules": (0..rules).map(rule).collect::<Vec<_>>(),
        }],
    });
    parse_for_test(&doc.to_string())
}

#[test]
fn streamed_bytes_equal_prost_encoding() {
    // Sizes around the varint boundaries of the two streamed lengths.
    for rules in [0, 1, 2, 100, 2000] {
        let build = sample_build(rules);
        let clock = Clock::for_build(&build).unwrap();
        let resource = Resource {
            attributes: vec![KeyValue {
                key: "service.name".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let (request, stats_a) =
            build_trace_request(input(&build, &clock, resource.clone()), &mut Warnings::new());
        // Size hints whose varint estimate is right, too small, too big.
        for hint in [0, 1 << 20, 1 << 30] {
            let (bytes, stats_b) = encode_trace_request(
                input(&build, &clock, resource.clone()),
                hint,
                &mut Warnings::new(),
            );
            assert_eq!(stats_a, stats_b);
            assert_eq!(bytes, request.encode_to_vec(), "{rules} rules, hint {hint}");
        }
        // A reused buffer: old contents never leak into the output.
        let (bytes, _) = encode_trace_request_into(
            input(&build, &clock, resource.clone()),
            &[],
            vec![0xAA; 3 << 20],
            &mut Warnings::new(),
        );
        assert_eq!(bytes, request.encode_to_vec(), "{rules} rules, reused buffer");
        assert!(bytes.capacity() - bytes.len() <= SHRINK_SLACK);
        assert_eq!(stats_a.spans, rules as u64 + 2);
    }
}

#[test]
fn only_the_root_becomes_server() {
    let build = sample_build(3);
    let clock = Clock::for_build(&build).unwrap();
    for server in [false, true] {
        let mut i = input(&build, &clock, Resource::default());
        i.semconv_root_span = server;
        let (request, _) = build_trace_request(i, &mut Warnings::new());
        let root_name = &request.resource_spans[0].scope_spans[0].spans[0].name;
        assert_eq!(
            root_name,
            if server {
                "BUILD geom"
            } else {
                "compiletools.build"
            }
        );
        let mut i = input(&build, &clock, Resource::default());
        i.semconv_root_span = server;
        assert_eq!(
            encode_trace_request(i, 0, &mut Warnings::new()).0,
            request.encode_to_vec(),
            "semconv root span {server}"
        );
        let kinds: Vec<i32> = request.resource_spans[0].scope_spans[0]
            .spans
            .iter()
            .map(|s| s.kind)
            .collect();
        let root = if server {
            SpanKind::Server
        } else {
            SpanKind::Internal
        };
        assert_eq!(kinds[0], root as i32);
        assert!(
            kinds[1..].iter().all(|k| *k == SpanKind::Internal as i32),
            "{kinds:?}"
        );
        assert_eq!(kinds.len(), 5);
    }
}

#[test]
fn extra_scope_spans_encode_like_prost() {
    let extra = vec![ScopeSpans {
        scope: Some(scope("compiletools.ccache")),
        spans: vec![Span {
            name: "ct.ccache.snapshot".into(),
            span_id: vec![1; 8],
            ..Default::default()
        }],
        schema_url: String::new(),
    }];
    for rules in [0, 3, 2000] {
        let build = sample_build(rules);
        let clock = Clock::for_build(&build).unwrap();
        let (request, stats_a) = build_trace_request_with(
            input(&build, &clock, Resource::default()),
            extra.clone(),
            &mut Warnings::new(),
        );
        let (bytes, stats_b) = encode_trace_request_with(
            input(&build, &clock, Resource::default()),
            &extra,
            0,
            &mut Warnings::new(),
        );
        assert_eq!(stats_a, stats_b);
        assert_eq!(stats_a.spans, rules as u64 + 3);
        assert_eq!(bytes, request.encode_to_vec(), "{rules} rules");
        assert_eq!(request.resource_spans[0].scope_spans.len(), 2);
    }
}

/// Rules whose metadata collides with every built-in key, values of
/// every type, cut strings, unsupported values, an empty key, a test
/// rule and a rule without target: the wire encoder must give prost's
/// bytes for all of them.
fn tricky_build() -> Build {
    parse_for_test(&tricky_build_json())
}

fn tricky_build_json() -> String {
    let doc = json!({
        "timestamp": "2026-11-30T03:43:45+00:00",
        "start_s": 100.0,
        "total_elapsed_s": 10.0,
        "phases": [{
            "name": "build_execution",
            "start_s": 100.5,
            "end_s": 109.0,
            "metadata": {"phase.key": "v", "n": null, "error.type": "from the file"},
            "rules": [
                {"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp",
                 "start_s": 101.0, "end_s": 102.0,
                 "metadata": {"ct.target": 7, "ct.rule.weighted_s": "x", "cicd.pipeline.task.name": "y",
                              "cicd.pipeline.task.run.id": 3, "test.case.name": "n",
                              "": "empty key", "obj": {"a": 1}, "mixed": [1, "a"],
                              "s": "a string much longer than the limit of sixty-four bytes, cut there",
                              "b": false, "i": -5, "d": 0.0, "ba": [true, false], "ia": [0, -1, 300],
                              "da": [1.5], "sa": ["x", "", "é".repeat(40)], "e": []}},
                {"name": "t", "rule_type": "test", "target": "bin/t_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.exe.result", "start_s": 102.0, "end_s": 103.0,
                 "metadata": {"ct.rule_type": "override", "ct.critical_path": false}},
                {"name": "m", "rule_type": "mkdir", "start_s": 103.0, "end_s": 103.0,
                 "children": [{"name": "c", "rule_type": "x", "start_s": 103.0, "end_s": 103.0}]},
                {"name": "unanchored", "rule_type": "compile", "start_s": 0.0, "end_s": 1.0},
                {"name": "early", "rule_type": "compile", "start_s": 101.0, "end_s": 100.0}
            ],
        }, {"name": "postbuild_scripts", "start_s": 109.0, "end_s": 109.5}],
    });
    doc.to_string()
}

/// [`tricky_build`] as a build that failed in `build_execution`: a
/// `prebuild_scripts` phase first and no `postbuild_scripts`.
fn tricky_failed_build() -> Build {
    let mut doc: serde_json::Value = serde_json::from_str(&tricky_build_json()).unwrap();
    let phases = doc["phases"].as_array_mut().unwrap();
    phases.pop();
    phases.insert(
        0,
        json!({"name": "prebuild_scripts", "start_s": 100.0, "end_s": 100.5}),
    );
    parse_for_test(&doc.to_string())
}

#[test]
fn wire_encoder_equals_prost_on_tricky_attributes() {
    let build = tricky_build();
    let clock = Clock::for_build(&build).unwrap();
    let analytics = crate::analytics::analyze(&build, &clock);
    for with_analytics in [false, true] {
        let make = || {
            let mut i = input(&build, &clock, Resource::default());
            i.analytics = with_analytics.then_some(&analytics);
            i
        };
        let (request, stats_a) = build_trace_request(make(), &mut Warnings::new());
        let (bytes, stats_b) = encode_trace_request(make(), 0, &mut Warnings::new());
        assert_eq!(stats_a, stats_b);
        assert_eq!(stats_a.dropped_attributes, 2);
        assert_eq!(stats_a.unanchored_rules, 1);
        assert_eq!(bytes, request.encode_to_vec(), "analytics {with_analytics}");
    }
}

#[test]
fn a_failed_build_s_root_and_stopped_phase_have_status_error_in_both_encoders() {
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
    let build = tricky_failed_build();
    let clock = Clock::for_build(&build).unwrap();
    for (max_len, semconv_root) in [(64, false), (8, true)] {
        let make = || {
            let mut i = input(&build, &clock, Resource::default());
            i.max_attribute_len = max_len;
            i.semconv_root_span = semconv_root;
            i
        };
        let (request, _) = build_trace_request(make(), &mut Warnings::new());
        let (bytes, _) = encode_trace_request(make(), 0, &mut Warnings::new());
        assert_eq!(bytes, request.encode_to_vec(), "max {max_len}");
        let spans = &request.resource_spans[0].scope_spans[0].spans;
        let failed: Vec<(&str, &str)> = spans
            .iter()
            .filter_map(|s| {
                let st = s.status.as_ref()?;
                assert_eq!(st.code, StatusCode::Error as i32);
                Some((s.name.as_str(), st.message.as_str()))
            })
            .collect();
        let message = if max_len == 64 {
            "build failed in build_execution"
        } else {
            "build fa"
        };
        let root = if semconv_root {
            "BUILD geom"
        } else {
            "compiletools.build"
        };
        assert_eq!(failed, [(root, message), ("phase.build_execution", message)]);
        let phase = spans.iter().find(|s| s.name == "phase.build_execution").unwrap();
        let error_type: Vec<_> = phase
            .attributes
            .iter()
            .filter(|kv| kv.key == "error.type")
            .collect();
        assert_eq!(
            error_type.len(),
            1,
            "the file's error.type is replaced in its place"
        );
    }
    // A successful build: no status anywhere.
    let build = tricky_build();
    let (request, _) = build_trace_request(input(&build, &clock, Resource::default()), &mut Warnings::new());
    assert!(request.resource_spans[0].scope_spans[0]
        .spans
        .iter()
        .all(|s| s.status.is_none()));
}

fn parts(build: Build, extra: Vec<ScopeSpans>) -> TraceParts {
    let clock = Clock::for_build(&build).unwrap();
    let analytics = crate::analytics::analyze(&build, &clock);
    TraceParts {
        build,
        clock,
        analytics,
        trace_id: [9; 16],
        resource: Resource {
            attributes: vec![KeyValue {
                key: "service.name".into(),
                ..Default::default()
            }],
            ..Default::default()
        },
        root_attributes: vec![KeyValue {
            key: "r".into(),
            ..Default::default()
        }],
        max_attribute_len: 64,
        semconv_root_span: true,
        pipeline_name: "geom".into(),
        extra,
        clang: None,
    }
}

/// The whole request the chunks must add up to, from the reference
/// encoder.
fn whole(p: &TraceParts) -> ExportTraceServiceRequest {
    let i = TraceInput {
        build: &p.build,
        clock: &p.clock,
        trace_id: p.trace_id,
        resource: p.resource.clone(),
        root_attributes: p.root_attributes.clone(),
        max_attribute_len: p.max_attribute_len,
        analytics: Some(&p.analytics),
        semconv_root_span: p.semconv_root_span,
        pipeline_name: &p.pipeline_name,
        clang: p.clang.as_ref(),
    };
    build_trace_request_with(i, p.extra.clone(), &mut Warnings::new()).0
}

fn snapshot_scope() -> ScopeSpans {
    ScopeSpans {
        scope: Some(scope("compiletools.ccache")),
        spans: vec![Span {
            name: "ct.ccache.snapshot".into(),
            span_id: vec![1; 8],
            ..Default::default()
        }],
        schema_url: String::new(),
    }
}

#[test]
fn chunks_cut_the_whole_trace_at_span_boundaries() {
    for (rules, extra) in [
        (0, vec![]),
        (5, vec![snapshot_scope()]),
        (6, vec![]),
        (300, vec![]),
        (300, vec![snapshot_scope()]),
    ] {
        let build = match rules {
            5 => tricky_build(),
            6 => tricky_failed_build(),
            _ => sample_build(rules),
        };
        let p = parts(build, extra);
        let reference = whole(&p);
        let rs = &reference.resource_spans[0];
        // (scope name, span) in trace order.
        let expected: Vec<(String, Span)> = rs
            .scope_spans
            .iter()
            .flat_map(|ss| {
                let name = ss.scope.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                ss.spans.iter().map(move |sp| (name.clone(), sp.clone()))
            })
            .collect();
        for max in [0, 1, 2, 3, 7, 128, 1000] {
            let chunks = TraceChunks::new(parts_clone(&p), max, &mut Warnings::new());
            assert_eq!(chunks.stats().spans as usize, expected.len());
            let mut got = Vec::new();
            for k in 0..chunks.len() {
                let bytes = chunks.chunk(k).unwrap();
                assert_eq!(chunks.chunk(k).unwrap(), bytes, "chunk {k} is not deterministic");
                let req = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
                assert_eq!(req.resource_spans.len(), 1);
                let chunk_rs = &req.resource_spans[0];
                assert_eq!(chunk_rs.resource, rs.resource, "chunk {k} lacks the resource");
                let n: usize = chunk_rs.scope_spans.iter().map(|ss| ss.spans.len()).sum();
                assert!(
                    n >= 1 && (max == 0 || n <= max),
                    "chunk {k} has {n} spans (max {max})"
                );
                for ss in &chunk_rs.scope_spans {
                    assert!(!ss.spans.is_empty(), "empty scope in chunk {k}");
                    let name = ss.scope.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                    got.extend(ss.spans.iter().map(|sp| (name.clone(), sp.clone())));
                }
            }
            assert!(chunks.chunk(chunks.len()).is_none());
            assert_eq!(got, expected, "{rules} rules, max {max}");
            // Every parent is in the same chunk or an earlier one.
            let mut seen = std::collections::HashSet::new();
            for (_, span) in &got {
                assert!(span.parent_span_id.is_empty() || seen.contains(&span.parent_span_id));
                seen.insert(span.span_id.clone());
            }
        }
    }
}

fn parts_clone(p: &TraceParts) -> TraceParts {
    TraceParts {
        build: p.build.clone(),
        clock: p.clock,
        analytics: p.analytics.clone(),
        trace_id: p.trace_id,
        resource: p.resource.clone(),
        root_attributes: p.root_attributes.clone(),
        max_attribute_len: p.max_attribute_len,
        semconv_root_span: p.semconv_root_span,
        pipeline_name: p.pipeline_name.clone(),
        extra: p.extra.clone(),
        clang: p.clang.clone(),
    }
}

/// Clang traces for some compile rules of `build`: a small trace whose
/// events nest three deep, one with a detail longer than the attribute limit.
fn clang_traces(build: &Build, clock: &Clock, every: usize) -> crate::timetrace::BuildTraces {
    use crate::timetrace::{parse_trace, pick_spans, BuildTraces, Placement, TraceLimits};
    let long = "h".repeat(100);
    let doc = format!(
        r#"{{"beginningOfTime": 1796001826000000, "traceEvents": [
        {{"ph":"X","name":"Source","ts":10,"dur":300,"args":{{"detail":"/src/a.h"}}}},
        {{"ph":"X","name":"Source","ts":40,"dur":200,"args":{{"detail":"/src/{long}.h"}}}},
        {{"ph":"X","name":"InstantiateClass","ts":400,"dur":100,"args":{{"detail":"std::vector<int>"}}}},
        {{"ph":"X","name":"Frontend","ts":0,"dur":900}},
        {{"ph":"X","name":"Backend","ts":900,"dur":100}},
        {{"ph":"X","name":"ExecuteCompiler","ts":0,"dur":1000}}]}}"#
    );
    let unit = parse_trace(doc.as_bytes(), &TraceLimits::default()).unwrap();
    let mut traces = BuildTraces::new(build.event_count());
    // Only anchored rules are spans (so are those the pipeline reads traces for).
    let ids: Vec<_> = build
        .rule_ids()
        .into_iter()
        .filter(|id| clock.is_anchored(&build.event(*id).unwrap()))
        .collect();
    for (n, id) in ids.iter().enumerate().filter(|(n, _)| n % every == 0) {
        let event = build.event(*id).unwrap();
        let ((start, end), _) = clock.event_interval(&event);
        let (picked, _) = pick_spans(&unit, 0, 2 + n % 5);
        let placement = Placement::fit(unit.beginning_of_time_us.unwrap(), 0, 1000, start, end);
        traces.push(id.slot(), &unit, &picked, &placement);
    }
    traces
}

#[test]
fn clang_child_spans_encode_alike_in_every_encoder() {
    for rules in [1, 5, 300] {
        let build = if rules == 5 {
            tricky_build()
        } else {
            sample_build(rules)
        };
        let clock = Clock::for_build(&build).unwrap();
        let traces = clang_traces(&build, &clock, 2);
        assert!(traces.span_count() > 0);
        let make = || {
            let mut i = input(&build, &clock, Resource::default());
            i.clang = Some(&traces);
            i
        };
        let (request, stats_a) = build_trace_request(make(), &mut Warnings::new());
        let (bytes, stats_b) = encode_trace_request(make(), 0, &mut Warnings::new());
        assert_eq!(stats_a, stats_b);
        assert_eq!(bytes, request.encode_to_vec(), "{rules} rules");
        let spans = &request.resource_spans[0].scope_spans[0].spans;
        let plain = build_trace_request(input(&build, &clock, Resource::default()), &mut Warnings::new()).0;
        let plain_spans = plain.resource_spans[0].scope_spans[0].spans.len();
        assert_eq!(spans.len(), plain_spans + traces.span_count());
        // Every clang span sits under its compile span, inside its times.
        let by_id: std::collections::HashMap<&[u8], &Span> =
            spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
        assert_eq!(by_id.len(), spans.len(), "span ids are unique");
        let mut clang = 0;
        for s in spans.iter().filter(|s| {
            s.name == "Source"
                || s.name == "ExecuteCompiler"
                || s.name == "Frontend"
                || s.name == "Backend"
                || s.name == "InstantiateClass"
        }) {
            clang += 1;
            let mut up = by_id[s.parent_span_id.as_slice()];
            while up.attributes.iter().all(|a| a.key != "ct.rule_type") {
                up = by_id[up.parent_span_id.as_slice()];
            }
            assert!(up.attributes.iter().any(|a| a.key == "ct.clang.frontend_s"));
            assert!(
                up.start_time_unix_nano <= s.start_time_unix_nano
                    && s.end_time_unix_nano <= up.end_time_unix_nano
            );
        }
        assert_eq!(clang, traces.span_count());

        let mut p = parts(build.clone(), vec![snapshot_scope()]);
        p.clang = Some(traces.clone());
        let reference = whole(&p);
        for max in [0, 1, 3, 128] {
            let chunks = TraceChunks::new(parts_clone(&p), max, &mut Warnings::new());
            let mut got = Vec::new();
            for k in 0..chunks.len() {
                let req = ExportTraceServiceRequest::decode(chunks.chunk(k).unwrap().as_slice()).unwrap();
                for ss in &req.resource_spans[0].scope_spans {
                    got.extend(ss.spans.iter().cloned());
                }
            }
            let expected: Vec<Span> = reference.resource_spans[0]
                .scope_spans
                .iter()
                .flat_map(|ss| ss.spans.iter().cloned())
                .collect();
            assert_eq!(got, expected, "{rules} rules, max {max}");
            let mut seen = std::collections::HashSet::new();
            for span in &got {
                assert!(span.parent_span_id.is_empty() || seen.contains(&span.parent_span_id));
                seen.insert(span.span_id.clone());
            }
        }
    }
}

/// The rebuild attributes (a string, a static string array) and the root's
/// link to the previous build: the same bytes from both encoders, the link
/// on the root only.
#[test]
fn rebuild_attributes_and_the_previous_build_link_equal_prost_encoding() {
    use crate::history::{BuildKey, BuildOrigin, History, HistoryConfig};
    // A precompiled header too, whose manifest names another hash of a.hpp
    // in the second build: its changed headers are a dynamic string array.
    let cell = tempfile::tempdir().unwrap();
    let pch_dir = cell.path().join("cf1e549cce33c0e3");
    std::fs::create_dir(&pch_dir).unwrap();
    let manifest = |hash: &str| {
        let text = json!({"header_realpath": "/s/pch.hpp",
                          "transitive_hashes": {"/s/a.hpp": hash, "/s/b.hpp": "0".repeat(40)}});
        std::fs::write(pch_dir.join("manifest.json"), text.to_string()).unwrap();
        // Dated before the builds (2026-11-30), as compiletools writes it while planning.
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_996_800);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(pch_dir.join("manifest.json"))
            .unwrap();
        file.set_modified(at).unwrap();
    };
    let pch_rule = json!({"name": "pch.hpp", "rule_type": "compile",
                          "target": format!("{}/pch.hpp.gch", pch_dir.display()), "source": "/s/pch.hpp",
                          "start_s": 101.0, "end_s": 103.0, "metadata": {"cas.hit": false}});
    let cas_build = |hh: u32, dep: &str| {
        let rule = |i: usize| {
            json!({
                "name": format!("r{i}.cpp"), "rule_type": "compile",
                "target": format!("/c/0d/r{i}_0d99ae76451a_{dep}_d85fc71f180bdf74.o"),
                "source": format!("/s/r{i}.cpp"), "start_s": 101.0, "end_s": 102.0,
                "metadata": {"cas.hit": false},
            })
        };
        parse_for_test(
            &json!({"timestamp": format!("2026-11-30T{hh:02}:43:45+00:00"), "start_s": 100.0, "total_elapsed_s": 10.0,
                    "phases": [{"name": "build_execution", "start_s": 100.5, "end_s": 109.0,
                                "rules": (0..3).map(rule).chain([pch_rule.clone()]).collect::<Vec<_>>()}]})
            .to_string(),
        )
    };
    let history = History::new(HistoryConfig::default());
    let facts_of = |build: &Build, n: u8| {
        let clock = Clock::for_build(build).unwrap();
        let origin = BuildOrigin {
            host: "h",
            pipeline: "p",
            key: BuildKey::new(clock.root_interval().0, &[n; 16]),
            trace_id: [n; 16],
        };
        let id = format!("b{n}");
        let mut facts = history.evaluate_build(build, &clock, &origin, &id);
        history.finish(&id, 1, None, &mut facts);
        history.commit(&id);
        facts
    };
    manifest(&"1".repeat(40));
    facts_of(&cas_build(1, "0af5b42cc55ffb"), 1);
    manifest(&"2".repeat(40));
    let build = cas_build(2, "1af5b42cc55ffb");
    let clock = Clock::for_build(&build).unwrap();
    let analytics = crate::analytics::analyze(&build, &clock).with_history(Some(facts_of(&build, 2)));
    let make = || TraceInput {
        analytics: Some(&analytics),
        ..input(&build, &clock, Resource::default())
    };
    let (request, _) = build_trace_request(make(), &mut Warnings::new());
    let (bytes, _) = encode_trace_request(make(), 1 << 16, &mut Warnings::new());
    assert_eq!(bytes, request.encode_to_vec());
    let spans = &request.resource_spans[0].scope_spans[0].spans;
    assert_eq!(spans[0].links.len(), 1);
    assert_eq!(spans[0].links[0].trace_id, [1; 16]);
    assert_eq!(spans[0].links[0].span_id, crate::ids::span_id(&[1; 16], &[]));
    assert!(spans[1..].iter().all(|s| s.links.is_empty()));
    let reasons: Vec<&KeyValue> = spans
        .iter()
        .flat_map(|s| &s.attributes)
        .filter(|kv| kv.key == "ct.rule.rebuild_reason")
        .collect();
    assert_eq!(reasons.len(), 4);
    let named: Vec<String> = spans
        .iter()
        .flat_map(|s| &s.attributes)
        .filter(|kv| kv.key == "ct.rule.rebuild_headers")
        .flat_map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(any_value::Value::ArrayValue(a)) => a.values.clone(),
            _ => Vec::new(),
        })
        .filter_map(|v| match v.value {
            Some(any_value::Value::StringValue(s)) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(named, ["/s/a.hpp"]);
}
