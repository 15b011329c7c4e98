package ffi

import "go.opentelemetry.io/collector/pdata/pcommon"

// StreamInfo identifies how the core cut a build's trace: a re-read of
// the same build with the same chunk size gives the same values and the
// same bytes in every chunk.
type StreamInfo struct {
	Spans   uint64
	Chunks  int
	TraceID pcommon.TraceID
}
