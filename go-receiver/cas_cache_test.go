package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
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
	cfg := testConfig(t.TempDir())
	cfg.CAS.Pools = []CASStore{{Kind: "obj", Path: pool}}
	cfg.CAS.InitialDelay = time.Hour // the scans below are the test's own
	sink := new(consumertest.MetricsSink)
	mr, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	runUntilCleanup(t, mr, err)
	r := mr.(*compiletoolsReceiver)

	cache, err := ffi.NewCASCache()
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	r.scanCAS(context.Background(), cache)
	if got := cache.Footprint().Cells; got != 3 {
		t.Fatalf("after the first pass the cache holds %d cells, want 3", got)
	}
	if err := os.RemoveAll(filepath.Join(pool, "gcc.release")); err != nil {
		t.Fatal(err)
	}
	r.scanCAS(context.Background(), cache)
	if got := cache.Footprint().Cells; got != 2 {
		t.Errorf("after gcc.release disappeared the cache holds %d cells, want 2", got)
	}
	if got := len(sink.AllMetrics()); got != 5 {
		t.Errorf("want 3 + 2 variant snapshots, got %d", got)
	}
}
