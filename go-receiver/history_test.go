package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// historyBuild writes a finished build ending at hour hh whose compile of
// /o/a.o took dur seconds, a CAS hit when casHit; it returns its directory.
func historyBuild(t *testing.T, parent string, hh int, dur float64, casHit bool) string {
	t.Helper()
	layer := "other"
	if casHit {
		layer = "cas"
	}
	doc := fmt.Sprintf(`{"timestamp": "2026-11-30T%02d:00:00+00:00", "total_elapsed_s": 10.0, "variant": "gcc.debug",
	  "backend": "ninja", "start_s": 100.0, "phases": [{"name": "build_execution", "start_s": 100.0, "end_s": 110.0,
	  "rules": [{"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp",
	             "start_s": 101.0, "end_s": %g, "metadata": {"cas.hit": %t, "ct.rule.cache_layer": %q}}]}]}`,
		hh, 101.0+dur, casHit, layer)
	dir := filepath.Join(parent, fmt.Sprintf("20261130T%02d0000-%d", hh, 100+hh))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// traceKeeper keeps every trace delivered.
type traceKeeper struct {
	mu     sync.Mutex
	traces []ptrace.Traces
}

func (k *traceKeeper) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (k *traceKeeper) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.traces = append(k.traces, td)
	return nil
}

// attr returns the double attribute key of the first span named name, and
// whether it is there.
func (k *traceKeeper) attr(name, key string) (float64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, td := range k.traces {
		var v float64
		found := false
		forEachSpan(td, func(s ptrace.Span) {
			if s.Name() != name || found {
				return
			}
			if a, ok := s.Attributes().Get(key); ok {
				v, found = a.Double(), true
			}
		})
		if found {
			return v, true
		}
	}
	return 0, false
}

func (k *traceKeeper) roots() int {
	n := 0
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, td := range k.traces {
		forEachSpan(td, func(s ptrace.Span) {
			if s.ParentSpanID().IsEmpty() {
				n++
			}
		})
	}
	return n
}

// runHistoryLife runs one receiver "process" with the history on and
// file_storage in storageDir until want root spans arrived.
func runHistoryLife(t *testing.T, parent, storageDir string, sink *traceKeeper, want int) {
	t.Helper()
	storageID, ext := startFileStorage(t, storageDir)
	defer func() {
		if err := ext.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	cfg := testConfig(parent)
	cfg.Storage = &storageID
	cfg.History.Enabled = true
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.MustNewIDWithName("compiletools", "history")
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	host := hostWith{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{storageID: ext}}
	if err := r.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("%d builds", want), func() bool { return sink.roots() >= want })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A compile remembered by one receiver process gives the cache hit of the
// next build, read by the next process, its time saved: the history went
// through file_storage.
func TestHistorySurvivesARestartWithFileStorage(t *testing.T) {
	parent, storageDir := t.TempDir(), t.TempDir()
	historyBuild(t, parent, 1, 3.0, false)
	sink := &traceKeeper{}
	runHistoryLife(t, parent, storageDir, sink, 1)
	if _, ok := sink.attr("compile.s/a.cpp", "ct.rule.duration_delta_s"); ok {
		t.Fatal("a first compile has no history to compare with")
	}

	historyBuild(t, parent, 2, 0.5, true)
	second := &traceKeeper{}
	runHistoryLife(t, parent, storageDir, second, 1)
	time.Sleep(50 * time.Millisecond)
	if n := second.roots(); n != 1 {
		t.Fatalf("the second process delivered %d builds, want only the new one", n)
	}
	saved, ok := second.attr("compile.s/a.cpp", "ct.rule.time_saved_s")
	if !ok || saved < 2.5-1e-6 || saved > 2.5+1e-6 {
		t.Fatalf("ct.rule.time_saved_s = %v (present %t), want 2.5 (3 s compile − 0.5 s hit)", saved, ok)
	}
	root, ok := second.attr("compiletools.build", "ct.build.time_saved_s")
	if !ok || root != saved {
		t.Fatalf("ct.build.time_saved_s = %v (present %t), want %v", root, ok, saved)
	}
}

// Without history (the default) nothing of it appears, even for a hit
// whose compile the same process saw.
func TestHistoryOffByDefault(t *testing.T) {
	parent := t.TempDir()
	historyBuild(t, parent, 1, 3.0, false)
	historyBuild(t, parent, 2, 0.5, true)
	sink := &traceKeeper{}
	cfg := testConfig(parent)
	if cfg.History.Enabled {
		t.Fatal("history is on by default")
	}
	cfg.MaxConcurrentBuilds = 1
	startTraces(t, cfg, sink)
	waitFor(t, "both builds", func() bool { return sink.roots() >= 2 })
	if _, ok := sink.attr("compile.s/a.cpp", "ct.rule.time_saved_s"); ok {
		t.Fatal("time saved without a history")
	}
}

func TestHistoryConfigValidation(t *testing.T) {
	cfg := testConfig("/x")
	cfg.History = HistoryConfig{Enabled: true, MaxTargets: 0, MedianOf: 255}
	err := cfg.Validate()
	for _, want := range []string{"history.max_targets", "history.median_of"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
	cfg.History = defaultHistoryConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
