//! Keeps the committed C header in step with `src/ffi`: the build fails when
//! the header is stale, and `CT_BLESS_HEADER=1` rewrites it.

use std::env;
use std::fs;
use std::path::PathBuf;

const HEADER: &str = "../go-receiver/internal/ffi/compiletools_core.h";

fn main() {
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=src/error.rs");
    println!("cargo:rerun-if-changed=src/request.rs");
    // The C header's CT_CAS_KIND_* come from the CasKind enum.
    println!("cargo:rerun-if-changed=src/cas/kind.rs");
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
