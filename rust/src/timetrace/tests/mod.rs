//! Tests of the whole module: the rollup against ClangBuildAnalyzer's own
//! output on the corpus' builds, the parse rules on small hand-made traces,
//! and hostile or damaged files.

mod cba_text;
mod corpus;
mod damage;
mod hostile;
mod rules;

use std::path::{Path, PathBuf};

/// `$CT_CORPUS_DIR/time-trace`, else `<workspace>/../shared/corpus/time-trace`.
pub(super) fn corpus_dir() -> PathBuf {
    let corpus = std::env::var_os("CT_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    corpus.join("time-trace")
}

/// Every `*.json` under `dir`, sorted.
pub(super) fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() && path.extension().is_some_and(|x| x == "json") => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

/// The corpus' traces, one of the builds' (for the tests that need real files).
pub(super) fn corpus_traces() -> Vec<PathBuf> {
    let dir = corpus_dir().join("geom-shake-cold").join("traces");
    let files = json_files(&dir);
    assert!(!files.is_empty(), "no traces under {}", dir.display());
    files
}
