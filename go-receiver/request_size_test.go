package compiletoolsreceiver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// grpcDefaultMaxRecv is what a default gRPC server (the collector's otlp
// receiver among them) accepts in one message.
const grpcDefaultMaxRecv = 4 << 20

// The default max_request_spans keeps every traces request within half a
// default gRPC hop, for the corpus and for the largest spans ct-cake's
// rules can give under the default limits: paths cut at
// max_attribute_length, names as long as a file name can be, every
// metadata key ct-cake writes. CT_LARGE_TIMING_DIRS (invocation
// directories, separated by ':') adds builds, e.g. generated 100k-rule ones.
func TestDefaultMaxRequestSpansFitsAGRPCHop(t *testing.T) {
	builds := map[string]string{"longest spans": longSpansBuild(t, 2*defaultMaxRequestSpans+1)}
	cases, err := os.ReadDir(filepath.Join(corpusDir(t), "cases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		diag := filepath.Join(corpusDir(t), "cases", c.Name(), "diagnostics")
		invs, _ := os.ReadDir(diag)
		for _, inv := range invs {
			builds["corpus "+c.Name()] = filepath.Join(diag, inv.Name())
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("CT_LARGE_TIMING_DIRS")) {
		builds[dir] = dir
	}

	worst := 0
	for what, dir := range builds {
		res, err := ffi.Process(context.Background(), ffi.Request{InvocationDir: dir, HostName: "a-host-name-of-some-length.example", Signals: ffi.SignalTraces})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		td := res.Traces
		spans := td.SpanCount()
		span, name := largestSpan(td)
		total := traceBytes(td)
		largest := 0
		chunks := splitTraces(td, defaultMaxRequestSpans)
		for _, c := range chunks {
			largest = max(largest, traceBytes(c))
		}
		t.Logf("%s: %d spans, %d bytes in one request (%.0f per span); largest span %d bytes (%s); %d requests of at most %d spans, the largest %d bytes",
			what, spans, total, float64(total)/float64(spans), span, name, len(chunks), defaultMaxRequestSpans, largest)
		if largest > grpcDefaultMaxRecv/2 {
			t.Errorf("%s: a request of %d bytes is over half of a default gRPC hop (%d)", what, largest, grpcDefaultMaxRecv)
		}
		worst = max(worst, span)
	}
	if worst*defaultMaxRequestSpans > grpcDefaultMaxRecv/2 {
		t.Errorf("%d spans of the largest span seen (%d bytes) are over half of a default gRPC hop", defaultMaxRequestSpans, worst)
	}
}

func traceBytes(td ptrace.Traces) int { return (&ptrace.ProtoMarshaler{}).TracesSize(td) }

// largestSpan returns the most bytes one span adds to a request (its
// encoding and framing) and its name.
func largestSpan(td ptrace.Traces) (int, string) {
	best, name := 0, ""
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			one := ptrace.NewTraces()
			ors := one.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(ors.Resource())
			oss := ors.ScopeSpans().AppendEmpty()
			ss.Scope().CopyTo(oss.Scope())
			empty := traceBytes(one)
			slot := oss.Spans().AppendEmpty()
			for _, s := range ss.Spans().All() {
				s.CopyTo(slot)
				if n := traceBytes(one) - empty; n > best {
					best, name = n, s.Name()
				}
			}
		}
	}
	return best, name
}

// longSpansBuild writes a build of n rules whose spans are as large as
// ct-cake's can be under the default limits, and returns its invocation
// directory: every path longer than max_attribute_length (4096), file and
// directory names of 255 bytes (NAME_MAX), each rule type with the
// metadata ct-cake gives it.
func longSpansBuild(t *testing.T, n int) string {
	t.Helper()
	dirName := strings.Repeat("d", 255)
	deep := "/" + strings.Repeat(strings.Repeat("p", 200)+"/", 25) + dirName + "/"
	file := func(i int, ext string) string {
		stem := fmt.Sprintf("%06d", i)
		return strings.Repeat("f", 255-len(stem)-len(ext)) + stem + ext
	}
	type rule map[string]any
	rules := make([]rule, 0, n)
	at := 10002.0
	for i := 0; i < n; i++ {
		r := rule{"start_s": at, "end_s": at + 0.5, "elapsed_s": 0.5}
		at += 0.001
		switch i % 4 {
		case 0:
			r["rule_type"], r["name"] = "compile", file(i, ".cpp")
			r["target"], r["source"] = deep+file(i, ".o"), deep+file(i, ".cpp")
			r["metadata"] = map[string]any{"cas.hit": true, "cas.bytes_reused": 123456789, "cas.kind": "obj", "queue_wait_s": 1.234567, "ct.rule.cache_layer": "other"}
		case 1:
			r["rule_type"], r["name"] = "link", file(i, ".o")
			r["target"], r["source"] = deep+file(i, ".exe"), deep+file(i, ".o")
			r["metadata"] = map[string]any{"cas.hit": false, "cas.bytes_reused": 0, "cas.kind": "exe", "queue_wait_s": 0.5}
		case 2:
			r["rule_type"], r["name"] = "symlink", file(i, ".exe")
			r["target"], r["source"] = deep+file(i, ""), deep+file(i, ".exe")
			r["metadata"] = map[string]any{"queue_wait_s": 0.25}
		default:
			r["rule_type"], r["name"] = "test", file(i, ".result")
			r["target"] = deep + file(i, ".result")
			r["metadata"] = map[string]any{"queue_wait_s": 0.001}
		}
		rules = append(rules, r)
	}
	doc := map[string]any{
		"version": 1, "timestamp": "2026-01-01T12:00:00+00:00", "total_elapsed_s": at - 10000 + 1,
		"variant": strings.Repeat("v", 255), "backend": "shake", "start_s": 10000.0,
		"phases": []map[string]any{
			{"name": "build_graph", "start_s": 10000.0001, "end_s": 10002.0, "elapsed_s": 1.9999},
			{"name": "build_execution", "start_s": 10002.0, "end_s": at + 0.6, "elapsed_s": at + 0.6 - 10002, "rules": rules},
		},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "20260101T120000-4242")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
