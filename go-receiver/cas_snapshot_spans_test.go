package compiletoolsreceiver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// With metrics_as_spans, a CAS scan is one `ct.cache.snapshot` span (formats.md
// §3.6) carrying ct-cache-report's numbers as `ct.cas.<metric>.<kind>`
// attributes, in kind then metric order, instead of the five gauges.
func TestCASSnapshotAsSpanCarriesCtCacheReportNumbers(t *testing.T) {
	const c = "01-geom-shake-cold"
	cells := rebuildStores(t, c, t.TempDir())
	raw, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", c, "cache-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report map[string]map[string]any
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.MetricsAsSpans = true
	cfg.CAS.Pools = []CASStore{
		{Kind: "exe", Path: filepath.Dir(cells["cas-exedir"])}, // listed before obj: order is the core's
		{Kind: "obj", Path: filepath.Dir(cells["cas-objdir"])},
	}
	cfg.CAS.InitialDelay = 0
	cfg.CAS.ScanInterval = time.Hour // one scan
	set := receivertest.NewNopSettings(metadata.Type)
	traces := new(consumertest.TracesSink)
	metrics := new(consumertest.MetricsSink)
	tr, terr := NewFactory().CreateTraces(context.Background(), set, cfg, traces)
	mr, merr := NewFactory().CreateMetrics(context.Background(), set, cfg, metrics)
	runUntilCleanup(t, tr, terr)
	runUntilCleanup(t, mr, merr)
	waitFor(t, "the CAS snapshot span", func() bool { return len(traces.AllTraces()) > 0 })
	time.Sleep(100 * time.Millisecond) // the scan is over: nothing else may follow

	if n := len(traces.AllTraces()); n != 1 {
		t.Fatalf("want one snapshot trace for the one variant, got %d", n)
	}
	if n := len(metrics.AllMetrics()); n != 0 {
		t.Fatalf("CAS gauges sent as metrics too (%d requests) under metrics_as_spans", n)
	}
	td := traces.AllTraces()[0]
	if td.SpanCount() != 1 {
		t.Fatalf("want exactly one span, got %d", td.SpanCount())
	}
	rs := td.ResourceSpans().At(0)
	res := rs.Resource().Attributes()
	if v, _ := res.Get("ct.variant"); v.Str() != "ccache-gcc.cxx17.debug" {
		t.Errorf("ct.variant = %q", v.Str())
	}
	if v, _ := res.Get("host.name"); v.Str() != "test-host" {
		t.Errorf("host.name = %q", v.Str())
	}
	if scope := rs.ScopeSpans().At(0).Scope().Name(); scope != "compiletools" {
		t.Errorf("scope %q, want compiletools", scope)
	}
	span := rs.ScopeSpans().At(0).Spans().At(0)
	if span.Name() != "ct.cache.snapshot" || span.Kind() != ptrace.SpanKindInternal {
		t.Errorf("span %q kind %v, want ct.cache.snapshot, internal", span.Name(), span.Kind())
	}
	if !span.ParentSpanID().IsEmpty() || span.TraceID().IsEmpty() || span.SpanID().IsEmpty() {
		t.Errorf("want a root span with ids: trace %v span %v parent %v", span.TraceID(), span.SpanID(), span.ParentSpanID())
	}
	if span.StartTimestamp() == 0 || span.StartTimestamp() != span.EndTimestamp() {
		t.Errorf("start %d end %d: want one instant, the scan time", span.StartTimestamp(), span.EndTimestamp())
	}

	metricKeys := []struct{ metric, obj, exe string }{
		{"total_bytes", "total-bytes", "total-bytes"},
		{"total_entries", "total-entries", "total-entries"},
		{"unique_buckets", "unique-src-deps-count", "unique-buckets-count"},
		{"wasted_bytes", "wasted-bytes", "wasted-bytes"},
		{"duplicate_groups", "duplicated-groups-count", "duplicated-groups-count"},
	}
	var wantKeys []string
	want := map[string]int64{}
	for _, kind := range []string{"obj", "exe"} { // formats.md §3.6 kind order
		rep := report["cas-"+kind+"dir-report"]
		for _, k := range metricKeys {
			jsonKey := k.obj
			if kind == "exe" {
				jsonKey = k.exe
			}
			key := "ct.cas." + k.metric + "." + kind
			wantKeys = append(wantKeys, key)
			want[key] = int64(rep[jsonKey].(float64))
		}
	}
	var gotKeys []string
	for key, v := range span.Attributes().All() {
		gotKeys = append(gotKeys, key)
		if w, ok := want[key]; !ok || v.Int() != w {
			t.Errorf("%s = %s, ct-cache-report says %d (known key %v)", key, v.AsString(), w, ok)
		}
	}
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("attribute keys\n got %v\nwant %v", gotKeys, wantKeys)
	}
}
