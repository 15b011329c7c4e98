package livebuilds

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// One point per pipeline running now, a last 0 for one whose runs ended
// since the last send, and no metric at all when neither is left.
func TestRunsActivePointsPerPipeline(t *testing.T) {
	points := func(active, last map[string]int64) map[string]int64 {
		ms := pmetric.NewMetricSlice()
		appendRunsActive(ms, active, last, pcommon.Timestamp(1), pcommon.Timestamp(2))
		if ms.Len() == 0 {
			return nil
		}
		m := ms.At(0)
		if m.Name() != "cicd.pipeline.run.active" || m.Unit() != "{run}" || m.Sum().IsMonotonic() ||
			m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
			t.Fatalf("metric %s %q monotonic=%v", m.Name(), m.Unit(), m.Sum().IsMonotonic())
		}
		out := map[string]int64{}
		for _, p := range m.Sum().DataPoints().All() {
			state, _ := p.Attributes().Get("cicd.pipeline.run.state")
			if state.Str() != "executing" || p.StartTimestamp() != 1 || p.Timestamp() != 2 {
				t.Errorf("point %v", p.Attributes().AsRaw())
			}
			name, _ := p.Attributes().Get("cicd.pipeline.name")
			out[name.Str()] = p.IntValue()
		}
		return out
	}
	got := points(map[string]int64{"geom": 2}, map[string]int64{"geom": 1, "textkit": 1})
	if len(got) != 2 || got["geom"] != 2 || got["textkit"] != 0 {
		t.Errorf("points %v", got)
	}
	if got := points(map[string]int64{}, map[string]int64{}); got != nil {
		t.Errorf("nothing running: %v", got)
	}
}
