package compiletoolsreceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// The CAS snapshot spans go through the same trace decoder as a build's
// chunks (internal/ffi/decode_traces.go, whose tests compare it with
// pdata on every corpus chunk): it takes them whole, without leaving them
// to pdata's unmarshaler.
func TestCASSnapshotSpansNeedNoDecodeFallback(t *testing.T) {
	cells := rebuildStores(t, "01-geom-shake-cold", t.TempDir())
	cfg := testConfig(t.TempDir())
	cfg.MetricsAsSpans = true
	cfg.CAS.Pools = []CASStore{
		{Kind: "exe", Path: filepath.Dir(cells["cas-exedir"])},
		{Kind: "obj", Path: filepath.Dir(cells["cas-objdir"])},
	}
	cfg.CAS.InitialDelay = 0
	cfg.CAS.ScanInterval = time.Hour // one scan
	before := ffi.TraceDecodeFallbacks()
	traces := new(consumertest.TracesSink)
	tr, err := NewFactory().CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, traces)
	runUntilCleanup(t, tr, err)
	waitFor(t, "the CAS snapshot span", func() bool { return len(traces.AllTraces()) > 0 })
	if traces.SpanCount() == 0 {
		t.Fatal("no snapshot span")
	}
	if n := ffi.TraceDecodeFallbacks() - before; n != 0 {
		t.Fatalf("%d snapshot traces went through pdata's unmarshaler", n)
	}
}
