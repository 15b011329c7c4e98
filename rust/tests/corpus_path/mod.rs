//! Where the shared corpus is, for every test-support module.

use std::path::{Path, PathBuf};

/// The corpus: `$CT_CORPUS_DIR`, else `<workspace>/../shared/corpus`.
pub fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CT_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("shared")
        .join("corpus")
}
