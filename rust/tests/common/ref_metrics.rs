//! Differential check of our ccache metrics against what ct-cake sent
//! (`reference/002-metrics.json`, proto3 JSON).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, NumberDataPoint};
use prost::Message;
use serde_json::Value as Json;

use super::intended::{self, Tally};
use super::reference::{json_attrs, json_u64, proto_attrs, strip_resource, Attr};

/// One metrics request (one resource, one scope).
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    pub resource: BTreeMap<String, Attr>,
    pub scope_name: String,
    pub scope_version: String,
    pub metrics: Vec<MetricRec>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricRec {
    pub name: String,
    pub description: String,
    pub unit: String,
    /// `sum`, `gauge` or something we never send.
    pub kind: String,
    /// Sums only; empty for gauges.
    pub temporality: String,
    pub monotonic: bool,
    pub points: Vec<PointRec>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PointRec {
    /// In order.
    pub attributes: Vec<(String, Attr)>,
    /// `Attr::Int` or `Attr::Double`.
    pub value: Attr,
    pub start: i64,
    pub time: i64,
    pub flags: u64,
}

// ------------------------------------------------------------ the reference

pub fn load_reference_metrics(path: &Path) -> Metrics {
    let doc: Json = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let rm = doc["resourceMetrics"].as_array().expect("resourceMetrics");
    assert_eq!(rm.len(), 1, "{}: one ResourceMetrics", path.display());
    let sm = rm[0]["scopeMetrics"].as_array().expect("scopeMetrics");
    assert_eq!(sm.len(), 1, "{}: one ScopeMetrics", path.display());
    Metrics {
        resource: json_attrs(&rm[0]["resource"]["attributes"]).0,
        scope_name: sm[0]["scope"]["name"].as_str().unwrap_or("").to_owned(),
        scope_version: sm[0]["scope"]["version"].as_str().unwrap_or("").to_owned(),
        metrics: sm[0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(json_metric)
            .collect(),
    }
}

fn json_metric(m: &Json) -> MetricRec {
    let (kind, body) = if m.get("sum").is_some() {
        ("sum", &m["sum"])
    } else if m.get("gauge").is_some() {
        ("gauge", &m["gauge"])
    } else {
        ("other", &Json::Null)
    };
    MetricRec {
        name: m["name"].as_str().unwrap().to_owned(),
        description: m["description"].as_str().unwrap_or("").to_owned(),
        unit: m["unit"].as_str().unwrap_or("").to_owned(),
        kind: kind.to_owned(),
        temporality: body["aggregationTemporality"].as_str().unwrap_or("").to_owned(),
        monotonic: body["isMonotonic"].as_bool().unwrap_or(false),
        points: body["dataPoints"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .map(|p| {
                let (map, order) = json_attrs(&p["attributes"]);
                PointRec {
                    attributes: order.into_iter().map(|k| (k.clone(), map[&k].clone())).collect(),
                    value: match (p.get("asInt"), p.get("asDouble")) {
                        (Some(i), _) => Attr::Int(json_u64(i)),
                        (_, Some(d)) => Attr::Double(d.as_f64().unwrap()),
                        _ => panic!("point without a value"),
                    },
                    start: json_u64(&p["startTimeUnixNano"]),
                    time: json_u64(&p["timeUnixNano"]),
                    flags: p["flags"].as_u64().unwrap_or(0),
                }
            })
            .collect(),
    }
}

// ------------------------------------------------------------------ our side

pub fn decode_ours_metrics(bytes: &[u8]) -> Metrics {
    let req = ExportMetricsServiceRequest::decode(bytes).expect("our metrics decode");
    assert_eq!(req.resource_metrics.len(), 1, "one ResourceMetrics");
    let rm = &req.resource_metrics[0];
    assert_eq!(rm.scope_metrics.len(), 1, "one ScopeMetrics");
    let sm = &rm.scope_metrics[0];
    let scope = sm.scope.clone().unwrap_or_default();
    Metrics {
        resource: proto_attrs(&rm.resource.clone().unwrap_or_default().attributes).0,
        scope_name: scope.name,
        scope_version: scope.version,
        metrics: sm
            .metrics
            .iter()
            .map(|m| {
                let (kind, temporality, monotonic, points): (&str, String, bool, &[NumberDataPoint]) =
                    match &m.data {
                        Some(Data::Sum(s)) => (
                            "sum",
                            AggregationTemporality::try_from(s.aggregation_temporality)
                                .map(|t| t.as_str_name().to_owned())
                                .unwrap_or_default(),
                            s.is_monotonic,
                            &s.data_points,
                        ),
                        Some(Data::Gauge(g)) => ("gauge", String::new(), false, &g.data_points),
                        _ => ("other", String::new(), false, &[]),
                    };
                MetricRec {
                    name: m.name.clone(),
                    description: m.description.clone(),
                    unit: m.unit.clone(),
                    kind: kind.to_owned(),
                    temporality,
                    monotonic,
                    points: points
                        .iter()
                        .map(|p| {
                            let (map, order) = proto_attrs(&p.attributes);
                            PointRec {
                                attributes: order.into_iter().map(|k| (k.clone(), map[&k].clone())).collect(),
                                value: match p.value {
                                    Some(PointValue::AsInt(i)) => Attr::Int(i),
                                    Some(PointValue::AsDouble(d)) => Attr::Double(d),
                                    None => panic!("our point has no value"),
                                },
                                start: p.start_time_unix_nano as i64,
                                time: p.time_unix_nano as i64,
                                flags: u64::from(p.flags),
                            }
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

// -------------------------------------------------------------- comparison

/// What our metrics' identity and times must be.
pub struct MetricsContext<'a> {
    pub our_trace_id_hex: &'a str,
    pub reference_trace_id_hex: &'a str,
    /// Our root span's interval (Unix ns).
    pub build_start: i64,
    pub build_end: i64,
}

/// Every difference between the reference metrics and ours, one per line.
pub fn compare_metrics(
    reference: &Metrics,
    ours: &Metrics,
    ctx: &MetricsContext,
    tally: &mut Tally,
) -> String {
    let mut d = String::new();
    if (ours.scope_name.as_str(), ours.scope_version.as_str())
        != (reference.scope_name.as_str(), reference.scope_version.as_str())
    {
        let _ = writeln!(
            d,
            "metrics scope {:?}/{:?} != {:?}/{:?}",
            ours.scope_name, ours.scope_version, reference.scope_name, reference.scope_version
        );
    }

    // Resource: everything but the uncompared keys and the invocation id,
    // which is each side's own trace id.
    let invocation = |m: &Metrics| match m.resource.get("ct.invocation_id") {
        Some(Attr::Str(s)) => s.clone(),
        other => format!("{other:?}"),
    };
    if invocation(reference) != ctx.reference_trace_id_hex {
        let _ = writeln!(
            d,
            "reference metrics ct.invocation_id {} is not its trace id {}",
            invocation(reference),
            ctx.reference_trace_id_hex
        );
    }
    if invocation(ours) != ctx.our_trace_id_hex {
        let _ = writeln!(
            d,
            "our metrics ct.invocation_id {} is not our trace id {}",
            invocation(ours),
            ctx.our_trace_id_hex
        );
    }
    tally.add(intended::METRICS_INVOCATION_ID, 1);
    let without_id = |m: &Metrics, tally: &mut Tally| {
        let mut r = strip_resource(&m.resource, tally);
        r.remove("ct.invocation_id");
        r
    };
    let (rr, or) = (
        without_id(reference, tally),
        super::semconv::undo_resource(&without_id(ours, &mut Tally::default()), true, tally, &mut d),
    );
    if rr != or {
        let _ = writeln!(
            d,
            "metrics resource differs:\n  reference {rr:?}\n  ours      {or:?}"
        );
    }

    let names = |m: &Metrics| m.metrics.iter().map(|x| x.name.clone()).collect::<Vec<_>>();
    if names(reference) != names(ours) {
        let _ = writeln!(d, "metrics {:?} != reference {:?}", names(ours), names(reference));
        return d;
    }
    for (r, o) in reference.metrics.iter().zip(&ours.metrics) {
        let shape = |m: &MetricRec| {
            (
                m.description.clone(),
                m.unit.clone(),
                m.kind.clone(),
                m.temporality.clone(),
                m.monotonic,
            )
        };
        if shape(r) != shape(o) {
            let _ = writeln!(d, "{}: shape {:?} != reference {:?}", r.name, shape(o), shape(r));
        }
        if r.points.len() != o.points.len() {
            let _ = writeln!(
                d,
                "{}: {} points != reference {}",
                r.name,
                o.points.len(),
                r.points.len()
            );
        }
        for (i, (rp, op)) in r.points.iter().zip(&o.points).enumerate() {
            if (&rp.attributes, &rp.value, rp.flags) != (&op.attributes, &op.value, op.flags) {
                let _ = writeln!(
                    d,
                    "{} point {i}: {:?} = {:?} (flags {}) != reference {:?} = {:?} (flags {})",
                    r.name, op.attributes, op.value, op.flags, rp.attributes, rp.value, rp.flags
                );
            }
            // Times: ours are the build's interval. A start exists where
            // the reference has one (sums), and nowhere else (gauges).
            let want_start = if rp.start != 0 { ctx.build_start } else { 0 };
            if (op.start, op.time) != (want_start, ctx.build_end) {
                let _ = writeln!(
                    d,
                    "{} point {i}: start/time {}/{} != build {want_start}/{}",
                    r.name, op.start, op.time, ctx.build_end
                );
            }
            tally.add(intended::METRIC_TIMES, 1);
        }
    }
    d
}

/// Whether `later` repeats `first` except for the time of its points
/// (ct-cake's double delivery, formats.md §3.5).
pub fn is_repeat(first: &Metrics, later: &Metrics) -> bool {
    let untimed = |m: &Metrics| {
        let mut m = m.clone();
        for metric in &mut m.metrics {
            for p in &mut metric.points {
                p.time = 0;
            }
        }
        m
    };
    untimed(first) == untimed(later)
}

/// Total data points.
pub fn point_count(m: &Metrics) -> u64 {
    m.metrics.iter().map(|x| x.points.len() as u64).sum()
}
