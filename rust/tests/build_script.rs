//! `build.rs` regenerates the C header with cbindgen, which reads the whole
//! crate: a type exported through the FFI can live in any module (today
//! `CasKind` in `src/cas/kind.rs`). So the header check (and the header
//! hash the library exports) must run again whenever any source file
//! changes; listing only some files lets a stale header — and a hash that
//! no longer describes the library's real ABI — through. This test reads
//! the directives the build script gave cargo and checks that every file
//! under `src/`, `cbindgen.toml` and the committed header are covered.

use std::path::{Path, PathBuf};

/// The `cargo:rerun-if-changed` paths of this package's build script run,
/// relative to the package root.
fn rerun_paths() -> Vec<PathBuf> {
    // OUT_DIR is `<target>/<profile>/build/<pkg>-<hash>/out`; cargo keeps
    // the script's stdout beside it, in `output`.
    let output = Path::new(env!("OUT_DIR")).with_file_name("output");
    let text = std::fs::read_to_string(&output).unwrap_or_else(|e| panic!("{}: {e}", output.display()));
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("cargo:rerun-if-changed=")
                .or_else(|| l.strip_prefix("cargo::rerun-if-changed="))
        })
        .map(PathBuf::from)
        .collect()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn the_header_check_reruns_when_any_source_file_changes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let watched: Vec<PathBuf> = rerun_paths().iter().map(|p| root.join(p)).collect();
    assert!(
        !watched.is_empty(),
        "the build script names no rerun-if-changed path"
    );
    let mut files = Vec::new();
    files_under(&root.join("src"), &mut files);
    files.push(root.join("cbindgen.toml"));
    files.push(root.join("../go-receiver/internal/ffi/compiletools_core.h"));
    let unwatched: Vec<&PathBuf> = files
        .iter()
        .filter(|f| !watched.iter().any(|w| f.starts_with(w)))
        .collect();
    assert!(
        unwatched.is_empty(),
        "a change to these files would not rerun the header check: {unwatched:#?}\nwatched: {watched:#?}"
    );
}
