package casscan

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// storeIDs are the ct.cas.store.id values of the snapshots in sink, by
// ct.variant.
func storeIDs(t *testing.T, sink *consumertest.MetricsSink) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, md := range sink.AllMetrics() {
		for i := range md.ResourceMetrics().Len() {
			res := md.ResourceMetrics().At(i).Resource().Attributes()
			variant, _ := res.Get("ct.variant")
			id, ok := res.Get(StoreIDAttribute)
			if !ok {
				out[variant.Str()] = "(none)"
				continue
			}
			out[variant.Str()] = id.Str()
		}
	}
	return out
}

func pointCount(sink *consumertest.MetricsSink) int {
	n := 0
	for _, md := range sink.AllMetrics() {
		n += md.DataPointCount()
	}
	return n
}

func objPool(t *testing.T, variants ...string) string {
	t.Helper()
	pool := filepath.Join(t.TempDir(), "cas-objdir")
	for _, v := range variants {
		if err := os.MkdirAll(filepath.Join(pool, v, "0d"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// Two receivers electing on one pool: only one sends the pool's gauges,
// both name the store alike, the pool's listing is not disturbed by the
// lease and id files, and when the scanner goes away the other takes over.
func TestTwoScannersOnOneStoreElectOne(t *testing.T) {
	pool := objPool(t, "gcc.debug", "gcc.release")
	cfg := func(host string) Options {
		return Options{Pools: []Store{{Kind: "obj", Path: pool, Scan: ScanElect}}, Holder: host + "/compiletools",
			LeaseDuration: time.Hour}
	}
	sinkA, sinkB := new(consumertest.MetricsSink), new(consumertest.MetricsSink)
	a, _ := testScanner(cfg("a"), sinkA)
	b, _ := testScanner(cfg("b"), sinkB)
	ctx := context.Background()
	for range 3 {
		a.scan(ctx, nil)
		b.scan(ctx, nil)
	}
	if len(sinkA.AllMetrics()) != 6 || len(sinkB.AllMetrics()) != 0 {
		t.Fatalf("snapshots: a %d (want 3 cycles × 2 variants), b %d (want 0)", len(sinkA.AllMetrics()), len(sinkB.AllMetrics()))
	}
	idsA := storeIDs(t, sinkA)
	fileID, err := readStoreID(pool)
	if err != nil {
		t.Fatalf("no store id file: %v", err)
	}
	if idsA["gcc.debug"] != fileID || idsA["gcc.release"] != fileID || len(idsA) != 2 {
		t.Fatalf("store ids %v, want both variants under the id file's %q", idsA, fileID)
	}
	if b.entries[0].id != fileID {
		t.Fatalf("b names the store %q, a %q", b.entries[0].id, fileID)
	}
	// a shuts down (its lease is released): b scans from its next cycle.
	a.releaseLeases()
	b.scan(ctx, nil)
	if got := storeIDs(t, sinkB); got["gcc.debug"] != fileID || len(got) != 2 {
		t.Fatalf("after a left, b sent %v", got)
	}
}

// Stores of one variant with different ids are separate resources; a
// configured id wins over the id file, and `never` sends nothing.
func TestStoreIDsSplitResources(t *testing.T) {
	objs := objPool(t, "gcc.debug")
	exes := filepath.Join(t.TempDir(), "cas-exedir")
	if err := os.MkdirAll(filepath.Join(exes, "gcc.debug"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(objs, StoreIDFileName), []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	s, _ := testScanner(Options{Pools: []Store{
		{Kind: "obj", Path: objs},
		{Kind: "exe", Path: exes, ID: "nfs-exe"},
		{Kind: "obj", Path: objPool(t, "gcc.debug"), Scan: ScanNever},
	}}, sink)
	s.scan(context.Background(), nil)
	got := map[string]string{}
	for _, md := range sink.AllMetrics() {
		rm := md.ResourceMetrics().At(0)
		id, _ := rm.Resource().Attributes().Get(StoreIDAttribute)
		kind, _ := rm.ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes().Get("cas_kind")
		got[kind.Str()] += id.Str()
	}
	if len(got) != 2 || got["obj"] != "from-file" || got["exe"] != "nfs-exe" {
		t.Fatalf("snapshots by kind: %v, want obj under from-file and exe under nfs-exe, in two resources", got)
	}
	if pointCount(sink) != 10 {
		t.Fatalf("%d points, want 5 gauges × 2 stores (never is not scanned)", pointCount(sink))
	}
}

// Without an id and an id file, a store has no ct.cas.store.id (none that
// could merge it with another host's store by mistake), its kinds stay in
// one resource per variant as before, and nothing is written into it.
func TestStoreWithoutIDIsUnnamed(t *testing.T) {
	pool := objPool(t, "gcc.debug")
	exes := filepath.Join(t.TempDir(), "cas-exedir")
	if err := os.MkdirAll(filepath.Join(exes, "gcc.debug"), 0o755); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	s, _ := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool}, {Kind: "exe", Path: exes}}}, sink)
	s.scan(context.Background(), nil)
	if got := storeIDs(t, sink)["gcc.debug"]; got != "(none)" {
		t.Fatalf("store id %q, want none", got)
	}
	if n := len(sink.AllMetrics()); n != 1 || pointCount(sink) != 10 {
		t.Fatalf("%d snapshots with %d points, want one resource with both kinds' 10", n, pointCount(sink))
	}
	if _, err := os.Stat(filepath.Join(pool, StoreIDFileName)); !os.IsNotExist(err) {
		t.Fatalf("scan: always wrote into the store: %v", err)
	}
}

// A hostile id file is warned about once and counted each cycle; the
// store is still scanned, unnamed.
func TestHostileStoreIDFile(t *testing.T) {
	for name, write := range map[string]func(string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte("no spaces allowed\n"), 0o644) },
		"huge":    func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("a", 5000)), 0o644) },
		"symlink": func(p string) error { return os.Symlink("/etc/hostname", p) },
	} {
		t.Run(name, func(t *testing.T) {
			pool := objPool(t, "gcc.debug")
			if err := write(filepath.Join(pool, StoreIDFileName)); err != nil {
				t.Fatal(err)
			}
			sink := new(consumertest.MetricsSink)
			s, logs := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool}}}, sink)
			s.scan(context.Background(), nil)
			s.scan(context.Background(), nil)
			if got := storeIDs(t, sink)["gcc.debug"]; got != "(none)" {
				t.Fatalf("store id %q, want none", got)
			}
			if n := logs.FilterMessage("CAS store lease or id file problem").Len(); n != 1 {
				t.Fatalf("%d warnings over two cycles, want 1", n)
			}
		})
	}
}

// An electing receiver that cannot write the store still reads the id
// file another one wrote, and is told why it cannot hold the lease.
func TestReadOnlyStoreKeepsItsID(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	pool := objPool(t, "gcc.debug")
	if err := os.WriteFile(filepath.Join(pool, StoreIDFileName), []byte("nfs-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pool, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(pool, 0o755)
	sink := new(consumertest.MetricsSink)
	s, logs := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool, Scan: ScanElect}}, Holder: "a", LeaseDuration: time.Hour}, sink)
	s.scan(context.Background(), nil)
	s.scan(context.Background(), nil)
	if s.entries[0].id != "nfs-1" {
		t.Fatalf("id %q, want the id file's", s.entries[0].id)
	}
	if len(sink.AllMetrics()) != 0 {
		t.Fatal("scanned without the lease")
	}
	if n := logs.FilterMessage("CAS store lease or id file problem").Len(); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

// A lease whose holder died long ago is taken over and confirmed within
// one cycle: the new scanner's first cycle already sends the store.
func TestTakeoverIsConfirmedWithinTheCycle(t *testing.T) {
	pool := objPool(t, "gcc.debug")
	stale, _ := json.Marshal(leaseRecord{Holder: "dead/compiletools", Token: "feed", Seq: 7,
		ExpiresMs: time.Now().Add(-3 * time.Hour).UnixMilli()})
	if err := os.WriteFile(filepath.Join(pool, LeaseFileName), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	s, _ := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool, Scan: ScanElect}}, Holder: "b/compiletools",
		LeaseDuration: time.Hour, ScanInterval: 400 * time.Millisecond}, sink)
	start := time.Now()
	s.scan(context.Background(), nil)
	if len(sink.AllMetrics()) != 1 {
		t.Fatalf("%d snapshots in the takeover cycle, want 1", len(sink.AllMetrics()))
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("confirmed after %s, before the settle of a quarter interval", took)
	}
	if got := readRecord(t, pool).Holder; got != "b/compiletools" {
		t.Fatalf("holder %q", got)
	}
}

// countingCounter is an Int64Counter that adds up what it is given.
type countingCounter struct {
	noop.Int64Counter
	n int64
}

func (c *countingCounter) Add(_ context.Context, v int64, _ ...metric.AddOption) { c.n += v }

// A hostile lease through the whole scanner: warned once, counted, replaced
// by this receiver's lease, and the store scanned from the same cycle;
// a hostile id file beside it is counted every cycle it stays.
func TestHostileLeaseIsWarnedCountedAndReplaced(t *testing.T) {
	pool := objPool(t, "gcc.debug")
	if err := os.Symlink("/etc/passwd", filepath.Join(pool, LeaseFileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pool, StoreIDFileName), []byte(strings.Repeat("x", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	s, logs := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool, Scan: ScanElect}}, Holder: "a/compiletools",
		LeaseDuration: time.Hour}, sink)
	problems := &countingCounter{}
	s.set.Telemetry.LeaseProblems = problems
	s.scan(context.Background(), nil)
	s.scan(context.Background(), nil)
	s.scan(context.Background(), nil)
	if len(sink.AllMetrics()) != 3 {
		t.Fatalf("%d snapshots in 3 cycles, want 3", len(sink.AllMetrics()))
	}
	if got := readRecord(t, pool).Holder; got != "a/compiletools" {
		t.Fatalf("lease holder %q", got)
	}
	// Cycle 1: the lease and the id file; cycles 2 and 3: the id file.
	if problems.n != 4 {
		t.Fatalf("%d problems counted, want 4", problems.n)
	}
	if n := logs.FilterMessage("CAS store lease or id file problem").Len(); n != 2 {
		t.Fatalf("%d warnings, want 2 (each problem once)", n)
	}
}
