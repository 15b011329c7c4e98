package compiletoolsreceiver

import (
	"context"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// BenchmarkBuildToConsumer is one build as the receiver runs it: the core
// through cgo (ffi.Open, then one chunk of max_request_spans spans at a
// time), the pdata decode of each chunk and its Consume call (inside an
// ObsReport operation) to a no-op consumer. Compare with the Rust core
// alone on the same directory (README, Large builds):
//
//	python3 rust/bench/inputs.py 100000
//	CT_BENCH_TIMING_DIR=$PWD/target/bench-inputs/inv-100000/20260101T120000-4242 \
//	  go -C go-receiver test -run '^$' -bench BuildToConsumer -benchtime 20x .
//	cargo run --release --example timing_once -- target/bench-inputs/inv-100000/20260101T120000-4242 --runs 20
//
// go_side_of_default_size times the Go side alone (chunks encoded
// beforehand): its ms/op over timing_once's best is issue 12's ratio.
func BenchmarkBuildToConsumer(b *testing.B) {
	dir := os.Getenv("CT_BENCH_TIMING_DIR")
	if dir == "" {
		b.Skip("set CT_BENCH_TIMING_DIR to an invocation directory with a large timing.json")
	}
	for _, bc := range []struct {
		name     string
		maxSpans int
	}{
		{"requests_of_default_size", defaultMaxRequestSpans},
		{"one_request", 1 << 30},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.MaxRequestSpans = bc.maxSpans
			// A 1M-rule build (609 MB) passes too: its peak RSS is the
			// point of streaming (README, Large builds).
			cfg.Limits.MaxFileSize = 1 << 30
			cfg.Limits.MaxEvents = 2_000_000
			r, _ := pollableReceiver(b, cfg, consumertest.NewNop())
			ctx := context.Background()
			req := r.request(ctx, discovery.Build{Dir: dir}, ffi.SignalTraces, openBuild{})
			var consuming, cpu time.Duration // from the open build to the last Consume
			for b.Loop() {
				res, stream, err := ffi.Open(ctx, req, cfg.MaxRequestSpans)
				if err != nil || !res.HasTraces {
					b.Fatal(err)
				}
				start, startCPU := time.Now(), processCPU()
				if _, err := r.consumeTraceStream(ctx, stream, traceProgress{}); err != nil {
					b.Fatal(err)
				}
				consuming += time.Since(start)
				cpu += processCPU() - startCPU
				stream.Close()
			}
			b.ReportMetric(consuming.Seconds()*1000/float64(b.N), "consume-ms/op")
			b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "consume-cpu-ms/op")
		})
	}
	// The Go side alone, issue 12's measure (its time against the Rust
	// core's timing_once): every chunk is encoded by the core first,
	// untimed; what is timed is consumeChunks handing them over as
	// consumeTraceStream does (decoding goroutines, chunk order), the
	// pdata decode, the Consume calls and the frees.
	b.Run("go_side_of_default_size", func(b *testing.B) {
		cfg := testConfig(b.TempDir())
		cfg.Limits.MaxFileSize = 1 << 30
		cfg.Limits.MaxEvents = 2_000_000
		r, _ := pollableReceiver(b, cfg, consumertest.NewNop())
		ctx := context.Background()
		req := r.request(ctx, discovery.Build{Dir: dir}, ffi.SignalTraces, openBuild{})
		fallbacks := ffi.TraceDecodeFallbacks()
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			_, stream, err := ffi.Open(ctx, req, cfg.MaxRequestSpans)
			if err != nil {
				b.Fatal(err)
			}
			chunks := make([]*ffi.RawChunk, stream.Info.Chunks)
			for k := range chunks {
				if chunks[k], err = stream.Encode(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			encoded := func(_ context.Context, k int) (*ffi.RawChunk, error) { return chunks[k], nil }
			b.StartTimer()
			startCPU := processCPU()
			if _, err := r.consumeChunks(ctx, stream.Info, encoded, traceProgress{}); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU() - startCPU
			b.StopTimer()
			for _, c := range chunks {
				c.Free() // a no-op for every chunk consumeChunks freed
			}
			stream.Close()
			b.StartTimer()
		}
		// CPU time on every core: on an idle machine with two cores the
		// wall time is about half of it.
		b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
		if n := ffi.TraceDecodeFallbacks() - fallbacks; n > 0 {
			b.Errorf("%d chunks went through pdata's unmarshaler: the core writes something the decoder does not know", n)
		}
	})
}
