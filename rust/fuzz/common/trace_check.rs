#![allow(dead_code)] // each target uses a part
//! Structural checks of the OTLP bytes the core produced, shared by the fuzz
//! targets: a failed check is a finding just like a panic inside the core.

use std::collections::HashSet;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// 2000-01-01T00:00:00Z: no span may start before it (design.md §2 fix 3).
const Y2000_UNIX_NS: u64 = 946_684_800_000_000_000;

/// `bytes` decode as one `ExportTraceServiceRequest` holding `spans` spans of
/// one trace: the build's scope `compiletools` first (more scopes may follow,
/// e.g. the ccache snapshot under metrics-as-spans), one root, unique span
/// ids, every parent present, start ≤ end, nothing before 2000.
pub fn check_trace(bytes: &[u8], spans: u64) {
    let req = ExportTraceServiceRequest::decode(bytes).expect("our trace bytes decode with prost");
    assert_eq!(req.resource_spans.len(), 1, "one ResourceSpans");
    let rs = &req.resource_spans[0];
    assert!(rs.resource.is_some(), "resource present");
    assert!(!rs.scope_spans.is_empty(), "at least one ScopeSpans");
    assert_eq!(
        rs.scope_spans[0].scope.as_ref().map(|s| s.name.as_str()),
        Some("compiletools"),
        "the build's own scope comes first"
    );
    let all: Vec<_> = rs.scope_spans.iter().flat_map(|ss| &ss.spans).collect();
    assert_eq!(all.len() as u64, spans, "span count = summary.spans");
    let ids: HashSet<&[u8]> = all.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(ids.len(), all.len(), "span ids are unique");
    let mut roots = 0;
    for s in &all {
        assert_eq!(s.trace_id.len(), 16, "trace id is 16 bytes");
        assert_eq!(s.trace_id, all[0].trace_id, "one trace");
        assert_eq!(s.span_id.len(), 8, "span id is 8 bytes");
        if s.parent_span_id.is_empty() {
            roots += 1;
        } else {
            assert!(
                ids.contains(s.parent_span_id.as_slice()),
                "parent of {:?} exists",
                s.name
            );
        }
        assert!(
            s.start_time_unix_nano >= Y2000_UNIX_NS,
            "{:?} starts before 2000",
            s.name
        );
        assert!(
            s.start_time_unix_nano <= s.end_time_unix_nano,
            "{:?} ends before it starts",
            s.name
        );
    }
    assert_eq!(roots, 1, "exactly one root span");
    assert!(all[0].parent_span_id.is_empty(), "the root comes first");
    // Encoding is canonical: decoding and re-encoding gives the same bytes.
    assert_eq!(
        req.encode_to_vec(),
        bytes,
        "re-encoding the decoded request changes the bytes"
    );
}

/// `bytes` decode as one `ExportMetricsServiceRequest`.
pub fn check_metrics(bytes: &[u8]) {
    ExportMetricsServiceRequest::decode(bytes).expect("our metrics bytes decode with prost");
}
