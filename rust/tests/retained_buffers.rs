//! Builds processed one after the other in one process, each output handed
//! back with `BuildOutput::recycle` (as the receiver's
//! `ct_build_result_free` does), so that the next build reads its text into
//! the previous output's buffer and decodes into the previous model's
//! tables (`compiletools_core::retain`): every output must be byte for byte
//! the one the same build gave before anything was kept, whatever the
//! previous build left behind (a larger or a smaller build, other strings).
//!
//! Its own test binary (a `[[test]]` of Cargo.toml, not a module of
//! `tests.rs`): the kept buffers are per process, and another test's build
//! running in the same process could take one between two steps here.

use std::path::Path;

use compiletools_core::pipeline::open_build;
use compiletools_core::{process_build, BuildOutput, BuildRequest, CancelToken, Signals};

const INVOCATION_ID: &str = "20260101T120000-4242";

/// A timing.json of `rules` compile rules named after `tag` (large enough
/// from ~7000 rules for its buffers to be kept: 4 MiB).
fn write_build(root: &Path, tag: &str, rules: usize) -> BuildRequest {
    let dir = root.join(tag).join(INVOCATION_ID);
    std::fs::create_dir_all(&dir).unwrap();
    let mut json = String::from(
        r#"{"version": 1, "timestamp": "2026-01-01T12:00:00+00:00", "total_elapsed_s": 5000.0, "start_s": 10000.0, "variant": "v", "phases": [{"name": "build_execution", "start_s": 10000.5, "end_s": 14999.0, "rules": ["#,
    );
    for i in 0..rules {
        if i > 0 {
            json.push(',');
        }
        let start = 10001.0 + (i % 997) as f64 * 1.25;
        json.push_str(&format!(
            r#"
        {{"name": "{tag}{i:06}.cpp", "rule_type": "compile", "target": "/ws/{tag}/obj/{i:06}_{h:016x}.o", "source": "/ws/{tag}/src/{tag}{i:06}.cpp",
          "metadata": {{"cas.hit": {hit}, "cas.bytes_reused": {i}, "cas.kind": "obj", "queue_wait_s": 0.{i:06}, "ct.rule.cache_layer": "{layer}"}},
          "start_s": {start}, "end_s": {end}, "elapsed_s": 1.5}}"#,
            h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            hit = i % 3 == 0,
            layer = if i % 3 == 0 { "cas" } else { "other" },
            end = start + 1.5,
        ));
    }
    json.push_str("]}]}");
    std::fs::write(dir.join("timing.json"), json).unwrap();
    let mut req = BuildRequest::new(&dir, "test-host");
    req.signals = Signals {
        traces: true,
        metrics: false,
    };
    req
}

fn run(req: &BuildRequest) -> BuildOutput {
    process_build(req, &CancelToken::new()).unwrap()
}

/// The receiver's path: `open_build`, every chunk, then the stream dropped
/// (its model's tables kept; its text's buffer was kept after decoding).
fn streamed(req: &BuildRequest) -> Vec<Vec<u8>> {
    let opened = open_build(req, &CancelToken::new(), 128).unwrap();
    let chunks = opened.traces.unwrap();
    (0..chunks.len()).map(|k| chunks.chunk(k).unwrap()).collect()
}

#[test]
fn recycled_buffers_never_change_an_output() {
    let root = tempfile::tempdir().unwrap();
    let big = write_build(root.path(), "big", 9000);
    let small = write_build(root.path(), "smaller", 7500);
    let tiny = write_build(root.path(), "t", 3);
    // Before any output was handed back (the model's tables are kept from
    // the first build on, but not the text's buffer).
    let want: Vec<Vec<u8>> = [&big, &small, &tiny]
        .iter()
        .map(|req| run(req).traces.unwrap())
        .collect();
    assert!(want[0].len() > 4 << 20, "large enough to be kept");

    let mut reused = 0;
    let mut last_ptr = None;
    for (k, which) in [0, 0, 1, 0, 2, 1, 1, 0].into_iter().enumerate() {
        let req = [&big, &small, &tiny][which];
        let out = run(req);
        let traces = out.traces.as_ref().unwrap();
        assert_eq!(
            traces, &want[which],
            "step {k}: build {which} after a recycled output"
        );
        if last_ptr == Some(traces.as_ptr()) {
            reused += 1;
        }
        last_ptr = Some(traces.as_ptr());
        out.recycle();
    }
    // big after big and smaller after smaller fit the buffer just handed
    // back (an output is larger than its file).
    assert!(reused >= 2, "the kept buffer was read into {reused} times");

    // Streamed, interleaved with whole traces: the same chunks each time.
    let chunks: Vec<Vec<Vec<u8>>> = [&big, &small].iter().map(|req| streamed(req)).collect();
    assert!(chunks[0].len() > 50);
    for (k, which) in [1, 0, 0, 1, 0].into_iter().enumerate() {
        let req = [&big, &small][which];
        assert!(streamed(req) == chunks[which], "step {k}: build {which} streamed");
        let out = run(req);
        assert_eq!(
            out.traces.as_ref().unwrap(),
            &want[which],
            "step {k}: build {which} whole"
        );
        out.recycle();
    }
}
