//! Where the time and the memory of one timing.json → OTLP traces call go,
//! stage by stage, through the public building blocks `process_build` uses
//! (no statslog, no outcomes log: the benchmark's case). A counting global
//! allocator reports the live heap after each stage and the heap's peak
//! during it, so the peak RSS of `timing_once` can be attributed.
//!
//! ```text
//! cargo run --release --example timing_stages -- <invocation-dir> [--runs N]
//! ```
//!
//! Not the benchmark (the allocator's counting costs a little time): use
//! `timing_once` or `cargo bench` for timings that count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use compiletools_core::analytics;
use compiletools_core::otlp::{
    analytics_root_attributes, build_resource, encode_trace_request_into, root_attributes, TraceInput,
};
use compiletools_core::timing::{self, aggregates, Clock};
use compiletools_core::warnings::Warnings;
use compiletools_core::{BuildRequest, CancelToken};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let live = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only
// counters are updated around it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: our caller upholds GlobalAlloc::alloc's contract, which is System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
            ALLOCS.fetch_add(1, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from System through this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in alloc.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
            ALLOCS.fetch_add(1, Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: ptr came from System through this allocator with this
        // layout; our caller upholds realloc's contract for new_size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
            ALLOCS.fetch_add(1, Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn vm(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Stage {
    t: Instant,
    allocs: usize,
}

impl Stage {
    fn start() -> Self {
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        Stage {
            t: Instant::now(),
            allocs: ALLOCS.load(Relaxed),
        }
    }
    fn end(self, name: &str) {
        let ms = self.t.elapsed().as_secs_f64() * 1e3;
        println!(
            "{name:<24} {ms:8.1} ms   live heap {:7.1} MiB   stage peak {:7.1} MiB   {:>9} allocations",
            mib(LIVE.load(Relaxed)),
            mib(PEAK.load(Relaxed)),
            ALLOCS.load(Relaxed) - self.allocs,
        );
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: timing_stages <invocation-dir> [--runs N]");
        return ExitCode::from(2);
    };
    let runs: usize = match (args.next(), args.next()) {
        (Some(flag), Some(n)) if flag == "--runs" => n.to_str().and_then(|n| n.parse().ok()).unwrap_or(1),
        _ => 1,
    };
    let path = dir.join("timing.json");
    let file_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let req = BuildRequest::new(&dir, "bench-host");
    let invocation_id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    println!("{} ({:.1} MiB)", path.display(), mib(file_bytes as usize));
    for run in 1..=runs {
        println!("run {run}");
        let total = Instant::now();
        let mut w = Warnings::new();

        let s = Stage::start();
        // As process_build: a quarter to spare, and the buffer kept from the
        // previous run (compiletools_core::retain) when there is one.
        let mut text = match timing::load_reserving_in(None, &path, &req.limits, 1, &mut w) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        s.end("read + UTF-8 repair");

        let s = Stage::start();
        // As process_build: a large file is decoded by two threads.
        let build =
            match timing::decode_owned(&mut text.text, &path, &req.limits, &CancelToken::new(), &mut w) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
        s.end("decode (model)");

        let s = Stage::start();
        let clock = Clock::for_build(&build).expect("clock");
        let agg = aggregates::compute(&build, None);
        let resource = build_resource(&req, &build, &invocation_id, &mut w);
        s.end("clock, aggregates, res.");

        let s = Stage::start();
        let analytics = analytics::analyze(&build, &clock);
        let mut root = root_attributes(&agg, req.limits.max_attribute_len);
        root.extend(analytics_root_attributes(
            &analytics,
            req.limits.max_attribute_len,
        ));
        s.end("analytics");

        let s = Stage::start();
        let input = TraceInput {
            build: &build,
            clock: &clock,
            trace_id: [1; 16],
            resource,
            root_attributes: root,
            max_attribute_len: req.limits.max_attribute_len,
            analytics: Some(&analytics),
            semconv_root_span: false,
            pipeline_name: "",
            clang: None,
        };
        // As process_build: the output goes into the text's buffer.
        let mut buffer = text.text.into_bytes();
        buffer.clear();
        let (bytes, stats) = encode_trace_request_into(input, &[], buffer, &mut w);
        s.end("spans + encode");
        let work_ms = total.elapsed().as_secs_f64() * 1e3;

        let s = Stage::start();
        let out_len = bytes.len();
        let out_cap = bytes.capacity();
        // As process_build and the receiver: kept for the next run.
        build.recycle();
        compiletools_core::retain::give_bytes(bytes);
        s.end("free (keep)");
        println!(
            "total {work_ms:.1} ms before freeing; {} spans; output {:.1} MiB (capacity {:.1} MiB)",
            stats.spans,
            mib(out_len),
            mib(out_cap)
        );
    }
    println!(
        "process: VmHWM {:.1} MiB, VmRSS now {:.1} MiB",
        vm("VmHWM:").unwrap_or(0) as f64 / 1024.0,
        vm("VmRSS:").unwrap_or(0) as f64 / 1024.0
    );
    ExitCode::SUCCESS
}
