//! Keeps the committed C header in step with `src/ffi`: the build fails when
//! the header is stale, and `CT_BLESS_HEADER=1` rewrites it. The header's
//! SHA-256 becomes the library's ABI identity (`ct_header_sha256`): the Go
//! side hashes the header it was compiled with and refuses any difference.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const HEADER: &str = "../go-receiver/internal/ffi/compiletools_core.h";

fn main() {
    // cbindgen reads the whole crate (an exported type may live in any
    // module, as CasKind does in src/cas/kind.rs), so any source change
    // reruns the check; cargo watches a directory recursively.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed={HEADER}");
    println!("cargo:rerun-if-env-changed=CT_BLESS_HEADER");

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen can parse src/ffi");
    let mut generated = Vec::new();
    bindings.write(&mut generated);

    write_header_hash(&generated);

    let header = crate_dir.join(HEADER);
    let committed = fs::read(&header).unwrap_or_default();
    if committed == generated {
        return;
    }
    if env::var_os("CT_BLESS_HEADER").is_some_and(|v| v == "1") {
        fs::write(&header, &generated).expect("header is writable");
        return;
    }
    panic!(
        "{} is stale: the C ABI in rust/src/ffi changed. Run `make header` and commit the result.",
        header.display()
    );
}

/// `$OUT_DIR/header_sha256.rs`: the SHA-256 of the generated header as
/// lower-case hex, NUL-terminated for C, included by `src/ffi/abi.rs`.
fn write_header_hash(header: &[u8]) {
    let hex: String = Sha256::digest(header)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let code = format!(
        "/// SHA-256 of the C header generated with this library, hex, NUL-terminated.\n\
         pub(crate) const HEADER_SHA256: &[u8; 65] = b\"{hex}\\0\";\n"
    );
    write_if_changed(&out.join("header_sha256.rs"), code.as_bytes());
}

/// Leaves an unchanged file alone, so its mtime does not trigger rebuilds.
fn write_if_changed(path: &Path, content: &[u8]) {
    if fs::read(path).ok().as_deref() != Some(content) {
        fs::write(path, content).expect("OUT_DIR is writable");
    }
}
