package livebuilds

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// Live metrics (issue 16). They count what the receiver follows, not what
// a file says, so they are made here rather than by the core. Attributes
// are low-cardinality: no build identity.
const (
	metricBuildsRunning = "ct.build.running"
	metricLiveCompiles  = "ct.live.compiles"
)

// liveMetrics is the cumulative state of the live metrics.
type liveMetrics struct {
	start       time.Time
	compiles    ffi.LiveOutcomes
	lastSent    time.Time
	lastRunning int
	dirty       bool
}

func newLiveMetrics(start time.Time) liveMetrics {
	return liveMetrics{start: start, lastRunning: -1}
}

func (m *liveMetrics) add(o ffi.LiveOutcomes) {
	if o == (ffi.LiveOutcomes{}) {
		return
	}
	m.compiles.DirectHits += o.DirectHits
	m.compiles.PreprocessedHits += o.PreprocessedHits
	m.compiles.Misses += o.Misses
	m.compiles.Uncacheable += o.Uncacheable
	m.dirty = true
}

// running counts the followed builds announced and not ended.
func (t *Tracker) running() int {
	n := 0
	for dir, b := range t.builds {
		if st := t.states[dir]; b.running && st.Started && !st.Ended {
			n++
		}
	}
	return n
}

// sendMetrics sends the gauge and the counter when they changed, and at
// least every poll_interval (a gauge needs points to stay visible).
func (t *Tracker) sendMetrics(ctx context.Context, now time.Time) {
	if t.set.ConsumeMetrics == nil {
		return
	}
	running := t.running()
	m := &t.metrics
	if !m.dirty && running == m.lastRunning && now.Sub(m.lastSent) < t.o.MetricsEvery {
		return
	}
	md := t.buildMetrics(running, now)
	if err := t.set.ConsumeMetrics(ctx, md); err != nil {
		t.set.Logger.Debug("live metrics not accepted; sent again next time", zap.Error(err))
		return
	}
	m.lastSent, m.lastRunning, m.dirty = now, running, false
}

func (t *Tracker) buildMetrics(running int, now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutStr("service.name", t.o.ServiceName)
	res.PutStr("service.namespace", "compiletools")
	res.PutStr("host.name", t.o.HostName)
	for _, a := range t.o.ResourceAttributes {
		if _, builtIn := res.Get(a.Key); !builtIn {
			res.PutStr(a.Key, a.Value)
		}
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("compiletools")
	ts := pcommon.NewTimestampFromTime(now)

	g := sm.Metrics().AppendEmpty()
	g.SetName(metricBuildsRunning)
	g.SetDescription("Builds running on this host that the receiver follows (no timing.json yet).")
	g.SetUnit("{builds}")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(ts)
	gp.SetIntValue(int64(running))

	c := sm.Metrics().AppendEmpty()
	c.SetName(metricLiveCompiles)
	c.SetDescription("Compiler calls seen finishing in running builds' ccache statslogs, by ccache outcome.")
	c.SetUnit("{compiles}")
	sum := c.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	start := pcommon.NewTimestampFromTime(t.metrics.start)
	for _, o := range []struct {
		outcome string
		n       uint64
	}{
		{"direct_cache_hit", t.metrics.compiles.DirectHits},
		{"preprocessed_cache_hit", t.metrics.compiles.PreprocessedHits},
		{"cache_miss", t.metrics.compiles.Misses},
		{"uncacheable", t.metrics.compiles.Uncacheable},
	} {
		p := sum.DataPoints().AppendEmpty()
		p.SetStartTimestamp(start)
		p.SetTimestamp(ts)
		p.SetIntValue(int64(o.n))
		p.Attributes().PutStr("ct.ccache.outcome", o.outcome)
	}
	return md
}
