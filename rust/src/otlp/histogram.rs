//! One explicit-bucket histogram point built from observations that each
//! belong to a span, keeping as exemplars the slowest observation of every
//! bucket (at most one exemplar per bucket: OpenMetrics shows one per
//! bucket, and the slowest is the one worth a click).
//!
//! Buckets follow OTLP: bucket `i` counts values in
//! `(bounds[i-1], bounds[i]]`, the last one everything above the last bound.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::exemplar::Value as ExemplarValue;
use opentelemetry_proto::tonic::metrics::v1::{Exemplar, HistogramDataPoint};

/// Where an observation came from: its span and the time it was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanRef {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The span's end, Unix ns.
    pub time_unix_nano: u64,
}

/// The slowest observation of one bucket so far.
#[derive(Debug, Clone, Copy)]
struct Slowest {
    value: f64,
    span: SpanRef,
}

/// Accumulates the observations of one point.
#[derive(Debug, Clone)]
pub struct HistogramAccumulator {
    bounds: &'static [f64],
    counts: Vec<u64>,
    slowest: Vec<Option<Slowest>>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl HistogramAccumulator {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len() + 1],
            slowest: vec![None; bounds.len() + 1],
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    /// Adds one observation (a non-finite value is not a duration and is
    /// ignored). On a tie the earlier observation stays the exemplar.
    pub fn record(&mut self, value: f64, span: SpanRef) {
        if !value.is_finite() {
            return;
        }
        let bucket = self.bounds.partition_point(|&bound| bound < value);
        self.counts[bucket] += 1;
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let slot = &mut self.slowest[bucket];
        if slot.is_none_or(|s| value > s.value) {
            *slot = Some(Slowest { value, span });
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The point, exemplars in bucket order.
    pub fn into_point(
        self,
        attributes: Vec<KeyValue>,
        start_time_unix_nano: u64,
        time_unix_nano: u64,
    ) -> HistogramDataPoint {
        let exemplars = self
            .slowest
            .into_iter()
            .flatten()
            .map(|s| Exemplar {
                time_unix_nano: s.span.time_unix_nano,
                span_id: s.span.span_id.to_vec(),
                trace_id: s.span.trace_id.to_vec(),
                value: Some(ExemplarValue::AsDouble(s.value)),
                ..Default::default()
            })
            .collect();
        let observed = self.count > 0;
        HistogramDataPoint {
            attributes,
            start_time_unix_nano,
            time_unix_nano,
            count: self.count,
            sum: Some(self.sum),
            bucket_counts: self.counts,
            explicit_bounds: self.bounds.to_vec(),
            exemplars,
            flags: 0,
            min: observed.then_some(self.min),
            max: observed.then_some(self.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: &[f64] = &[1.0, 2.0];

    fn span(n: u8) -> SpanRef {
        SpanRef {
            trace_id: [n; 16],
            span_id: [n; 8],
            time_unix_nano: u64::from(n),
        }
    }

    #[test]
    fn upper_bounds_are_inclusive_and_the_slowest_of_each_bucket_is_kept() {
        let mut h = HistogramAccumulator::new(BOUNDS);
        for (v, n) in [(0.5, 1), (1.0, 2), (1.5, 3), (1.5, 4), (7.0, 5), (f64::NAN, 6)] {
            h.record(v, span(n));
        }
        let p = h.into_point(Vec::new(), 1, 2);
        assert_eq!(p.bucket_counts, [2, 2, 1]);
        assert_eq!(
            (p.count, p.sum, p.min, p.max),
            (5, Some(11.5), Some(0.5), Some(7.0))
        );
        let ex: Vec<(f64, u8)> = p
            .exemplars
            .iter()
            .map(|e| match e.value {
                Some(ExemplarValue::AsDouble(v)) => (v, e.span_id[0]),
                _ => panic!("double exemplar"),
            })
            .collect();
        // Bucket 0: 1.0 beats 0.5; bucket 1: the first of the two 1.5s.
        assert_eq!(ex, [(1.0, 2), (1.5, 3), (7.0, 5)]);
    }

    #[test]
    fn an_empty_point_has_no_min_or_max() {
        let p = HistogramAccumulator::new(BOUNDS).into_point(Vec::new(), 1, 2);
        assert_eq!((p.count, p.min, p.max, p.exemplars.len()), (0, None, None, 0));
    }
}
