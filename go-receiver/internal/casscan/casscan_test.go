package casscan

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// A pool's variant directory that disappears is never scanned again; what
// the core's scan cache kept for it must go too, or every variant a CI
// machine ever built stays in memory for the collector's life.
func TestCASCacheForgetsPoolVariantsThatDisappeared(t *testing.T) {
	pool := filepath.Join(t.TempDir(), "cas-objdir")
	for _, v := range []string{"gcc.debug", "gcc.release", "clang.debug"} {
		if err := os.MkdirAll(filepath.Join(pool, v, "0d"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sink := new(consumertest.MetricsSink)
	// Not run: the scans below are the test's own.
	s, _ := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool}}}, sink)

	cache, err := ffi.NewCASCache()
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	s.scan(context.Background(), cache)
	if got := cache.Footprint().Cells; got != 3 {
		t.Fatalf("after the first pass the cache holds %d cells, want 3", got)
	}
	if err := os.RemoveAll(filepath.Join(pool, "gcc.release")); err != nil {
		t.Fatal(err)
	}
	s.scan(context.Background(), cache)
	if got := cache.Footprint().Cells; got != 2 {
		t.Errorf("after gcc.release disappeared the cache holds %d cells, want 2", got)
	}
	if got := len(sink.AllMetrics()); got != 5 {
		t.Errorf("want 3 + 2 variant snapshots, got %d", got)
	}
}
