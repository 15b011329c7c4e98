//! Raw bytes as a timing.json, through the same steps as `process_build`'s
//! trace path but without the file system: lenient text repair, decode,
//! clock, aggregates, build analytics, resource, streamed encoding. Checks that the streamed
//! bytes equal the prost encoding of `build_trace_request` (as documented in
//! `otlp::trace`) and that they decode into a well-formed trace.

#![no_main]

#[path = "../common/trace_check.rs"]
mod trace_check;

use std::path::Path;

use compiletools_core::analytics;
use compiletools_core::otlp::{
    analytics_root_attributes, build_resource, build_trace_request, encode_trace_request, root_attributes,
    TraceInput,
};
use compiletools_core::timing::{aggregates, decode::decode, CcacheHits, Clock, LenientText};
use compiletools_core::warnings::Warnings;
use compiletools_core::{BuildRequest, CancelToken, Limits};
use libfuzzer_sys::fuzz_target;
use prost::Message;

const INVOCATION_ID: &str = "20260101T120000-4242";

fuzz_target!(|data: &[u8]| {
    // Small limits so that the limit paths are reached by small inputs too.
    let limits = Limits {
        max_file_bytes: 1 << 20,
        max_events: 2_000,
        max_depth: 16,
        max_attribute_len: 64,
    };
    let text = LenientText::from_bytes(data.to_vec());
    if let Ok(s) = std::str::from_utf8(data) {
        if text.lone_surrogates == 0 {
            assert_eq!(
                text.text, s,
                "valid UTF-8 without lone surrogates passes unchanged"
            );
        }
        assert_eq!(text.text.len(), s.len(), "surrogate repair keeps the length");
    }
    let _ = text.warnings();
    let path = Path::new("/fuzz").join(INVOCATION_ID).join("timing.json");
    let mut warnings = Warnings::new();
    let Ok(build) = decode(&text.text, &path, &limits, &CancelToken::new(), &mut warnings) else {
        return;
    };
    // The statslog side of the aggregates, varied by the input's last byte.
    let ccache = match data.last().map(|b| b % 4) {
        Some(1) => Some(CcacheHits {
            direct_cache_hit: 1,
            preprocessed_cache_hit: 2,
        }),
        Some(2) => Some(CcacheHits {
            direct_cache_hit: u64::MAX,
            preprocessed_cache_hit: u64::MAX,
        }),
        Some(3) => Some(CcacheHits::default()),
        _ => None,
    };
    let agg = aggregates::compute(&build, ccache);
    let Ok(clock) = Clock::for_build(&build) else {
        return;
    };
    let mut req = BuildRequest::new(Path::new("/fuzz").join(INVOCATION_ID), "fuzz-host");
    req.limits = limits;
    let analytics = analytics::analyze(&build, &clock);
    let input = || TraceInput {
        build: &build,
        clock: &clock,
        trace_id: [7; 16],
        resource: build_resource(&req, &build, INVOCATION_ID, &mut Warnings::new()),
        root_attributes: root_attributes(&agg, limits.max_attribute_len)
            .into_iter()
            .chain(analytics_root_attributes(&analytics, limits.max_attribute_len))
            .collect(),
        max_attribute_len: limits.max_attribute_len,
        analytics: Some(&analytics),
        semconv_root_span: false,
        pipeline_name: "",
        clang: None,
    };
    let (bytes, stats) = encode_trace_request(input(), text.text.len(), &mut warnings);
    let (request, stats_b) = build_trace_request(input(), &mut Warnings::new());
    assert_eq!(stats, stats_b, "streamed and prost paths count the same");
    assert_eq!(bytes, request.encode_to_vec(), "streamed bytes = prost encoding");
    trace_check::check_trace(&bytes, stats.spans);
    let _ = warnings.into_lines();
});
