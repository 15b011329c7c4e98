//! The `time_trace` settings a build request carries (Go config
//! `time_trace.*`, docs/configuration.md).

/// How the clang traces of a build are read and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeTraceConfig {
    /// Look for traces at all.
    pub enabled: bool,
    /// Shortest event that becomes a child span, µs.
    pub min_event_us: i64,
    /// Most child spans under one compile span.
    pub max_spans_per_compile: u32,
    /// Most child spans in one build's trace, over all its compiles.
    pub max_spans_per_build: u32,
    /// Length of the root's top-N lists (headers, templates, files).
    pub top_n: u32,
    /// Most `ct.clang.header` (and `ct.clang.template`) log records per build.
    pub max_log_records: u32,
    /// Largest trace file read, bytes.
    pub max_trace_bytes: u64,
}

impl Default for TimeTraceConfig {
    /// 50 ms, as ninjatracing's default `--granularity`: a header or a
    /// template under that is not where a build's time goes, and a large
    /// TU has tens of thousands of events of a few µs. 100 spans a compile
    /// and 100k a build keep a 100k-rule build's trace within twice its
    /// rule spans.
    fn default() -> Self {
        Self {
            enabled: true,
            min_event_us: 50_000,
            max_spans_per_compile: 100,
            max_spans_per_build: 100_000,
            top_n: 10,
            max_log_records: 50,
            max_trace_bytes: 64 << 20,
        }
    }
}
