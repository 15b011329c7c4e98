package compiletoolsreceiver

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// splitTraces cuts a build's trace into requests of at most maxSpans spans,
// so that no consumer is handed one unbounded request (a default gRPC hop
// refuses messages over 4 MiB; a 100k-rule build is about 66 MB).
//
// Span order is kept, and the core writes spans in pre-order, so the root
// is in the first request and every parent is in the same request as its
// child or an earlier one. Each request carries a copy of the resource and
// scope its spans came from; trace and span IDs are untouched.
//
// td is consumed: it becomes the first request (its spans past maxSpans are
// moved out, not copied), so a build that fits costs nothing. maxSpans <= 0
// means no limit.
func splitTraces(td ptrace.Traces, maxSpans int) []ptrace.Traces {
	if maxSpans <= 0 || td.SpanCount() <= maxSpans {
		return []ptrace.Traces{td}
	}
	s := traceSplitter{maxSpans: maxSpans, chunks: []ptrace.Traces{td}, room: maxSpans}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			s.moveOverflow(rs, sss.At(j))
		}
	}
	// The first request lost whole scopes (and resources) to later ones.
	rss.RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	return s.chunks
}

// traceSplitter fills requests in order; the first request is the input
// itself, later ones are built from what does not fit before them.
type traceSplitter struct {
	maxSpans int
	chunks   []ptrace.Traces
	room     int // spans the last request can still take
	// In the last request: the resource of the scope being split (valid
	// when resOpen) and its spans (valid when scopeOpen).
	res       ptrace.ResourceSpans
	resOpen   bool
	resFrom   ptrace.ResourceSpans // the input resource res copies
	dst       ptrace.SpanSlice
	scopeOpen bool
}

// moveOverflow leaves in the first request what fits there and moves every
// other span of ss, in order, into later requests (a span struct moved per
// span: attributes, events and links are not copied). RemoveIf compacts the
// input slice in the same single pass.
func (s *traceSplitter) moveOverflow(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) {
	s.scopeOpen = false
	left := ss.Spans().Len()
	ss.Spans().RemoveIf(func(span ptrace.Span) bool {
		left--
		if len(s.chunks) == 1 && s.room > 0 {
			s.room--
			return false // stays in the first request
		}
		if s.room == 0 {
			s.chunks = append(s.chunks, ptrace.NewTraces())
			s.room = s.maxSpans
			s.resOpen, s.scopeOpen = false, false
		}
		if !s.scopeOpen {
			s.openScope(rs, ss, min(s.room, left+1))
		}
		span.MoveTo(s.dst.AppendEmpty())
		s.room--
		return true
	})
}

// openScope starts, in the last request, a scope like ss under a resource
// like rs (reused if the previous scope had the same one), sized for n spans.
func (s *traceSplitter) openScope(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, n int) {
	if !s.resOpen || s.resFrom != rs {
		s.res = s.chunks[len(s.chunks)-1].ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(s.res.Resource())
		s.res.SetSchemaUrl(rs.SchemaUrl())
		s.resFrom, s.resOpen = rs, true
	}
	scope := s.res.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(scope.Scope())
	scope.SetSchemaUrl(ss.SchemaUrl())
	s.dst = scope.Spans()
	s.dst.EnsureCapacity(n)
	s.scopeOpen = true
}
