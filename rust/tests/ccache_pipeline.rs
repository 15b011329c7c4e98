//! `process_build` with side files: the ccache statslog (root summary,
//! aggregates, per-TU attribution, metrics, metrics-as-spans) and
//! `rule_outcomes.log`, through the signals and flags the receiver sets.

use crate::common;

use std::path::{Path, PathBuf};

use common::fixture::{attr, span, timing_doc, wall_ns, Fixture};
use compiletools_core::{ids, BuildOutput, BuildRequest, Signals};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// Two compile rules (a.cpp, b.cpp) and a link rule, make-style (no
/// metadata), inside `build_execution`.
fn build_doc() -> String {
    let rule = |name: &str, rule_type: &str, source: &str, target: &str| {
        format!(
            r#"{{"name": "{name}", "rule_type": "{rule_type}", "target": "{target}", "source": "{source}",
                "elapsed_s": 1.0, "start_s": 102.0, "end_s": 103.0}}"#
        )
    };
    timing_doc(&format!(
        r#"[{{"name": "build_execution", "elapsed_s": 5.0, "start_s": 101.0, "end_s": 106.0, "rules": [{}, {}, {}]}}]"#,
        rule("a.cpp", "compile", "/s/a.cpp", "/o/a.o"),
        rule("b.cpp", "compile", "/s/b.cpp", "/o/b.o"),
        rule("a.o", "link", "/o/a.o", "/e/app.exe"),
    ))
}

const STATSLOG: &str = "# \ncalled_for_preprocessing\n# /s/a.cpp\ndirect_cache_hit\nlocal_storage_hit\n\
                        # /s/b.cpp\ncache_miss\ndirect_cache_miss\nlocal_storage_write\n";

struct Case {
    fx: Fixture,
    side: tempfile::TempDir,
}

impl Case {
    fn new(statslog: Option<&str>, outcomes: Option<&str>) -> (Self, BuildRequest) {
        let fx = Fixture::new(build_doc());
        let side = tempfile::tempdir().unwrap();
        let mut req = fx.request();
        req.statslog = statslog.map(|s| write(side.path(), "ccache.statslog", s));
        req.outcomes = outcomes.map(|s| write(side.path(), "rule_outcomes.log", s));
        (Self { fx, side }, req)
    }

    fn run(&self, req: &BuildRequest) -> BuildOutput {
        self.fx
            .run_with(req)
            .unwrap_or_else(|e| panic!("process_build: {e}"))
    }
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn trace(out: &BuildOutput) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest::decode(out.traces.as_deref().expect("traces")).unwrap()
}

fn spans(out: &BuildOutput) -> Vec<Span> {
    trace(out).resource_spans[0].scope_spans[0].spans.clone()
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

fn str_attr<'s>(s: &'s Span, key: &str) -> Option<&'s str> {
    match attr(s, key) {
        Some(Value::StringValue(v)) => Some(v),
        _ => None,
    }
}

#[test]
fn root_summary_aggregates_and_attribution() {
    let (case, req) = Case::new(Some(STATSLOG), None);
    let out = case.run(&req);
    let spans = spans(&out);
    let root = span(&spans, "compiletools.build");
    assert!(keys(&root.attributes)[..12]
        .iter()
        .all(|k| k.starts_with("ct.ccache.")));
    assert_eq!(attr(root, "ct.ccache.cacheable_calls"), Some(&Value::IntValue(2)));
    assert_eq!(attr(root, "ct.ccache.local_writes"), Some(&Value::IntValue(1)));
    assert_eq!(attr(root, "ct.ccache.hit_rate"), Some(&Value::DoubleValue(0.5)));
    // H = 1 of 2 compile rules.
    assert_eq!(
        attr(root, "ct.build.ccache_avoided_count"),
        Some(&Value::IntValue(1))
    );
    assert_eq!(attr(root, "ct.build.recompiled_count"), Some(&Value::IntValue(1)));
    assert_eq!(
        attr(root, "ct.build.compile_avoided_rate"),
        Some(&Value::DoubleValue(0.5))
    );
    assert_eq!(attr(root, "ct.build.aggregate_warning"), None);

    let a = span(&spans, "compile.s/a.cpp");
    assert_eq!(
        (
            str_attr(a, "ct.rule.cache_layer"),
            str_attr(a, "ct.ccache.outcome")
        ),
        (Some("ccache"), Some("direct_cache_hit"))
    );
    let b = span(&spans, "compile.s/b.cpp");
    assert_eq!(
        (
            str_attr(b, "ct.rule.cache_layer"),
            str_attr(b, "ct.ccache.outcome")
        ),
        (Some("compiled"), Some("cache_miss"))
    );
    let link = span(&spans, "link.o/a.o");
    assert_eq!(str_attr(link, "ct.ccache.outcome"), None);
}

#[test]
fn overcount_clamps_recompiled_and_warns() {
    // Three hits for two compile rules (a stale explicit statslog).
    let log = "# /x.cpp\ndirect_cache_hit\n# /y.cpp\ndirect_cache_hit\n# /z.cpp\npreprocessed_cache_hit\n";
    let (case, req) = Case::new(Some(log), None);
    let spans = spans(&case.run(&req));
    let root = span(&spans, "compiletools.build");
    assert_eq!(
        attr(root, "ct.build.ccache_avoided_count"),
        Some(&Value::IntValue(3))
    );
    assert_eq!(attr(root, "ct.build.recompiled_count"), Some(&Value::IntValue(0)));
    assert_eq!(
        attr(root, "ct.build.compile_avoided_rate"),
        Some(&Value::DoubleValue(1.0))
    );
    assert_eq!(
        str_attr(root, "ct.build.aggregate_warning"),
        Some("ccache_overcount")
    );
    // The warning closes compiletools' keys; only the analytics and the
    // pipeline run's semantic-convention keys follow (the fixture's phases
    // decide no result).
    let root_keys = keys(&root.attributes);
    let rate = root_keys
        .iter()
        .position(|k| *k == "ct.build.compile_avoided_rate")
        .unwrap();
    assert_eq!(
        &root_keys[rate + 1..],
        [
            "ct.build.aggregate_warning",
            "ct.build.parallelism.avg",
            "ct.build.parallelism.max",
            "ct.build.critical_path_s",
            "ct.build.critical_path.method",
            "ct.build.top_weighted_rules",
            "cicd.pipeline.action.name"
        ]
    );
}

#[test]
fn empty_or_missing_statslog_means_no_ccache_data() {
    for statslog in [Some("# /s/a.cpp\n#\n\n"), None] {
        let (case, mut req) = Case::new(statslog, None);
        if statslog.is_none() {
            req.statslog = Some(case.side.path().join("never-written"));
        }
        let out = case.run(&req);
        let spans = spans(&out);
        let root = span(&spans, "compiletools.build");
        assert!(!keys(&root.attributes).iter().any(|k| k.starts_with("ct.ccache.")));
        assert!(out.metrics.is_none());
        assert_eq!(out.summary.metric_points, 0);
        assert!(out.summary.warnings.is_empty(), "{:?}", out.summary.warnings);
    }
}

#[test]
fn metrics_request() {
    let (case, req) = Case::new(Some(STATSLOG), None);
    let out = case.run(&req);
    let trace_id = spans(&out)[0].trace_id.clone();
    let m = ExportMetricsServiceRequest::decode(out.metrics.as_deref().expect("metrics")).unwrap();
    assert_eq!(m.resource_metrics.len(), 1);
    let rm = &m.resource_metrics[0];
    let resource = rm.resource.as_ref().unwrap();
    let invocation = resource
        .attributes
        .iter()
        .find(|kv| kv.key == "ct.invocation_id")
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.clone());
    assert_eq!(invocation, Some(Value::StringValue(ids::to_hex(&trace_id))));
    // Otherwise the trace's resource, without the pipeline run (opt-in on
    // metrics by the CI/CD conventions).
    let trace_resource = trace(&out).resource_spans[0].resource.clone().unwrap();
    let mut trace_keys = keys(&trace_resource.attributes);
    trace_keys.retain(|k| *k != "cicd.pipeline.run.id");
    assert_eq!(keys(&resource.attributes), trace_keys);

    let sm = &rm.scope_metrics[0];
    assert_eq!(sm.scope.as_ref().unwrap().name, "compiletools.ccache");
    let Some(Data::Sum(sum)) = &sm.metrics[0].data else {
        panic!("ct.ccache.events is a sum")
    };
    let points: Vec<(String, Option<PointValue>)> = sum
        .data_points
        .iter()
        .map(
            |p| match p.attributes[0].value.as_ref().and_then(|v| v.value.clone()) {
                Some(Value::StringValue(s)) => (s, p.value),
                other => panic!("{other:?}"),
            },
        )
        .collect();
    let want = [
        ("called_for_preprocessing", 1),
        ("direct_cache_hit", 1),
        ("local_storage_hit", 1),
        ("cache_miss", 1),
        ("direct_cache_miss", 1),
        ("local_storage_write", 1),
    ];
    let want: Vec<(String, Option<PointValue>)> = want
        .iter()
        .map(|(n, c)| (n.to_string(), Some(PointValue::AsInt(*c))))
        .collect();
    assert_eq!(points, want);
    for p in &sum.data_points {
        assert_eq!(
            (p.start_time_unix_nano, p.time_unix_nano),
            (wall_ns(100.0), wall_ns(110.0))
        );
    }
    assert_eq!(out.summary.metric_points, 8);
}

#[test]
fn signals_decide_what_is_built() {
    let (case, mut req) = Case::new(Some(STATSLOG), Some("/o/a.o\tobj\t1\t5\n"));
    let both = case.run(&req);

    req.signals = Signals {
        traces: false,
        metrics: true,
    };
    let metrics_only = case.run(&req);
    assert!(metrics_only.traces.is_none());
    assert_eq!(metrics_only.metrics, both.metrics, "same bytes without the trace");
    assert_eq!(
        (metrics_only.summary.spans, metrics_only.summary.metric_points),
        (0, 8)
    );

    req.signals = Signals {
        traces: true,
        metrics: false,
    };
    let traces_only = case.run(&req);
    assert!(traces_only.metrics.is_none());
    assert_eq!(traces_only.traces, both.traces);
    assert_eq!(traces_only.summary.metric_points, 0);
}

#[test]
fn side_files_only_read_when_needed() {
    // A directory as outcomes log is worth a warning, but only when the
    // trace (its only user) is built.
    let (case, mut req) = Case::new(Some(STATSLOG), None);
    req.outcomes = Some(case.side.path().to_path_buf());
    assert_eq!(case.run(&req).summary.warnings.len(), 1);
    // Only the ccache metrics: no trace, and no log records (the clang
    // traces' records also need the outcomes, to tell CAS hits).
    req.logs = false;
    req.signals = Signals {
        traces: false,
        metrics: true,
    };
    assert!(case.run(&req).summary.warnings.is_empty());
    // Neither signal: nothing is read at all.
    req.statslog = Some(case.side.path().to_path_buf());
    req.signals = Signals {
        traces: false,
        metrics: false,
    };
    let out = case.run(&req);
    assert!(out.traces.is_none() && out.metrics.is_none() && out.summary.warnings.is_empty());
}

#[test]
fn metrics_as_spans_adds_a_snapshot_child() {
    let (case, mut req) = Case::new(Some(STATSLOG), None);
    req.metrics_as_spans = true;
    let out = case.run(&req);
    assert!(out.metrics.is_none(), "the snapshot replaces the metrics");
    assert_eq!(out.summary.metric_points, 0);
    let t = trace(&out);
    let scopes = &t.resource_spans[0].scope_spans;
    assert_eq!(scopes.len(), 2);
    assert_eq!(scopes[1].scope.as_ref().unwrap().name, "compiletools.ccache");
    let root = &scopes[0].spans[0];
    let snap = &scopes[1].spans[0];
    assert_eq!(snap.name, "ct.ccache.snapshot");
    assert_eq!(snap.parent_span_id, root.span_id);
    assert_eq!(snap.trace_id, root.trace_id);
    let tid: [u8; 16] = root.trace_id.clone().try_into().unwrap();
    assert_eq!(snap.span_id, ids::snapshot_span_id(&tid));
    assert_eq!(
        (snap.start_time_unix_nano, snap.end_time_unix_nano),
        (root.end_time_unix_nano, root.end_time_unix_nano)
    );
    assert_eq!(
        keys(&snap.attributes)[0],
        "ct.ccache.events.called_for_preprocessing"
    );
    assert_eq!(
        &keys(&snap.attributes)[6..],
        ["ct.ccache.hit_rate", "ct.ccache.remote_hit_rate"]
    );
    assert_eq!(out.summary.spans, scopes[0].spans.len() as u64 + 1);
    // The build's own spans are unchanged by the flag.
    req.metrics_as_spans = false;
    let plain = trace(&case.run(&req));
    assert_eq!(plain.resource_spans[0].scope_spans[0], scopes[0]);

    // A span needs the traces signal; metrics-as-spans never sends metrics.
    req.metrics_as_spans = true;
    req.signals = Signals {
        traces: false,
        metrics: true,
    };
    let out = case.run(&req);
    assert!(out.traces.is_none() && out.metrics.is_none());
}

#[test]
fn outcomes_merge_into_rules() {
    let outcomes = "/o/a.o\tobj\t0\t0\n/o/b.o\tobj\t1\t4096\n/e/app.exe\texe\t0\t0\n/o/a.o\tobj\t1\t77\n";
    let (case, req) = Case::new(None, Some(outcomes));
    let spans = spans(&case.run(&req));
    let a = span(&spans, "compile.s/a.cpp");
    assert_eq!(
        keys(&a.attributes),
        [
            "ct.rule_type",
            "ct.target",
            "ct.source",
            "cas.hit",
            "cas.bytes_reused",
            "cas.kind",
            "ct.rule.cache_layer",
            "ct.rule.weighted_s",
            "ct.critical_path",
            "cicd.pipeline.task.name",
            "cicd.pipeline.task.type",
            "cicd.pipeline.task.run.id",
            "cicd.pipeline.task.run.result"
        ]
    );
    // Last record wins.
    assert_eq!(attr(a, "cas.bytes_reused"), Some(&Value::IntValue(77)));
    assert_eq!(str_attr(a, "ct.rule.cache_layer"), Some("cas"));
    let link = span(&spans, "link.o/a.o");
    assert_eq!(attr(link, "cas.hit"), Some(&Value::BoolValue(false)));
    assert_eq!(str_attr(link, "ct.rule.cache_layer"), None);
    let root = span(&spans, "compiletools.build");
    assert_eq!(
        attr(root, "ct.build.cas_avoided_count"),
        Some(&Value::IntValue(2))
    );
    assert_eq!(attr(root, "ct.build.recompiled_count"), Some(&Value::IntValue(0)));
}

#[test]
fn cas_hits_stay_cas_under_attribution() {
    let (case, req) = Case::new(Some(STATSLOG), Some("/o/a.o\tobj\t1\t5\n"));
    let spans = spans(&case.run(&req));
    let a = span(&spans, "compile.s/a.cpp");
    assert_eq!(str_attr(a, "ct.rule.cache_layer"), Some("cas"));
    assert_eq!(str_attr(a, "ct.ccache.outcome"), None);
    let b = span(&spans, "compile.s/b.cpp");
    assert_eq!(str_attr(b, "ct.rule.cache_layer"), Some("compiled"));
}

#[test]
fn outputs_are_deterministic() {
    let (case, mut req) = Case::new(Some(STATSLOG), Some("/o/a.o\tobj\t0\t0\n"));
    let a = case.run(&req);
    let b = case.run(&req);
    assert_eq!((&a.traces, &a.metrics), (&b.traces, &b.metrics));
    req.metrics_as_spans = true;
    assert_eq!(case.run(&req).traces, case.run(&req).traces);
}

#[test]
fn hostile_statslog_event_names() {
    // An event name longer than the attribute limit is counted (it is in
    // the summary's world) but exported neither as a point nor a key.
    let long = "x".repeat(200);
    let (case, mut req) = Case::new(Some(&format!("cache_miss\n{long}\n")), None);
    req.limits.max_attribute_len = 64;
    let out = case.run(&req);
    assert_eq!(out.summary.metric_points, 3);
    assert!(out.summary.warnings.iter().any(|w| w.contains("longer than 64")));
    req.metrics_as_spans = true;
    let t = trace(&case.run(&req));
    assert_eq!(t.resource_spans[0].scope_spans[1].spans[0].attributes.len(), 3);
}

#[test]
fn ffi_returns_metrics_and_points() {
    use compiletools_core::ffi::{
        ct_build_result_free, ct_process_build, CtBuildRequest, CtBuildResult, CtByteView, CtLimits,
        CT_FLAG_METRICS_AS_SPANS, CT_SIGNAL_METRICS, CT_SIGNAL_TRACES,
    };
    use std::os::unix::ffi::OsStrExt;

    let (case, req) = Case::new(Some(STATSLOG), None);
    let dir = case.fx.dir.as_os_str().as_bytes().to_vec();
    let statslog = req.statslog.as_ref().unwrap().as_os_str().as_bytes().to_vec();
    let host = b"host-a".to_vec();
    let view = |b: &[u8]| CtByteView {
        ptr: b.as_ptr(),
        len: b.len(),
    };
    let empty = CtByteView {
        ptr: std::ptr::null(),
        len: 0,
    };
    let call = |flags: u32| {
        let creq = CtBuildRequest {
            invocation_dir: view(&dir),
            statslog_path: view(&statslog),
            outcomes_path: empty,
            host_name: view(&host),
            service_name: empty,
            git_commit_sha: empty,
            resource_attributes: empty,
            signals: CT_SIGNAL_TRACES | CT_SIGNAL_METRICS,
            flags,
            limits: CtLimits::default(),
            pipeline_name: empty,
            vcs_ref_head_name: empty,
            vcs_ref_head_type: empty,
            vcs_repository_url_full: empty,
            vcs_provider_name: empty,
            history: std::ptr::null(),
            build_graph_path: empty,
            time_trace: Default::default(),
        };
        let mut out = std::mem::MaybeUninit::<CtBuildResult>::uninit();
        // SAFETY: every view outlives the call; out is written by the call.
        let code = unsafe { ct_process_build(&creq, std::ptr::null(), out.as_mut_ptr()) };
        // SAFETY: ct_process_build always writes out.
        let mut out = unsafe { out.assume_init() };
        let metrics = if out.metrics.ptr.is_null() {
            Vec::new()
        } else {
            // SAFETY: a non-null buffer from the call, valid until freed.
            unsafe { std::slice::from_raw_parts(out.metrics.ptr, out.metrics.len) }.to_vec()
        };
        let summary = out.summary;
        // SAFETY: out was filled by ct_process_build.
        unsafe { ct_build_result_free(&mut out) };
        (code, metrics, summary)
    };
    let (code, metrics, summary) = call(0);
    assert_eq!(code, 0);
    assert_eq!(Some(metrics), case.run(&req).metrics);
    assert_eq!(summary.metric_points, 8);
    let (code, metrics, summary) = call(CT_FLAG_METRICS_AS_SPANS);
    assert_eq!(code, 0);
    assert!(metrics.is_empty());
    assert_eq!(summary.metric_points, 0);
}

#[test]
fn side_file_parsers_never_panic_on_noise() {
    use compiletools_core::{outcomes, pytext, statslog};
    // xorshift64*: deterministic noise biased towards the bytes that matter.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    const ALPHABET: &[u8] = b"#\n\r\t _019+-x\x1c\xa0\xc2\x85\xff\xe3\x80";
    for round in 0..2000 {
        let len = (next() % 64) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if r % 4 == 0 {
                    (r >> 8) as u8
                } else {
                    ALPHABET[(r >> 8) as usize % ALPHABET.len()]
                }
            })
            .collect();
        let log = statslog::parse(&bytes);
        let lines = pytext::universal_lines(&String::from_utf8_lossy(&bytes)).count() as u64;
        let counted: u64 = log.events().iter().map(|e| e.count).sum();
        assert!(
            counted <= lines,
            "round {round}: {counted} events from {lines} lines"
        );
        assert!(log.events().iter().all(|e| e.count > 0 && !e.name.is_empty()));
        assert_eq!(statslog::parse_counts(&bytes).events(), log.events());
        let o = outcomes::parse(&bytes);
        assert!(o.len() as u64 + o.skipped_lines() <= lines);
        let _ = pytext::parse_int(&String::from_utf8_lossy(&bytes));
    }
}
