package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/compiletools-otel/compiletoolsreceiver"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

const testHost = "dump-test-host"

// corpusBuild copies the invocation directory of a corpus case into a new
// diagnostics directory and returns the copy.
func corpusBuild(t *testing.T, caseName string) string {
	t.Helper()
	corpus := os.Getenv("CT_CORPUS_DIR")
	if corpus == "" {
		corpus = filepath.Join("..", "..", "..", "..", "shared", "corpus")
	}
	src := filepath.Join(corpus, "cases", caseName, "diagnostics")
	entries, err := os.ReadDir(src)
	if err != nil || len(entries) != 1 {
		t.Fatalf("case %s: want one invocation directory in %s (set CT_CORPUS_DIR): %v", caseName, src, err)
	}
	dst := filepath.Join(t.TempDir(), entries[0].Name())
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir(filepath.Join(src, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(src, entries[0].Name(), f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// collected runs the receiver on the build's diagnostics directory with
// host_name testHost and returns every span it delivered.
func collected(t *testing.T, dir string) ptrace.Traces {
	t.Helper()
	f := compiletoolsreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*compiletoolsreceiver.Config)
	cfg.Include = []string{filepath.Dir(dir)}
	cfg.StartAt = compiletoolsreceiver.StartAtBeginning
	cfg.HostName = testHost
	cfg.PollInterval = 20 * time.Millisecond
	cfg.SettleTimeout = 10 * time.Millisecond
	cfg.Capture.Directory = t.TempDir()
	sink := new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(sink.AllTraces()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receiver delivered nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the rest of a trace cut into several requests
	// Stopped first: the receiver still reads what it handed over until
	// Shutdown returns.
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := ptrace.NewTraces()
	for _, td := range sink.AllTraces() {
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	return all
}

// spanIDs lists "traceid/spanid" of every span, sorted.
func spanIDs(td ptrace.Traces) []string {
	var ids []string
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				s := ss.At(j).Spans().At(k)
				ids = append(ids, s.TraceID().String()+"/"+s.SpanID().String())
			}
		}
	}
	sort.Strings(ids)
	return ids
}

func resourceOf(td ptrace.Traces) pcommon.Map {
	return td.ResourceSpans().At(0).Resource().Attributes()
}

// The dump of a corpus build is the trace the receiver sends for it: the
// same trace id, the same spans (count and ids), the same resource.
func TestDumpMatchesWhatTheReceiverSends(t *testing.T) {
	for _, c := range []string{"01-geom-shake-cold", "12-geom-ninja-cold-native-flock", "14-geom-ninja-lockhelper-cold"} {
		t.Run(c, func(t *testing.T) {
			dir := corpusBuild(t, c)
			var out, errOut bytes.Buffer
			// The diagnostics directory: its newest (only) build.
			if code := run(context.Background(), []string{"-host-name", testHost, filepath.Dir(dir)}, &out, &errOut); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			lines := bufio.NewScanner(&out)
			lines.Buffer(nil, 64<<20)
			if !lines.Scan() || !strings.HasPrefix(lines.Text(), `{"resourceSpans":[`) {
				t.Fatalf("first line is not OTLP/JSON traces: %.200s", lines.Text())
			}
			dumped, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(lines.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			sent := collected(t, dir)
			if dumped.SpanCount() == 0 || dumped.SpanCount() != sent.SpanCount() {
				t.Fatalf("dump has %d spans, the receiver sent %d", dumped.SpanCount(), sent.SpanCount())
			}
			d, s := spanIDs(dumped), spanIDs(sent)
			if traceOf := func(id string) string { return id[:32] }; traceOf(d[0]) != traceOf(s[0]) || traceOf(d[0]) != traceOf(d[len(d)-1]) {
				t.Fatalf("trace id %s in the dump, %s sent", traceOf(d[0]), traceOf(s[0]))
			}
			for i := range d {
				if d[i] != s[i] {
					t.Fatalf("span %d: %s in the dump, %s sent", i, d[i], s[i])
				}
			}
			if !resourceOf(dumped).Equal(resourceOf(sent)) {
				t.Fatalf("resource differs:\ndump %v\nsent %v", resourceOf(dumped).AsRaw(), resourceOf(sent).AsRaw())
			}
		})
	}
}

// Another host name is another trace id: the flag is what ties a dump to a
// collector's host_name.
func TestHostNameChangesTheTraceID(t *testing.T) {
	dir := corpusBuild(t, "01-geom-shake-cold")
	traceID := func(host string) string {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"-host-name", host, "-signals", "traces", dir}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(bytes.TrimSpace(out.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return spanIDs(td)[0][:32]
	}
	if a, b := traceID("host-a"), traceID("host-b"); a == b {
		t.Fatalf("trace id %s for both host names", a)
	}
}

func TestBadArgumentsAndDirectories(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "usage"},
		{[]string{"-signals", "logs", "x"}, 2, "-signals"},
		{[]string{filepath.Join(t.TempDir(), "missing")}, 1, "no such file"},
		{[]string{t.TempDir()}, 1, "not an invocation directory"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), c.args, &out, &errOut); code != c.code || !strings.Contains(errOut.String(), c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errOut.String(), c.code, c.msg)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed %q on stdout", c.args, out.String())
		}
	}
}
