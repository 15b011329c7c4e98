//! Writing a synthetic `timing.json` into a fresh invocation directory and
//! running the core on it.

use std::path::PathBuf;

use compiletools_core::{process_build, BuildOutput, BuildRequest, CancelToken, Error};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// Invocation id used by the fixtures (PID 4242).
pub const INVOCATION_ID: &str = "20261130T034340-4242";

/// A temporary invocation directory holding one `timing.json`.
pub struct Fixture {
    _root: tempfile::TempDir,
    pub dir: PathBuf,
}

impl Fixture {
    pub fn new(timing: impl AsRef<[u8]>) -> Self {
        Self::named(INVOCATION_ID, timing)
    }

    pub fn named(invocation_id: &str, timing: impl AsRef<[u8]>) -> Self {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(invocation_id);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("timing.json"), timing).unwrap();
        Self { _root: root, dir }
    }

    pub fn request(&self) -> BuildRequest {
        BuildRequest::new(&self.dir, "host-a")
    }

    pub fn run(&self) -> Result<BuildOutput, Error> {
        self.run_with(&self.request())
    }

    pub fn run_with(&self, req: &BuildRequest) -> Result<BuildOutput, Error> {
        process_build(req, &CancelToken::new())
    }

    /// Runs and decodes the trace; panics on error.
    pub fn trace(&self) -> (Vec<Span>, BuildOutput) {
        let out = self.run().unwrap_or_else(|e| panic!("process_build: {e}"));
        let req = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
        let spans = req.resource_spans[0].scope_spans[0].spans.clone();
        (spans, out)
    }
}

/// A timing document: root from 100.0 s to 110.0 s monotonic, ending at
/// 2026-11-30T03:43:45Z, with the given `phases` JSON.
pub fn timing_doc(phases: &str) -> String {
    format!(
        r#"{{"version": 1, "timestamp": "2026-11-30T03:43:45+00:00", "total_elapsed_s": 10.0,
            "variant": "gcc.debug", "backend": "shake", "start_s": 100.0, "phases": {phases}}}"#
    )
}

/// Unix ns of monotonic second `m` in [`timing_doc`] documents.
pub fn wall_ns(m: f64) -> u64 {
    let t_end: i64 = 1_796_010_225_000_000_000;
    (t_end - ((110.0 - m) * 1e9).round() as i64) as u64
}

pub fn span<'s>(spans: &'s [Span], name: &str) -> &'s Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name:?} in {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

pub fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

pub fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}
