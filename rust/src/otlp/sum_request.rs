//! One Sum metric of our scope as a request of its own: the shape of the
//! per-build metrics the compile history adds (`ct.cache.time_saved`,
//! `ct.rebuilds`), which are sent apart from the build's other metrics.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::scope::{scope, SCOPE_NAME};

/// What names a Sum metric.
pub struct SumMetric {
    pub name: &'static str,
    pub description: &'static str,
    pub unit: &'static str,
    pub monotonic: bool,
}

/// The encoded request and its point count.
pub fn encode_sum_request(
    resource: Resource,
    metric: SumMetric,
    temporality: AggregationTemporality,
    points: Vec<NumberDataPoint>,
) -> (Vec<u8>, u64) {
    let count = points.len() as u64;
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope(SCOPE_NAME)),
                metrics: vec![Metric {
                    name: metric.name.to_owned(),
                    description: metric.description.to_owned(),
                    unit: metric.unit.to_owned(),
                    data: Some(Data::Sum(Sum {
                        data_points: points,
                        aggregation_temporality: temporality as i32,
                        is_monotonic: metric.monotonic,
                    })),
                    ..Default::default()
                }],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    (request.encode_to_vec(), count)
}
