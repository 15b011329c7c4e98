//! The compile history's memory per target and its cost at 100k rules.
//! Not asserted; run on demand (README "Build analytics", history):
//!
//! ```sh
//! CT_PERF_TIMING=target/bench-inputs/timing-100000.json \
//!     cargo test --release --test history_perf -- --ignored --nocapture
//! ```
//!
//! (`make bench-quick` or `python3 rust/bench/inputs.py 100000` makes that
//! file.) Memory is counted by this binary's allocator: the live heap bytes
//! the history holds once every target of the build is remembered, with one
//! compile each and with the full K + 1 = 6 (K = 5, the default). Cost:
//! `process_build` of a later build of the same targets with and without
//! the history, interleaved round by round, fastest round of each (robust
//! to load on a shared machine); plus commit, save and restore.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use compiletools_core::history::{BuildKey, History, HistoryConfig};
use compiletools_core::timing::{self, Clock};
use compiletools_core::warnings::Warnings;
use compiletools_core::Limits;
use compiletools_core::{process_build, BuildRequest, CancelToken, Signals};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The input build, re-dated to `hour`:00 (each hour a later build of the
/// same targets), in its own invocation directory under `root`.
fn build_at(root: &Path, text: &str, hour: u32) -> PathBuf {
    let dir = root.join(format!("20260101T{hour:02}0000-42"));
    std::fs::create_dir_all(&dir).unwrap();
    let start = text.find("\"timestamp\": \"").expect("a timestamp") + 14;
    let mut text = text.to_owned();
    text.replace_range(start + 11..start + 13, &format!("{hour:02}"));
    std::fs::write(dir.join("timing.json"), text).unwrap();
    dir
}

fn request(dir: &Path, history: Option<&Arc<History>>) -> BuildRequest {
    let mut req = BuildRequest::new(dir, "bench-host");
    req.signals = Signals {
        traces: true,
        metrics: false,
    };
    req.history = history.cloned();
    req
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
#[ignore = "slow; run with --release --ignored --nocapture"]
fn history_memory_and_cost() {
    let input = std::env::var("CT_PERF_TIMING").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/bench-inputs/timing-100000.json"
        )
        .into()
    });
    let text = std::fs::read_to_string(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (1..=8).map(|h| build_at(root.path(), &text, h)).collect();
    drop(text);
    let cancel = CancelToken::new();
    let config = HistoryConfig {
        max_targets: 1_000_000,
        window: 5,
    };

    // Memory: one compile per target, then K + 1.
    let before = live();
    let history = Arc::new(History::new(config));
    let out = process_build(&request(&dirs[0], Some(&history)), &cancel).unwrap();
    drop(out);
    history.commit(&dirs[0].to_string_lossy());
    let one = live() - before;
    let fp = history.footprint();
    for dir in &dirs[1..6] {
        drop(process_build(&request(dir, Some(&history)), &cancel).unwrap());
        history.commit(&dir.to_string_lossy());
    }
    let full = live() - before;
    let fp_full = history.footprint();
    let per_100k = |bytes: isize| bytes as f64 / fp.targets as f64 * 100_000.0 / (1 << 20) as f64;
    println!("targets: {}  (compiles kept: {})", fp.targets, fp_full.compiles);
    println!(
        "history heap, 1 compile/target:  {:.1} MiB per 100k targets (estimate {:.1})",
        per_100k(one),
        per_100k(fp.bytes as isize)
    );
    println!(
        "history heap, 6 compiles/target: {:.1} MiB per 100k targets (estimate {:.1})",
        per_100k(full),
        per_100k(fp_full.bytes as isize)
    );

    // Cost: a later build (hour 7) against the full history, with and without.
    let later = &dirs[6];
    let (mut with, mut without) = (Duration::MAX, Duration::MAX);
    let rounds: usize = std::env::var("CT_PERF_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let mut stats = None;
    for _ in 0..rounds {
        without = without.min(time(|| {
            drop(process_build(&request(later, None), &cancel).unwrap())
        }));
        with = with.min(time(|| {
            let out = process_build(&request(later, Some(&history)), &cancel).unwrap();
            stats = Some(out.summary.spans);
        }));
    }
    // The evaluation alone, on a model decoded once.
    let build = {
        let path = later.join("timing.json");
        let mut w = Warnings::new();
        let text = timing::load(&path, &Limits::default(), &mut w).unwrap();
        timing::decode::decode(&text.text, &path, &Limits::default(), &cancel, &mut w).unwrap()
    };
    let clock = Clock::for_build(&build).unwrap();
    let key = BuildKey::new(clock.root_interval().0, &[7; 16]);
    let mut evaluate = Duration::MAX;
    for _ in 0..rounds {
        evaluate = evaluate.min(time(|| {
            drop(history.evaluate(&build, &clock, "bench-host", key, "eval"))
        }));
    }
    // With the comparison with the previous build (sorting the build's
    // rule identities once, merging them with the previous build's).
    let mut finish = Duration::MAX;
    for _ in 0..rounds {
        let mut facts = history.evaluate(&build, &clock, "bench-host", key, "eval");
        finish = finish.min(time(|| {
            history.finish("eval", 10_000_000_000, Some((1, 2)), &mut facts)
        }));
    }
    history.discard("eval");
    println!(
        "evaluate alone: {:.1} ms; finish (comparison): {:.1} ms",
        ms(evaluate),
        ms(finish)
    );
    let commit = time(|| {
        history.commit(&later.to_string_lossy());
    });
    let mut saved = Vec::new();
    let save = time(|| saved = history.save());
    let restored = History::new(config);
    let restore = time(|| {
        restored.restore(&saved).unwrap();
    });
    println!(
        "process_build, {} spans: {:.1} ms without history, {:.1} ms with (+{:.1} ms, {:.1} %)",
        stats.unwrap_or(0),
        ms(without),
        ms(with),
        ms(with.saturating_sub(without)),
        (with.as_secs_f64() / without.as_secs_f64() - 1.0) * 100.0
    );
    println!(
        "commit {:.1} ms, save {:.1} ms ({:.1} MiB), restore {:.1} ms",
        ms(commit),
        ms(save),
        saved.len() as f64 / (1 << 20) as f64,
        ms(restore)
    );
}
