//go:build cgo

package ffi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// corpusBuilds lists the invocation directory and statslog of every case
// of the shared corpus.
func corpusBuilds(t testing.TB) map[string]Request {
	t.Helper()
	corpus := os.Getenv("CT_CORPUS_DIR")
	if corpus == "" {
		corpus = filepath.Join("..", "..", "..", "..", "shared", "corpus")
	}
	dirs, _ := filepath.Glob(filepath.Join(corpus, "cases", "*", "diagnostics", "*"))
	if len(dirs) == 0 {
		t.Fatalf("no corpus builds under %s (set CT_CORPUS_DIR)", corpus)
	}
	builds := map[string]Request{}
	for _, dir := range dirs {
		caseDir := filepath.Dir(filepath.Dir(dir))
		req := Request{
			InvocationDir:      dir,
			HostName:           "decode-test",
			ServiceName:        "ct",
			ResourceAttributes: []Attribute{{"deployment.environment.name", "ci"}},
			Signals:            SignalTraces,
			MetricsAsSpans:     true, // the ccache numbers as spans too
			VCS:                VCS{RefHeadName: "main", RefHeadType: "branch"},
		}
		if _, err := os.Stat(filepath.Join(caseDir, "ccache.statslog")); err == nil {
			req.StatslogPath = filepath.Join(caseDir, "ccache.statslog")
		}
		builds[filepath.Base(caseDir)] = req
	}
	return builds
}

// encodedChunks has the core encode every chunk of a build's trace and
// returns copies of their bytes.
func encodedChunks(t testing.TB, req Request, maxSpans int) [][]byte {
	t.Helper()
	_, stream, err := Open(context.Background(), req, maxSpans)
	if err != nil || stream == nil {
		t.Fatalf("open %s: %v (stream %v)", req.InvocationDir, err, stream)
	}
	defer stream.Close()
	chunks := make([][]byte, stream.Info.Chunks)
	for k := range chunks {
		c, err := stream.Encode(context.Background(), k)
		if err != nil {
			t.Fatalf("chunk %d: %v", k, err)
		}
		chunks[k] = bytes.Clone(bufferBytes(c.out.traces))
		c.Free()
	}
	return chunks
}

func marshalTraces(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fastDecode runs traceDecoder alone: whether it took the input, and
// what it made of it.
func fastDecode(raw []byte) (ptrace.Traces, bool) {
	d := traceDecoder{raw: raw}
	td := ptrace.NewTraces()
	return td, d.request(td)
}

// assertSameAsPdata decodes raw with traceDecoder (which must take it)
// and with pdata, and wants the same traces.
func assertSameAsPdata(t *testing.T, name string, raw []byte) {
	t.Helper()
	got, ok := fastDecode(raw)
	if !ok {
		t.Fatalf("%s: the decoder left a chunk the core wrote to pdata", name)
	}
	want, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		t.Fatalf("%s: pdata: %v", name, err)
	}
	if got.SpanCount() != want.SpanCount() || !bytes.Equal(marshalTraces(t, got), marshalTraces(t, want)) {
		t.Fatalf("%s: decoded traces differ from pdata's (%d spans, pdata %d)", name, got.SpanCount(), want.SpanCount())
	}
}

// Every chunk the core writes for every corpus build, cut small (several
// resources and scopes over chunks) and whole, decodes to what pdata
// decodes, without falling back.
func TestDecoderMatchesPdataOnEveryCorpusChunk(t *testing.T) {
	for name, req := range corpusBuilds(t) {
		for _, maxSpans := range []int{0, 7} {
			for k, raw := range encodedChunks(t, req, maxSpans) {
				assertSameAsPdata(t, fmt.Sprintf("%s, chunks of %d spans, chunk %d", name, maxSpans, k), raw)
			}
		}
	}
}

// A generated build of many rules, in requests of the receiver's default
// size, decodes to what pdata decodes; so does a large build given in
// CT_BENCH_TIMING_DIR (the benchmarks' 100k-rule one), when set.
func TestDecoderMatchesPdataOnLargeBuilds(t *testing.T) {
	dirs := []string{bigBuild(t, 3000)}
	if dir := os.Getenv("CT_BENCH_TIMING_DIR"); dir != "" && !testing.Short() {
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		req := Request{InvocationDir: dir, HostName: "h", Signals: SignalTraces, Limits: Limits{MaxFileBytes: 1 << 30, MaxEvents: 2_000_000}}
		chunks := encodedChunks(t, req, 128)
		if len(chunks) < 20 {
			t.Fatalf("%s: %d chunks", dir, len(chunks))
		}
		for _, raw := range chunks {
			assertSameAsPdata(t, dir, raw)
		}
	}
}

// everyKindOfTraces holds every field the decoder knows: all value kinds
// (nested), events, links, status, flags, trace state, schema URLs,
// dropped counts, two resources and scopes.
func everyKindOfTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		rs.Resource().Attributes().PutStr("host.name", "build-host")
		rs.Resource().Attributes().PutInt("r", int64(r))
		rs.Resource().SetDroppedAttributesCount(3)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.SetSchemaUrl("s")
		ss.Scope().SetName("compiletools")
		ss.Scope().SetVersion("1.0")
		ss.Scope().Attributes().PutBool("b", true)
		ss.Scope().SetDroppedAttributesCount(1)
		for i := range 3 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(r)})
			sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(i)})
			sp.SetParentSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 9, 9})
			sp.TraceState().FromRaw("ct=1")
			sp.SetName("compile.f.cpp")
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetStartTimestamp(1_700_000_000_000_000_000)
			sp.SetEndTimestamp(1_700_000_000_500_000_000)
			sp.SetFlags(0x101)
			sp.SetDroppedAttributesCount(2)
			sp.SetDroppedEventsCount(4)
			sp.SetDroppedLinksCount(5)
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage("failed")
			a := sp.Attributes()
			a.PutStr("ct.source", "/p/src/f.cpp")
			a.PutStr("", "empty key")
			a.PutStr("empty", "")
			a.PutInt("neg", -42)
			a.PutDouble("d", 0.25)
			a.PutBool("f", false)
			a.PutEmpty("nothing")
			a.PutEmptyBytes("raw").FromRaw([]byte{0, 1, 2})
			a.PutEmptyBytes("noraw")
			sl := a.PutEmptySlice("list")
			sl.AppendEmpty().SetStr("x")
			sl.AppendEmpty().SetInt(7)
			sl.AppendEmpty()
			sl.AppendEmpty().SetEmptySlice().AppendEmpty().SetDouble(1.5)
			m := a.PutEmptyMap("map")
			m.PutStr("k", "v")
			m.PutEmptyMap("inner").PutBool("t", true)
			a.PutEmptySlice("emptylist")
			ev := sp.Events().AppendEmpty()
			ev.SetName("exception")
			ev.SetTimestamp(1_700_000_000_100_000_000)
			ev.Attributes().PutStr("exception.message", "boom")
			ev.SetDroppedAttributesCount(1)
			sp.Events().AppendEmpty()
			l := sp.Links().AppendEmpty()
			l.SetTraceID(pcommon.TraceID{7})
			l.SetSpanID(pcommon.SpanID{8})
			l.TraceState().FromRaw("a=b")
			l.Attributes().PutStr("link", "yes")
			l.SetDroppedAttributesCount(6)
			l.SetFlags(1)
		}
	}
	return td
}

// The fields the core does not write today (yet) decode as pdata does.
func TestDecoderMatchesPdataOnEveryField(t *testing.T) {
	assertSameAsPdata(t, "every field", marshalTraces(t, everyKindOfTraces()))
	assertSameAsPdata(t, "empty request", marshalTraces(t, ptrace.NewTraces()))
}

// lengthDelimited appends field num holding body to buf.
func lengthDelimited(buf []byte, num uint64, body []byte) []byte {
	for _, v := range []uint64{num<<3 | wireBytes, uint64(len(body))} {
		for ; v >= 0x80; v >>= 7 {
			buf = append(buf, byte(v)|0x80)
		}
		buf = append(buf, byte(v))
	}
	return append(buf, body...)
}

// requestWithSpan is a hand-made trace request: one span of the given
// fields.
func requestWithSpan(span []byte) []byte {
	return lengthDelimited(nil, 1, lengthDelimited(nil, 2, lengthDelimited(nil, 2, span)))
}

func stringAttribute(key, value string) []byte {
	return lengthDelimited(lengthDelimited(nil, 1, []byte(key)), 2, lengthDelimited(nil, 1, []byte(value)))
}

// What the decoder does not take goes to pdata whole, is counted, and
// gives pdata's result: a duplicate key (kept twice, as pdata does), a
// field the decoder does not know (skipped, as pdata does), and bytes
// cut short (pdata's error).
func TestDecoderFallsBackToPdataAndCountsIt(t *testing.T) {
	dup := requestWithSpan(lengthDelimited(lengthDelimited(lengthDelimited(nil, 5, []byte("s")), 9, stringAttribute("a", "1")), 9, stringAttribute("a", "2")))
	unknown := requestWithSpan(lengthDelimited(lengthDelimited(nil, 5, []byte("s")), 99, []byte("future")))
	canonical := marshalTraces(t, everyKindOfTraces())
	truncated := canonical[:len(canonical)-3]

	for _, c := range []struct {
		name     string
		raw      []byte
		wantErr  bool
		wantAttr int // attributes of the first span
	}{
		{"duplicate key", dup, false, 2},
		{"unknown field", unknown, false, 0},
		{"truncated", truncated, true, 0},
	} {
		if _, ok := fastDecode(c.raw); ok {
			t.Fatalf("%s: the decoder took it", c.name)
		}
		before := TraceDecodeFallbacks()
		got, err := unmarshalTraces(c.raw)
		if TraceDecodeFallbacks() != before+1 {
			t.Errorf("%s: fallbacks %d -> %d, want one more", c.name, before, TraceDecodeFallbacks())
		}
		want, wantErr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(c.raw)
		if c.wantErr {
			if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
				t.Errorf("%s: error %v, pdata's %v", c.name, err, wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(marshalTraces(t, got), marshalTraces(t, want)) {
			t.Errorf("%s: %v, or traces differ from pdata's", c.name, err)
		}
		span := got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		if span.Name() != "s" || span.Attributes().Len() != c.wantAttr {
			t.Errorf("%s: span %q with %d attributes, want \"s\" with %d", c.name, span.Name(), span.Attributes().Len(), c.wantAttr)
		}
	}
	// What the decoder takes is not counted.
	before := TraceDecodeFallbacks()
	if _, err := unmarshalTraces(canonical); err != nil || TraceDecodeFallbacks() != before {
		t.Errorf("canonical input: %v, fallbacks %d -> %d", err, before, TraceDecodeFallbacks())
	}
}

// The decoder's strings are copies: the input may be overwritten (the
// core's buffer is freed right after decoding) without changing them.
func TestDecodedTracesSurviveOverwritingTheInput(t *testing.T) {
	raw := marshalTraces(t, everyKindOfTraces())
	want := bytes.Clone(raw)
	td, ok := fastDecode(raw)
	if !ok {
		t.Fatal("the decoder left its own kind of input to pdata")
	}
	for i := range raw {
		raw[i] = 0xA5
	}
	if !bytes.Equal(marshalTraces(t, td), want) {
		t.Fatal("decoded traces changed with their input")
	}
}

// FuzzDecoderIsPdataOrFallsBack: whatever the bytes, the decoder either
// leaves them to pdata or decodes them exactly as pdata does (and never
// panics). `go test` runs the seeds: real chunks of corpus case 01 and
// the every-field request; `go test -fuzz FuzzDecoder` mutates them.
func FuzzDecoderIsPdataOrFallsBack(f *testing.F) {
	f.Add(marshalTraces(f, everyKindOfTraces()))
	f.Add(requestWithSpan(lengthDelimited(lengthDelimited(nil, 9, stringAttribute("a", "1")), 9, stringAttribute("a", "2"))))
	for name, req := range corpusBuilds(f) {
		if name != "01-geom-shake-cold" {
			continue
		}
		for _, raw := range encodedChunks(f, req, 5)[:4] {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := fastDecode(raw)
		want, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("the decoder took bytes pdata refuses: %v", err)
		}
		if !bytes.Equal(marshalTraces(t, got), marshalTraces(t, want)) {
			t.Fatal("decoded traces differ from pdata's")
		}
	})
}

// BenchmarkTraceChunkDecode: the receiver's decoder against pdata's
// unmarshaler on every tenth chunk (128 spans) of the build in
// CT_BENCH_TIMING_DIR, one chunk an op, allocations reported.
func BenchmarkTraceChunkDecode(b *testing.B) {
	dir := os.Getenv("CT_BENCH_TIMING_DIR")
	if dir == "" {
		b.Skip("set CT_BENCH_TIMING_DIR to an invocation directory with a large timing.json")
	}
	req := Request{InvocationDir: dir, HostName: "bench", Signals: SignalTraces, Limits: Limits{MaxFileBytes: 1 << 30, MaxEvents: 2_000_000}}
	all := encodedChunks(b, req, 128)
	var chunks [][]byte
	for k := 0; k < len(all); k += 10 {
		chunks = append(chunks, all[k])
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (ptrace.Traces, error)
	}{
		{"decoder", unmarshalTraces},
		{"pdata", (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := c.decode(chunks[i%len(chunks)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
