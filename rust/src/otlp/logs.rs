//! Live build events as OTLP log records (issue 16): one resource per build
//! (the build's identity without what only `timing.json` knows), one
//! scope, one record per event, `event_name` set.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::attributes::AttrBuilder;
use super::resource::{invocation_pid, user_attributes, DEFAULT_SERVICE_NAME, SERVICE_NAMESPACE};
use super::scope::{scope, SCOPE_NAME};
use super::semconv::PIPELINE_RUN_ID;
use crate::live::{rule_type_of, LiveEvent, LiveRequest};
use crate::statslog::Primary;

/// `event_name` of the record of a build first seen running.
pub const EVENT_BUILD_START: &str = "ct.build.start";
/// `event_name` of a compile, recipe or ninja edge seen finishing.
pub const EVENT_RULE_FINISHED: &str = "ct.rule.finished";
/// `event_name` of a build's end (delivered or abandoned).
pub const EVENT_BUILD_END: &str = "ct.build.end";

/// Encodes `events` of `req`'s build as one `ExportLogsServiceRequest`.
pub fn encode_live_logs(req: &LiveRequest, events: &[LiveEvent]) -> Vec<u8> {
    let invocation_id = crate::ids::invocation_id(&req.invocation_dir);
    let max_len = req.limits.max_attribute_len;
    let log_records = events
        .iter()
        .map(|e| record(e, &invocation_id, req, max_len))
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(live_resource(req, &invocation_id)),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope(SCOPE_NAME)),
                log_records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// The build's resource as far as a running build knows it: no `ct.variant`
/// or `ct.backend` (they are in `timing.json`), the user's attributes by
/// the build resource's rules.
fn live_resource(req: &LiveRequest, invocation_id: &str) -> Resource {
    let mut a = AttrBuilder::new(req.limits.max_attribute_len);
    let service = if req.service_name.is_empty() {
        DEFAULT_SERVICE_NAME
    } else {
        &req.service_name
    };
    a.string("service.name", service);
    a.string("service.namespace", SERVICE_NAMESPACE);
    a.non_empty_string("host.name", &req.host_name);
    if let Some(pid) = invocation_pid(invocation_id).filter(|_| !req.host_name.is_empty()) {
        a.string("service.instance.id", &format!("{}:{pid}", req.host_name));
    }
    a.non_empty_string("ct.invocation_id", invocation_id);
    a.non_empty_string(PIPELINE_RUN_ID, invocation_id);
    for (key, value) in user_attributes(&req.resource_attributes) {
        a.string(key, value);
    }
    Resource {
        attributes: a.finish().0,
        ..Default::default()
    }
}

fn record(event: &LiveEvent, invocation_id: &str, req: &LiveRequest, max_len: u32) -> LogRecord {
    let observed = req.observed_unix_nano;
    let mut a = AttrBuilder::new(max_len);
    a.string("ct.invocation_id", invocation_id);
    let mut time = observed;
    let (name, body) = match event {
        LiveEvent::BuildStart => {
            a.string(PIPELINE_RUN_ID, invocation_id);
            a.string("ct.invocation_dir", &req.invocation_dir.to_string_lossy());
            (EVENT_BUILD_START, format!("build {invocation_id} started"))
        }
        LiveEvent::Compile { source, outcome } => {
            a.string("ct.live.file", "statslog");
            a.string("ct.rule_type", "compile");
            a.non_empty_string("ct.source", source);
            if let Some(o) = outcome {
                a.string("ct.ccache.outcome", o.event_name());
            }
            let what = outcome.map_or("no ccache outcome", Primary::event_name);
            (EVENT_RULE_FINISHED, format!("compiled {source} ({what})"))
        }
        LiveEvent::Recipe {
            target,
            start_unix_ns,
            end_unix_ns,
        } => {
            a.string("ct.live.file", "make");
            a.non_empty_string("ct.target", target);
            a.string("ct.rule_type", rule_type_of(target));
            if let Some(s) = start_unix_ns {
                a.int("ct.rule.start_time_unix_nano", *s);
            }
            if let Some(e) = end_unix_ns {
                a.int("ct.rule.end_time_unix_nano", *e);
                time = u64::try_from(*e).unwrap_or(observed);
            }
            if let (Some(s), Some(e)) = (start_unix_ns, end_unix_ns) {
                a.double("ct.rule.duration_s", e.saturating_sub(*s) as f64 / 1e9);
            }
            (EVENT_RULE_FINISHED, format!("finished {target}"))
        }
        LiveEvent::NinjaEdge {
            target,
            start_ms,
            end_ms,
        } => {
            a.string("ct.live.file", "ninja");
            a.non_empty_string("ct.target", target);
            a.string("ct.rule_type", rule_type_of(target));
            a.int("ct.ninja.start_ms", *start_ms);
            a.int("ct.ninja.end_ms", *end_ms);
            a.double(
                "ct.rule.duration_s",
                end_ms.saturating_sub(*start_ms) as f64 / 1e3,
            );
            (EVENT_RULE_FINISHED, format!("finished {target}"))
        }
        LiveEvent::BuildEnd {
            abandoned,
            trace: _,
            end_unix_ns,
        } => {
            a.string(PIPELINE_RUN_ID, invocation_id);
            a.bool("ct.build.abandoned", *abandoned);
            if let Some(t) = end_unix_ns.and_then(|t| u64::try_from(t).ok()) {
                time = t;
            }
            let how = if *abandoned { "was abandoned" } else { "ended" };
            (EVENT_BUILD_END, format!("build {invocation_id} {how}"))
        }
    };
    let (trace_id, span_id) = match event {
        LiveEvent::BuildEnd {
            trace: Some((t, s)), ..
        } => (t.to_vec(), s.to_vec()),
        _ => (Vec::new(), Vec::new()),
    };
    LogRecord {
        time_unix_nano: time,
        observed_time_unix_nano: observed,
        severity_number: SeverityNumber::Info as i32,
        severity_text: "INFO".to_owned(),
        body: Some(AnyValue {
            value: Some(Value::StringValue(body)),
        }),
        attributes: a.finish().0,
        trace_id,
        span_id,
        event_name: name.to_owned(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::live::LiveKind;
    use opentelemetry_proto::tonic::common::v1::KeyValue;
    use std::path::PathBuf;

    fn request() -> LiveRequest<'static> {
        LiveRequest {
            kind: LiveKind::MakeTiming,
            invocation_dir: PathBuf::from("/d/20260101T000000-42"),
            host_name: "h".into(),
            service_name: String::new(),
            resource_attributes: vec![
                ("team".into(), "core".into()),
                ("host.name".into(), "spoof".into()),
            ],
            data: b"",
            final_chunk: false,
            abandoned: false,
            link_trace: false,
            observed_unix_nano: 99,
            max_records: 0,
            limits: Limits::default(),
        }
    }

    fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
        attrs
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref())
            .and_then(|v| v.value.as_ref())
    }

    #[test]
    fn recipes_and_edges_carry_their_times_and_the_build_resource() {
        let events = [
            LiveEvent::Recipe {
                target: "/o/a.o".into(),
                start_unix_ns: Some(1_000_000_000),
                end_unix_ns: Some(3_500_000_000),
            },
            LiveEvent::NinjaEdge {
                target: "bin/app".into(),
                start_ms: 10,
                end_ms: 260,
            },
        ];
        let req = ExportLogsServiceRequest::decode(encode_live_logs(&request(), &events).as_slice()).unwrap();
        let rl = &req.resource_logs[0];
        let res = &rl.resource.as_ref().unwrap().attributes;
        assert_eq!(
            attr(res, "host.name"),
            Some(&Value::StringValue("h".into())),
            "built-in keys win"
        );
        assert_eq!(attr(res, "team"), Some(&Value::StringValue("core".into())));
        assert_eq!(
            attr(res, "service.instance.id"),
            Some(&Value::StringValue("h:42".into()))
        );
        let [make, ninja] = &rl.scope_logs[0].log_records[..] else {
            panic!("two records expected")
        };
        assert_eq!(
            (make.time_unix_nano, make.observed_time_unix_nano),
            (3_500_000_000, 99)
        );
        assert_eq!(
            attr(&make.attributes, "ct.rule_type"),
            Some(&Value::StringValue("compile".into()))
        );
        assert_eq!(
            attr(&make.attributes, "ct.rule.duration_s"),
            Some(&Value::DoubleValue(2.5))
        );
        assert_eq!(ninja.time_unix_nano, 99, "ninja has no wall clock");
        assert_eq!(
            attr(&ninja.attributes, "ct.rule_type"),
            Some(&Value::StringValue("link".into()))
        );
        assert_eq!(
            attr(&ninja.attributes, "ct.rule.duration_s"),
            Some(&Value::DoubleValue(0.25))
        );
        assert_eq!(
            attr(&ninja.attributes, "ct.ninja.end_ms"),
            Some(&Value::IntValue(260))
        );
        for r in [make, ninja] {
            assert_eq!(r.event_name, EVENT_RULE_FINISHED);
            assert!(r.trace_id.is_empty() && r.span_id.is_empty());
        }
    }
}
