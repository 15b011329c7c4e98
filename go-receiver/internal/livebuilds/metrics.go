package livebuilds

import (
	"context"
	"maps"
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
	// lastActive is cicd.pipeline.run.active as last sent (active.go);
	// pipelines are the followed builds' pipeline names.
	lastActive map[string]int64
	pipelines  map[string]string
	dirty      bool
}

func newLiveMetrics(start time.Time) liveMetrics {
	return liveMetrics{start: start, lastRunning: -1, pipelines: map[string]string{}}
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
func (t *Tracker) running() int { return len(t.runningDirs()) }

// runningDirs lists them.
func (t *Tracker) runningDirs() []string {
	var dirs []string
	for dir, b := range t.builds {
		if st := t.states[dir]; b.running && st.Started && !st.Ended {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// sendMetrics sends the live metrics when they changed, and at least
// every poll_interval (a gauge needs points to stay visible).
func (t *Tracker) sendMetrics(ctx context.Context, now time.Time) {
	if t.set.ConsumeMetrics == nil {
		return
	}
	dirs := t.runningDirs()
	running := len(dirs)
	t.forgetPipelines()
	active := t.activeRuns(dirs)
	m := &t.metrics
	if !m.dirty && running == m.lastRunning && maps.Equal(active, m.lastActive) && now.Sub(m.lastSent) < t.o.MetricsEvery {
		return
	}
	md := t.buildMetrics(running, active, now)
	if err := t.set.ConsumeMetrics(ctx, md); err != nil {
		t.set.Logger.Debug("live metrics not accepted; sent again next time", zap.Error(err))
		return
	}
	m.lastSent, m.lastRunning, m.lastActive, m.dirty = now, running, active, false
}

func (t *Tracker) buildMetrics(running int, active map[string]int64, now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	putHostResource(rm.Resource().Attributes(), t.o)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("compiletools")
	ts := pcommon.NewTimestampFromTime(now)

	g := sm.Metrics().AppendEmpty()
	g.SetName(metricBuildsRunning)
	g.SetDescription("Builds running on this host that the receiver follows (no timing.json yet).")
	g.SetUnit("{build}")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(ts)
	gp.SetIntValue(int64(running))

	c := sm.Metrics().AppendEmpty()
	c.SetName(metricLiveCompiles)
	c.SetDescription("Compiler calls seen finishing in running builds' ccache statslogs, by ccache outcome.")
	c.SetUnit("{compile}")
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
	appendRunsActive(sm.Metrics(), active, t.metrics.lastActive, start, ts)
	return md
}
