//! An unreadable ccache statslog, through `process_build`: the build still
//! goes out, without ccache data, and one warning names the file and the
//! permission error (formats.md §4.3: a statslog never fails a build, but losing
//! one the receiver was told about is worth a line).

use crate::common;
use crate::unprivileged;

use std::os::unix::fs::PermissionsExt;

use common::fixture::{span, timing_doc, Fixture};
use compiletools_core::BuildOutput;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// The `ct.ccache.*` attribute keys of the build's root span.
fn root_ccache_keys(out: &BuildOutput) -> Vec<String> {
    let req = ExportTraceServiceRequest::decode(out.traces.as_deref().expect("traces")).unwrap();
    let spans = &req.resource_spans[0].scope_spans[0].spans;
    span(spans, "compiletools.build")
        .attributes
        .iter()
        .filter(|kv| kv.key.starts_with("ct.ccache."))
        .map(|kv| kv.key.clone())
        .collect()
}

#[test]
fn unreadable_statslog_is_empty_with_one_warning() {
    // As root (CI) the body runs in a child process as `nobody`.
    let name = "statslog_unreadable::unreadable_statslog_is_empty_with_one_warning";
    unprivileged::run_unprivileged(name, || {
        let fx = Fixture::new(timing_doc("[]"));
        let side = tempfile::tempdir().unwrap();
        let statslog = side.path().join("ccache.statslog");
        std::fs::write(&statslog, "# /s/a.cpp\ncache_miss\n").unwrap();
        let mut req = fx.request();
        req.statslog = Some(statslog.clone());

        // Readable, the same file gives ccache data: what the unreadable one loses.
        let readable = fx.run_with(&req).unwrap();
        assert!(
            readable.metrics.is_some(),
            "no ccache metrics from a readable statslog"
        );
        assert!(!root_ccache_keys(&readable).is_empty());
        assert!(
            readable.summary.warnings.is_empty(),
            "{:?}",
            readable.summary.warnings
        );

        std::fs::set_permissions(&statslog, std::fs::Permissions::from_mode(0o000)).unwrap();
        let out = fx.run_with(&req).unwrap();
        assert!(
            out.metrics.is_none(),
            "ccache metrics from an unreadable statslog"
        );
        assert_eq!(root_ccache_keys(&out), Vec::<String>::new());
        let warnings = &out.summary.warnings;
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let path = statslog.display().to_string();
        assert!(
            warnings[0].contains(&path) && warnings[0].contains("Permission denied"),
            "the warning must name {path} and the permission error: {:?}",
            warnings[0]
        );
    });
}
