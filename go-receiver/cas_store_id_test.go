package compiletoolsreceiver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// A store's configured id reaches the snapshot's resource through the
// receiver, on the gauges and on the ct.cache.snapshot span alike, and the
// resource_attributes switch drops it from the gauges like any other.
func TestCASStoreIDOnEverySnapshotForm(t *testing.T) {
	cells := rebuildStores(t, "01-geom-shake-cold", t.TempDir())
	pools := []CASStore{{Kind: "obj", Path: filepath.Dir(cells["cas-objdir"]), ID: "nfs-1/obj"}}
	run := func(asSpans, switchedOff bool) (string, bool) {
		cfg := testConfig(t.TempDir())
		cfg.MetricsAsSpans = asSpans
		cfg.CAS.Pools = pools
		cfg.CAS.InitialDelay, cfg.CAS.ScanInterval = 0, time.Hour
		cfg.ResourceAttributeSwitches.CtCasStoreID.Enabled = !switchedOff
		set := receivertest.NewNopSettings(metadata.Type)
		if asSpans {
			traces := new(consumertest.TracesSink)
			tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, traces)
			runUntilCleanup(t, tr, err)
			waitFor(t, "the CAS snapshot span", func() bool { return len(traces.AllTraces()) > 0 })
			v, ok := traces.AllTraces()[0].ResourceSpans().At(0).Resource().Attributes().Get("ct.cas.store.id")
			return v.Str(), ok
		}
		metrics := new(consumertest.MetricsSink)
		mr, err := NewFactory().CreateMetrics(context.Background(), set, cfg, metrics)
		runUntilCleanup(t, mr, err)
		waitFor(t, "the CAS gauges", func() bool { return len(metrics.AllMetrics()) > 0 })
		v, ok := metrics.AllMetrics()[0].ResourceMetrics().At(0).Resource().Attributes().Get("ct.cas.store.id")
		return v.Str(), ok
	}
	if id, ok := run(false, false); !ok || id != "nfs-1/obj" {
		t.Errorf("gauges: ct.cas.store.id %q (present %v), want nfs-1/obj", id, ok)
	}
	if id, ok := run(true, false); !ok || id != "nfs-1/obj" {
		t.Errorf("snapshot span: ct.cas.store.id %q (present %v), want nfs-1/obj", id, ok)
	}
	if _, ok := run(false, true); ok {
		t.Error("gauges: ct.cas.store.id sent although switched off")
	}
}
