package cumulative

import (
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// A delivery the consumer refused is not counted: its build is retried and
// must count once.
func TestRefusedDeliveryIsNotAccumulated(t *testing.T) {
	totals := New()
	mk := func(v int64, start, end pcommon.Timestamp) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("ct.compiles")
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		p := s.DataPoints().AppendEmpty()
		p.SetIntValue(v)
		p.SetStartTimestamp(start)
		p.SetTimestamp(end)
		return md
	}
	value := func(md pmetric.Metrics) int64 {
		return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0).IntValue()
	}
	ok := func(pmetric.Metrics) error { return nil }
	refuse := func(pmetric.Metrics) error { return os.ErrDeadlineExceeded }
	first := mk(3, 10, 20)
	if err := totals.Deliver(first, ok); err != nil || value(first) != 3 {
		t.Fatalf("first: %v %d", err, value(first))
	}
	if err := totals.Deliver(mk(5, 30, 40), refuse); err == nil {
		t.Fatal("refusal not returned")
	}
	retry := mk(5, 30, 40)
	if err := totals.Deliver(retry, ok); err != nil || value(retry) != 8 {
		t.Fatalf("retried build counted %d, want 8", value(retry))
	}
	// A build that ended earlier, delivered later, does not move time back.
	late := mk(1, 5, 15)
	_ = totals.Deliver(late, ok)
	p := late.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0)
	if p.IntValue() != 9 || p.StartTimestamp() != 5 || p.Timestamp() != 40 {
		t.Fatalf("late build: value %d interval %d..%d, want 9 over 5..40", p.IntValue(), p.StartTimestamp(), p.Timestamp())
	}
}

// A non-monotonic delta Sum (ct.cache.time_saved: a slower hit counts
// negative) leaves the receiver cumulative too, its total going down with a
// negative build: the prometheus exporter drops non-monotonic deltas.
func TestNonMonotonicSumAccumulates(t *testing.T) {
	totals := New()
	mk := func(v float64, start, end pcommon.Timestamp) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("ct.cache.time_saved")
		s := m.SetEmptySum()
		s.SetIsMonotonic(false)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		p := s.DataPoints().AppendEmpty()
		p.Attributes().PutStr("ct.rule.cache_layer", "ccache")
		p.SetDoubleValue(v)
		p.SetStartTimestamp(start)
		p.SetTimestamp(end)
		return md
	}
	ok := func(pmetric.Metrics) error { return nil }
	var last pmetric.Sum
	for _, b := range []struct {
		v          float64
		start, end pcommon.Timestamp
	}{{7.5, 10, 20}, {-0.5, 30, 40}} {
		md := mk(b.v, b.start, b.end)
		if err := totals.Deliver(md, ok); err != nil {
			t.Fatal(err)
		}
		last = md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum()
	}
	p := last.DataPoints().At(0)
	if last.AggregationTemporality() != pmetric.AggregationTemporalityCumulative || last.IsMonotonic() {
		t.Fatalf("temporality %v monotonic %v, want cumulative, non-monotonic", last.AggregationTemporality(), last.IsMonotonic())
	}
	if p.DoubleValue() != 7.0 || p.StartTimestamp() != 10 || p.Timestamp() != 40 {
		t.Fatalf("total %v over %d..%d, want 7 over 10..40", p.DoubleValue(), p.StartTimestamp(), p.Timestamp())
	}
}
