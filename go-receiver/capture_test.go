package compiletoolsreceiver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
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

// A build shorter than a poll interval: its auto statslog can appear and
// vanish between two polls, so only the file watch can capture it. No
// timing is assumed: the watching receiver polls once, at start (a finished
// build's delivery shows that poll, which sets up the watches, is done), and
// not again for an hour, so a capture made afterwards is the watch's. The
// statslog is deleted once its capture exists. A second receiver on the
// same capture directory (captures survive restarts) then delivers the
// build, which must carry every event of the statslog.
func TestLiveCaptureOfAStatslogThatLivesBetweenPolls(t *testing.T) {
	parent := t.TempDir()
	captureDir := t.TempDir() // same filesystem as the build: hard links
	statslog, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", case01, "ccache.statslog"))
	if err != nil {
		t.Fatal(err)
	}
	marker := copyCaseBuild(t, "12-geom-ninja-cold-native-flock", parent)
	set := receivertest.NewNopSettings(metadata.Type)

	watching := testConfig(parent)
	watching.PollInterval = time.Hour
	watching.Capture.Directory = captureDir
	firstPoll := new(consumertest.TracesSink)
	w, err := NewFactory().CreateTraces(context.Background(), set, watching, firstPoll)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first poll", func() bool { return len(firstPoll.AllTraces()) == 1 })

	// ct-cake with --ccache-statslog=auto: the statslog appears in the new
	// invocation directory, ccache appends to it; later timing.json is
	// renamed into place and the statslog deleted.
	build := filepath.Join(parent, "20261130T034340-24175")
	if err := os.Mkdir(build, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(build, capture.Statslog)
	if err := os.WriteFile(log, statslog, 0o644); err != nil {
		t.Fatal(err)
	}
	captures, err := capture.New(captureDir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to capture the statslog", func() bool { return captures.Path(build, capture.Statslog) != "" })
	tmp := filepath.Join(build, ".tmp.timing.json.abcdefgh.1")
	if err := os.WriteFile(tmp, caseTiming(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(build, "timing.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := w.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(firstPoll.AllTraces()); n != 1 {
		t.Fatalf("the watching receiver polled again (%d deliveries): the capture may not be the watch's", n)
	}
	if err := os.RemoveAll(marker); err != nil {
		t.Fatal(err)
	}

	delivering := testConfig(parent)
	delivering.Capture.Directory = captureDir
	metrics := new(consumertest.MetricsSink)
	mr, err := NewFactory().CreateMetrics(context.Background(), set, delivering, metrics)
	runUntilCleanup(t, mr, err)
	waitFor(t, "the build's ccache metrics", func() bool { return len(metrics.AllMetrics()) == 1 })
	if misses := ccacheEventCount(metrics.AllMetrics()[0], "cache_miss"); misses != 29 {
		t.Errorf("cache_miss = %d, want 29", misses)
	}
}
