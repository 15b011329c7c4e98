//! The integration tests, as one test binary: each file beside this one is
//! a module of it (`cargo test --test tests -- cas_edge::` runs one), and
//! the helpers (`common`, `cas_support`, ...) are compiled once. One binary
//! links the library and its dependencies once instead of once per file.
//!
//! `Cargo.toml` turns off cargo's discovery of `tests/*.rs`
//! (`autotests = false`): a new test file must be added here, and a test
//! that needs a process of its own gets a `[[test]]` entry there. Two do:
//! `history_perf.rs` (a counting `#[global_allocator]`, which would count
//! every other test's allocations too) and `retained_buffers.rs` (asserts
//! that the process-wide kept buffers are reused from one build to the
//! next, which another test's build running at the same time could take).

// Helpers shared by the test modules.
mod cas_support;
mod common;
mod corpus_path;
mod unprivileged;

// One module per former test binary.
mod analytics;
mod build_metrics;
mod build_script;
mod cas_cache;
mod cas_corpus;
mod cas_differential;
mod cas_edge;
mod cas_otlp;
mod ccache_pipeline;
mod corpus;
mod exact_path;
mod fifo_inputs;
mod history_corpus;
mod history_pipeline;
mod no_symlinks;
mod panic_strategy;
mod perf;
mod pipeline;
mod prop_analytics;
mod prop_live;
mod prop_side_files;
mod prop_timing;
mod statslog_unreadable;
mod time_trace;
