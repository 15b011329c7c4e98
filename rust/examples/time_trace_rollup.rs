//! ClangBuildAnalyzer's analysis of the clang `-ftime-trace` files under
//! some directories, printed in its `--analyze` layout.
//!
//!     cargo run --release --example time_trace_rollup -- DIR...
//!     cargo run --release --example time_trace_rollup -- --bench [--rounds N] DIR...
//!
//! Every `*.json` under each DIR is read (symbolic links are not followed),
//! named by its path as given, like `ClangBuildAnalyzer --all DIR` names it:
//! a trace with an object file beside it (`x.json` → `x.o`) is named by
//! that. A file that is not a trace is reported on stderr and skipped.
//!
//! `--bench` times the parse and the rollup of all the files N times (3 by
//! default): once reading each file from disk every round, once from bytes
//! already in memory, and prints files, events, bytes and MB/s.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use compiletools_core::timetrace::{parse_trace, read_trace, Rollup, TraceLimits};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let mut bench = false;
    let mut rounds = 3usize;
    let mut dirs = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => bench = true,
            "--rounds" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => rounds = n,
                _ => return usage("--rounds needs a positive number"),
            },
            "-h" | "--help" => return usage(""),
            _ => dirs.push(PathBuf::from(arg)),
        }
    }
    if dirs.is_empty() {
        return usage("no directory given");
    }
    let mut files = Vec::new();
    for dir in &dirs {
        if let Err(e) = collect_json(dir, &mut files) {
            eprintln!("{}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    files.sort();
    if bench {
        run_bench(&files, rounds);
    } else {
        print!("{}", rollup_from_disk(&files, true).report());
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    if !problem.is_empty() {
        eprintln!("time_trace_rollup: {problem}");
    }
    eprintln!("usage: time_trace_rollup [--bench [--rounds N]] DIR...");
    ExitCode::from(2)
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|x| x == "json") {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// ClangBuildAnalyzer's name for a trace: the object file beside it when
/// there is one.
fn tu_name(trace: &Path) -> String {
    for object in [trace.with_extension("o"), trace.with_extension("obj")] {
        if object.is_file() {
            return object.to_string_lossy().into_owned();
        }
    }
    trace.to_string_lossy().into_owned()
}

fn rollup_from_disk(files: &[PathBuf], report_errors: bool) -> Rollup {
    let limits = TraceLimits::default();
    let mut rollup = Rollup::default();
    for file in files {
        match read_trace(file, &limits) {
            Ok(unit) => {
                rollup.add(&tu_name(file), &unit);
            }
            Err(e) if report_errors => eprintln!("{}: {e}", file.display()),
            Err(_) => {}
        }
    }
    rollup
}

fn run_bench(files: &[PathBuf], rounds: usize) {
    let limits = TraceLimits::default();
    let loaded: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter_map(|f| Some((tu_name(f), std::fs::read(f).ok()?)))
        .collect();
    let bytes: usize = loaded.iter().map(|(_, b)| b.len()).sum();
    let mut events = 0usize;
    let mut traces = 0usize;
    for (_, b) in &loaded {
        if let Ok(unit) = parse_trace(b, &limits) {
            events += unit.events().len();
            traces += 1;
        }
    }
    println!(
        "{} files ({traces} traces), {:.1} MiB, {events} events kept",
        loaded.len(),
        bytes as f64 / (1 << 20) as f64
    );

    let best_of = |f: &mut dyn FnMut()| -> Duration {
        (0..rounds)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let from_disk = best_of(&mut || {
        std::hint::black_box(rollup_from_disk(files, false).report());
    });
    let mut parse_only = || {
        for (_, b) in &loaded {
            let _ = std::hint::black_box(parse_trace(b, &limits));
        }
    };
    let parse = best_of(&mut parse_only);
    let in_memory = best_of(&mut || {
        let mut rollup = Rollup::default();
        for (name, b) in &loaded {
            if let Ok(unit) = parse_trace(b, &limits) {
                rollup.add(name, &unit);
            }
        }
        std::hint::black_box(rollup.report());
    });
    let line = |what: &str, d: Duration| {
        let s = d.as_secs_f64();
        println!(
            "{what:<32} {:9.3} ms  {:8.1} MB/s  {:8.0} files/s",
            s * 1e3,
            bytes as f64 / 1e6 / s,
            loaded.len() as f64 / s
        );
    };
    println!("best of {rounds} rounds:");
    line("read+parse+rollup (from disk)", from_disk);
    line("parse (in memory)", parse);
    line("parse+rollup (in memory)", in_memory);
}
