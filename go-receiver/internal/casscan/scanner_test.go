package casscan

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// testScanner is a scanner of o whose snapshots' metrics go to sink, as
// the receiver's with a metrics consumer only; its logger is the returned
// observer.
func testScanner(o Options, sink *consumertest.MetricsSink) (*Scanner, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.WarnLevel)
	o.HostName, o.ServiceName = "h", "compiletools"
	return New(o, Settings{
		Logger: zap.New(core),
		Now:    time.Now,
		Telemetry: Telemetry{ScanDuration: noop.Float64Histogram{}, ScanErrors: noop.Int64Counter{}, Anomalies: noop.Int64Counter{},
			LeaseProblems: noop.Int64Counter{}, LeasesHeld: noop.Int64UpDownCounter{}},
		Consumed: func() ffi.Signals { return ffi.SignalMetrics },
		Consume: func(ctx context.Context, want ffi.Signals, out ffi.Output) error {
			if want&ffi.SignalMetrics != 0 && out.HasMetrics {
				return sink.ConsumeMetrics(ctx, out.Metrics)
			}
			return nil
		},
	}), logs
}

// A CAS pool that cannot be listed is warned about once while it fails;
// once it lists again it is forgotten, so failing anew warns anew.
func TestCASPoolProblemIsForgottenWhenThePoolIsBack(t *testing.T) {
	pool := filepath.Join(t.TempDir(), "cas-objdir")
	s, logs := testScanner(Options{Pools: []Store{{Kind: "obj", Path: pool}}}, new(consumertest.MetricsSink))
	warnings := func() int { return logs.FilterMessage("cannot list CAS pool").Len() }

	s.groups()
	s.groups()
	if got := warnings(); got != 1 {
		t.Fatalf("want one warning for the missing pool, got %d", got)
	}
	if err := os.MkdirAll(filepath.Join(pool, "gcc.debug"), 0o755); err != nil {
		t.Fatal(err)
	}
	if groups := s.groups(); len(groups) != 1 {
		t.Fatalf("want the pool's one variant, got %v", groups)
	}
	if err := os.RemoveAll(pool); err != nil {
		t.Fatal(err)
	}
	s.groups()
	if got := warnings(); got != 2 {
		t.Fatalf("want a new warning when the pool fails again after it was back, got %d warnings in all", got)
	}
}
