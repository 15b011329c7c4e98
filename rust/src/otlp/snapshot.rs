//! metrics-as-spans for ccache (formats.md §3.6, design.md §2 fix 7): instead of the
//! ccache metrics, one `ct.ccache.snapshot` span carrying the same numbers
//! as attributes.
//!
//! compiletools puts it in a trace of its own, timed "now". Here it belongs
//! to the build's trace instead: a child of the root span, start = end = the
//! build's end, in a second `ScopeSpans` (scope `compiletools.ccache`, as
//! compiletools' tracer) of the build's single `ResourceSpans`. Sharing the
//! build's resource means its `ct.invocation_id` is the directory name like
//! every other span of the trace; the trace id that compiletools put there
//! is the span's own `trace_id`.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ScopeSpans, Span};

use super::attributes::{key_value, saturating_i64};
use super::metrics::exportable_events;
use super::scope::{scope, CCACHE_SCOPE_NAME};
use super::trace::SPAN_FLAGS;
use crate::ids;
use crate::statslog::Statslog;
use crate::warnings::Warnings;

pub const SNAPSHOT_SPAN_NAME: &str = "ct.ccache.snapshot";
/// Prefix of the per-event attributes, followed by the event name.
pub const EVENT_ATTRIBUTE_PREFIX: &str = "ct.ccache.events.";

/// What the snapshot span of one build is made from.
pub struct SnapshotInput<'x> {
    pub statslog: &'x Statslog,
    pub trace_id: [u8; 16],
    /// The build's root span.
    pub parent_span_id: [u8; 8],
    /// The build's end, Unix ns: start and end of the span.
    pub time_unix_nano: u64,
    pub max_attribute_len: u32,
}

/// The `ScopeSpans` holding the build's snapshot span.
pub fn snapshot_scope_spans(input: SnapshotInput, warnings: &mut Warnings) -> ScopeSpans {
    let events = exportable_events(input.statslog, input.max_attribute_len, warnings);
    let summary = input.statslog.summary();
    // Built directly, not through AttrBuilder: event names are distinct, so
    // there is nothing to de-duplicate, and a hostile statslog with many
    // names must not cost a quadratic key search.
    let mut attributes: Vec<KeyValue> = Vec::with_capacity(events.len() + 2);
    for e in events {
        attributes.push(key_value(
            format!("{EVENT_ATTRIBUTE_PREFIX}{}", e.name),
            Value::IntValue(saturating_i64(e.count)),
        ));
    }
    attributes.push(key_value(
        "ct.ccache.hit_rate".to_owned(),
        Value::DoubleValue(summary.hit_rate()),
    ));
    attributes.push(key_value(
        "ct.ccache.remote_hit_rate".to_owned(),
        Value::DoubleValue(summary.remote_hit_rate()),
    ));
    let span = Span {
        trace_id: input.trace_id.to_vec(),
        span_id: ids::snapshot_span_id(&input.trace_id).to_vec(),
        parent_span_id: input.parent_span_id.to_vec(),
        flags: SPAN_FLAGS,
        name: SNAPSHOT_SPAN_NAME.to_owned(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: input.time_unix_nano,
        end_time_unix_nano: input.time_unix_nano,
        attributes,
        ..Default::default()
    };
    ScopeSpans {
        scope: Some(scope(CCACHE_SCOPE_NAME)),
        spans: vec![span],
        schema_url: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statslog::parse;

    #[test]
    fn snapshot_span() {
        let log = parse(b"# \ncalled_for_preprocessing\n# /a.cpp\ndirect_cache_hit\nlocal_storage_hit\n");
        let tid = [3u8; 16];
        let ss = snapshot_scope_spans(
            SnapshotInput {
                statslog: &log,
                trace_id: tid,
                parent_span_id: ids::span_id(&tid, &[]),
                time_unix_nano: 42,
                max_attribute_len: 100,
            },
            &mut Warnings::new(),
        );
        assert_eq!(ss.scope.as_ref().unwrap().name, "compiletools.ccache");
        let s = &ss.spans[0];
        assert_eq!(s.name, SNAPSHOT_SPAN_NAME);
        assert_eq!(s.parent_span_id, ids::span_id(&tid, &[]));
        assert_eq!(s.span_id, ids::snapshot_span_id(&tid));
        assert_eq!((s.start_time_unix_nano, s.end_time_unix_nano), (42, 42));
        let keys: Vec<&str> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "ct.ccache.events.called_for_preprocessing",
                "ct.ccache.events.direct_cache_hit",
                "ct.ccache.events.local_storage_hit",
                "ct.ccache.hit_rate",
                "ct.ccache.remote_hit_rate"
            ]
        );
        assert_eq!(
            s.attributes[3].value.as_ref().unwrap().value,
            Some(Value::DoubleValue(1.0))
        );
    }
}
