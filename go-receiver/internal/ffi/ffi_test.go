//go:build cgo

package ffi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPanicInCoreBecomesError(t *testing.T) {
	_, err := Process(context.Background(), Request{InvocationDir: t.TempDir(), Signals: SignalTraces, forcePanic: true})
	if CodeOf(err) != CodePanic {
		t.Fatalf("want a panic error code, got %v", err)
	}
	// The library must still work after a caught panic.
	if err := CheckABI(); err != nil {
		t.Fatal(err)
	}
}

func TestMissingTimingJSONIsIOError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20261130T000000-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Process(context.Background(), Request{InvocationDir: dir, HostName: "h", Signals: SignalTraces})
	if CodeOf(err) != CodeIO {
		t.Fatalf("want an io error, got %v", err)
	}
}

func TestCancelledContextIsNotProcessed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Process(ctx, Request{InvocationDir: t.TempDir(), Signals: SignalTraces})
	if CodeOf(err) != CodeCancelled {
		t.Fatalf("want cancelled, got %v", err)
	}
}

func TestEncodePairs(t *testing.T) {
	got := encodePairs([]Attribute{{"a", "1"}, {"b", ""}})
	if got != "a\x001\x00b\x00\x00" {
		t.Fatalf("got %q", got)
	}
}

// bigBuild writes a valid timing.json with n compile rules.
func bigBuild(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "20261130T000000-9")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"version": 1, "timestamp": "2026-11-30T03:00:00+00:00", "total_elapsed_s": 100.0, "variant": "gcc.debug", "backend": "shake", "start_s": 1000.0, "phases": [{"name": "build_execution", "elapsed_s": 99.0, "start_s": 1000.5, "end_s": 1099.5, "rules": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name": "f%d.cpp", "elapsed_s": 0.5, "rule_type": "compile", "target": "/p/obj/%d/f%d.o", "source": "/p/src/d%d/f%d.cpp", "metadata": {"cas.hit": false, "queue_wait_s": 1e-06}, "start_s": 1001.0, "end_s": 1001.5}`, i, i%256, i, i%100, i)
	}
	b.WriteString(`]}]}`)
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCancelStopsAParseInFlight(t *testing.T) {
	dir := bigBuild(t, 300_000)
	req := Request{InvocationDir: dir, HostName: "h", Signals: SignalTraces}

	start := time.Now()
	res, err := Process(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	if res.Traces.SpanCount() != 300_002 {
		t.Fatalf("span count %d", res.Traces.SpanCount())
	}

	// Cancel a few milliseconds in: the core is still reading or parsing (a
	// full run spends hundreds of them there), so only its cancel token can
	// stop it early; the Go-side pre-check has passed by then.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Millisecond, cancel)
	start = time.Now()
	_, err = Process(ctx, req)
	took := time.Since(start)
	if CodeOf(err) != CodeCancelled {
		t.Fatalf("want the parse cancelled, got %v after %s (full run %s)", err, took, full)
	}
	if took > full/2 {
		t.Errorf("cancelled call took %s; a full run takes %s", took, full)
	}
	t.Logf("full run %s, cancelled after %s", full, took)
}

func TestCASKindNamesParseToDistinctKinds(t *testing.T) {
	seen := map[CASKind]string{}
	for _, name := range CASKindNames() {
		kind, ok := ParseCASKind(name)
		if !ok {
			t.Fatalf("listed kind %q does not parse", name)
		}
		if other, dup := seen[kind]; dup {
			t.Fatalf("kinds %q and %q share the value %d", other, name, kind)
		}
		seen[kind] = name
	}
	if len(seen) != len(casKinds) {
		t.Fatalf("%d names for %d kinds", len(seen), len(casKinds))
	}
	for _, bad := range []string{"", "OBJ", "lib", "obj "} {
		if _, ok := ParseCASKind(bad); ok {
			t.Errorf("%q parsed as a kind", bad)
		}
	}
}
