package compiletoolsreceiver

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// rebuildStores recreates the CAS stores of a corpus case from its
// cas-listing.txt (sparse files of the listed sizes) under root, and
// returns {"cas-objdir": cell path, …}.
func rebuildStores(t *testing.T, caseName, root string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir(t), "cases", caseName, "cas-listing.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type entry struct {
		rel  string
		size int64
	}
	cells := map[string]string{}
	listing := map[string][]entry{}
	var current string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "### "); ok {
			store, orig, _ := strings.Cut(rest, ": ")
			current = store
			cells[store] = filepath.Join(root, store, filepath.Base(orig))
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if current == "" || i < 0 {
			continue
		}
		size, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			continue
		}
		listing[current] = append(listing[current], entry{line[:i], size})
	}
	for store, entries := range listing {
		isDir := map[string]bool{}
		for _, e := range entries {
			for d := filepath.Dir(e.rel); d != "."; d = filepath.Dir(d) {
				isDir[d] = true
			}
		}
		for _, e := range entries {
			p := filepath.Join(cells[store], e.rel)
			if isDir[e.rel] {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			fh, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := fh.Truncate(e.size); err != nil {
				t.Fatal(err)
			}
			fh.Close()
		}
	}
	return cells
}

// gaugeValues returns {cas_kind: {metric: value}} of every CAS gauge in md,
// and the resource attributes of the last resource.
func gaugeValues(md pmetric.Metrics) (map[string]map[string]int64, pcommon.Map) {
	out := map[string]map[string]int64{}
	res := pcommon.NewMap()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		res = rms.At(i).Resource().Attributes()
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Type() != pmetric.MetricTypeGauge {
					continue
				}
				dps := m.Gauge().DataPoints()
				for d := 0; d < dps.Len(); d++ {
					kind, _ := dps.At(d).Attributes().Get("cas_kind")
					if out[kind.Str()] == nil {
						out[kind.Str()] = map[string]int64{}
					}
					out[kind.Str()][m.Name()] = dps.At(d).IntValue()
				}
			}
		}
	}
	return out, res
}

func startCASReceiver(t *testing.T, cfg *Config) *consumertest.MetricsSink {
	t.Helper()
	cfg.CAS.InitialDelay = 0
	cfg.CAS.ScanInterval = time.Hour // one scan is enough
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	runUntilCleanup(t, r, err)
	return sink
}

func TestCASPoolScanMatchesCtCacheReport(t *testing.T) {
	const c = "01-geom-shake-cold"
	root := t.TempDir()
	cells := rebuildStores(t, c, root)
	raw, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", c, "cache-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report map[string]map[string]any
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.CAS.Pools = []CASStore{
		{Kind: "obj", Path: filepath.Dir(cells["cas-objdir"])},
		{Kind: "exe", Path: filepath.Dir(cells["cas-exedir"])},
	}
	sink := startCASReceiver(t, cfg)
	waitFor(t, "a CAS scan", func() bool { return len(sink.AllMetrics()) > 0 })

	got, res := gaugeValues(sink.AllMetrics()[0])
	want := map[string]map[string]string{
		"obj": {"total-bytes": "ct.cas.total_bytes", "total-entries": "ct.cas.total_entries", "unique-src-deps-count": "ct.cas.unique_buckets", "wasted-bytes": "ct.cas.wasted_bytes", "duplicated-groups-count": "ct.cas.duplicate_groups"},
		"exe": {"total-bytes": "ct.cas.total_bytes", "total-entries": "ct.cas.total_entries", "unique-buckets-count": "ct.cas.unique_buckets", "wasted-bytes": "ct.cas.wasted_bytes", "duplicated-groups-count": "ct.cas.duplicate_groups"},
	}
	for kind, keys := range want {
		rep := report["cas-"+kind+"dir-report"]
		for jsonKey, metricName := range keys {
			if g, w := got[kind][metricName], int64(rep[jsonKey].(float64)); g != w {
				t.Errorf("%s %s = %d, ct-cache-report says %d", kind, metricName, g, w)
			}
		}
	}
	if len(got) != 2 {
		t.Errorf("want points for exactly the obj and exe stores, got kinds %v", got)
	}
	if v, _ := res.Get("ct.variant"); v.Str() != "ccache-gcc.cxx17.debug" {
		t.Errorf("ct.variant = %q", v.Str())
	}
	if v, _ := res.Get("host.name"); v.Str() != "test-host" {
		t.Errorf("host.name = %q", v.Str())
	}
}

func TestCASExplicitMissingStoreReportsZeros(t *testing.T) {
	cfg := testConfig(t.TempDir())
	missing := filepath.Join(t.TempDir(), "cas-pchdir", "gcc.debug")
	cfg.CAS.Stores = []CASStore{{Kind: "pch", Path: missing}}
	sink := startCASReceiver(t, cfg)
	waitFor(t, "a CAS scan", func() bool { return len(sink.AllMetrics()) > 0 })
	got, _ := gaugeValues(sink.AllMetrics()[0])
	if len(got["pch"]) != 5 {
		t.Fatalf("want five zero gauges for the missing pch store, got %v", got)
	}
	for name, v := range got["pch"] {
		if v != 0 {
			t.Errorf("%s = %d, want 0", name, v)
		}
	}
}

func TestCASRescansSeeChangesThroughTheCache(t *testing.T) {
	root := t.TempDir()
	cells := rebuildStores(t, "01-geom-shake-cold", root)
	// Age the shards so the core's cache keeps them between scans.
	old := time.Now().Add(-time.Hour)
	entries, _ := os.ReadDir(cells["cas-objdir"])
	for _, e := range entries {
		_ = os.Chtimes(filepath.Join(cells["cas-objdir"], e.Name()), old, old)
	}
	cfg := testConfig(t.TempDir())
	cfg.CAS.Stores = []CASStore{{Kind: "obj", Path: cells["cas-objdir"]}}
	cfg.CAS.InitialDelay = 0
	cfg.CAS.ScanInterval = 30 * time.Millisecond
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	runUntilCleanup(t, r, err)
	waitFor(t, "three scans", func() bool { return len(sink.AllMetrics()) >= 3 })
	first, _ := gaugeValues(sink.AllMetrics()[0])
	third, _ := gaugeValues(sink.AllMetrics()[2])
	if first["obj"]["ct.cas.total_entries"] != 29 || third["obj"]["ct.cas.total_entries"] != 29 {
		t.Fatalf("scans disagree: %v vs %v", first, third)
	}
	// A new object in an existing shard: the shard's mtime changes, so the
	// next scan must list it again.
	shard := filepath.Join(cells["cas-objdir"], "02")
	obj := filepath.Join(shard, "extra_022e522ad279_46f0458f99c663_0000000000000001.o")
	if err := os.WriteFile(obj, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := len(sink.AllMetrics())
	waitFor(t, "a scan with the new object", func() bool {
		all := sink.AllMetrics()
		if len(all) <= seen {
			return false
		}
		last, _ := gaugeValues(all[len(all)-1])
		return last["obj"]["ct.cas.total_entries"] == 30 && last["obj"]["ct.cas.total_bytes"] == first["obj"]["ct.cas.total_bytes"]+1000
	})
}

// A CAS problem that lasts (here a cell that is a file, on a host an
// unreadable shard) is logged when it appears, not on every scan.
func TestCASWarningLoggedOnceWhileItLasts(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "gcc.debug")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.CAS.Stores = []CASStore{{Kind: "obj", Path: notDir}}
	cfg.CAS.InitialDelay = 0
	cfg.CAS.ScanInterval = 20 * time.Millisecond
	core, logs := observer.New(zapcore.WarnLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	sink := new(consumertest.MetricsSink)
	r, err := NewFactory().CreateMetrics(context.Background(), set, cfg, sink)
	runUntilCleanup(t, r, err)
	waitFor(t, "five scans", func() bool { return len(sink.AllMetrics()) >= 5 })
	lines := map[string]int{} // by warning
	for _, e := range logs.All() {
		if e.Message == "CAS scan" {
			lines[e.ContextMap()["warning"].(string)]++
		}
	}
	if len(lines) == 0 {
		t.Fatal("the cell that is a file was not warned about")
	}
	for w, n := range lines {
		if n != 1 {
			t.Errorf("logged %d times over %d scans, want once: %s", n, len(sink.AllMetrics()), w)
		}
	}
}
