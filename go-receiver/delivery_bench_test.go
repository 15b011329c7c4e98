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
			var consuming time.Duration // from the open build to the last Consume
			for b.Loop() {
				res, stream, err := ffi.Open(ctx, req, cfg.MaxRequestSpans)
				if err != nil || !res.HasTraces {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := r.consumeTraceStream(ctx, stream, traceProgress{}); err != nil {
					b.Fatal(err)
				}
				consuming += time.Since(start)
				stream.Close()
			}
			b.ReportMetric(consuming.Seconds()*1000/float64(b.N), "consume-ms/op")
		})
	}
}
