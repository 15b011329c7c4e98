//! The property tests' run settings, one place for every module.

use proptest::test_runner::Config;

/// `default` cases unless `PROPTEST_CASES` says otherwise (`make
/// prop-long`); no failure files, so a run never writes into the tree.
pub fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}
