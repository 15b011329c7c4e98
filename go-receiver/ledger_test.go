package compiletoolsreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// pollableReceiver sets up a receiver whose polls the test runs itself, one
// at a time, instead of a background loop.
func pollableReceiver(t testing.TB, cfg *Config, next consumer.Traces) (*compiletoolsReceiver, *observer.ObservedLogs) {
	t.Helper()
	return pollableReceiverWith(t, cfg, next, receivertest.NewNopSettings(metadata.Type))
}

// pollableReceiverWith is pollableReceiver with the given settings (e.g.
// test telemetry); their logger is replaced by the returned observer.
func pollableReceiverWith(t testing.TB, cfg *Config, next consumer.Traces, set receiver.Settings) (*compiletoolsReceiver, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	set.Logger = zap.New(core)
	r := newReceiver(cfg, set, nil)
	if err := r.setTracesConsumer(next); err != nil {
		t.Fatal(err)
	}
	if err := r.setUp(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.captureWatcher != nil {
			_ = r.captureWatcher.Close()
		}
		r.telemetry.shutdown()
		_ = r.ledger.close(context.Background())
	})
	return r, logs
}

// ledgerHeld counts what the ledger keeps in memory besides checkpoints.
func ledgerHeld(l *buildLedger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open) + len(l.pathProblems)
}

// Builds that fail (an unreadable timing.json, transient files that cannot
// be captured) are remembered only while they exist and are not settled;
// other paths that fail only while they keep failing.
func TestLedgerForgetsFailingBuildsOnceSettledOrRemoved(t *testing.T) {
	const n = 5
	parent, loops := t.TempDir(), t.TempDir()
	// Matches of the second glob that cannot be examined belong to no build.
	cfg := testConfig(parent, filepath.Join(loops, "*"))
	cfg.Capture.Directory = filepath.Join(t.TempDir(), "capture")
	sink := new(consumertest.TracesSink)
	r, logs := pollableReceiver(t, cfg, sink)
	// Captures fail from now on: their directory is a file.
	if err := os.RemoveAll(cfg.Capture.Directory); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Capture.Directory, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var unreadable, running []string
	for i := 0; i < n; i++ {
		dir := filepath.Join(parent, fmt.Sprintf("20261130T%06d-%d", 100000+i, 10+i))
		// A timing.json that is a directory cannot be read, by root either.
		if err := os.MkdirAll(filepath.Join(dir, "timing.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		unreadable = append(unreadable, dir)
		dir = filepath.Join(parent, fmt.Sprintf("20261130T%06d-%d", 200000+i, 20+i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ccache.statslog"), []byte("# a.cpp\ncache_miss\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		running = append(running, dir)
		loop := filepath.Join(loops, fmt.Sprintf("diagnostics-%d", i))
		if err := os.Symlink(loop, loop); err != nil {
			t.Fatal(err)
		}
	}

	ctx := context.Background()
	r.poll(ctx)
	r.poll(ctx)
	if got := logs.FilterMessage("cannot examine path; skipping it").Len(); got != 2*n {
		t.Fatalf("want one warning per unreadable build and per looping match, got %d", got)
	}
	if got := logs.FilterMessage("cannot capture transient build files").Len(); got != n {
		t.Fatalf("want one warning per build whose files cannot be captured, got %d", got)
	}
	if ledgerHeld(r.ledger) == 0 {
		t.Fatal("the ledger remembers nothing of the failing builds; the test cannot show it forgets them")
	}

	// The unreadable builds and the loops are removed; the running builds
	// finish and settle.
	if err := os.RemoveAll(loops); err != nil {
		t.Fatal(err)
	}
	for _, dir := range unreadable {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	timing := caseTiming(t)
	for _, dir := range running {
		if err := os.Remove(filepath.Join(dir, "ccache.statslog")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "timing.json"), timing, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.poll(ctx)
	if got := len(sink.AllTraces()); got != n {
		t.Fatalf("want the %d finished builds delivered, got %d", n, got)
	}
	if held := ledgerHeld(r.ledger); held != 0 {
		r.ledger.mu.Lock()
		defer r.ledger.mu.Unlock()
		t.Fatalf("the ledger still holds %d entries after every failing build settled or vanished: open %v, path problems %v",
			held, r.ledger.open, r.ledger.pathProblems)
	}
}

// A clock stepped back puts timing.json in the future. A statslog its
// ct-cake left behind must still hold the build only settle_timeout, counted
// from when the receiver first saw it, not until the clock catches up.
func TestSettleWaitEndsWhenTheFileIsFromTheFuture(t *testing.T) {
	parent := t.TempDir()
	dir := copyCaseBuild(t, "01-geom-shake-cold", parent)
	if err := os.WriteFile(filepath.Join(dir, "ccache.statslog"), []byte("# /s/a.cpp\ndirect_cache_hit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "timing.json"), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(parent)
	cfg.SettleTimeout = 50 * time.Millisecond
	cfg.Capture.Directory = t.TempDir()
	sink := new(consumertest.TracesSink)
	r, _ := pollableReceiver(t, cfg, sink)
	ctx := context.Background()
	r.poll(ctx)
	if sink.SpanCount() != 0 {
		t.Fatal("sent while its statslog may still be written")
	}
	time.Sleep(2 * cfg.SettleTimeout)
	r.poll(ctx)
	if sink.SpanCount() == 0 {
		t.Fatal("still waiting settle_timeout after it was first seen: the build waits for the clock to catch up")
	}
}

// A build whose timing.json cannot be read yet is tried again on the retry
// backoff, however long it stays unreadable (no time budget) and never
// more than maxRecheckInterval apart, even with retries unbounded.
func TestUnreadableBuildIsRecheckedForeverAtBoundedIntervals(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.RetryOnFailure.InitialInterval = time.Second
	cfg.RetryOnFailure.Multiplier = 2
	cfg.RetryOnFailure.RandomizationFactor = 0
	cfg.RetryOnFailure.MaxInterval = 0 // unbounded exponential backoff
	cfg.RetryOnFailure.MaxElapsedTime = time.Minute
	r, _ := pollableReceiver(t, cfg, new(consumertest.TracesSink))
	now := time.Unix(1_800_000_000, 0)
	r.ledger.now = func() time.Time { return now }
	const dir = "/diag/20261130T000001-1"
	var waits []time.Duration
	for i := 0; i < 200; i++ { // far past max_elapsed_time and any float overflow
		r.ledger.recheckLater(dir)
		waits = append(waits, r.ledger.snapshot(dir).nextAttempt.Sub(now))
		now = now.Add(time.Hour)
	}
	if waits[0] != time.Second || waits[1] != 2*time.Second {
		t.Fatalf("want the retry backoff (1 s, 2 s, …), got %v", waits[:2])
	}
	for i, w := range waits {
		if w <= 0 || w > maxRecheckInterval {
			t.Fatalf("recheck %d after %v: want within (0, %v]", i, w, maxRecheckInterval)
		}
	}
	if r.ledger.snapshot(dir).nextAttempt.IsZero() {
		t.Fatal("the build was given up")
	}
}
