//go:build cgo

package ffi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestABIVersionMatchesHeader(t *testing.T) {
	if err := CheckABI(); err != nil {
		t.Fatal(err)
	}
}

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
