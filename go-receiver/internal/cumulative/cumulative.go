// Package cumulative turns the per-build deltas of the metric series a
// host's builds share into cumulative series (metrics_temporality:
// cumulative).
package cumulative

import (
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Totals turns the per-build deltas of the series a host's builds
// share into cumulative points: each series' total over every build the
// receiver delivered since it started, from the first such build's start
// to the latest build's end.
//
// Why here and not downstream: a build's delta covers its own run, so two
// deltas of one series are never contiguous (time passes between builds)
// and may overlap (two builds at once). The Prometheus exporter adds a delta
// only when it starts where the previous point ended, and takes any other as
// a reset, so it would show the last build alone; the deltatocumulative
// processor drops a delta that does not end after the series' last one, so
// a build delivered after one that ended later (concurrent builds, retries)
// would be lost. A cumulative series from the receiver needs neither.
//
// Totals live in memory: a restart starts every series again (a counter
// reset, which rate() and increase() handle), and a build sent again after a
// crash counts again. Only points whose delivery the consumer accepted are
// added, so a retried build is not counted twice. Deliveries of shared
// series are serialised: a total must never go down.
type Totals struct {
	mu     sync.Mutex
	series map[string]*seriesTotal
}

// seriesTotal is one series' running total.
type seriesTotal struct {
	start, last pcommon.Timestamp
	intValue    int64
	doubleValue float64
	// hist holds a histogram series' counts, sum, bounds, min and max.
	hist pmetric.HistogramDataPoint
}

// New returns totals holding no series yet.
func New() *Totals {
	return &Totals{series: map[string]*seriesTotal{}}
}

// Deliver rewrites md's delta Sums and histograms as cumulative points,
// hands md to send, and keeps the new totals only when send succeeded.
// Gauges and cumulative points pass unchanged.
func (c *Totals) Deliver(md pmetric.Metrics, send func(pmetric.Metrics) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := map[string]*seriesTotal{}
	total := func(key string) *seriesTotal {
		if t, ok := pending[key]; ok {
			return t
		}
		t := &seriesTotal{hist: pmetric.NewHistogramDataPoint()}
		if prev, ok := c.series[key]; ok {
			t.start, t.last, t.intValue, t.doubleValue = prev.start, prev.last, prev.intValue, prev.doubleValue
			prev.hist.CopyTo(t.hist)
		}
		pending[key] = t
		return t
	}
	for _, rm := range md.ResourceMetrics().All() {
		resourceKey := attributesKey(rm.Resource().Attributes())
		for _, sm := range rm.ScopeMetrics().All() {
			prefix := resourceKey + "\x02" + sm.Scope().Name() + "\x02"
			for _, m := range sm.Metrics().All() {
				switch m.Type() {
				case pmetric.MetricTypeSum:
					// Non-monotonic sums too (ct.cache.time_saved: a slower
					// hit counts negative): their total is as meaningful, and
					// the prometheus exporter drops non-monotonic deltas.
					s := m.Sum()
					if s.AggregationTemporality() != pmetric.AggregationTemporalityDelta {
						continue
					}
					for _, p := range s.DataPoints().All() {
						addSum(total(prefix+m.Name()+"\x02"+attributesKey(p.Attributes())), p)
					}
					s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				case pmetric.MetricTypeHistogram:
					h := m.Histogram()
					if h.AggregationTemporality() != pmetric.AggregationTemporalityDelta {
						continue
					}
					for _, p := range h.DataPoints().All() {
						addHistogram(total(prefix+m.Name()+"\x02"+attributesKey(p.Attributes())), p)
					}
					h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
			}
		}
	}
	if err := send(md); err != nil {
		return err
	}
	for key, t := range pending {
		c.series[key] = t
	}
	return nil
}

// begin moves a total's interval to cover p and rewrites p's: from the
// series' first start to its latest end (points of builds delivered out of
// order never move the end back).
func begin(t *seriesTotal, start, end pcommon.Timestamp) (pcommon.Timestamp, pcommon.Timestamp) {
	if t.start == 0 || (start != 0 && start < t.start) {
		t.start = start
	}
	t.last = max(t.last, end)
	return t.start, t.last
}

func addSum(t *seriesTotal, p pmetric.NumberDataPoint) {
	start, end := begin(t, p.StartTimestamp(), p.Timestamp())
	p.SetStartTimestamp(start)
	p.SetTimestamp(end)
	switch p.ValueType() {
	case pmetric.NumberDataPointValueTypeInt:
		t.intValue += p.IntValue()
		p.SetIntValue(t.intValue)
	case pmetric.NumberDataPointValueTypeDouble:
		t.doubleValue += p.DoubleValue()
		p.SetDoubleValue(t.doubleValue)
	}
}

// addHistogram adds p to the total and rewrites p as the total; p keeps its
// exemplars (the slowest spans of this build). A total with other bucket
// bounds (never from the same core) starts again from p.
func addHistogram(t *seriesTotal, p pmetric.HistogramDataPoint) {
	start, end := begin(t, p.StartTimestamp(), p.Timestamp())
	h := t.hist
	sameBounds := slices.Equal(h.ExplicitBounds().AsRaw(), p.ExplicitBounds().AsRaw()) &&
		h.BucketCounts().Len() == p.BucketCounts().Len()
	if h.Count() == 0 || !sameBounds {
		h.SetCount(0)
		h.SetSum(0)
		h.RemoveMin()
		h.RemoveMax()
		p.ExplicitBounds().CopyTo(h.ExplicitBounds())
		h.BucketCounts().FromRaw(make([]uint64, p.BucketCounts().Len()))
	}
	for i := range p.BucketCounts().Len() {
		h.BucketCounts().SetAt(i, h.BucketCounts().At(i)+p.BucketCounts().At(i))
	}
	h.SetCount(h.Count() + p.Count())
	h.SetSum(h.Sum() + p.Sum())
	if p.HasMin() && (!h.HasMin() || p.Min() < h.Min()) {
		h.SetMin(p.Min())
	}
	if p.HasMax() && (!h.HasMax() || p.Max() > h.Max()) {
		h.SetMax(p.Max())
	}
	p.SetStartTimestamp(start)
	p.SetTimestamp(end)
	p.SetCount(h.Count())
	p.SetSum(h.Sum())
	h.BucketCounts().CopyTo(p.BucketCounts())
	if h.HasMin() {
		p.SetMin(h.Min())
	}
	if h.HasMax() {
		p.SetMax(h.Max())
	}
}

// attributesKey is a canonical string of a set of attributes (sorted keys).
func attributesKey(attrs pcommon.Map) string {
	keys := make([]string, 0, attrs.Len())
	for k := range attrs.All() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v, _ := attrs.Get(k)
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(v.Type().String())
		b.WriteByte(0)
		b.WriteString(v.AsString())
		b.WriteByte(1)
	}
	return b.String()
}
