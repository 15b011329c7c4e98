//! One explicit-bucket histogram point built from observations that each
//! belong to a span, keeping one exemplar per bucket (OpenMetrics shows one
//! per bucket): the largest regression of the bucket where the compile
//! history gave one (`ct.rule.duration_delta_s` > 0, which the exemplar
//! carries as a filtered attribute), else the slowest observation — the
//! one worth a click.
//!
//! Buckets follow OTLP: bucket `i` counts values in
//! `(bounds[i-1], bounds[i]]`, the last one everything above the last bound.

use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::attributes::AttrBuilder;
use super::history::RULE_DURATION_DELTA_S;
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

/// The exemplar of one bucket so far.
#[derive(Debug, Clone, Copy)]
struct Slowest {
    value: f64,
    span: SpanRef,
    /// The observation's regression (duration − its target's median), if
    /// positive.
    regression: Option<f64>,
}

impl Slowest {
    /// Regressions first (the largest), then the slowest.
    fn beats(&self, other: &Slowest) -> bool {
        match (self.regression, other.regression) {
            (Some(a), Some(b)) => a > b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => self.value > other.value,
        }
    }
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
        self.record_with_delta(value, span, None);
    }

    /// [`record`](Self::record) of a rule whose duration differs by
    /// `delta` seconds from its target's usual one (compile history); a
    /// positive delta is a regression and wins its bucket's exemplar.
    pub fn record_with_delta(&mut self, value: f64, span: SpanRef, delta: Option<f64>) {
        if !value.is_finite() {
            return;
        }
        let bucket = self.bounds.partition_point(|&bound| bound < value);
        self.counts[bucket] += 1;
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let candidate = Slowest {
            value,
            span,
            regression: delta.filter(|d| d.is_finite() && *d > 0.0),
        };
        let slot = &mut self.slowest[bucket];
        if slot.is_none_or(|s| candidate.beats(&s)) {
            *slot = Some(candidate);
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
                filtered_attributes: s
                    .regression
                    .map(|d| {
                        let mut a = AttrBuilder::with_capacity(0, 1);
                        a.double(RULE_DURATION_DELTA_S, d);
                        a.finish().0
                    })
                    .unwrap_or_default(),
                time_unix_nano: s.span.time_unix_nano,
                span_id: s.span.span_id.to_vec(),
                trace_id: s.span.trace_id.to_vec(),
                value: Some(ExemplarValue::AsDouble(s.value)),
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
    fn a_regression_is_its_buckets_exemplar_over_a_slower_rule() {
        let mut h = HistogramAccumulator::new(BOUNDS);
        // Bucket (1, 2]: 1.9 s is the slowest, 1.2 s and 1.1 s regressed
        // (0.4 s and 0.7 s over their targets' medians), 1.8 s got faster.
        h.record_with_delta(1.9, span(1), None);
        h.record_with_delta(1.2, span(2), Some(0.4));
        h.record_with_delta(1.1, span(3), Some(0.7));
        h.record_with_delta(1.8, span(4), Some(-0.5));
        // Bucket (2, inf): no regression, the slowest wins.
        h.record_with_delta(3.0, span(5), Some(-1.0));
        h.record_with_delta(4.0, span(6), None);
        let p = h.into_point(Vec::new(), 1, 2);
        let ex: Vec<(u8, Vec<String>)> = p
            .exemplars
            .iter()
            .map(|e| {
                let keys = e.filtered_attributes.iter().map(|kv| kv.key.clone()).collect();
                (e.span_id[0], keys)
            })
            .collect();
        assert_eq!(ex, [(3, vec![RULE_DURATION_DELTA_S.to_owned()]), (6, Vec::new())]);
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
