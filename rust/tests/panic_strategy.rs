//! The FFI's panic guard needs unwinding: under `panic = "abort"` a panic
//! in the core would kill the whole collector instead of becoming an error
//! code. Such a build must not exist, so the crate refuses to compile with
//! it (a `compile_error!` under `cfg(panic = "abort")`). This test checks
//! the library with `panic = "abort"`, in a target directory of its own
//! (the first run checks the dependencies once; later runs are cached).

use std::path::Path;
use std::process::Command;

#[test]
fn the_library_refuses_to_build_with_panic_abort() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("panic-abort-check");
    let out = Command::new(cargo)
        .args([
            "check",
            "--locked",
            "--lib",
            "--message-format=short",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--config", "profile.dev.panic=\"abort\""])
        // Never rewrite the committed header from here.
        .env_remove("CT_BLESS_HEADER")
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the library built with panic = \"abort\"; its panic guard would be useless.\n{stderr}"
    );
    assert!(
        stderr.contains("compiletools-core needs panic = \"unwind\""),
        "the build failed, but not with the panic-strategy error:\n{stderr}"
    );
}
