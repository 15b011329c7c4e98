package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// overlapConsumer records the most builds consumed at the same moment: each
// call holds on for hold, so two builds parsed together overlap here.
type overlapConsumer struct {
	consumertest.TracesSink
	hold         time.Duration
	inFlight     atomic.Int32
	mu           sync.Mutex
	mostInFlight int32
}

func (c *overlapConsumer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	n := c.inFlight.Add(1)
	c.mu.Lock()
	c.mostInFlight = max(c.mostInFlight, n)
	c.mu.Unlock()
	time.Sleep(c.hold)
	c.inFlight.Add(-1)
	return c.TracesSink.ConsumeTraces(ctx, td)
}

func (c *overlapConsumer) most() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mostInFlight
}

// builds writes n copies of the case-01 build under a fresh parent and
// returns the parent and the size of one timing.json.
func builds(t *testing.T, n int) (string, int64) {
	t.Helper()
	src := filepath.Join(corpusDir(t), "cases", case01, "diagnostics")
	entries, err := os.ReadDir(src)
	if err != nil || len(entries) != 1 {
		t.Fatalf("case %s: %v", case01, err)
	}
	parent := t.TempDir()
	for i := 0; i < n; i++ {
		copyTree(t, filepath.Join(src, entries[0].Name()), filepath.Join(parent, "20261130T034340-"+string(rune('1'+i))))
	}
	st, err := os.Stat(filepath.Join(parent, "20261130T034340-1", "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	return parent, st.Size()
}

// Two slots, but a byte budget with room for one build: the second build is
// not parsed (nor consumed) while the first holds the budget.
func TestParseBudgetKeepsBuildsThatDoNotFitTogetherApart(t *testing.T) {
	parent, size := builds(t, 2)
	cfg := testConfig(parent)
	cfg.MaxConcurrentBuilds = 2
	cfg.Limits.MaxParseBytesInFlight = size * 3 / 2
	next := &overlapConsumer{hold: 300 * time.Millisecond}
	startTraces(t, cfg, next)
	waitFor(t, "both builds", func() bool { return len(next.AllTraces()) == 2 })
	if most := next.most(); most != 1 {
		t.Errorf("%d builds of %d bytes were in flight at once under a budget of %d bytes", most, size, cfg.Limits.MaxParseBytesInFlight)
	}
}

// Control: with room for both, both slots are used.
func TestParseBudgetLetsBuildsThatFitRunTogether(t *testing.T) {
	parent, size := builds(t, 2)
	cfg := testConfig(parent)
	cfg.MaxConcurrentBuilds = 2
	cfg.Limits.MaxParseBytesInFlight = size * 3
	next := &overlapConsumer{hold: 300 * time.Millisecond}
	startTraces(t, cfg, next)
	waitFor(t, "both builds", func() bool { return len(next.AllTraces()) == 2 })
	if most := next.most(); most != 2 {
		t.Errorf("builds in flight at once: %d, want 2", most)
	}
}

// A build larger than the whole budget is not refused and does not wait
// forever: it runs alone, and a debug line says so.
func TestBuildLargerThanTheBudgetRunsAlone(t *testing.T) {
	parent, _ := builds(t, 3)
	cfg := testConfig(parent)
	cfg.MaxConcurrentBuilds = 3
	cfg.Limits.MaxParseBytesInFlight = 1
	next := &overlapConsumer{hold: 50 * time.Millisecond}
	logs := startTraces(t, cfg, next)
	waitFor(t, "three builds over the budget", func() bool { return len(next.AllTraces()) == 3 })
	if most := next.most(); most != 1 {
		t.Errorf("%d builds over the budget were in flight at once", most)
	}
	found := false
	for _, e := range logs.All() {
		found = found || strings.Contains(e.Message, "max_parse_bytes_in_flight")
	}
	if !found {
		t.Error("no log line says the build exceeded max_parse_bytes_in_flight")
	}
}

func TestValidateBoundsTheMemoryLimits(t *testing.T) {
	cfg := validConfig()
	cfg.Limits.MaxFileSize = 1<<30 + 1
	cfg.Limits.MaxParseBytesInFlight = -1
	err := cfg.Validate()
	for _, key := range []string{"limits.max_file_size", "limits.max_parse_bytes_in_flight"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("want an error naming %s, got %v", key, err)
		}
	}
	cfg = validConfig()
	cfg.Limits.MaxFileSize = 1 << 30
	cfg.Limits.MaxParseBytesInFlight = 1 << 40
	if err := cfg.Validate(); err != nil {
		t.Errorf("the largest max_file_size refused: %v", err)
	}
}

// Issue 22, defect 6: a build graph is charged what the core may hold for
// it, found through {variant} too.
func TestBuildGraphIsChargedItsMemoryNotItsSize(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "gcc.debug")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "Makefile"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	want := int64(10 + graphMemoryPerFileByte*1000 + graphMemorySlack + graphMaxLine)
	for _, p := range []string{filepath.Join(bin, "Makefile"), filepath.Join(dir, "bin", "{variant}", "Makefile")} {
		if got := inputBytes(discovery.Build{Size: 10}, ffi.Request{BuildGraphPath: p}); got != want {
			t.Errorf("%s: charged %d, want %d", p, got, want)
		}
	}
	if got := inputBytes(discovery.Build{Size: 10}, ffi.Request{BuildGraphPath: filepath.Join(dir, "none")}); got != 10 {
		t.Errorf("a missing graph charged %d", got)
	}
}
