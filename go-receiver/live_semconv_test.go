package compiletoolsreceiver

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// A running build counts in cicd.pipeline.run.active (issue 23) under the
// pipeline name its trace carries — here the project directory of
// compiletools' default layout — until its timing.json came; the live
// metrics have the resource of the host's build metrics.
func TestLiveBuildIsAnActivePipelineRunOnTheHostResource(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "geom", "bin", "gcc.debug", "diagnostics")
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034340-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := liveTestConfig(parent)
	cfg.ResourceAttributes = map[string]string{"team": "core", "ct.variant": "not a user key"}
	s, _ := startLive(t, cfg, componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "active"))
	statslog, _ := case01Statslog(t)
	appendFile(t, filepath.Join(dir, "ccache.statslog"), statslog)
	waitFor(t, "an active run of geom", func() bool { return lastActive(s.metrics, "geom") == 1 })

	writeTiming(t, dir, caseTiming(t))
	if err := os.Remove(filepath.Join(dir, "ccache.statslog")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the trace", func() bool { return len(s.traces.AllTraces()) == 1 })
	waitFor(t, "no active run", func() bool { return lastActive(s.metrics, "geom") == 0 })
	res := s.traces.AllTraces()[0].ResourceSpans().At(0).Resource().Attributes()
	if name, _ := res.Get("cicd.pipeline.name"); name.Str() != "geom" {
		t.Errorf("the trace's pipeline %q, the live metric's geom", name.Str())
	}

	want := map[string]string{
		"service.name": "compiletools", "service.namespace": "compiletools", "host.name": "test-host",
		"service.instance.id": "test-host", "cicd.worker.id": "test-host", "cicd.worker.name": "test-host", "team": "core",
	}
	resources := map[string]map[string]string{}
	for _, md := range s.metrics.AllMetrics() {
		for _, rm := range md.ResourceMetrics().All() {
			got := map[string]string{}
			for k, v := range rm.Resource().Attributes().All() {
				got[k] = v.AsString()
			}
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					resources[m.Name()] = got
				}
			}
		}
	}
	for _, name := range []string{"ct.build.running", "ct.live.compiles", "cicd.pipeline.run.active", "cicd.pipeline.run.duration"} {
		if !maps.Equal(resources[name], want) {
			t.Errorf("%s resource %v, want %v", name, resources[name], want)
		}
	}
}

// lastActive is the last cicd.pipeline.run.active value of pipeline
// (state executing), -1 before any; it checks the point's shape.
func lastActive(sink *consumertest.MetricsSink, pipeline string) int64 {
	v := int64(-1)
	eachMetric(sink, "cicd.pipeline.run.active", func(m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeSum || m.Sum().IsMonotonic() || m.Unit() != "{run}" {
			return
		}
		for _, p := range m.Sum().DataPoints().All() {
			name, _ := p.Attributes().Get("cicd.pipeline.name")
			state, _ := p.Attributes().Get("cicd.pipeline.run.state")
			if name.Str() == pipeline && state.Str() == "executing" && p.Attributes().Len() == 2 {
				v = p.IntValue()
			}
		}
	})
	return v
}
