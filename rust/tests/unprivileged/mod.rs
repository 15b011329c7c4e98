//! Permission tests that also mean something when the tests run as root.
//!
//! Root reads every file whatever its mode, and CI runs as root, so an
//! "unreadable file" test run as root proves nothing. [`run_unprivileged`]
//! runs a test's body as an ordinary user: in place when the test already
//! runs as one; as root, in a child process — this same test binary,
//! filtered to this one test — with the uid and gid of `nobody`.
//!
//! The child runs a copy of the test binary from a scratch directory owned
//! by `nobody`, which is also its working directory and `TMPDIR`: the
//! checkout may sit where `nobody` cannot go (e.g. under `/root`), and the
//! body's temporary files must be the child's own.

use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Set in the child: run the body, do not spawn again.
const CHILD_ENV: &str = "CT_TEST_UNPRIVILEGED_CHILD";
/// `nobody` / `nogroup` on Debian and most Linux distributions.
const NOBODY: u32 = 65534;

/// Runs `body` where file permissions are enforced. `test_name` is the
/// test's full name in its test binary: its module path without the crate,
/// e.g. `cas_edge::the_test` (the child runs exactly that test).
pub fn run_unprivileged(test_name: &str, body: impl FnOnce()) {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if std::env::var_os(CHILD_ENV).is_some() || !root {
        assert_permissions_enforced();
        body();
        return;
    }
    let scratch = tempfile::tempdir().expect("scratch directory");
    chown(scratch.path(), Some(NOBODY), Some(NOBODY)).expect("chown scratch to nobody");
    let exe = std::env::current_exe().expect("current test binary");
    let copy = scratch.path().join("test-binary");
    std::fs::copy(&exe, &copy).unwrap_or_else(|e| panic!("copy {}: {e}", exe.display()));
    let out = Command::new(&copy)
        .args([test_name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, "1")
        .env("TMPDIR", scratch.path())
        .current_dir(scratch.path())
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap_or_else(|e| panic!("run {} as nobody: {e}", copy.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- {test_name} as uid {NOBODY}:\n{stdout}{stderr}");
    assert!(
        out.status.success(),
        "{test_name} failed as uid {NOBODY} ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // A filter that matched nothing would pass without running the body.
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{test_name}: the child did not run exactly this test:\n{stdout}"
    );
}

/// The body's assertions rely on a mode-000 file being unreadable.
fn assert_permissions_enforced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("probe directory");
    let probe = dir.path().join("probe");
    std::fs::write(&probe, b"x").expect("write probe");
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o000)).expect("chmod probe");
    assert!(
        std::fs::read(&probe).is_err(),
        "a mode-000 file is readable at {}: permissions are not enforced for euid {}",
        probe.display(),
        // SAFETY: as above.
        unsafe { libc::geteuid() }
    );
}
