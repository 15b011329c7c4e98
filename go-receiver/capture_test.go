package compiletoolsreceiver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// playBuild acts like ct-cake with --ccache-statslog=auto: ccache appends to
// <dir>/ccache.statslog while the build runs, then timing.json is renamed
// into place and the statslog is deleted a few milliseconds later.
func playBuild(t *testing.T, dir string, statslog, timing []byte, chunks int, pause time.Duration) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "ccache.statslog")
	parts := bytes.SplitAfter(statslog, []byte("\n# "))
	per := (len(parts) + chunks - 1) / chunks
	for i := 0; i < len(parts); i += per {
		end := min(i+per, len(parts))
		f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Join(parts[i:end], nil)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		time.Sleep(pause)
	}
	tmp := filepath.Join(dir, ".tmp.timing.json.abcdefgh.1")
	if err := os.WriteFile(tmp, timing, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "timing.json")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // ct-cake prints its summary, exports, then cleans up
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
}

func TestLiveCaptureKeepsAutoStatslogDeletedAfterTimingJSON(t *testing.T) {
	parent := t.TempDir()
	statslog, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", case01, "ccache.statslog"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(parent)
	cfg.PollInterval = 10 * time.Millisecond
	cfg.Capture.Directory = t.TempDir() // same filesystem as the build: hard links
	traces := new(consumertest.TracesSink)
	metrics := new(consumertest.MetricsSink)
	set := receivertest.NewNopSettings(metadata.Type)
	f := NewFactory()
	// Both signals are registered before the one shared instance starts;
	// its second Start and Shutdown are no-ops.
	tr, terr := f.CreateTraces(context.Background(), set, cfg, traces)
	mr, merr := f.CreateMetrics(context.Background(), set, cfg, metrics)
	runUntilCleanup(t, tr, terr)
	runUntilCleanup(t, mr, merr)

	time.Sleep(50 * time.Millisecond)
	playBuild(t, filepath.Join(parent, "20261130T034340-24175"), statslog, caseTiming(t), 6, 40*time.Millisecond)

	waitFor(t, "the build's trace", func() bool { return len(traces.AllTraces()) == 1 })
	waitFor(t, "the build's ccache metrics", func() bool { return len(metrics.AllMetrics()) == 1 })

	misses := ccacheEventCount(metrics.AllMetrics()[0], "cache_miss")
	if misses != 29 { // case 01: 29 compiles, all ccache misses (corpus README)
		t.Errorf("ct.ccache.events{ccache_event=cache_miss} = %d, want 29", misses)
	}
	root, layers := rootAndLayers(traces.AllTraces()[0])
	if v, ok := root.Get("ct.ccache.misses"); !ok || v.Int() != 29 {
		t.Errorf("root ct.ccache.misses = %v (present %v), want 29", v.AsRaw(), ok)
	}
	if layers["compiled"] != 29 {
		t.Errorf("per-TU cache layers %v: want 29 compile rules attributed `compiled`", layers)
	}
}

func ccacheEventCount(md pmetric.Metrics, event string) int64 {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != "ct.ccache.events" || m.Type() != pmetric.MetricTypeSum {
					continue
				}
				dps := m.Sum().DataPoints()
				for d := 0; d < dps.Len(); d++ {
					if v, _ := dps.At(d).Attributes().Get("ccache_event"); v.Str() == event {
						return dps.At(d).IntValue()
					}
				}
			}
		}
	}
	return -1
}

// rootAndLayers returns the root span's attributes and the number of
// compile rules per ct.rule.cache_layer.
func rootAndLayers(td ptrace.Traces) (pcommon.Map, map[string]int) {
	root := pcommon.NewMap()
	layers := map[string]int{}
	forEachSpan(td, func(s ptrace.Span) {
		if s.Name() == "compiletools.build" {
			root = s.Attributes()
		}
		if rt, _ := s.Attributes().Get("ct.rule_type"); rt.Str() == "compile" {
			layer, _ := s.Attributes().Get("ct.rule.cache_layer")
			layers[layer.Str()]++
		}
	})
	return root, layers
}

// A build shorter than a poll interval: its auto statslog exists for a few
// milliseconds between two polls, so only the file watch can capture it.
func TestLiveCaptureOfAStatslogThatLivesBetweenPolls(t *testing.T) {
	parent := t.TempDir()
	statslog, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", case01, "ccache.statslog"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(parent)
	cfg.PollInterval = 700 * time.Millisecond
	cfg.Capture.Directory = t.TempDir()
	metrics := new(consumertest.MetricsSink)
	set := receivertest.NewNopSettings(metadata.Type)
	mr, err := NewFactory().CreateMetrics(context.Background(), set, cfg, metrics)
	runUntilCleanup(t, mr, err)

	time.Sleep(150 * time.Millisecond) // the first poll has run and watches the parent
	start := time.Now()
	playBuild(t, filepath.Join(parent, "20261130T034340-24175"), statslog, caseTiming(t), 1, 20*time.Millisecond)
	if time.Since(start) > 300*time.Millisecond {
		t.Skip("the machine was too slow to play the build between two polls")
	}
	waitFor(t, "the build's ccache metrics", func() bool { return len(metrics.AllMetrics()) == 1 })
	if misses := ccacheEventCount(metrics.AllMetrics()[0], "cache_miss"); misses != 29 {
		t.Errorf("cache_miss = %d, want 29", misses)
	}
}
