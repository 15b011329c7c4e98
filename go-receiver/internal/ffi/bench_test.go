//go:build cgo

package ffi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkProcessCorpusBuild: one real build (corpus case 01, 43 rules)
// through the core and the pdata decode, as the receiver does per build.
func BenchmarkProcessCorpusBuild(b *testing.B) {
	corpus := os.Getenv("CT_CORPUS_DIR")
	if corpus == "" {
		corpus = filepath.Join("..", "..", "..", "..", "shared", "corpus")
	}
	dir := filepath.Join(corpus, "cases", "01-geom-shake-cold", "diagnostics", "20261130T034340-24175")
	if _, err := os.Stat(filepath.Join(dir, "timing.json")); err != nil {
		b.Skip("corpus not found: set CT_CORPUS_DIR")
	}
	req := Request{InvocationDir: dir, HostName: "bench", Signals: SignalTraces | SignalMetrics}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Process(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessBig: a 100k-rule build through the core and the pdata decode.
func BenchmarkProcessBig(b *testing.B) {
	path := os.Getenv("CT_BENCH_TIMING_DIR")
	if path == "" {
		b.Skip("set CT_BENCH_TIMING_DIR to an invocation directory with a large timing.json")
	}
	req := Request{InvocationDir: path, HostName: "bench", Signals: SignalTraces}
	for b.Loop() {
		if _, err := Process(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
