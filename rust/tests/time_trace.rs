//! The clang `-ftime-trace` files of the corpus' two real builds (shake
//! and ninja, `../shared/corpus/time-trace`) through the whole pipeline:
//! child spans under every compile that ran and inside it, root attributes
//! and log records equal to ClangBuildAnalyzer's output kept beside them,
//! nothing for a no-op build or with the feature off, and hostile trace
//! files that warn and count while the build still arrives.

use std::fs;
use std::path::{Path, PathBuf};

use compiletools_core::{process_build, BuildRequest, CancelToken};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use crate::corpus_path::corpus_dir;

struct Case {
    name: &'static str,
    /// The recording machine's work tree, as the corpus' files name it.
    root: &'static str,
}

const SHAKE: Case = Case {
    name: "geom-shake-cold",
    root: "/home/dev/src/geom",
};
const NINJA: Case = Case {
    name: "geom-ninja-cold",
    root: "/home/dev/src/geom-ninja",
};

/// A corpus build laid out in a temporary directory: its traces at their
/// paths under a work tree, its timing.json naming that tree.
struct Staged {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    tree: PathBuf,
    case_dir: PathBuf,
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dst = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dst);
        } else {
            fs::copy(entry.path(), dst).unwrap();
        }
    }
}

fn stage(case: &Case, edit: impl Fn(&str) -> String) -> Staged {
    let case_dir = corpus_dir().join("time-trace").join(case.name);
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    copy_tree(&case_dir.join("traces"), &tree);
    let diag = fs::read_dir(case_dir.join("diagnostics"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let dir = tmp.path().join("diag").join(diag.file_name());
    fs::create_dir_all(&dir).unwrap();
    let timing = fs::read_to_string(diag.path().join("timing.json")).unwrap();
    let timing = timing.replace(&format!("{}/", case.root), &format!("{}/", tree.display()));
    fs::write(dir.join("timing.json"), edit(&timing)).unwrap();
    Staged {
        _tmp: tmp,
        dir,
        tree,
        case_dir,
    }
}

fn request(dir: &Path) -> BuildRequest {
    let mut req = BuildRequest::new(dir, "host");
    req.build_metrics = true;
    req
}

fn spans(bytes: &[u8]) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(bytes).unwrap();
    req.resource_spans
        .into_iter()
        .flat_map(|rs| rs.scope_spans)
        .flat_map(|ss| ss.spans)
        .collect()
}

fn attr<'s>(attrs: &'s [KeyValue], key: &str) -> Option<&'s Value> {
    attrs
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()
}

fn double(attrs: &[KeyValue], key: &str) -> Option<f64> {
    match attr(attrs, key)? {
        Value::DoubleValue(d) => Some(*d),
        _ => None,
    }
}

fn strings(attrs: &[KeyValue], key: &str) -> Vec<String> {
    match attr(attrs, key) {
        Some(Value::ArrayValue(a)) => a
            .values
            .iter()
            .filter_map(|v| match &v.value {
                Some(Value::StringValue(s)) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// ClangBuildAnalyzer's numbers from its `--analyze` text.
struct Cba {
    frontend_s: f64,
    backend_s: f64,
    /// (path, included count, ms)
    headers: Vec<(String, u64, i64)>,
    /// (name as printed, cut at 70 characters, ms)
    templates: Vec<(String, i64)>,
}

fn cba(case_dir: &Path) -> Cba {
    let text = fs::read_to_string(case_dir.join("clangbuildanalyzer-analyze.txt")).unwrap();
    let seconds = |label: &str| -> f64 {
        let line = text.lines().find(|l| l.trim_start().starts_with(label)).unwrap();
        line.rsplit(':')
            .next()
            .unwrap()
            .trim()
            .trim_end_matches(" s")
            .parse()
            .unwrap()
    };
    let section = |title: &str| -> Vec<&str> {
        text.lines()
            .skip_while(|l| !l.starts_with(&format!("**** {title}")))
            .skip(1)
            .take_while(|l| !l.starts_with("****"))
            .collect()
    };
    let headers = section("Expensive headers")
        .into_iter()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|l| {
            let (ms, rest) = l.split_once(" ms: ").unwrap();
            let (path, rest) = rest.split_once(" (included ").unwrap();
            let count = rest.split_once(' ').unwrap().0.parse().unwrap();
            (path.to_owned(), count, ms.trim().parse().unwrap())
        })
        .collect();
    let templates = section("Templates that took longest to instantiate")
        .into_iter()
        .filter(|l| l.contains(" ms: "))
        .map(|l| {
            let (ms, rest) = l.split_once(" ms: ").unwrap();
            let name = rest.rsplit_once(" (").unwrap().0;
            (name.to_owned(), ms.trim().parse().unwrap())
        })
        .collect();
    Cba {
        frontend_s: seconds("Parsing (frontend):"),
        backend_s: seconds("Codegen & opts (backend):"),
        headers,
        templates,
    }
}

/// ClangBuildAnalyzer cuts names at 70 characters with `...`.
fn same_name(ours: &str, printed: &str) -> bool {
    match printed.strip_suffix("...") {
        Some(prefix) if ours.chars().count() > 70 => ours.starts_with(prefix),
        _ => ours == printed,
    }
}

fn compile_spans(all: &[Span]) -> Vec<&Span> {
    all.iter()
        .filter(
            |s| matches!(attr(&s.attributes, "ct.rule_type"), Some(Value::StringValue(t)) if t == "compile"),
        )
        .collect()
}

fn check_case(case: &Case) {
    let staged = stage(case, str::to_owned);
    let out = process_build(&request(&staged.dir), &CancelToken::new()).unwrap();
    assert_eq!(
        out.summary.clang_traces, 29,
        "{}: {:?}",
        case.name, out.summary.warnings
    );
    assert_eq!(out.summary.clang_traces_refused, 0);
    let all = spans(out.traces.as_deref().unwrap());
    let root = &all[0];

    // Every compile that ran has its trace's spans under it, inside its times.
    let compiles = compile_spans(&all);
    assert_eq!(compiles.len(), 29, "{}", case.name);
    let by_id: std::collections::HashMap<&[u8], &Span> =
        all.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    for compile in &compiles {
        assert!(double(&compile.attributes, "ct.clang.frontend_s").unwrap() > 0.0);
        assert!(double(&compile.attributes, "ct.clang.backend_s").is_some());
    }
    let mut under = std::collections::HashMap::<&[u8], usize>::new();
    for s in all
        .iter()
        .filter(|s| attr(&s.attributes, "ct.rule_type").is_none() && !s.parent_span_id.is_empty())
    {
        let mut up = by_id[s.parent_span_id.as_slice()];
        while attr(&up.attributes, "ct.rule_type").is_none() {
            if up.parent_span_id.is_empty() {
                break; // a phase
            }
            up = by_id[up.parent_span_id.as_slice()];
        }
        if attr(&up.attributes, "ct.rule_type").is_none() {
            continue;
        }
        assert!(
            up.start_time_unix_nano <= s.start_time_unix_nano
                && s.end_time_unix_nano <= up.end_time_unix_nano,
            "{}: {} outside its compile span",
            case.name,
            s.name
        );
        *under.entry(up.span_id.as_slice()).or_default() += 1;
    }
    // A compile of 50 ms or more has at least its ExecuteCompiler span; the
    // project's C files compile faster and may have none.
    let mut without = 0;
    for compile in &compiles {
        let n = under.get(compile.span_id.as_slice()).copied().unwrap_or(0);
        let clang_s = double(&compile.attributes, "ct.clang.frontend_s").unwrap()
            + double(&compile.attributes, "ct.clang.backend_s").unwrap();
        if n == 0 {
            without += 1;
            assert!(
                clang_s < 0.05,
                "{}: a {clang_s} s compile without spans",
                case.name
            );
        }
    }
    assert!(without <= 3, "{}: {without} compiles without spans", case.name);

    // The rollup equals ClangBuildAnalyzer's.
    let reference = cba(&staged.case_dir);
    let frontend = double(&root.attributes, "ct.build.clang.frontend_s").unwrap();
    let backend = double(&root.attributes, "ct.build.clang.backend_s").unwrap();
    assert!(
        (frontend - reference.frontend_s).abs() < 0.05,
        "{frontend} vs {}",
        reference.frontend_s
    );
    assert!(
        (backend - reference.backend_s).abs() < 0.05,
        "{backend} vs {}",
        reference.backend_s
    );
    let headers = strings(&root.attributes, "ct.build.clang.top_headers");
    let expected: Vec<&str> = reference.headers.iter().map(|h| h.0.as_str()).collect();
    assert_eq!(headers, expected, "{}", case.name);
    let templates = strings(&root.attributes, "ct.build.clang.top_templates");
    assert_eq!(templates.len(), 10);
    for (ours, (theirs, _)) in templates.iter().zip(&reference.templates) {
        assert!(same_name(ours, theirs), "{ours:?} vs {theirs:?}");
    }

    // One ct.clang.header record per expensive header, with CBA's numbers.
    let logs = ExportLogsServiceRequest::decode(out.logs.as_deref().unwrap()).unwrap();
    let records = &logs.resource_logs[0].scope_logs[0].log_records;
    let header_records: Vec<_> = records
        .iter()
        .filter(|r| r.event_name == "ct.clang.header")
        .collect();
    assert!(header_records.len() >= reference.headers.len());
    for (record, (path, count, ms)) in header_records.iter().zip(&reference.headers) {
        assert!(
            matches!(attr(&record.attributes, "ct.header.path"), Some(Value::StringValue(p)) if p == path)
        );
        assert!(
            matches!(attr(&record.attributes, "ct.header.include_count"), Some(Value::IntValue(c)) if *c as u64 == *count)
        );
        let us = (double(&record.attributes, "ct.header.parse_s").unwrap() * 1e6).round() as i64;
        assert_eq!(us / 1000, *ms, "{path}");
        assert_eq!(record.trace_id, root.trace_id);
        assert_eq!(record.span_id, root.span_id);
    }
    let template_records = records
        .iter()
        .filter(|r| r.event_name == "ct.clang.template")
        .count();
    assert!(template_records >= 10);

    // The metrics: frontend and backend by variant, the top headers.
    let metrics = ExportMetricsServiceRequest::decode(out.metrics.as_deref().unwrap()).unwrap();
    let names: Vec<&str> = metrics.resource_metrics[0]
        .scope_metrics
        .iter()
        .flat_map(|s| s.metrics.iter().map(|m| m.name.as_str()))
        .collect();
    for name in ["ct.clang.frontend", "ct.clang.backend", "ct.clang.header.parse"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let _ = staged.tree;
}

#[test]
fn shake_build_traces_equal_clangbuildanalyzer() {
    check_case(&SHAKE);
}

#[test]
fn ninja_build_traces_equal_clangbuildanalyzer() {
    check_case(&NINJA);
}

/// Every compile a CAS hit: no compile ran, nothing is attached.
#[test]
fn a_no_op_build_attaches_nothing() {
    for case in [&SHAKE, &NINJA] {
        let staged = stage(case, |t| {
            let mut doc: serde_json::Value = serde_json::from_str(t).unwrap();
            for phase in doc["phases"].as_array_mut().unwrap() {
                for rule in phase["rules"].as_array_mut().into_iter().flatten() {
                    if rule["rule_type"] == "compile" {
                        rule["metadata"]["cas.hit"] = serde_json::Value::Bool(true);
                    }
                }
            }
            doc.to_string()
        });
        let out = process_build(&request(&staged.dir), &CancelToken::new()).unwrap();
        assert_eq!(out.summary.clang_traces, 0);
        assert!(out.logs.is_none());
        let all = spans(out.traces.as_deref().unwrap());
        assert!(all
            .iter()
            .all(|s| attr(&s.attributes, "ct.clang.frontend_s").is_none()));
        assert!(all[0]
            .attributes
            .iter()
            .all(|a| !a.key.starts_with("ct.build.clang.")));
        assert!(all.iter().all(|s| s.name != "Frontend" && s.name != "Source"));
    }
}

#[test]
fn turned_off_reads_no_trace() {
    let staged = stage(&SHAKE, str::to_owned);
    let mut req = request(&staged.dir);
    req.time_trace.enabled = false;
    let out = process_build(&req, &CancelToken::new()).unwrap();
    assert_eq!(out.summary.clang_traces, 0);
    assert!(out.logs.is_none());
    let plain = spans(out.traces.as_deref().unwrap());
    let on = spans(
        process_build(&request(&staged.dir), &CancelToken::new())
            .unwrap()
            .traces
            .as_deref()
            .unwrap(),
    );
    assert!(on.len() > plain.len());
    assert_eq!(compile_spans(&plain).len(), compile_spans(&on).len());
}

/// The trace of one compile, in the staged tree.
fn one_trace(staged: &Staged) -> PathBuf {
    let mut files = Vec::new();
    let mut dirs = vec![staged.tree.clone()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    files.remove(0)
}

#[test]
fn hostile_traces_warn_count_and_the_build_arrives() {
    type Damage = fn(&Path);
    let deep: Damage = |p| {
        // Events nested 5,000 deep (the reader refuses past 4,096).
        let mut events: Vec<String> = (0..5000)
            .map(|i| {
                format!(
                    r#"{{"ph":"X","name":"Source","ts":{i},"dur":{},"args":{{"detail":"h{i}.h"}}}}"#,
                    100_000 - 2 * i
                )
            })
            .collect();
        events.push(r#"{"ph":"X","name":"ExecuteCompiler","ts":0,"dur":100000}"#.to_owned());
        fs::write(
            p,
            format!(r#"{{"beginningOfTime":1,"traceEvents":[{}]}}"#, events.join(",")),
        )
        .unwrap();
    };
    let cases: Vec<(&str, Damage)> = vec![
        ("truncated", |p| {
            let bytes = fs::read(p).unwrap();
            fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
        }),
        ("1 GB sparse", |p| {
            let f = fs::OpenOptions::new().write(true).open(p).unwrap();
            f.set_len(1 << 30).unwrap();
        }),
        ("deeply nested", deep),
        ("deep JSON", |p| {
            fs::write(
                p,
                format!(
                    r#"{{"traceEvents":{}{}}}"#,
                    "[".repeat(100_000),
                    "]".repeat(100_000)
                ),
            )
            .unwrap();
        }),
        ("wrong types", |p| {
            fs::write(p, r#"{"traceEvents": {"name": "ExecuteCompiler"}}"#).unwrap();
        }),
        ("symlink", |p| {
            fs::remove_file(p).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", p).unwrap();
        }),
        ("FIFO", |p| {
            fs::remove_file(p).unwrap();
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }),
    ];
    for (what, damage) in cases {
        let staged = stage(&SHAKE, str::to_owned);
        let victim = one_trace(&staged);
        damage(&victim);
        let out = process_build(&request(&staged.dir), &CancelToken::new())
            .unwrap_or_else(|e| panic!("{what}: the build did not arrive: {e}"));
        assert_eq!(
            out.summary.clang_traces_refused, 1,
            "{what}: {:?}",
            out.summary.warnings
        );
        assert_eq!(out.summary.clang_traces, 28, "{what}");
        let name = victim.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            out.summary
                .warnings
                .iter()
                .any(|w| w.contains(&name) && w.contains("clang trace not read")),
            "{what}: {:?}",
            out.summary.warnings
        );
        let all = spans(out.traces.as_deref().unwrap());
        assert_eq!(compile_spans(&all).len(), 29, "{what}");
        let root = &all[0];
        assert!(matches!(
            attr(&root.attributes, "ct.build.clang.traces_refused"),
            Some(Value::IntValue(1))
        ));
    }
}
