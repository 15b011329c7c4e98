//! Prints what the core's side-file parsers make of files, one JSON line per
//! file, for differential checks against compiletools' own Python parsers
//! (`rust/bench/diff_side_files.py`).
//!
//! ```text
//! cargo run --release --example side_files_json -- statslog|outcomes < list-of-paths
//! ```
//!
//! statslog: `{"file", "counts": [[name, count], ...]}` (first-seen order);
//! outcomes: `{"file", "records": {target: [hit, bytes_reused, kind|null]}, "skipped"}`.
//! The bytes are read whole and passed to `statslog::parse` /
//! `outcomes::parse` (no size limit, no I/O error handling: test input only).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use compiletools_core::{outcomes, statslog};
use serde_json::{json, Map, Value};

fn main() -> ExitCode {
    let kind = std::env::args().nth(1).unwrap_or_default();
    if kind != "statslog" && kind != "outcomes" {
        eprintln!("usage: side_files_json statslog|outcomes < list-of-paths");
        return ExitCode::from(2);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in std::io::stdin().lock().lines() {
        let path = line.expect("stdin is UTF-8 paths");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let v = if kind == "statslog" {
            let log = statslog::parse(&bytes);
            let counts: Vec<Value> = log.events().iter().map(|e| json!([e.name, e.count])).collect();
            json!({"file": path, "counts": counts})
        } else {
            let o = outcomes::parse(&bytes);
            // `Outcomes` has no iterator: look every candidate target up.
            let text = String::from_utf8_lossy(&bytes);
            let mut records = Map::new();
            for l in text.split(['\n', '\r']) {
                let target = l.split('\t').next().unwrap_or("");
                if let Some(r) = o.get(target) {
                    records.insert(target.to_owned(), json!([r.hit, r.bytes_reused, r.kind]));
                }
            }
            json!({"file": path, "records": records, "skipped": o.skipped_lines(), "len": o.len()})
        };
        writeln!(out, "{v}").expect("stdout");
    }
    ExitCode::SUCCESS
}
