//! A build's clang `-ftime-trace` rollup (issue 25) in its outputs, beside
//! the child spans the trace encoders write (`trace::clang`):
//! * root attributes ([`clang_root_attributes`]): ClangBuildAnalyzer's
//!   "Time summary" and its top lists, most expensive first;
//! * log records ([`encode_clang_logs`]): one `ct.clang.header` per
//!   expensive header and one `ct.clang.template` per expensive template,
//!   so a logs backend can chart one header's cost over weeks;
//! * metrics ([`clang_metrics`]): frontend and backend seconds by variant,
//!   and the parse seconds of the build's top headers (bounded: the top N
//!   of each build only), for dashboards without a logs backend.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, Metric, NumberDataPoint, Sum};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::attributes::{saturating_i64, AttrBuilder};
use super::scope::{scope, SCOPE_NAME};
use super::semconv::PIPELINE_NAME;
use crate::timetrace::BuildTraces;

pub const ROOT_FRONTEND_S: &str = "ct.build.clang.frontend_s";
pub const ROOT_BACKEND_S: &str = "ct.build.clang.backend_s";
pub const ROOT_TOP_HEADERS: &str = "ct.build.clang.top_headers";
pub const ROOT_TOP_TEMPLATES: &str = "ct.build.clang.top_templates";

/// `event_name` of an expensive header's record.
pub const EVENT_HEADER: &str = "ct.clang.header";
/// `event_name` of an expensive template's record.
pub const EVENT_TEMPLATE: &str = "ct.clang.template";

pub const FRONTEND_METRIC: &str = "ct.clang.frontend";
pub const BACKEND_METRIC: &str = "ct.clang.backend";
pub const HEADER_METRIC: &str = "ct.clang.header.parse";

const US_PER_S: f64 = 1e6;

fn seconds(us: i64) -> f64 {
    us as f64 / US_PER_S
}

/// The root's `ct.build.clang.*` attributes: totals, then each top list
/// (at most `top_n` entries) in ClangBuildAnalyzer's order.
pub fn clang_root_attributes(traces: &BuildTraces, top_n: usize, max_attribute_len: u32) -> Vec<KeyValue> {
    let r = &traces.report;
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 16);
    a.double(ROOT_FRONTEND_S, seconds(r.summary.frontend_us));
    a.double(ROOT_BACKEND_S, seconds(r.summary.backend_us));
    a.int(
        "ct.build.clang.compilations",
        saturating_i64(r.summary.compilations),
    );
    a.int("ct.build.clang.traces", saturating_i64(traces.counts.read));
    if traces.counts.refused > 0 {
        a.int(
            "ct.build.clang.traces_refused",
            saturating_i64(traces.counts.refused),
        );
    }
    let top = |n: usize| n.min(top_n);
    a.strings(
        ROOT_TOP_HEADERS,
        r.headers[..top(r.headers.len())].iter().map(|h| h.path.as_str()),
    );
    a.strings(
        ROOT_TOP_TEMPLATES,
        r.templates[..top(r.templates.len())]
            .iter()
            .map(|t| t.name.as_str()),
    );
    a.strings(
        "ct.build.clang.top_template_sets",
        r.template_sets[..top(r.template_sets.len())]
            .iter()
            .map(|t| t.name.as_str()),
    );
    a.strings(
        "ct.build.clang.top_parse_files",
        r.parse_files[..top(r.parse_files.len())]
            .iter()
            .map(|f| f.name.as_str()),
    );
    a.strings(
        "ct.build.clang.top_codegen_files",
        r.codegen_files[..top(r.codegen_files.len())]
            .iter()
            .map(|f| f.name.as_str()),
    );
    a.strings(
        "ct.build.clang.top_functions",
        r.functions[..top(r.functions.len())]
            .iter()
            .map(|f| f.name.as_str()),
    );
    a.finish().0
}

/// Where the log records of one build belong.
pub struct ClangLogsInput<'x> {
    pub traces: &'x BuildTraces,
    /// The build's resource (the trace's).
    pub resource: Resource,
    pub trace_id: [u8; 16],
    pub root_span_id: [u8; 8],
    /// Build end, Unix ns: the records' time.
    pub time_unix_nano: u64,
    /// Most records of each kind.
    pub max_records: usize,
    pub max_attribute_len: u32,
}

/// The build's `ct.clang.header` and `ct.clang.template` records as one
/// `ExportLogsServiceRequest`, `None` when there is none.
pub fn encode_clang_logs(input: &ClangLogsInput) -> Option<Vec<u8>> {
    let r = &input.traces.report;
    let mut records = Vec::new();
    for (rank, h) in r.headers.iter().take(input.max_records).enumerate() {
        let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 4);
        a.string("ct.header.path", &h.path);
        a.double("ct.header.parse_s", seconds(h.us));
        a.int("ct.header.include_count", saturating_i64(h.count));
        a.int("ct.header.rank", rank as i64 + 1);
        let body = format!(
            "{}: {:.3} s parsing, included {} times",
            h.path,
            seconds(h.us),
            h.count
        );
        records.push(record(input, EVENT_HEADER, body, a.finish().0));
    }
    for (rank, t) in r.templates.iter().take(input.max_records).enumerate() {
        let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 4);
        a.string("ct.template.name", &t.name);
        a.double("ct.template.instantiate_s", seconds(t.us));
        a.int("ct.template.count", saturating_i64(t.count));
        a.int("ct.template.rank", rank as i64 + 1);
        let body = format!(
            "{}: {:.3} s instantiating, {} times",
            t.name,
            seconds(t.us),
            t.count
        );
        records.push(record(input, EVENT_TEMPLATE, body, a.finish().0));
    }
    if records.is_empty() {
        return None;
    }
    let request = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(input.resource.clone()),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope(SCOPE_NAME)),
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    Some(request.encode_to_vec())
}

fn record(input: &ClangLogsInput, name: &str, body: String, attributes: Vec<KeyValue>) -> LogRecord {
    LogRecord {
        time_unix_nano: input.time_unix_nano,
        observed_time_unix_nano: input.time_unix_nano,
        severity_number: SeverityNumber::Info as i32,
        severity_text: "INFO".to_owned(),
        body: Some(AnyValue {
            value: Some(Value::StringValue(body)),
        }),
        attributes,
        trace_id: input.trace_id.to_vec(),
        span_id: input.root_span_id.to_vec(),
        event_name: name.to_owned(),
        ..Default::default()
    }
}

/// What the clang metrics of one build are made from.
pub struct ClangMetricsInput<'x> {
    pub traces: &'x BuildTraces,
    pub variant: &'x str,
    pub pipeline_name: &'x str,
    pub start_unix_nano: u64,
    pub time_unix_nano: u64,
    pub temporality: AggregationTemporality,
    pub top_n: usize,
    pub max_attribute_len: u32,
}

/// `ct.clang.frontend`, `ct.clang.backend` (one point each) and
/// `ct.clang.header.parse` (one point per top header), with their number
/// of points.
pub fn clang_metrics(input: &ClangMetricsInput) -> (Vec<Metric>, u64) {
    let r = &input.traces.report;
    let series = |a: &mut AttrBuilder| {
        a.non_empty_string(PIPELINE_NAME, input.pipeline_name);
        a.non_empty_string("ct.variant", input.variant);
    };
    let point = |attributes: Vec<KeyValue>, value: f64| NumberDataPoint {
        attributes,
        start_time_unix_nano: input.start_unix_nano,
        time_unix_nano: input.time_unix_nano,
        value: Some(number_data_point::Value::AsDouble(value)),
        ..Default::default()
    };
    let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 2);
    series(&mut a);
    let attrs = a.finish().0;
    let mut metrics = vec![
        sum(
            FRONTEND_METRIC,
            "Time clang spent in its frontend (parsing, semantic analysis, template instantiation), from -ftime-trace",
            input,
            vec![point(attrs.clone(), seconds(r.summary.frontend_us))],
        ),
        sum(
            BACKEND_METRIC,
            "Time clang spent in its backend (optimisation, code generation), from -ftime-trace",
            input,
            vec![point(attrs, seconds(r.summary.backend_us))],
        ),
    ];
    let headers: Vec<NumberDataPoint> = r
        .headers
        .iter()
        .take(input.top_n)
        .map(|h| {
            let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 3);
            a.string("ct.header.path", &h.path);
            series(&mut a);
            point(a.finish().0, seconds(h.us))
        })
        .collect();
    let mut points = 2;
    if !headers.is_empty() {
        points += headers.len() as u64;
        metrics.push(sum(
            HEADER_METRIC,
            "Inclusive parse time of each of the build's most expensive headers (its top N only), from -ftime-trace",
            input,
            headers,
        ));
    }
    (metrics, points)
}

fn sum(
    name: &str,
    description: &str,
    input: &ClangMetricsInput,
    data_points: Vec<NumberDataPoint>,
) -> Metric {
    Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        unit: "s".to_owned(),
        data: Some(Data::Sum(Sum {
            data_points,
            aggregation_temporality: input.temporality as i32,
            is_monotonic: true,
        })),
        ..Default::default()
    }
}
