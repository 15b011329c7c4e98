package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// hostWith is a host that offers the given extensions.
type hostWith struct {
	component.Host
	ext map[component.ID]component.Component
}

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h.ext }

// traceRecorder counts deliveries per trace id, slowly, so that a shutdown
// lands in the middle of a backlog.
type traceRecorder struct {
	mu    sync.Mutex
	seen  map[string]int
	delay time.Duration
}

func (r *traceRecorder) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (r *traceRecorder) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	time.Sleep(r.delay)
	r.mu.Lock()
	defer r.mu.Unlock()
	id := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	r.seen[id]++
	return nil
}

func (r *traceRecorder) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}

// makeBuilds writes n finished builds (case 01's timing.json under n
// invocation ids); distinct directories give distinct trace ids.
func makeBuilds(t *testing.T, parent string, n int) {
	t.Helper()
	src := filepath.Join(corpusDir(t), "cases", case01, "diagnostics")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, entries[0].Name(), "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		dir := filepath.Join(parent, fmt.Sprintf("20261130T%06d-%d", 100000+i, 1000+i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "timing.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func startFileStorage(t *testing.T, dir string) (component.ID, extension.Extension) {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	id := component.MustNewID("file_storage")
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return id, ext
}

// runReceiver runs one receiver "process" until stop returns true.
func runReceiver(t *testing.T, cfg *Config, storageDir string, sink *traceRecorder, stop func() bool) {
	t.Helper()
	storageID, ext := startFileStorage(t, storageDir)
	defer func() {
		if err := ext.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	cfg.Storage = &storageID
	set := receivertest.NewNopSettings(metadata.Type)
	// A fixed ID: the storage file is per receiver ID, and NewNopSettings
	// gives a random name each call.
	set.ID = component.MustNewIDWithName("compiletools", "restart")
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	host := hostWith{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{storageID: ext}}
	if err := r.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stop condition", stop)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestRestartWithFileStorageDeliversEveryBuildOnce(t *testing.T) {
	const builds = 50
	parent := t.TempDir()
	storageDir := t.TempDir()
	makeBuilds(t, parent, builds)
	sink := &traceRecorder{seen: map[string]int{}, delay: 5 * time.Millisecond}

	newCfg := func() *Config {
		cfg := testConfig(parent)
		cfg.MaxBuildsPerPoll = 4
		return cfg
	}
	// First life: stopped in the middle of the backlog.
	runReceiver(t, newCfg(), storageDir, sink, func() bool { return len(sink.snapshot()) >= 15 })
	first := len(sink.snapshot())
	if first >= builds {
		t.Fatalf("the first run delivered everything (%d); the test needs a shutdown mid-backlog", first)
	}
	// Second life, same storage: start_at no longer applies, the rest follows.
	runReceiver(t, newCfg(), storageDir, sink, func() bool { return len(sink.snapshot()) >= builds })
	time.Sleep(100 * time.Millisecond)

	got := sink.snapshot()
	if len(got) != builds {
		t.Fatalf("want %d distinct builds, got %d", builds, len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("trace %s delivered %d times", id, n)
		}
	}
	t.Logf("first run delivered %d builds, second run %d", first, builds-first)
}

func TestStartAtEndSkipsExistingBuildsButSendsNewOnes(t *testing.T) {
	parent := t.TempDir()
	makeBuilds(t, parent, 3)
	cfg := testConfig(parent)
	cfg.StartAt = StartAtEnd
	sink := &traceRecorder{seen: map[string]int{}}
	set := receivertest.NewNopSettings(metadata.Type)
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	runUntilCleanup(t, r, err)
	time.Sleep(100 * time.Millisecond)
	if n := len(sink.snapshot()); n != 0 {
		t.Fatalf("start_at end sent %d existing builds", n)
	}
	copyCaseBuild(t, case01, parent) // a new build appears
	waitFor(t, "the new build", func() bool { return len(sink.snapshot()) == 1 })
}

var _ receiver.Traces = (*compiletoolsReceiver)(nil)
