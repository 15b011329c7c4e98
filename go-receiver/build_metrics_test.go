package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.yaml.in/yaml/v3"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// declared is what metadata.yaml says of the metrics and resource
// attributes: name -> enabled by default.
type declared struct {
	Metrics            map[string]struct{ Enabled bool } `yaml:"metrics"`
	ResourceAttributes map[string]struct{ Enabled bool } `yaml:"resource_attributes"`
}

func readMetadata(t *testing.T) declared {
	t.Helper()
	body, err := os.ReadFile("metadata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d declared
	if err := yaml.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Metrics) == 0 || len(d.ResourceAttributes) == 0 {
		t.Fatal("metadata.yaml declares no metrics or resource attributes")
	}
	return d
}

// The switches of the default configuration are metadata.yaml's, name for
// name: nothing declared is missing from the config, nothing is extra, and
// each default is the declared one.
func TestDefaultSwitchesMatchMetadata(t *testing.T) {
	d := readMetadata(t)
	cfg := createDefaultConfig()
	check := func(what string, want map[string]struct{ Enabled bool }, names []string, disabled map[string]bool) {
		var declaredNames []string
		for name, m := range want {
			declaredNames = append(declaredNames, name)
			if got := !disabled[name]; got != m.Enabled {
				t.Errorf("%s %s: default enabled=%v, metadata.yaml says %v", what, name, got, m.Enabled)
			}
		}
		slices.Sort(declaredNames)
		slices.Sort(names)
		if !slices.Equal(names, declaredNames) {
			t.Errorf("%s switches %v, metadata.yaml declares %v", what, names, declaredNames)
		}
	}
	check("metric", d.Metrics, switchNames(cfg.Metrics), disabledByName(cfg.Metrics))
	check("resource attribute", d.ResourceAttributes, switchNames(cfg.ResourceAttributeSwitches), disabledByName(cfg.ResourceAttributeSwitches))
}

// switchNames lists every name of a generated switches struct: in its zero
// value every switch is off, so disabledByName names them all.
func switchNames[T metadata.MetricsConfig | metadata.ResourceAttributesConfig](T) []string {
	var zero T
	var names []string
	for name := range disabledByName(zero) {
		names = append(names, name)
	}
	return names
}

// runBuilds starts a receiver for traces and metrics on copies of the
// given corpus cases and waits until every build delivered its metrics;
// it returns the sinks.
func runBuilds(t *testing.T, cfg *Config, cases ...string) (*consumertest.TracesSink, *consumertest.MetricsSink) {
	t.Helper()
	parent := t.TempDir()
	cfg.Include = []string{parent}
	for _, c := range cases {
		dir := copyCaseBuild(t, c, parent)
		// The case's statslog, as with --ccache-statslog=PATH.
		statslog := filepath.Join(corpusDir(t), "cases", c, "ccache.statslog")
		if _, err := os.Stat(statslog); err == nil {
			cfg.Capture.Statslogs = append(cfg.Capture.Statslogs, StatslogMapping{Include: dir, Path: statslog})
		}
	}
	traces, metrics := new(consumertest.TracesSink), new(consumertest.MetricsSink)
	set := receivertest.NewNopSettings(metadata.Type)
	tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traces)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := NewFactory().CreateMetrics(context.Background(), set, cfg, metrics)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, tr, nil)
	runUntilCleanup(t, mr, nil)
	waitFor(t, "every build's traces and metrics", func() bool {
		return len(traces.AllTraces()) >= len(cases) && len(metrics.AllMetrics()) >= len(cases)
	})
	return traces, metrics
}

// metricsByName indexes every metric of every request, last request last.
func metricsByName(all []pmetric.Metrics) map[string][]pmetric.Metric {
	out := map[string][]pmetric.Metric{}
	for _, md := range all {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					out[m.Name()] = append(out[m.Name()], m)
				}
			}
		}
	}
	return out
}

func metricResourceKeys(all []pmetric.Metrics) map[string]bool {
	keys := map[string]bool{}
	for _, md := range all {
		for _, rm := range md.ResourceMetrics().All() {
			for k := range rm.Resource().Attributes().All() {
				keys[k] = true
			}
		}
	}
	return keys
}

func traceResourceKeys(all []ptrace.Traces) map[string]bool {
	keys := map[string]bool{}
	for _, td := range all {
		for _, rs := range td.ResourceSpans().All() {
			for k := range rs.Resource().Attributes().All() {
				keys[k] = true
			}
		}
	}
	return keys
}

// Every metric and resource attribute the receiver emits on corpus builds,
// with either metric identity, and with the compile history and live builds
// on (ct.cache.time_saved from the core, ct.build.running and
// ct.live.compiles made by the receiver), is declared in metadata.yaml and
// documented in the generated documentation.md.
func TestEveryEmittedMetricAndResourceAttributeIsDeclaredAndDocumented(t *testing.T) {
	d := readMetadata(t)
	doc, err := os.ReadFile("documentation.md")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, traces []ptrace.Traces, metrics []pmetric.Metrics, want []string) {
		t.Helper()
		names := metricsByName(metrics)
		for _, w := range want {
			if len(names[w]) == 0 {
				t.Errorf("%s: no %s emitted", what, w)
			}
		}
		for name := range names {
			if _, ok := d.Metrics[name]; !ok {
				t.Errorf("%s: metric %s emitted but not declared in metadata.yaml", what, name)
			}
			if !strings.Contains(string(doc), "### "+name+"\n") {
				t.Errorf("%s: metric %s not in documentation.md", what, name)
			}
		}
		resource := metricResourceKeys(metrics)
		for k := range traceResourceKeys(traces) {
			resource[k] = true
		}
		for k := range resource {
			if _, ok := d.ResourceAttributes[k]; !ok {
				t.Errorf("%s: resource attribute %s emitted but not declared in metadata.yaml", what, k)
			}
			if !strings.Contains(string(doc), "| "+k+" |") {
				t.Errorf("%s: resource attribute %s not in documentation.md", what, k)
			}
		}
	}
	buildMetrics := []string{"ct.ccache.events", "cicd.pipeline.run.duration", "cicd.pipeline.run.errors", "ct.rule.duration", "ct.compiles",
		"ct.build.critical_path.duration", "ct.build.parallelism"}
	for _, perBuild := range []bool{false, true} {
		cfg := testConfig()
		cfg.PerBuildMetricIdentity = perBuild
		traces, metrics := runBuilds(t, cfg, "03-geom-shake-ccache-hit", "10-textkit-broken-shake-compile-error")
		check(fmt.Sprintf("per-build=%v", perBuild), traces.AllTraces(), metrics.AllMetrics(), buildMetrics)
	}
	s := runLiveAndHistory(t, testConfig())
	check("history and live builds", s.traces.AllTraces(), s.metrics.AllMetrics(),
		[]string{"ct.cache.time_saved", "ct.build.running", "ct.live.compiles", "cicd.pipeline.run.active", "ct.build.critical_path.duration"})
}

// runLiveAndHistory runs one receiver for traces, metrics and logs with the
// compile history on over corpus case 01 (compiled) then 03 (the same
// targets as ccache hits: time saved), plus a build that is still running
// (case 01's statslog in an invocation directory of this live process,
// without timing.json). It returns once the history's and the live
// metrics arrived.
func runLiveAndHistory(t *testing.T, cfg *Config) liveSinks {
	t.Helper()
	parent := t.TempDir()
	cfg.Include = []string{parent}
	cfg.History.Enabled = true
	cfg.MaxConcurrentBuilds = 1 // oldest first: 01's compiles are history when 03 is read
	cfg.Live.Interval = 20 * time.Millisecond
	cases := []string{case01, "03-geom-shake-ccache-hit"}
	for _, c := range cases {
		dir := copyCaseBuild(t, c, parent)
		cfg.Capture.Statslogs = append(cfg.Capture.Statslogs, StatslogMapping{
			Include: dir, Path: filepath.Join(corpusDir(t), "cases", c, "ccache.statslog"),
		})
	}
	running := filepath.Join(parent, fmt.Sprintf("20991231T000000-%d", os.Getpid()))
	if err := os.MkdirAll(running, 0o755); err != nil {
		t.Fatal(err)
	}
	statslog, _ := case01Statslog(t)
	appendFile(t, filepath.Join(running, "ccache.statslog"), statslog)
	s, _ := startLive(t, cfg, componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "declared"))
	waitFor(t, "both builds, time saved, a running build and live compiles", func() bool {
		names := metricsByName(s.metrics.AllMetrics())
		return len(s.traces.AllTraces()) >= len(cases) && len(names["ct.cache.time_saved"]) > 0 &&
			lastGauge(s.metrics, "ct.build.running") == 1 && lastCompiles(s.metrics, "cache_miss") > 0
	})
	return s
}

// The metrics switches apply to the metrics the receiver makes itself too:
// disabling ct.build.running drops the gauge and keeps ct.live.compiles;
// disabling ct.cache.time_saved and the analytics metrics drops them and
// keeps the other build metrics.
func TestDisabledLiveHistoryAndAnalyticsMetricsAreDropped(t *testing.T) {
	off := map[string]any{"enabled": false}
	cfg := configFrom(t, map[string]any{"metrics": map[string]any{
		"ct.build.running": off, "ct.cache.time_saved": off,
		"ct.build.critical_path.duration": off, "ct.build.parallelism": off,
	}})
	parent := t.TempDir()
	cfg.Include = []string{parent}
	cfg.History.Enabled = true
	cfg.MaxConcurrentBuilds = 1
	cfg.Live.Interval = 20 * time.Millisecond
	for _, c := range []string{case01, "03-geom-shake-ccache-hit"} {
		dir := copyCaseBuild(t, c, parent)
		cfg.Capture.Statslogs = append(cfg.Capture.Statslogs, StatslogMapping{
			Include: dir, Path: filepath.Join(corpusDir(t), "cases", c, "ccache.statslog"),
		})
	}
	running := filepath.Join(parent, fmt.Sprintf("20991231T000000-%d", os.Getpid()))
	if err := os.MkdirAll(running, 0o755); err != nil {
		t.Fatal(err)
	}
	statslog, _ := case01Statslog(t)
	appendFile(t, filepath.Join(running, "ccache.statslog"), statslog)
	s, _ := startLive(t, cfg, componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "switches"))
	waitFor(t, "both builds' metrics and live compiles", func() bool {
		names := metricsByName(s.metrics.AllMetrics())
		return len(s.traces.AllTraces()) >= 2 && len(names["cicd.pipeline.run.duration"]) >= 2 &&
			lastCompiles(s.metrics, "cache_miss") > 0
	})
	time.Sleep(100 * time.Millisecond) // more live intervals: a gauge would have come by now
	names := metricsByName(s.metrics.AllMetrics())
	for _, gone := range []string{"ct.build.running", "ct.cache.time_saved", "ct.build.critical_path.duration", "ct.build.parallelism"} {
		if len(names[gone]) != 0 {
			t.Errorf("%s disabled but emitted", gone)
		}
	}
	for _, still := range []string{"ct.live.compiles", "ct.rule.duration", "ct.compiles"} {
		if len(names[still]) == 0 {
			t.Errorf("%s dropped although not disabled", still)
		}
	}
}

// configFrom decodes a configuration as the collector does (Unmarshal).
func configFrom(t *testing.T, raw map[string]any) *Config {
	t.Helper()
	cfg := testConfig()
	if err := confmap.NewFromStringMap(raw).Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Disabling a metric removes it, and only it; disabling a resource
// attribute removes it from the metrics' resources, not from the trace.
func TestDisabledMetricAndResourceAttributeAreDropped(t *testing.T) {
	cfg := configFrom(t, map[string]any{
		"metrics":             map[string]any{"ct.rule.duration": map[string]any{"enabled": false}},
		"resource_attributes": map[string]any{"cicd.worker.name": map[string]any{"enabled": false}},
	})
	if cfg.ResourceAttributeSwitches.CicdWorkerName.Enabled || cfg.Metrics.CtRuleDuration.Enabled {
		t.Fatalf("switches not decoded: %+v %+v", cfg.ResourceAttributeSwitches.CicdWorkerName, cfg.Metrics.CtRuleDuration)
	}
	if len(cfg.ResourceAttributes) != 0 || len(cfg.deprecatedKeys) != 0 {
		t.Fatalf("switches taken for the deprecated resource spelling: %v %v", cfg.ResourceAttributes, cfg.deprecatedKeys)
	}
	traces, metrics := runBuilds(t, cfg, "03-geom-shake-ccache-hit")
	names := metricsByName(metrics.AllMetrics())
	if len(names["ct.rule.duration"]) != 0 {
		t.Error("ct.rule.duration disabled but emitted")
	}
	for _, still := range []string{"ct.compiles", "cicd.pipeline.run.duration", "ct.ccache.events"} {
		if len(names[still]) == 0 {
			t.Errorf("%s dropped although only ct.rule.duration was disabled", still)
		}
	}
	if metricResourceKeys(metrics.AllMetrics())["cicd.worker.name"] {
		t.Error("cicd.worker.name disabled but on the metrics resource")
	}
	if !metricResourceKeys(metrics.AllMetrics())["cicd.worker.id"] {
		t.Error("cicd.worker.id dropped although only cicd.worker.name was disabled")
	}
	if !traceResourceKeys(traces.AllTraces())["cicd.worker.name"] {
		t.Error("the trace lost cicd.worker.name: switches apply to metrics only")
	}
}

// With every build metric disabled the core is not asked for them, and
// with every metric disabled nothing reaches the metrics pipeline.
func TestDisablingEveryBuildMetricSkipsThem(t *testing.T) {
	off := map[string]any{}
	for _, n := range buildMetricNames {
		off[n] = map[string]any{"enabled": false}
	}
	cfg := configFrom(t, map[string]any{"metrics": off})
	if newMetricSwitches(cfg).buildMetricsWanted() {
		t.Fatal("build metrics wanted with all of them disabled")
	}
	_, metrics := runBuilds(t, cfg, "03-geom-shake-ccache-hit")
	for _, md := range metrics.AllMetrics() {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				if sm.Scope().Name() != "compiletools.ccache" {
					t.Errorf("scope %s emitted with every build metric disabled", sm.Scope().Name())
				}
			}
		}
	}
}

// The old meaning of resource_attributes (extra attribute values) still
// works; mixing it with switches is refused.
func TestResourceAttributesKeyKeepsItsDeprecatedMeaning(t *testing.T) {
	cfg := configFrom(t, map[string]any{"resource_attributes": map[string]any{"team": "infra"}})
	if cfg.ResourceAttributes["team"] != "infra" || len(cfg.deprecatedKeys) != 1 {
		t.Fatalf("deprecated spelling lost: %v %v", cfg.ResourceAttributes, cfg.deprecatedKeys)
	}
	if !cfg.ResourceAttributeSwitches.HostName.Enabled {
		t.Fatal("attribute values changed a switch")
	}
	err := confmap.NewFromStringMap(map[string]any{"resource_attributes": map[string]any{
		"team": "infra", "host.name": map[string]any{"enabled": false},
	}}).Unmarshal(testConfig())
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("mixed forms accepted: %v", err)
	}
	err = confmap.NewFromStringMap(map[string]any{"metrics": map[string]any{"ct.no_such_metric": map[string]any{"enabled": false}}}).Unmarshal(testConfig())
	if err == nil {
		t.Fatal("unknown metric switch accepted")
	}
}

// histogramPoints returns the points of name with the given attribute, last
// request last.
func histogramPoints(ms []pmetric.Metric, key, value string) []pmetric.HistogramDataPoint {
	var out []pmetric.HistogramDataPoint
	for _, m := range ms {
		for _, p := range m.Histogram().DataPoints().All() {
			if v, ok := p.Attributes().Get(key); ok && v.Str() == value {
				out = append(out, p)
			}
		}
	}
	return out
}

// The series the host's builds share leave the receiver cumulative: the
// second build's point is the sum of both builds' deltas, over one interval
// that starts with the first build; exemplars stay the latest build's.
func TestSharedSeriesAccumulateAcrossBuilds(t *testing.T) {
	cases := []string{"01-geom-shake-cold", "03-geom-shake-ccache-hit"}
	deltaCfg := testConfig()
	deltaCfg.MetricsTemporality = MetricsTemporalityDelta
	deltaCfg.MaxConcurrentBuilds = 1
	_, deltas := runBuilds(t, deltaCfg, cases...)
	cumCfg := testConfig()
	cumCfg.MaxConcurrentBuilds = 1
	_, cumulative := runBuilds(t, cumCfg, cases...)

	d := histogramPoints(metricsByName(deltas.AllMetrics())["ct.rule.duration"], "ct.rule_type", "compile")
	c := histogramPoints(metricsByName(cumulative.AllMetrics())["ct.rule.duration"], "ct.rule_type", "compile")
	var wantCount uint64
	var wantSum float64
	firstStart := map[string]pcommon.Timestamp{} // of each layer's series
	for _, p := range d {
		wantCount += p.Count()
		wantSum += p.Sum()
		l, _ := p.Attributes().Get("ct.rule.cache_layer")
		if s, ok := firstStart[l.Str()]; !ok || p.StartTimestamp() < s {
			firstStart[l.Str()] = p.StartTimestamp()
		}
	}
	var gotCount uint64
	var gotSum float64
	layers := map[string]bool{}
	for _, p := range c {
		layer, _ := p.Attributes().Get("ct.rule.cache_layer")
		layers[layer.Str()] = true
	}
	// The last point of each (layer) series is its total.
	for layer := range layers {
		var last pmetric.HistogramDataPoint
		for _, p := range c {
			if l, _ := p.Attributes().Get("ct.rule.cache_layer"); l.Str() == layer {
				last = p
			}
		}
		gotCount += last.Count()
		gotSum += last.Sum()
		if last.StartTimestamp() != firstStart[layer] {
			t.Errorf("layer %s: cumulative start %v, want its first build's start %v", layer, last.StartTimestamp(), firstStart[layer])
		}
		if last.Exemplars().Len() == 0 {
			t.Errorf("layer %s: cumulative point without exemplars", layer)
		}
	}
	if wantCount == 0 || gotCount != wantCount || abs(gotSum-wantSum) > 1e-9 {
		t.Fatalf("cumulative compile rules count %d sum %f, deltas add up to %d, %f", gotCount, gotSum, wantCount, wantSum)
	}
	for _, m := range metricsByName(cumulative.AllMetrics())["ct.rule.duration"] {
		if m.Histogram().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
			t.Fatal("shared series left the receiver as delta")
		}
	}
	for _, m := range metricsByName(deltas.AllMetrics())["ct.compiles"] {
		if m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityDelta {
			t.Fatal("metrics_temporality delta sent cumulative points")
		}
	}
	// ct.compiles: the cumulative total of each layer is the deltas' sum.
	sumLayer := func(all []pmetric.Metrics, layer string, last bool) int64 {
		var n int64
		for _, m := range metricsByName(all)["ct.compiles"] {
			for _, p := range m.Sum().DataPoints().All() {
				if l, _ := p.Attributes().Get("ct.rule.cache_layer"); l.Str() == layer {
					if last {
						n = p.IntValue()
					} else {
						n += p.IntValue()
					}
				}
			}
		}
		return n
	}
	for _, layer := range []string{"cas", "ccache", "compiled", "other"} {
		if got, want := sumLayer(cumulative.AllMetrics(), layer, true), sumLayer(deltas.AllMetrics(), layer, false); got != want {
			t.Errorf("ct.compiles{%s}: cumulative %d, deltas add up to %d", layer, got, want)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// disableBuildMetrics switches the build metrics off, for tests whose metric
// points must come from the ccache statslog alone.
func disableBuildMetrics(cfg *Config) {
	cfg.Metrics.CicdPipelineRunDuration.Enabled = false
	cfg.Metrics.CicdPipelineRunErrors.Enabled = false
	cfg.Metrics.CtRuleDuration.Enabled = false
	cfg.Metrics.CtCompiles.Enabled = false
	cfg.Metrics.CtBuildCriticalPathDuration.Enabled = false
	cfg.Metrics.CtBuildParallelism.Enabled = false
}
