//! Rough timing of timing.json → OTLP trace bytes on a large synthetic
//! build (design.md §7 target: 100k rules in ≤ 150 ms, peak RSS ≤ 2× the file).
//! Not a benchmark harness and not asserted; run it on demand:
//!
//! ```sh
//! cargo test --release --test tests -- --ignored --nocapture perf::
//! ```
//!
//! `CT_PERF_TIMING=<file>` uses an existing timing.json; otherwise
//! `gen_timing.py` from the corpus makes one with `CT_PERF_RULES` rules
//! (default 100 000).

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::fixture::INVOCATION_ID;
use compiletools_core::{process_build, BuildRequest, CancelToken};

fn input_dir(root: &std::path::Path) -> PathBuf {
    let dir = root.join(INVOCATION_ID);
    std::fs::create_dir(&dir).unwrap();
    let dest = dir.join("timing.json");
    match std::env::var_os("CT_PERF_TIMING") {
        Some(src) => {
            std::fs::copy(src, &dest).unwrap();
        }
        None => {
            let rules = std::env::var("CT_PERF_RULES").unwrap_or_else(|_| "100000".into());
            let script = common::reference::corpus_dir()
                .join("scripts")
                .join("gen_timing.py");
            let status = std::process::Command::new("python3")
                .arg(script)
                .arg(&rules)
                .arg(&dest)
                .arg("--no-validate")
                .status()
                .expect("python3 runs");
            assert!(status.success(), "gen_timing.py failed");
        }
    }
    dir
}

/// Peak RSS of this process in KiB (run with `CT_PERF_RUNS=1` to see the
/// peak of one call plus the test harness).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
#[ignore = "slow; run with --release --ignored --nocapture"]
fn large_build_to_otlp() {
    let root = tempfile::tempdir().unwrap();
    let dir = input_dir(root.path());
    let file_bytes = std::fs::metadata(dir.join("timing.json")).unwrap().len();
    let req = BuildRequest::new(&dir, "perf-host");
    let cancel = CancelToken::new();

    let runs: usize = std::env::var("CT_PERF_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let mut best = Duration::MAX;
    let mut out_len = 0;
    let mut spans = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let out = process_build(&req, &cancel).unwrap();
        best = best.min(t.elapsed());
        out_len = out.traces.as_ref().map_or(0, Vec::len);
        spans = out.summary.spans;
    }
    println!(
        "file {:.1} MB, {spans} spans, output {:.1} MB, best of {runs}: {:.1} ms, peak RSS of the process {:?} KiB",
        file_bytes as f64 / 1e6,
        out_len as f64 / 1e6,
        best.as_secs_f64() * 1e3,
        peak_rss_kib(),
    );
    stages(&dir);
    stages(&dir);
    stages(&dir);
}

/// Where the time goes, stage by stage, through the public building blocks
/// in the order `process_build` uses them (the text is freed once the
/// model is decoded; the output gets a fresh buffer of 1.25× its size).
fn stages(dir: &std::path::Path) {
    use compiletools_core::analytics;
    use compiletools_core::otlp::{
        analytics_root_attributes, build_resource, encode_trace_request_with, root_attributes, TraceInput,
    };
    use compiletools_core::timing::{self, aggregates, Clock};
    use compiletools_core::warnings::Warnings;
    use compiletools_core::Limits;

    let path = dir.join("timing.json");
    let limits = Limits::default();
    let mut w = Warnings::new();
    let t = Instant::now();
    let text = timing::load(&path, &limits, &mut w).unwrap();
    let t_load = t.elapsed();
    let t = Instant::now();
    let build = timing::decode::decode(&text.text, &path, &limits, &CancelToken::new(), &mut w).unwrap();
    let t_decode = t.elapsed();
    let t = Instant::now();
    let clock = Clock::for_build(&build).unwrap();
    let agg = aggregates::compute(&build, None);
    let req = BuildRequest::new(dir, "perf-host");
    let t_analytics = Instant::now();
    let analytics = analytics::analyze(&build, &clock);
    let mut root = root_attributes(&agg, 4096);
    root.extend(analytics_root_attributes(&analytics, 4096));
    let t_analytics = t_analytics.elapsed();
    let input = TraceInput {
        build: &build,
        clock: &clock,
        trace_id: [1; 16],
        resource: build_resource(&req, &build, INVOCATION_ID, &mut w),
        root_attributes: root,
        max_attribute_len: 4096,
        analytics: Some(&analytics),
        semconv_root_span: false,
        pipeline_name: "",
        clang: None,
    };
    let text_len = text.text.len();
    drop(text);
    let (bytes, _) = encode_trace_request_with(input, &[], text_len + text_len / 4, &mut w);
    let t_encode = t.elapsed();
    let t = Instant::now();
    drop(build);
    drop(bytes);
    let t_drop = t.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "stages: read+repair {:.1} ms, decode {:.1} ms, spans+encode {:.1} ms (analytics {:.1} ms), free {:.1} ms",
        ms(t_load),
        ms(t_decode),
        ms(t_encode),
        ms(t_analytics),
        ms(t_drop)
    );
}

/// The build analytics' share of `process_build` (issue 15 target: ≤ 15 %),
/// measured in one process with the four steps interleaved round by round,
/// so that load from elsewhere on the machine hits all of them alike; the
/// fastest round of each is compared. Analytics cost = computing them plus
/// writing their attributes (the encode with them minus the encode without).
///
/// ```sh
/// CT_PERF_TIMING=target/bench-inputs/timing-100000.json \
///     cargo test --release --test tests -- --ignored --nocapture perf::analytics_share
/// ```
#[test]
#[ignore = "slow; run with --release --ignored --nocapture"]
fn analytics_share_of_process_build() {
    use compiletools_core::analytics::{self, BuildAnalytics};
    use compiletools_core::otlp::{
        analytics_root_attributes, encode_trace_request, root_attributes, TraceInput,
    };
    use compiletools_core::timing::{self, aggregates, Build, Clock};
    use compiletools_core::warnings::Warnings;
    use compiletools_core::Limits;

    let root = tempfile::tempdir().unwrap();
    let dir = input_dir(root.path());
    let path = dir.join("timing.json");
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    let req = BuildRequest::new(&dir, "perf-host");
    let cancel = CancelToken::new();
    let limits = Limits::default();
    let mut w = Warnings::new();
    let text = timing::load(&path, &limits, &mut w).unwrap();
    let build = timing::decode::decode(&text.text, &path, &limits, &cancel, &mut w).unwrap();
    drop(text);
    let clock = Clock::for_build(&build).unwrap();
    let encode = |build: &Build, analytics: Option<&BuildAnalytics>| {
        let agg = aggregates::compute(build, None);
        let mut root = root_attributes(&agg, 4096);
        if let Some(a) = analytics {
            root.extend(analytics_root_attributes(a, 4096));
        }
        let input = TraceInput {
            build,
            clock: &clock,
            trace_id: [1; 16],
            resource: Default::default(),
            root_attributes: root,
            max_attribute_len: 4096,
            analytics,
            semconv_root_span: false,
            pipeline_name: "",
            clang: None,
        };
        encode_trace_request(input, size, &mut Warnings::new()).0.len()
    };
    let rounds: usize = std::env::var("CT_PERF_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let mut times: [Vec<Duration>; 4] = Default::default();
    let computed = analytics::analyze(&build, &clock);
    let rules = computed.summary().map(|s| s.top_weighted_rules.len());
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(process_build(&req, &cancel).unwrap());
        times[0].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(analytics::analyze(&build, &clock));
        times[1].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(encode(&build, None));
        times[2].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(encode(&build, Some(&computed)));
        times[3].push(t.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        (ms(v[0]), ms(v[v.len() / 2]))
    };
    let [pb, an, plain, with] = times.each_mut().map(stats);
    let attributes = with.0 - plain.0;
    println!(
        "{rounds} rounds, file {:.1} MB (top list of {rules:?}): fastest (median) ms — process_build {:.1} ({:.1}), \
         analytics {:.2} ({:.2}), encode {:.1} ({:.1}), encode with analytics {:.1} ({:.1}); \
         analytics cost {:.2} ms = {:.1} % of process_build",
        size as f64 / 1e6,
        pb.0,
        pb.1,
        an.0,
        an.1,
        plain.0,
        plain.1,
        with.0,
        with.1,
        an.0 + attributes,
        100.0 * (an.0 + attributes) / pb.0
    );
}

/// The exact critical path's cost at `CT_PERF_RULES` rules: the same build
/// as `analytics_share_of_process_build`, with a generated `build.ninja`
/// shaped like ct-cake's (one statement per rule with a ~1 KB `cmd`
/// binding, each output waiting for two earlier ones plus a directory
/// order-only input, a phony `all`), a `backend` of ninja. Compared:
/// `process_build` without and with `build_graph` (the difference is the
/// whole price: reading and parsing the file, mapping the rules, the path
/// and drag), and `analyze` against `analyze_with` on a parsed graph.
///
/// ```sh
/// CT_PERF_TIMING=target/bench-inputs/timing-100000.json \
///     cargo test --release --test tests -- --ignored --nocapture perf::exact_path_share
/// ```
#[test]
#[ignore = "slow; run with --release --ignored --nocapture"]
fn exact_path_share_of_process_build() {
    use compiletools_core::analytics::{self, build_graph};
    use compiletools_core::timing::{self, Clock};
    use compiletools_core::warnings::Warnings;
    use compiletools_core::Limits;

    let root = tempfile::tempdir().unwrap();
    let dir = input_dir(root.path());
    let path = dir.join("timing.json");
    // The backend that reads build.ninja.
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("\"backend\": \"shake\"", "\"backend\": \"ninja\"", 1);
    assert!(
        text.contains("\"backend\": \"ninja\""),
        "the generated build names its backend"
    );
    std::fs::write(&path, &text).unwrap();
    drop(text);
    let limits = Limits::default();
    let cancel = CancelToken::new();
    let mut w = Warnings::new();
    let loaded = timing::load(&path, &limits, &mut w).unwrap();
    let build = timing::decode::decode(&loaded.text, &path, &limits, &cancel, &mut w).unwrap();
    drop(loaded);
    let clock = Clock::for_build(&build).unwrap();

    let mut targets = Vec::new();
    build.for_each_phase_rule(&mut |r| targets.push(r.target().to_owned()));
    let mut ninja = String::from("rule cc\n  command = $cmd\n\nbuild /objdir: mkdir\n");
    let mut seed = 1u64;
    for (i, t) in targets.iter().enumerate() {
        let mut deps = String::new();
        for _ in 0..2.min(i) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            deps.push(' ');
            deps.push_str(&targets[(seed >> 33) as usize % i]);
        }
        ninja.push_str(&format!(
            "build {t}: cc /src/{i}.cpp{deps} || /objdir\n  cmd = flock {t}.lock sh -c 'ccache g++ {}-c /src/{i}.cpp -o {t}'\n",
            "-fPIC -g -Wall -I /work/project -std=c++17 ".repeat(20)
        ));
    }
    ninja.push_str(&format!("build all: phony {}\n", targets.join(" ")));
    let graph_path = root.path().join("build.ninja");
    std::fs::write(&graph_path, &ninja).unwrap();
    // ct-cake writes build.ninja before the build's timing.json.
    let built = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&graph_path)
        .unwrap()
        .set_modified(built - Duration::from_secs(5))
        .unwrap();
    let graph_bytes = ninja.len();
    drop(ninja);

    let plain = BuildRequest::new(&dir, "perf-host");
    let mut exact = plain.clone();
    exact.build_graph = Some(graph_path.clone());
    let out = process_build(&exact, &cancel).unwrap();
    assert!(out.summary.warnings.is_empty(), "{:?}", out.summary.warnings);
    let graph = build_graph::load(&graph_path, &build, None, limits.max_file_bytes, &mut w).unwrap();
    let with = analytics::analyze_with(&build, &clock, Some(&graph), &mut w);
    let summary = with.summary().unwrap();
    assert_eq!(summary.critical_path_method.as_str(), "ninja_graph");

    let rounds: usize = std::env::var("CT_PERF_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    let mut times: [Vec<Duration>; 5] = Default::default();
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(process_build(&plain, &cancel).unwrap());
        times[0].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(process_build(&exact, &cancel).unwrap());
        times[1].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(build_graph::load(
            &graph_path,
            &build,
            None,
            limits.max_file_bytes,
            &mut w,
        ));
        times[2].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(analytics::analyze(&build, &clock));
        times[3].push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(analytics::analyze_with(&build, &clock, Some(&graph), &mut w));
        times[4].push(t.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let [pb, pb_exact, load, estimate, exact_an] = times.each_mut().map(|v| {
        v.sort();
        (ms(v[0]), ms(v[v.len() / 2]))
    });
    println!(
        "{rounds} rounds, {} rules, build.ninja {:.1} MB, path of {:.1} s: fastest (median) ms — \
         process_build {:.1} ({:.1}), with the graph {:.1} ({:.1}); graph read+parse {:.1} ({:.1}); \
         analyze (estimate) {:.1} ({:.1}), analyze_with (exact) {:.1} ({:.1}); \
         the exact path costs {:.1} ms = {:.1} % of process_build (of which {:.1} ms outside the file read+parse)",
        targets.len(),
        graph_bytes as f64 / 1e6,
        summary.critical_path_s,
        pb.0,
        pb.1,
        pb_exact.0,
        pb_exact.1,
        load.0,
        load.1,
        estimate.0,
        estimate.1,
        exact_an.0,
        exact_an.1,
        pb_exact.0 - pb.0,
        100.0 * (pb_exact.0 - pb.0) / pb.0,
        exact_an.0 - estimate.0
    );
}
