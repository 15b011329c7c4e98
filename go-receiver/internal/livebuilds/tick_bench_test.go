package livebuilds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/cumulative"
)

// The CPU cost of one live read (tick) with 50 running builds, as the
// README's "Live builds" reports it:
//
//	cd go-receiver && go test -run '^$' -bench LiveTick -benchtime 200x ./internal/livebuilds
//
// "grown": each build's statslog gained one block since the last read
// (50 records sent); "idle": nothing changed (stat and read attempts only).
// cpu-ns/tick is the process's user+system CPU time per read.
func BenchmarkLiveTick50Builds(b *testing.B) {
	for _, grown := range []bool{true, false} {
		name := "idle"
		if grown {
			name = "grown"
		}
		b.Run(name, func(b *testing.B) { benchLiveTick(b, 50, grown) })
	}
}

func benchLiveTick(b *testing.B, builds int, grown bool) {
	parent := b.TempDir()
	// The receiver's defaults (its tests' poll_interval), with logs and
	// metrics consumers that take everything; the metrics pass through
	// cumulative totals as the receiver's do.
	totals := cumulative.New()
	t, err := New(context.Background(), nil, Options{
		Interval:           time.Second,
		MaxRecordsPerBuild: 1000,
		AbandonAfter:       24 * time.Hour,
		AbandonWhenPIDGone: true,
		HostName:           "bench",
		ServiceName:        "compiletools",
		MetricsEvery:       20 * time.Millisecond,
	}, Settings{
		Logger:           zap.NewNop(),
		Now:              time.Now,
		Checkpoints:      checkpoint.NewMemory(),
		ExplicitStatslog: func(string) string { return "" },
		ConsumeLogs:      func(context.Context, plog.Logs) error { return nil },
		ConsumeMetrics: func(_ context.Context, md pmetric.Metrics) error {
			return totals.Deliver(md, func(pmetric.Metrics) error { return nil })
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for i := range builds {
		// Our own PID: every build is alive.
		dir := filepath.Join(parent, fmt.Sprintf("20261130T0300%02d-%d", i, os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	ctx := context.Background()
	t.takeScan(dirs, nil, time.Now())
	t.tick(ctx) // the start records
	block := []byte("# /src/project/lib/some_translation_unit.cpp\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\nlocal_storage_write\n")
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		if grown {
			b.StopTimer()
			for _, dir := range dirs {
				f, err := os.OpenFile(filepath.Join(dir, "ccache.statslog"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = f.Write(block)
				f.Close()
			}
			b.StartTimer()
		}
		before := cpuTime()
		t.tick(ctx)
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/tick")
	if t.running() != builds {
		b.Fatalf("%d builds followed, want %d", t.running(), builds)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
