package compiletoolsreceiver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/livebuilds"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// liveSinks are the three consumers of one receiver.
type liveSinks struct {
	traces  *consumertest.TracesSink
	logs    *consumertest.LogsSink
	metrics *consumertest.MetricsSink
}

// startLive starts one receiver instance serving traces, metrics and logs
// on host; it is shut down by the returned function (or when the test ends).
func startLive(t *testing.T, cfg *Config, host component.Host, id component.ID) (liveSinks, func()) {
	t.Helper()
	s := liveSinks{new(consumertest.TracesSink), new(consumertest.LogsSink), new(consumertest.MetricsSink)}
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = id
	f := NewFactory()
	tr, err := f.CreateTraces(context.Background(), set, cfg, s.traces)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateMetrics(context.Background(), set, cfg, s.metrics); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateLogs(context.Background(), set, cfg, s.logs); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return s, stop
}

func liveTestConfig(parent string) *Config {
	cfg := testConfig(parent)
	cfg.Live.Interval = 20 * time.Millisecond
	return cfg
}

// liveRecords lists every log record received, in order.
func liveRecords(sink *consumertest.LogsSink) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, r := range sl.LogRecords().All() {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

func countEvents(sink *consumertest.LogsSink, event, file string) int {
	n := 0
	for _, r := range liveRecords(sink) {
		f, _ := r.Attributes().Get("ct.live.file")
		if r.EventName() == event && (file == "" || f.Str() == file) {
			n++
		}
	}
	return n
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// writeTiming writes timing.json as ct-cake does: aside, then renamed.
func writeTiming(t *testing.T, dir string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp.timing.json.abcdefgh.1")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "timing.json")); err != nil {
		t.Fatal(err)
	}
}

func case01Statslog(t *testing.T) ([]byte, int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", case01, "ccache.statslog"))
	if err != nil {
		t.Fatal(err)
	}
	return data, bytes.Count(data, []byte("\n#")) + 1 // one block per header; the file starts with one
}

func rootSpan(td ptrace.Traces) ptrace.Span {
	root := ptrace.NewSpan()
	forEachSpan(td, func(s ptrace.Span) {
		if s.ParentSpanID().IsEmpty() {
			root = s
		}
	})
	return root
}

// A build played over time in compiletools' default layout
// (<cwd>/bin/<variant>/diagnostics/<id>): statslog blocks, make timing
// lines in <bindir>, ninja log lines in the cwd. Its progress arrives while
// timing.json does not exist yet, its end record after the trace, linked
// to the trace's id and root span.
func TestLivePlayedBuildProgressThenEndLinkedToTrace(t *testing.T) {
	cwd := t.TempDir()
	bindir := filepath.Join(cwd, "bin", "gcc.debug")
	parent := filepath.Join(bindir, "diagnostics")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// An earlier build's ninja log lines: not this build's.
	appendFile(t, filepath.Join(cwd, ".ninja_log"), []byte("# ninja log v5\n1\t2\t0\told.o\tab\n"))
	pid := os.Getpid() // a PID that is alive: the build is running
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034340-%d", pid))
	s, _ := startLive(t, liveTestConfig(parent), componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "live"))

	statslog, blocks := case01Statslog(t)
	parts := bytes.SplitAfter(statslog, []byte("\n# "))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	half := bytes.Join(parts[:10], nil)
	half = half[:len(half)-2] // end the chunk at a block boundary, before "# "
	appendFile(t, filepath.Join(dir, "ccache.statslog"), half)
	waitFor(t, "the first compiles", func() bool { return countEvents(s.logs, "ct.rule.finished", "statslog") == 10 })
	if _, err := os.Stat(filepath.Join(dir, "timing.json")); err == nil {
		t.Fatal("timing.json exists: the test must see progress before it")
	}
	if countEvents(s.logs, "ct.build.start", "") != 1 {
		t.Fatalf("want one ct.build.start, got %d", countEvents(s.logs, "ct.build.start", ""))
	}
	appendFile(t, filepath.Join(dir, "ccache.statslog"), statslog[len(half):])
	makeLog := filepath.Join(bindir, fmt.Sprintf(".ct-make-timing.%d.123456.jsonl", pid))
	appendFile(t, makeLog, []byte(`{"target":"/o/a.o","start_ns":1796009765464839000,"end_ns":1796009765542899000}`+"\n"))
	appendFile(t, makeLog, []byte(`{"target":"/o/app","start_ns":1796009765600000000,"end_ns":1796009765700000000}`+"\n"+`{"target":"/o/b.o",`))
	appendFile(t, filepath.Join(cwd, ".ninja_log"), []byte("10\t20\t0\tobj/x.o\t1\n20\t35\t0\tbin/x\t2\n"))
	waitFor(t, "every compile, recipe and edge", func() bool {
		return countEvents(s.logs, "ct.rule.finished", "statslog") == blocks &&
			countEvents(s.logs, "ct.rule.finished", "make") == 2 &&
			countEvents(s.logs, "ct.rule.finished", "ninja") == 2
	})
	waitFor(t, "ct.build.running = 1", func() bool { return lastGauge(s.metrics, "ct.build.running") == 1 })

	// The link's call has no cacheable outcome: its block may still be
	// growing while the build runs, so it waits for the build's end — by
	// when ct-cake deleted the statslog, and the capture is read.
	appendFile(t, filepath.Join(dir, "ccache.statslog"), []byte("# /o/app\ncalled_for_link\n"))
	time.Sleep(100 * time.Millisecond)
	writeTiming(t, dir, caseTiming(t))
	if err := os.Remove(filepath.Join(dir, "ccache.statslog")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the link's record", func() bool { return countEvents(s.logs, "ct.rule.finished", "statslog") == blocks+1 })
	waitFor(t, "the trace", func() bool { return len(s.traces.AllTraces()) == 1 })
	waitFor(t, "the end record", func() bool { return countEvents(s.logs, "ct.build.end", "") == 1 })
	time.Sleep(100 * time.Millisecond) // more intervals: nothing may come twice

	root := rootSpan(s.traces.AllTraces()[0])
	for _, r := range liveRecords(s.logs) {
		switch r.EventName() {
		case "ct.build.end":
			if r.TraceID() != root.TraceID() || r.SpanID() != root.SpanID() {
				t.Errorf("end record links %s/%s, want the trace's %s/%s", r.TraceID(), r.SpanID(), root.TraceID(), root.SpanID())
			}
			if v, _ := r.Attributes().Get("ct.build.abandoned"); v.Bool() {
				t.Error("a delivered build's end is not abandoned")
			}
		default:
			if !r.TraceID().IsEmpty() {
				t.Errorf("%s record has a trace context before the end", r.EventName())
			}
		}
		if id, _ := r.Attributes().Get("ct.invocation_id"); id.Str() != filepath.Base(dir) {
			t.Errorf("%s record: ct.invocation_id %q", r.EventName(), id.Str())
		}
	}
	if n := countEvents(s.logs, "ct.build.start", ""); n != 1 {
		t.Errorf("ct.build.start sent %d times", n)
	}
	if n := countEvents(s.logs, "ct.rule.finished", "ninja"); n != 2 {
		t.Errorf("ninja edges: %d, want only this build's 2", n)
	}
	waitFor(t, "ct.build.running = 0", func() bool { return lastGauge(s.metrics, "ct.build.running") == 0 })
	if got := lastCompiles(s.metrics, "cache_miss"); got != 29 { // case 01: 29 misses
		t.Errorf("ct.live.compiles{cache_miss} = %d, want 29", got)
	}
}

// A build whose ct-cake died: one end record, abandoned, and no more.
func TestLiveAbandonedBuildEndsOnce(t *testing.T) {
	parent := t.TempDir()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034340-%d", child.Process.Pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _ := startLive(t, liveTestConfig(parent), componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "abandon"))
	waitFor(t, "the start record", func() bool { return countEvents(s.logs, "ct.build.start", "") == 1 })
	if countEvents(s.logs, "ct.build.end", "") != 0 {
		t.Fatal("a running build ended")
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	waitFor(t, "the end record", func() bool { return countEvents(s.logs, "ct.build.end", "") == 1 })
	time.Sleep(150 * time.Millisecond)
	if n := countEvents(s.logs, "ct.build.end", ""); n != 1 {
		t.Fatalf("end sent %d times", n)
	}
	for _, r := range liveRecords(s.logs) {
		if r.EventName() == "ct.build.end" {
			if v, ok := r.Attributes().Get("ct.build.abandoned"); !ok || !v.Bool() || !r.TraceID().IsEmpty() {
				t.Errorf("end of a dead build: abandoned %v (present %v), trace %s", v.AsRaw(), ok, r.TraceID())
			}
		}
	}
}

// The end record is sent once across restarts: a build followed in one
// life that finished while the receiver was down gets its end in the next
// life (only the saved state knows it was announced), and never again.
func TestLiveEndOnceAcrossRestarts(t *testing.T) {
	parent := t.TempDir()
	storageDir := t.TempDir()
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034340-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := component.MustNewIDWithName("compiletools", "liverestart")
	life := func(until func(liveSinks) bool) liveSinks {
		storageID, ext := startFileStorage(t, storageDir)
		defer func() { _ = ext.Shutdown(context.Background()) }()
		cfg := liveTestConfig(parent)
		cfg.Storage = &storageID
		host := hostWith{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{storageID: ext}}
		s, stop := startLive(t, cfg, host, id)
		waitFor(t, "this life's condition", func() bool { return until(s) })
		time.Sleep(100 * time.Millisecond)
		stop()
		return s
	}
	first := life(func(s liveSinks) bool { return countEvents(s.logs, "ct.build.start", "") == 1 })
	if countEvents(first.logs, "ct.build.end", "") != 0 {
		t.Fatal("ended while running")
	}
	writeTiming(t, dir, caseTiming(t)) // the build ends while the receiver is down
	second := life(func(s liveSinks) bool { return countEvents(s.logs, "ct.build.end", "") == 1 })
	if n := countEvents(second.logs, "ct.build.start", ""); n != 0 {
		t.Errorf("second life sent ct.build.start %d times", n)
	}
	root := rootSpan(second.traces.AllTraces()[0])
	for _, r := range liveRecords(second.logs) {
		if r.EventName() == "ct.build.end" && r.TraceID() != root.TraceID() {
			t.Errorf("end links %s, want %s", r.TraceID(), root.TraceID())
		}
	}
	third := life(func(liveSinks) bool { return true })
	if n := len(liveRecords(third.logs)); n != 0 {
		t.Errorf("third life sent %d live records", n)
	}
}

// live.max_records_per_build caps the records of one build per interval.
func TestLiveRecordsPerBuildAreCapped(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034340-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	statslog, blocks := case01Statslog(t)
	appendFile(t, filepath.Join(dir, "ccache.statslog"), statslog)
	cfg := liveTestConfig(parent)
	cfg.Live.MaxRecordsPerBuild = 5
	s, _ := startLive(t, cfg, componenttest.NewNopHost(), component.MustNewIDWithName("compiletools", "cap"))
	waitFor(t, "every compile", func() bool { return countEvents(s.logs, "ct.rule.finished", "statslog") == blocks })
	for i, ld := range s.logs.AllLogs() {
		n := 0
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, r := range sl.LogRecords().All() {
					if r.EventName() == "ct.rule.finished" {
						n++
					}
				}
			}
		}
		if n > 5 {
			t.Errorf("request %d carried %d records of one build, cap 5", i, n)
		}
	}
}

func lastGauge(sink *consumertest.MetricsSink, name string) int64 {
	v := int64(-1)
	eachMetric(sink, name, func(m pmetric.Metric) {
		if m.Type() == pmetric.MetricTypeGauge {
			v = m.Gauge().DataPoints().At(0).IntValue()
		}
	})
	return v
}

func lastCompiles(sink *consumertest.MetricsSink, outcome string) int64 {
	v := int64(-1)
	eachMetric(sink, "ct.live.compiles", func(m pmetric.Metric) {
		for _, p := range m.Sum().DataPoints().All() {
			if o, _ := p.Attributes().Get("ct.ccache.outcome"); o.Str() == outcome {
				v = p.IntValue()
			}
		}
	})
	return v
}

func eachMetric(sink *consumertest.MetricsSink, name string, f func(pmetric.Metric)) {
	for _, md := range sink.AllMetrics() {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() == name {
						f(m)
					}
				}
			}
		}
	}
}

func TestLiveConfigIsValidated(t *testing.T) {
	cfg := testConfig("/tmp/x")
	cfg.Live = LiveConfig{Interval: 0, MaxRecordsPerBuild: 0, AbandonAfter: -time.Second, Files: []LiveFilesMapping{{Include: "[", NinjaLog: "/x"}, {Include: "/a/*"}}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("an invalid live block was accepted")
	}
	for _, want := range []string{"live.interval", "live.max_records_per_build", "live.abandon_after", "live.files[0].include", "live.files[1]: set make_timing_dir"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if err := testConfig("/tmp/x").Validate(); err != nil {
		t.Fatalf("the default live block is invalid: %v", err)
	}
}

// live.files reaches the live-build follower field by field (what it does
// with the mapping is internal/livebuilds' test).
func TestLiveFilesMappingReachesTheTracker(t *testing.T) {
	cfg := testConfig("/p")
	if got := cfg.Live.trackerFiles(); len(got) != 0 {
		t.Errorf("no mapping configured, got %v", got)
	}
	cfg.Live.Files = []LiveFilesMapping{{Include: "/var/tmp/ct/*", MakeTimingDir: "/src/bin/x", NinjaLog: "/src/.ninja_log"}, {Include: "/b/*", NinjaLog: "/b/.ninja_log"}}
	want := []livebuilds.FilesMapping{{Include: "/var/tmp/ct/*", MakeTimingDir: "/src/bin/x", NinjaLog: "/src/.ninja_log"}, {Include: "/b/*", NinjaLog: "/b/.ninja_log"}}
	if got := cfg.Live.trackerFiles(); !slices.Equal(got, want) {
		t.Errorf("live.files became %v, want %v", got, want)
	}
}

// Bad lines in growing files: the good records still arrive, each file
// with bad lines is warned about once (with the count), nothing stops.
func TestLiveBadLinesWarnOnceAndGoodRecordsArrive(t *testing.T) {
	cwd := t.TempDir()
	bindir := filepath.Join(cwd, "bin", "v")
	parent := filepath.Join(bindir, "diagnostics")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	dir := filepath.Join(parent, fmt.Sprintf("20261130T034341-%d", pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	sink := new(consumertest.LogsSink)
	r, err := NewFactory().CreateLogs(context.Background(), set, liveTestConfig(parent), sink)
	runUntilCleanup(t, r, err)

	// A shared file is read from its size when the build is first seen.
	waitFor(t, "the start record", func() bool { return countEvents(sink, "ct.build.start", "") == 1 })
	appendFile(t, filepath.Join(dir, "ccache.statslog"), []byte("junk\x00\xff\n# /s/a.cpp\ncache_miss\n"))
	makeLog := filepath.Join(bindir, fmt.Sprintf(".ct-make-timing.%d.1.jsonl", pid))
	appendFile(t, makeLog, []byte("{oops\n[1,2]\n{\"target\":\"/o/a.o\",\"start_ns\":1,\"end_ns\":2}\n{\"start_ns\":\"x\"}\n"))
	appendFile(t, filepath.Join(cwd, ".ninja_log"), []byte("a\tb\tc\td\n1\t2\t0\tobj/a.o\tff\n"))
	good := func() bool {
		return countEvents(sink, "ct.rule.finished", "statslog") == 1 && countEvents(sink, "ct.rule.finished", "make") == 1 &&
			countEvents(sink, "ct.rule.finished", "ninja") == 1
	}
	deadline := time.Now().Add(15 * time.Second)
	for !good() {
		if time.Now().After(deadline) {
			t.Fatalf("good records: statslog %d make %d ninja %d; warnings %v", countEvents(sink, "ct.rule.finished", "statslog"),
				countEvents(sink, "ct.rule.finished", "make"), countEvents(sink, "ct.rule.finished", "ninja"), logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	appendFile(t, makeLog, []byte("more junk\n"))
	time.Sleep(150 * time.Millisecond)
	warned := map[string]int{}
	for _, e := range logs.FilterMessageSnippet("not records").All() {
		warned[e.ContextMap()["path"].(string)]++
	}
	for _, p := range []string{filepath.Join(dir, "ccache.statslog"), makeLog, filepath.Join(cwd, ".ninja_log")} {
		if warned[p] != 1 {
			t.Errorf("%s: warned %d times, want once (%v)", p, warned[p], warned)
		}
	}
}

// blockingLogs never returns from ConsumeLogs until released.
type blockingLogs struct {
	release chan struct{}
	calls   chan struct{}
}

func (b *blockingLogs) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *blockingLogs) ConsumeLogs(ctx context.Context, _ plog.Logs) error {
	select {
	case b.calls <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

// A logs pipeline that hangs holds up live records only: finished builds
// are still delivered.
func TestLiveStuckLogsPipelineDoesNotDelayFinishedBuilds(t *testing.T) {
	parent := t.TempDir()
	running := filepath.Join(parent, fmt.Sprintf("20261130T034342-%d", os.Getpid()))
	if err := os.Mkdir(running, 0o755); err != nil {
		t.Fatal(err)
	}
	statslog, _ := case01Statslog(t)
	appendFile(t, filepath.Join(running, "ccache.statslog"), statslog)
	logs := &blockingLogs{release: make(chan struct{}), calls: make(chan struct{}, 1)}
	defer close(logs.release)
	traces := new(consumertest.TracesSink)
	cfg := liveTestConfig(parent)
	set := receivertest.NewNopSettings(metadata.Type)
	f := NewFactory()
	tr, err := f.CreateTraces(context.Background(), set, cfg, traces)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateLogs(context.Background(), set, cfg, logs); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-logs.calls:
	case <-time.After(15 * time.Second):
		t.Fatal("no live records were sent")
	}
	copyCaseBuild(t, case01, parent) // a finished build while the logs pipeline hangs
	waitFor(t, "the finished build's trace", func() bool { return len(traces.AllTraces()) == 1 })
	// Shutdown cancels the hung send (its context ends).
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}
