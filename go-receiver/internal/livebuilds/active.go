package livebuilds

import (
	"maps"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// cicd.pipeline.run.active (issue 23): the CI/CD conventions' count of
// running pipeline runs, beside ct.build.running (which the dashboard
// keeps): an UpDownCounter (a non-monotonic cumulative Sum) of unit {run}
// by cicd.pipeline.name and cicd.pipeline.run.state. A followed build is a
// run `executing` (ct-cake neither queues nor finalizes one apart from
// that), of the pipeline its trace will name.
const (
	metricRunsActive = "cicd.pipeline.run.active"
	pipelineNameKey  = "cicd.pipeline.name"
	runStateKey      = "cicd.pipeline.run.state"
	stateExecuting   = "executing"
)

// activeRuns counts the running builds of activeBuilds by pipeline name.
func (t *Tracker) activeRuns(activeBuilds []string) map[string]int64 {
	out := map[string]int64{}
	for _, dir := range activeBuilds {
		out[t.pipelineOf(dir)]++
	}
	return out
}

// pipelineOf is the build's pipeline name, once per followed build (the
// receiver's rule reads the file system).
func (t *Tracker) pipelineOf(dir string) string {
	if name, ok := t.metrics.pipelines[dir]; ok {
		return name
	}
	name := ""
	if t.o.PipelineName != nil {
		name = t.o.PipelineName(dir)
	}
	t.metrics.pipelines[dir] = name
	return name
}

// forgetPipelines drops the names of builds no longer followed.
func (t *Tracker) forgetPipelines() {
	for dir := range t.metrics.pipelines {
		if _, followed := t.builds[dir]; !followed {
			delete(t.metrics.pipelines, dir)
		}
	}
}

// appendRunsActive adds the metric: a point per pipeline with a running
// build, and a last 0 for each pipeline whose runs ended since the last
// send (then it is forgotten, so ended pipelines do not pile up); no
// metric while nothing runs or just ended.
func appendRunsActive(ms pmetric.MetricSlice, active, lastSent map[string]int64, start, ts pcommon.Timestamp) {
	names := make([]string, 0, len(active)+len(lastSent))
	for name := range maps.Keys(active) {
		names = append(names, name)
	}
	for name := range maps.Keys(lastSent) {
		if _, still := active[name]; !still {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return // no run to count: a metric without points says nothing
	}
	sort.Strings(names)
	m := ms.AppendEmpty()
	m.SetName(metricRunsActive)
	m.SetDescription("Pipeline runs (builds) running on this host that the receiver follows, by pipeline and state.")
	m.SetUnit("{run}")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(false)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, name := range names {
		p := sum.DataPoints().AppendEmpty()
		p.SetStartTimestamp(start)
		p.SetTimestamp(ts)
		p.SetIntValue(active[name])
		if name != "" {
			p.Attributes().PutStr(pipelineNameKey, name)
		}
		p.Attributes().PutStr(runStateKey, stateExecuting)
	}
}
