package ffi

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The core's result buffers are freed (and their memory reused) as soon as
// decodeOutput returned, so the Output must not share a byte with them.
// pdata v1.71 copies on unmarshal; a later pdata that unmarshals without
// copying ("zero-copy") would make every receiver read freed Rust memory.
// This test overwrites the input right after decoding and wants the Output
// unchanged, so such an upgrade fails here first.
func TestDecodedOutputSurvivesOverwritingTheCoreBuffers(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("host.name", "build-host-07")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("compile.util/helper.cpp")
	span.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	span.Attributes().PutStr("ct.source", "/p/util/helper.cpp")
	span.Attributes().PutEmptyBytes("blob").FromRaw([]byte("raw-bytes-value"))
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("ct.ccache.events")
	dp := m.SetEmptySum().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("ccache_event", "cache_miss")
	dp.SetIntValue(29)

	wantTraces, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	// The "core buffers": copies of the encodings, overwritten below.
	traces, metrics := bytes.Clone(wantTraces), bytes.Clone(wantMetrics)
	warnings := []byte("first warning\nsecond warning")

	out, err := decodeOutput(CodeOK, nil, warnings, traces, metrics)
	if err != nil || !out.HasTraces || !out.HasMetrics {
		t.Fatalf("decode: %v (traces %v, metrics %v)", err, out.HasTraces, out.HasMetrics)
	}
	for _, b := range [][]byte{traces, metrics, warnings} {
		for i := range b {
			b[i] = 0xA5
		}
	}
	runtime.GC()

	gotTraces, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(out.Traces)
	if err != nil {
		t.Fatal(err)
	}
	gotMetrics, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(out.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotTraces, wantTraces) {
		t.Errorf("traces changed with the core's buffer: span name now %q", out.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name())
	}
	if !bytes.Equal(gotMetrics, wantMetrics) {
		t.Errorf("metrics changed with the core's buffer: metric name now %q", out.Metrics.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name())
	}
	if len(out.Warnings) != 2 || out.Warnings[0] != "first warning" || out.Warnings[1] != "second warning" {
		t.Errorf("warnings changed with the core's buffer: %q", out.Warnings)
	}
}

func TestDecodeOutputErrorCarriesTheCoreMessage(t *testing.T) {
	message := []byte("timing.json: not a regular file")
	_, err := decodeOutput(CodeIO, message, nil, nil, nil)
	message[0] = 'X'
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeIO || e.Message != "timing.json: not a regular file" {
		t.Fatalf("got %v", err)
	}
}
