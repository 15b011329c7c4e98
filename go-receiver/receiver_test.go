package compiletoolsreceiver

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

const case01 = "01-geom-shake-cold"

func testConfig(include ...string) *Config {
	cfg := createDefaultConfig()
	cfg.Include = include
	cfg.PollInterval = 20 * time.Millisecond
	cfg.HostName = "test-host"
	cfg.StartAt = StartAtBeginning
	cfg.RetryOnFailure.InitialInterval = 10 * time.Millisecond
	cfg.RetryOnFailure.MaxInterval = 50 * time.Millisecond
	cfg.Capture.Directory = filepath.Join(os.TempDir(), "ct-capture-test")
	return cfg
}

// startTraces starts a receiver with a traces sink and returns the sink and
// the log observer; the receiver is shut down when the test ends.
func startTraces(t *testing.T, cfg *Config, next consumer.Traces) *observer.ObservedLogs {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	r, err := NewFactory().CreateTraces(context.Background(), set, cfg, next)
	runUntilCleanup(t, r, err)
	return logs
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCorpusBuildReachesConsumerLikeReference(t *testing.T) {
	for _, c := range []string{case01, "12-geom-ninja-cold-native-flock", "16-geom-make-cold-native-flock"} {
		t.Run(c, func(t *testing.T) {
			parent := t.TempDir()
			dir := copyCaseBuild(t, c, parent)
			want := referenceTraces(t, c)
			sink := new(consumertest.TracesSink)
			startTraces(t, testConfig(parent), sink)

			waitFor(t, "the build's spans", func() bool { return sink.SpanCount() >= want.SpanCount() })
			time.Sleep(100 * time.Millisecond) // several more polls: nothing may be sent twice

			all := sink.AllTraces()
			if len(all) != 1 {
				t.Fatalf("want the build delivered once, got %d deliveries", len(all))
			}
			got := all[0]
			if got.SpanCount() != want.SpanCount() {
				t.Fatalf("span count: got %d, reference %d", got.SpanCount(), want.SpanCount())
			}
			if g, w := spanNames(got), spanNames(want); !maps.Equal(g, w) {
				t.Fatalf("span names differ from the reference:\n got %v\nwant %v", g, w)
			}
			res := got.ResourceSpans().At(0).Resource().Attributes()
			if v, _ := res.Get("ct.invocation_id"); v.Str() != filepath.Base(dir) {
				t.Errorf("ct.invocation_id = %q, want %q", v.Str(), filepath.Base(dir))
			}
			if v, _ := res.Get("host.name"); v.Str() != "test-host" {
				t.Errorf("host.name = %q", v.Str())
			}
		})
	}
}

func TestMalformedTimingJSONWarnsAndOtherBuildsArrive(t *testing.T) {
	parent := t.TempDir()
	copyCaseBuild(t, case01, parent)
	bad := filepath.Join(parent, "20261130T000000-1")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(bad, "timing.json")
	if err := os.WriteFile(badFile, []byte(`{"version": 1, "phases": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.TracesSink)
	logs := startTraces(t, testConfig(parent), sink)

	want := referenceTraces(t, case01).SpanCount()
	waitFor(t, "the good build", func() bool { return sink.SpanCount() >= want })
	waitFor(t, "a warning naming the malformed file", func() bool {
		for _, e := range logs.FilterLevelExact(zapcore.WarnLevel).All() {
			if e.ContextMap()["path"] == badFile {
				return true
			}
		}
		return false
	})
	time.Sleep(100 * time.Millisecond)
	if n := len(logs.FilterField(zap.String("path", badFile)).All()); n != 1 {
		t.Errorf("want exactly one warning for the malformed file, got %d", n)
	}
	if sink.SpanCount() != want {
		t.Errorf("span count %d, want %d", sink.SpanCount(), want)
	}
}

func TestBuildStillRunningIsNotEmitted(t *testing.T) {
	parent := t.TempDir()
	running := filepath.Join(parent, "20261130T000000-42")
	if err := os.Mkdir(running, 0o755); err != nil {
		t.Fatal(err)
	}
	sink := new(consumertest.TracesSink)
	startTraces(t, testConfig(parent), sink)
	time.Sleep(100 * time.Millisecond)
	if sink.SpanCount() != 0 {
		t.Fatalf("a directory without timing.json was emitted")
	}
	// timing.json appears (ct-cake renames it into place): now it is sent.
	src := filepath.Join(corpusDir(t), "cases", case01, "diagnostics")
	entries, _ := os.ReadDir(src)
	data, err := os.ReadFile(filepath.Join(src, entries[0].Name(), "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Like ct-cake: write a temporary file, then rename it into place.
	tmp := filepath.Join(running, ".tmp.timing.json.abcdefgh.42")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(running, "timing.json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the finished build", func() bool { return sink.SpanCount() > 0 })
}

// flakyTraces fails the first n calls with err, then forwards to next.
type flakyTraces struct {
	consumer.Traces
	n    int
	err  error
	next *consumertest.TracesSink
}

func (f *flakyTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f *flakyTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if f.n > 0 {
		f.n--
		return f.err
	}
	return f.next.ConsumeTraces(ctx, td)
}

func TestRetryableConsumerErrorIsRetried(t *testing.T) {
	parent := t.TempDir()
	copyCaseBuild(t, case01, parent)
	sink := new(consumertest.TracesSink)
	startTraces(t, testConfig(parent), &flakyTraces{n: 2, err: errors.New("try later"), next: sink})
	waitFor(t, "the build after two failures", func() bool { return len(sink.AllTraces()) == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := len(sink.AllTraces()); n != 1 {
		t.Fatalf("want one delivery, got %d", n)
	}
}

// permanentlyRejecting fails every call with a permanent error and counts them.
type permanentlyRejecting struct {
	calls atomic.Int64
}

func (p *permanentlyRejecting) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (p *permanentlyRejecting) ConsumeTraces(context.Context, ptrace.Traces) error {
	p.calls.Add(1)
	return consumererror.NewPermanent(errors.New("never"))
}

func TestPermanentConsumerErrorDropsBuild(t *testing.T) {
	parent := t.TempDir()
	copyCaseBuild(t, case01, parent)
	next := &permanentlyRejecting{}
	startTraces(t, testConfig(parent), next)
	// The build must have been read and offered, or "not sent again" is vacuous.
	waitFor(t, "the build offered to the consumer", func() bool { return next.calls.Load() >= 1 })
	time.Sleep(200 * time.Millisecond) // ten polls and several retry intervals
	if n := next.calls.Load(); n != 1 {
		t.Fatalf("a permanently rejected build was offered %d times; want once", n)
	}
}

func TestOneInstanceServesTracesAndMetrics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	set := receivertest.NewNopSettings(metadata.Type)
	tr, err := NewFactory().CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	mr, err := NewFactory().CreateMetrics(context.Background(), set, cfg, consumertest.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if component.Component(tr) != component.Component(mr) {
		t.Fatal("traces and metrics of one receiver ID must share one instance")
	}
	if err := tr.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if err := mr.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := mr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycleShutdownBeforeStartAndTwice(t *testing.T) {
	for _, create := range []func(receiver.Factory, *Config) (component.Component, error){
		func(f receiver.Factory, c *Config) (component.Component, error) {
			return f.CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), c, consumertest.NewNop())
		},
		func(f receiver.Factory, c *Config) (component.Component, error) {
			return f.CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), c, consumertest.NewNop())
		},
	} {
		f := NewFactory()
		r, err := create(f, testConfig(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		r, err = create(f, testConfig(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// countingTraces fails its first call with a retryable error and counts calls.
type countingTraces struct {
	calls atomic.Int64
}

func (c *countingTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *countingTraces) ConsumeTraces(context.Context, ptrace.Traces) error {
	if c.calls.Add(1) == 1 {
		return errors.New("sending queue is full")
	}
	return nil
}

func TestCongestionStopsThePollAfterARetryableError(t *testing.T) {
	parent := t.TempDir()
	makeBuilds(t, parent, 5)
	cfg := testConfig(parent)
	cfg.PollInterval = time.Hour // only the first poll runs during the test
	cfg.MaxConcurrentBuilds = 1
	next := &countingTraces{}
	startTraces(t, cfg, next)
	waitFor(t, "the first delivery attempt", func() bool { return next.calls.Load() >= 1 })
	time.Sleep(200 * time.Millisecond)
	if n := next.calls.Load(); n != 1 {
		t.Fatalf("after a retryable error the poll went on with %d more builds; want it to stop", n-1)
	}
}

// Another timing.json renamed over a delivered build's (two hosts' builds
// colliding on a shared parent, formats.md §1.2) is another build: it is sent,
// under its own trace id; the untouched file is never sent twice.
func TestReplacedTimingJSONUnderTheSameDirectoryIsSentAgain(t *testing.T) {
	parent := t.TempDir()
	dir := copyCaseBuild(t, case01, parent)
	sink := new(consumertest.TracesSink)
	startTraces(t, testConfig(parent), sink)
	waitFor(t, "the first build", func() bool { return len(sink.AllTraces()) == 1 })
	time.Sleep(100 * time.Millisecond) // several polls: the same file is not sent again
	if n := len(sink.AllTraces()); n != 1 {
		t.Fatalf("the untouched build was delivered %d times", n)
	}

	const first, later = "2026-11-30T03:43:45.418084+00:00", "2026-11-30T03:43:45.918084+00:00"
	timing := caseTiming(t)
	if !bytes.Contains(timing, []byte(first)) {
		t.Fatalf("case %s: timestamp %s not found", case01, first)
	}
	tmp := filepath.Join(dir, ".tmp.timing.json.abcdefgh.2")
	if err := os.WriteFile(tmp, bytes.Replace(timing, []byte(first), []byte(later), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not the same second as the first file: a modification time that
	// differs on every filesystem.
	mod := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(tmp, mod, mod); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "timing.json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the build that replaced the first", func() bool { return len(sink.AllTraces()) == 2 })
	time.Sleep(100 * time.Millisecond)
	all := sink.AllTraces()
	if len(all) != 2 {
		t.Fatalf("want two deliveries, got %d", len(all))
	}
	traceID := func(td ptrace.Traces) string {
		return td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	}
	if traceID(all[0]) == traceID(all[1]) {
		t.Fatalf("a timing.json with another timestamp kept the trace id %s", traceID(all[0]))
	}
}
