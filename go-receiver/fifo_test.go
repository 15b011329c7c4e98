package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// A `capture.statslogs` path that is a FIFO (issue 10, item 7): two builds
// mapped to it take both max_concurrent_builds slots at once. Each must
// still arrive (without ccache data, with a warning), a third build must
// not wait behind them, and Shutdown must return promptly.
func TestFIFOAtAConfiguredStatslogNeitherWedgesBuildsNorShutdown(t *testing.T) {
	src := filepath.Join(corpusDir(t), "cases", case01, "diagnostics")
	entries, err := os.ReadDir(src)
	if err != nil || len(entries) != 1 {
		t.Fatalf("case %s: %v", case01, err)
	}
	mapped, other := t.TempDir(), t.TempDir()
	for _, dst := range []string{
		filepath.Join(mapped, "20261130T034340-101"),
		filepath.Join(mapped, "20261130T034340-102"),
		filepath.Join(other, "20261130T034340-103"),
	} {
		copyTree(t, filepath.Join(src, entries[0].Name()), dst)
	}
	fifo := filepath.Join(t.TempDir(), "ccache.statslog")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(mapped, other)
	cfg.MaxConcurrentBuilds = 2
	cfg.Capture.Directory = t.TempDir()
	cfg.Capture.Statslogs = []StatslogMapping{{Include: filepath.Join(mapped, "*"), Path: fifo}}
	sink := new(consumertest.TracesSink)
	core, logs := observer.New(zapcore.WarnLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	// On failure (a core stuck in open(2) on the FIFO): free every stuck
	// reader from the writing end, then stop the receiver, so the test
	// fails instead of hanging.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	})
	t.Cleanup(func() {
		for i := 0; i < 10; i++ {
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	})

	deadline := time.Now().Add(10 * time.Second)
	for len(sink.AllTraces()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 builds arrived; a FIFO statslog wedges the parse", len(sink.AllTraces()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	fifoWarnings := 0
	for _, e := range logs.FilterMessage("build read with a problem").All() {
		if w := e.ContextMap()["warning"].(string); strings.Contains(w, "a FIFO") {
			fifoWarnings++
		}
	}
	if fifoWarnings != 2 {
		t.Errorf("want one FIFO warning per mapped build (2), got %d: %v", fifoWarnings, logs.All())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %s", took)
	}
}
