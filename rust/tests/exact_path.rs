//! The exact critical path and drag through `process_build`, from a
//! generated `build.ninja` or Makefile next to a generated `timing.json`:
//!
//! * a chain with parallel fillers and an independent side rule, whose
//!   path, length and drags are known by construction (closed formula);
//! * random DAGs scheduled as a build would run them: the path is a chain
//!   in the graph, its length and every drag equal a brute-force longest
//!   path (drag: again with the rule's duration set to 0), and the path is
//!   never longer than the build;
//! * every reason to keep the estimate: a graph that misses a rule, one
//!   rewritten after the build, a cycle, a symlink, a FIFO, a backend
//!   without a graph.
//!
//! `PROPTEST_CASES=N` runs more cases.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::proptest_config::config;
use common::analytics::{check, tolerance_ns, Found};
use common::fixture::Fixture;
use compiletools_core::{process_build, BuildOutput, CancelToken};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use proptest::prelude::*;
use prost::Message;
use serde_json::{json, Value};

const ROOT_START_MS: i64 = 100_000;

fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

fn target(name: &str) -> String {
    format!("/obj/{name}.o")
}

/// A rule of the generated build: its name, times (ms) and dependencies
/// (names of other rules).
#[derive(Debug, Clone)]
struct GenRule {
    name: String,
    start: i64,
    end: i64,
    deps: Vec<String>,
}

fn document(backend: &str, rules: &[GenRule]) -> String {
    let end = rules.iter().map(|r| r.end).max().unwrap_or(ROOT_START_MS) + 500;
    let json_rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({"name": format!("{}.cpp", r.name), "rule_type": "compile",
                   "source": format!("/src/{}.cpp", r.name), "target": target(&r.name),
                   "elapsed_s": secs(r.end - r.start), "start_s": secs(r.start), "end_s": secs(r.end)})
        })
        .collect();
    json!({"version": 1, "timestamp": "2026-11-30T03:43:45+00:00",
           "total_elapsed_s": secs(end - ROOT_START_MS), "variant": "gcc.debug", "backend": backend,
           "start_s": secs(ROOT_START_MS), "phases": [{"name": "build_execution",
           "start_s": secs(ROOT_START_MS + 100), "end_s": secs(end - 100), "rules": json_rules}]})
    .to_string()
}

/// The build file ct-cake's generator would write for `rules`: ninja with
/// the dependencies spread over explicit, implicit and order-only inputs
/// and a phony `all`; make with normal and order-only prerequisites.
fn build_file(backend: &str, rules: &[GenRule]) -> String {
    let mut text = String::new();
    if backend == "ninja" {
        text.push_str("# generated\nobj = /obj\nrule cc\n  command = cc -c $in -o $out\n\n");
        for r in rules {
            let deps: Vec<String> = r.deps.iter().map(|d| format!("$obj/{d}.o")).collect();
            let (explicit, rest) = deps.split_at(deps.len().min(1));
            let (implicit, order_only) = rest.split_at(rest.len() / 2);
            text.push_str(&format!(
                "build $obj/{}.o: cc /src/{}.cpp {} | {} || {}\n  cmd = x\n",
                r.name,
                r.name,
                explicit.join(" "),
                implicit.join(" "),
                order_only.join(" $\n    ")
            ));
        }
        let all: Vec<String> = rules.iter().map(|r| target(&r.name)).collect();
        text.push_str(&format!("build all: phony {}\ndefault all\n", all.join(" ")));
    } else {
        text.push_str("# generated\n.DELETE_ON_ERROR:\nSHELL := /bin/bash\n.PHONY: all\n");
        let all: Vec<String> = rules.iter().map(|r| target(&r.name)).collect();
        text.push_str(&format!("all: {}\n\n", all.join(" ")));
        for r in rules {
            let deps: Vec<String> = r.deps.iter().map(|d| target(d)).collect();
            let (normal, order_only) = deps.split_at(deps.len() / 2);
            text.push_str(&format!(
                "{}: /src/{}.cpp {} | {}\n\tcc -c /src/{}.cpp -o $@\n\n",
                target(&r.name),
                r.name,
                normal.join(" "),
                order_only.join(" \\\n  "),
                r.name
            ));
        }
    }
    text
}

/// A fixture with `timing.json` and the build file beside the invocation
/// directory (where the receiver's setting would name it).
struct Build {
    fx: Fixture,
    graph: PathBuf,
}

impl Build {
    fn new(backend: &str, rules: &[GenRule]) -> Self {
        let fx = Fixture::new(document(backend, rules));
        let name = if backend == "ninja" {
            "build.ninja"
        } else {
            "Makefile"
        };
        let graph = fx.dir.parent().unwrap().join(name);
        std::fs::write(&graph, build_file(backend, rules)).unwrap();
        Self { fx, graph }
    }

    fn run_with_graph(&self, graph: &Path) -> (Vec<Span>, BuildOutput) {
        let mut req = self.fx.request();
        req.build_graph = Some(graph.to_path_buf());
        let out = process_build(&req, &CancelToken::new()).expect("valid build");
        let trace = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
        (trace.resource_spans[0].scope_spans[0].spans.clone(), out)
    }

    fn run(&self) -> (Vec<Span>, BuildOutput) {
        self.run_with_graph(&self.graph)
    }
}

fn checked(spans: &[Span], backend: &str) -> Result<Found, TestCaseError> {
    check(spans, tolerance_ns(backend)).map_err(TestCaseError::fail)
}

fn method(backend: &str) -> &'static str {
    if backend == "ninja" {
        "ninja_graph"
    } else {
        "make_graph"
    }
}

fn backend() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("ninja"), Just("make")]
}

// ---------------------------------------------------- known by construction

#[derive(Debug, Clone, Copy)]
struct Link {
    half_ms: i64,
    fillers: usize,
}

proptest! {
    #![proptest_config(config(32))]

    /// Chain c0 → c1 → … (each 2h long); link i's fillers (h long) wait for
    /// c(i−1) and feed nothing; a side rule of `side_ms` waits for nothing.
    /// The path is the chain, L = Σ 2h, and without c_i the longest chain
    /// is the best of: the chain before it plus a filler of link i
    /// (P_i + h_i), the chain after it (S_i), the side rule — so
    /// drag(c_i) = min(2h_i, L − that).
    #[test]
    fn chain_with_fillers_and_a_side_rule(
        backend in backend(),
        links in prop::collection::vec((1i64..800, 0usize..4).prop_map(|(half_ms, fillers)| Link { half_ms, fillers }), 1..7),
        side_share in 0.0f64..0.95,
    ) {
        let total: i64 = links.iter().map(|l| 2 * l.half_ms).sum();
        let side_ms = ((total as f64) * side_share) as i64;
        let mut rules = Vec::new();
        let mut at = ROOT_START_MS + 200;
        for (i, l) in links.iter().enumerate() {
            let deps: Vec<String> = if i == 0 { vec![] } else { vec![format!("c{}", i - 1)] };
            rules.push(GenRule { name: format!("c{i}"), start: at, end: at + 2 * l.half_ms, deps: deps.clone() });
            for j in 0..l.fillers {
                rules.push(GenRule { name: format!("f{i}_{j}"), start: at, end: at + l.half_ms, deps: deps.clone() });
            }
            at += 2 * l.half_ms;
        }
        rules.push(GenRule { name: "side".into(), start: ROOT_START_MS + 200, end: ROOT_START_MS + 200 + side_ms, deps: vec![] });

        let b = Build::new(backend, &rules);
        let (spans, out) = b.run();
        let found = checked(&spans, backend)?;
        prop_assert_eq!(found.method.as_deref(), Some(method(backend)), "warnings: {:?}", out.summary.warnings);
        prop_assert!(out.summary.warnings.is_empty(), "{:?}", out.summary.warnings);
        prop_assert!((found.critical_path_s.unwrap() - secs(total)).abs() < 1e-9);
        let mut before = 0i64;
        for (i, l) in links.iter().enumerate() {
            let after = total - before - 2 * l.half_ms;
            let filler = if l.fillers > 0 { before + l.half_ms } else { 0 };
            let avoiding = filler.max(after).max(side_ms).max(before);
            let drag = (2 * l.half_ms).min(total - avoiding);
            let r = found.rules.iter().find(|r| r.name == format!("compile.src/c{i}.cpp")).unwrap();
            prop_assert!(r.critical_path, "c{} on the path", i);
            prop_assert!((r.drag_s.unwrap() - secs(drag)).abs() < 1e-9, "c{}: drag {:?}, want {}", i, r.drag_s, drag);
            before += 2 * l.half_ms;
        }
        let on_path = found.rules.iter().filter(|r| r.critical_path).count();
        prop_assert_eq!(on_path, links.len());
    }
}

// ------------------------------------------------------------ random DAGs

/// Rules 0..n; each waits for a random subset of the earlier ones, takes a
/// random time, and starts after its last dependency ended plus a random
/// delay (a build with enough jobs, where a slot sometimes frees late).
fn random_build() -> impl Strategy<Value = Vec<GenRule>> {
    prop::collection::vec(
        (
            1i64..60,
            0i64..5,
            prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        ),
        1..25,
    )
    .prop_map(|specs| {
        let mut rules: Vec<GenRule> = Vec::new();
        for (i, (len, delay, picks)) in specs.into_iter().enumerate() {
            let mut deps: Vec<usize> = if i == 0 {
                vec![]
            } else {
                picks.iter().map(|p| p.index(i)).collect()
            };
            deps.sort_unstable();
            deps.dedup();
            let ready = deps
                .iter()
                .map(|&d| rules[d].end)
                .max()
                .unwrap_or(ROOT_START_MS + 200);
            let start = ready + delay;
            rules.push(GenRule {
                name: format!("r{i}"),
                start,
                end: start + len,
                deps: deps.iter().map(|d| format!("r{d}")).collect(),
            });
        }
        rules
    })
}

/// Longest chain by brute force over the generation order (dependencies
/// come first), with rule `zero`'s duration taken as 0.
fn longest(rules: &[GenRule], zero: Option<usize>) -> i64 {
    let index = |name: &str| rules.iter().position(|r| r.name == name).unwrap();
    let mut best = vec![0i64; rules.len()];
    for (i, r) in rules.iter().enumerate() {
        let w = if zero == Some(i) { 0 } else { r.end - r.start };
        best[i] = w + r.deps.iter().map(|d| best[index(d)]).max().unwrap_or(0);
    }
    best.into_iter().max().unwrap_or(0)
}

/// `a` is a dependency of `b`, directly or through others.
fn reaches(rules: &[GenRule], a: &str, b: &str) -> bool {
    let Some(rb) = rules.iter().find(|r| r.name == b) else {
        return false;
    };
    rb.deps.iter().any(|d| d == a || reaches(rules, a, d))
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn random_dags_match_brute_force(backend in backend(), rules in random_build()) {
        let b = Build::new(backend, &rules);
        let (spans, out) = b.run();
        let found = checked(&spans, backend)?;
        prop_assert_eq!(found.method.as_deref(), Some(method(backend)), "warnings: {:?}", out.summary.warnings);
        let length = longest(&rules, None);
        prop_assert!((found.critical_path_s.unwrap() - secs(length)).abs() < 1e-9);
        let mut path: Vec<_> = found.rules.iter().filter(|r| r.critical_path).collect();
        path.sort_by_key(|r| r.start);
        let name = |span: &str| span.trim_start_matches("compile.src/").trim_end_matches(".cpp").to_owned();
        for pair in path.windows(2) {
            prop_assert!(reaches(&rules, &name(&pair[0].name), &name(&pair[1].name)),
                "{} → {} is no dependency", pair[0].name, pair[1].name);
        }
        for r in &path {
            let i = rules.iter().position(|g| g.name == name(&r.name)).unwrap();
            let want = length - longest(&rules, Some(i));
            prop_assert!((r.drag_s.unwrap() - secs(want)).abs() < 1e-9, "{}: drag {:?}, want {}", r.name, r.drag_s, want);
        }
        let first = rules.iter().map(|r| r.start).min().unwrap();
        let last = rules.iter().map(|r| r.end).max().unwrap();
        prop_assert!(length <= last - first);
    }
}

// ------------------------------------------------- when the estimate stays

fn small() -> Vec<GenRule> {
    vec![
        GenRule {
            name: "a".into(),
            start: 100_200,
            end: 100_300,
            deps: vec![],
        },
        GenRule {
            name: "b".into(),
            start: 100_200,
            end: 100_250,
            deps: vec![],
        },
        GenRule {
            name: "c".into(),
            start: 100_300,
            end: 100_400,
            deps: vec!["a".into(), "b".into()],
        },
    ]
}

fn method_and_warnings(spans: &[Span], out: &BuildOutput, backend: &str) -> (String, Vec<String>) {
    let found = check(spans, tolerance_ns(backend)).unwrap_or_else(|e| panic!("{e}"));
    (found.method.unwrap(), out.summary.warnings.clone())
}

#[test]
fn the_exact_path_and_drag_on_a_small_build() {
    for backend in ["ninja", "make"] {
        let b = Build::new(backend, &small());
        let (spans, out) = b.run();
        let found = check(&spans, tolerance_ns(backend)).unwrap();
        assert_eq!(found.method.as_deref(), Some(method(backend)));
        assert!(out.summary.warnings.is_empty(), "{:?}", out.summary.warnings);
        let path: Vec<(&str, Option<f64>)> = found
            .rules
            .iter()
            .filter(|r| r.critical_path)
            .map(|r| (r.name.as_str(), r.drag_s))
            .collect();
        // a (100 ms) → c (100 ms); without a, b → c is 150 ms: drag 50 ms.
        assert_eq!(
            path,
            [
                ("compile.src/a.cpp", Some(0.05)),
                ("compile.src/c.cpp", Some(0.1))
            ]
        );
        assert_eq!(found.critical_path_s, Some(0.2));
    }
}

#[test]
fn a_graph_missing_a_rule_keeps_the_estimate() {
    let b = Build::new("ninja", &small());
    let text = std::fs::read_to_string(&b.graph)
        .unwrap()
        .replace("build $obj/b.o", "build $obj/other.o");
    std::fs::write(&b.graph, text).unwrap();
    let (spans, out) = b.run();
    let (m, w) = method_and_warnings(&spans, &out, "ninja");
    assert_eq!(m, "estimate");
    assert!(
        w.iter()
            .any(|w| w.contains("1 of the build's 3 rules have no output in it") && w.contains("/obj/b.o")),
        "{w:?}"
    );
}

#[test]
fn a_graph_rewritten_after_the_build_keeps_the_estimate() {
    let b = Build::new("make", &small());
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&b.graph)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let (spans, out) = b.run();
    let (m, w) = method_and_warnings(&spans, &out, "make");
    assert_eq!(m, "estimate");
    assert!(
        w.iter().any(|w| w.contains("rewritten after this build")),
        "{w:?}"
    );
}

#[test]
fn cycles_symlinks_fifos_and_bad_syntax_keep_the_estimate() {
    let b = Build::new("ninja", &small());
    let dir = b.graph.parent().unwrap();
    let cyclic = dir.join("cyclic.ninja");
    let text = std::fs::read_to_string(&b.graph).unwrap() + "build /src/a.cpp: cc /obj/c.o\n";
    std::fs::write(&cyclic, text).unwrap();
    let link = dir.join("link.ninja");
    std::os::unix::fs::symlink(&b.graph, &link).unwrap();
    let fifo = dir.join("fifo.ninja");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let bad = dir.join("bad.ninja");
    std::fs::write(&bad, "include other.ninja\n").unwrap();
    let missing = dir.join("missing.ninja");
    for (path, why) in [
        (&cyclic, "cycle"),
        (&link, "symbolic link"),
        (&fifo, "not a regular file"),
        (&bad, "not followed"),
        (&missing, "No such file"),
    ] {
        let (spans, out) = b.run_with_graph(path);
        let (m, w) = method_and_warnings(&spans, &out, "ninja");
        assert_eq!(m, "estimate", "{path:?}");
        assert!(
            w.iter()
                .any(|w| w.contains("not used, critical path estimated") && w.contains(why)),
            "{path:?}: {w:?}"
        );
    }
}

#[test]
fn backends_without_a_graph_ignore_the_setting_and_variants_are_substituted() {
    let b = Build::new("shake", &small());
    let (spans, out) = b.run_with_graph(&b.graph);
    assert_eq!(
        method_and_warnings(&spans, &out, "shake"),
        ("estimate".to_owned(), vec![])
    );

    let b = Build::new("make", &small());
    let variant_dir = b.graph.parent().unwrap().join("gcc.debug");
    std::fs::create_dir(&variant_dir).unwrap();
    std::fs::rename(&b.graph, variant_dir.join("Makefile")).unwrap();
    let template = b.graph.parent().unwrap().join("{variant}/Makefile");
    let (spans, out) = b.run_with_graph(&template);
    assert_eq!(
        method_and_warnings(&spans, &out, "make"),
        ("make_graph".to_owned(), vec![])
    );
}

// --------------------------------------------------------- hostile files

/// Bytes biased towards the grammar's special characters.
fn hostile_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => prop::sample::select(b"build rule : | || |@ $ ${} = \n\t\\ # % include phony a b.o".to_vec()),
        1 => any::<u8>(),
    ];
    prop::collection::vec(byte, 0..400)
}

proptest! {
    #![proptest_config(config(256))]

    /// Whatever the file holds, the readers and the path return (a graph or
    /// a reason), never panic; a graph they return has a path or a reason.
    #[test]
    fn hostile_build_files_never_panic(bytes in hostile_bytes(), cut in any::<prop::sample::Index>()) {
        use compiletools_core::analytics::{exact_path, makefile, ninja_file};
        let valid = build_file("ninja", &small()).into_bytes();
        let mut spliced = valid.clone();
        let at = cut.index(valid.len() + 1);
        spliced.splice(at..at, bytes.iter().copied());
        for text in [&bytes, &spliced] {
            for graph in [ninja_file::parse(&text[..], usize::MAX), makefile::parse(&text[..], usize::MAX)].into_iter().flatten() {
                let n = graph.node_count() as u32;
                let weights = exact_path::Weights {
                    node_of_rule: (0..n.min(8)).collect(),
                    duration_ns: (0..n.min(8)).map(i64::from).collect(),
                };
                let _ = exact_path::exact(&graph, &weights);
            }
        }
    }
}

#[test]
fn a_graph_over_the_file_size_limit_keeps_the_estimate() {
    let b = Build::new("ninja", &small());
    let mut text = std::fs::read_to_string(&b.graph).unwrap();
    text.push_str(&"# padding\n".repeat(100_000));
    std::fs::write(&b.graph, text).unwrap();
    let mut req = b.fx.request();
    req.build_graph = Some(b.graph.clone());
    req.limits.max_file_bytes = 500_000;
    let out = process_build(&req, &CancelToken::new()).unwrap();
    let trace = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
    let spans = trace.resource_spans[0].scope_spans[0].spans.clone();
    let (m, w) = method_and_warnings(&spans, &out, "ninja");
    assert_eq!(m, "estimate");
    assert!(w.iter().any(|w| w.contains("limit is 500000")), "{w:?}");
}
