package compiletoolsreceiver

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var testTraceID = pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func spanID(n int) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], uint64(n)+1)
	return id
}

// buildShapedTraces makes a trace shaped like the core's: one resource, the
// build scope with a root, phases and rules in pre-order, and optionally a
// second scope (the ccache snapshot of metrics_as_spans) under the root.
func buildShapedTraces(phases, rulesPerPhase int, snapshot bool) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://example.test/resource")
	rs.Resource().Attributes().PutStr("service.name", "compiletools")
	rs.Resource().Attributes().PutStr("host.name", "h")
	rs.Resource().Attributes().PutInt("n", 7)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("compiletools")
	ss.Scope().SetVersion("1")
	ss.SetSchemaUrl("https://example.test/scope")
	next := 0
	add := func(spans ptrace.SpanSlice, name string, parent pcommon.SpanID) pcommon.SpanID {
		s := spans.AppendEmpty()
		s.SetTraceID(testTraceID)
		s.SetSpanID(spanID(next))
		next++
		s.SetParentSpanID(parent)
		s.SetName(name)
		s.Attributes().PutStr("ct.target", name+"/target")
		s.Events().AppendEmpty().SetName("event of " + name)
		return s.SpanID()
	}
	root := add(ss.Spans(), "compiletools.build", pcommon.SpanID{})
	for p := 0; p < phases; p++ {
		phase := add(ss.Spans(), fmt.Sprintf("phase.%d", p), root)
		for r := 0; r < rulesPerPhase; r++ {
			add(ss.Spans(), fmt.Sprintf("compile.%d.%d", p, r), phase)
		}
	}
	if snapshot {
		snap := rs.ScopeSpans().AppendEmpty()
		snap.Scope().SetName("compiletools.ccache")
		add(snap.Spans(), "ct.ccache.snapshot", root)
	}
	return td
}

// spanRecord is a span with the resource and scope it was sent under.
type spanRecord struct {
	resource map[string]any
	resURL   string
	scope    string
	scopeVer string
	scopeURL string
	span     ptrace.Span
}

func records(td ptrace.Traces) []spanRecord {
	var out []spanRecord
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				out = append(out, spanRecord{rs.Resource().Attributes().AsRaw(), rs.SchemaUrl(),
					ss.Scope().Name(), ss.Scope().Version(), ss.SchemaUrl(), s})
			}
		}
	}
	return out
}

func TestSplitTracesKeepsEverySpanItsContextAndItsParents(t *testing.T) {
	for _, tc := range []struct {
		phases, rules, max int
		snapshot           bool
	}{
		{phases: 6, rules: 100, max: 64},
		{phases: 6, rules: 100, max: 1},
		{phases: 3, rules: 10, max: 33, snapshot: true}, // the last request: a build span and the snapshot scope
		{phases: 3, rules: 10, max: 34, snapshot: true}, // the snapshot scope alone: the first request loses it whole
		{phases: 3, rules: 10, max: 10, snapshot: true},
		{phases: 1, rules: 4999, max: 2048},
	} {
		t.Run(fmt.Sprintf("%dx%d/max%d/snapshot=%v", tc.phases, tc.rules, tc.max, tc.snapshot), func(t *testing.T) {
			want := records(buildShapedTraces(tc.phases, tc.rules, tc.snapshot))
			td := buildShapedTraces(tc.phases, tc.rules, tc.snapshot)
			chunks := splitTraces(td, tc.max)

			wantChunks := (len(want) + tc.max - 1) / tc.max
			if len(chunks) != wantChunks {
				t.Fatalf("%d spans at most %d per request: got %d requests, want %d", len(want), tc.max, len(chunks), wantChunks)
			}
			if chunks[0] != td {
				t.Error("the first request is not the input itself (its spans were copied)")
			}
			var got []spanRecord
			seenIn := map[pcommon.SpanID]int{} // span -> request index
			for i, c := range chunks {
				n := c.SpanCount()
				if n == 0 || n > tc.max {
					t.Fatalf("request %d has %d spans (max %d)", i, n, tc.max)
				}
				if i < len(chunks)-1 && n != tc.max {
					t.Errorf("request %d has %d spans; only the last may have fewer than %d", i, n, tc.max)
				}
				for _, rs := range c.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						if ss.Spans().Len() == 0 {
							t.Errorf("request %d has an empty scope %q", i, ss.Scope().Name())
						}
					}
				}
				if c.ResourceSpans().Len() != 1 {
					t.Errorf("request %d has %d resources; the build has one", i, c.ResourceSpans().Len())
				}
				for _, rec := range records(c) {
					seenIn[rec.span.SpanID()] = i
					got = append(got, rec)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("got %d spans, want %d", len(got), len(want))
			}
			for k := range want {
				w, g := want[k], got[k]
				if g.span.SpanID() != w.span.SpanID() || g.span.Name() != w.span.Name() {
					t.Fatalf("span %d: got %s %q, want %s %q (order not kept)", k, g.span.SpanID(), g.span.Name(), w.span.SpanID(), w.span.Name())
				}
				if g.span.TraceID() != testTraceID {
					t.Errorf("span %d: trace id %s", k, g.span.TraceID())
				}
				if g.span.ParentSpanID() != w.span.ParentSpanID() {
					t.Errorf("span %d: parent changed", k)
				}
				if !reflect.DeepEqual(g.span.Attributes().AsRaw(), w.span.Attributes().AsRaw()) || g.span.Events().Len() != 1 ||
					g.span.Events().At(0).Name() != w.span.Events().At(0).Name() {
					t.Errorf("span %d: attributes or events lost", k)
				}
				if !reflect.DeepEqual(g.resource, w.resource) || g.resURL != w.resURL {
					t.Errorf("span %d: resource %v (%s), want %v (%s)", k, g.resource, g.resURL, w.resource, w.resURL)
				}
				if g.scope != w.scope || g.scopeVer != w.scopeVer || g.scopeURL != w.scopeURL {
					t.Errorf("span %d: scope %q %q %q, want %q %q %q", k, g.scope, g.scopeVer, g.scopeURL, w.scope, w.scopeVer, w.scopeURL)
				}
			}
			if got[0].span.ParentSpanID() != (pcommon.SpanID{}) || seenIn[got[0].span.SpanID()] != 0 {
				t.Error("the root is not the first span of the first request")
			}
			for _, rec := range got {
				parent := rec.span.ParentSpanID()
				if parent.IsEmpty() {
					continue
				}
				at, ok := seenIn[parent]
				if !ok {
					t.Fatalf("span %q: parent %s is in no request", rec.span.Name(), parent)
				}
				if at > seenIn[rec.span.SpanID()] {
					t.Errorf("span %q: parent sent in request %d, after the child's %d", rec.span.Name(), at, seenIn[rec.span.SpanID()])
				}
			}
		})
	}
}

func TestSplitTracesLeavesARequestThatFitsAlone(t *testing.T) {
	for _, max := range []int{0, 6, 16} {
		td := buildShapedTraces(1, 4, false) // 6 spans
		chunks := splitTraces(td, max)
		if len(chunks) != 1 || chunks[0] != td || td.SpanCount() != 6 {
			t.Errorf("max %d: a trace of 6 spans was cut into %d requests", max, len(chunks))
		}
	}
	if chunks := splitTraces(ptrace.NewTraces(), 3); len(chunks) != 1 || chunks[0].SpanCount() != 0 {
		t.Errorf("an empty trace gave %d requests", len(chunks))
	}
}
