//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TraceStream is a build's trace held by the core, handed over one request
// (chunk) at a time: the whole trace never exists as bytes or as pdata.
// Close it on every path; chunks may be encoded from one goroutine while
// another decodes (Encode and Close must not overlap).
type TraceStream struct {
	handle *C.CtBuildStream
	Info   StreamInfo
	once   sync.Once
}

// Open reads one build: metrics, warnings and counts now, the trace (when
// asked for) as a stream of chunks of at most maxChunkSpans spans (<= 0:
// one chunk). The stream is nil on error or without a trace.
func Open(ctx context.Context, req Request, maxChunkSpans int) (Result, *TraceStream, error) {
	var res Result
	var stream *TraceStream
	err := coreCall(ctx, func(s *callScope) error {
		creq, releaseHistory := s.buildRequest(req)
		defer releaseHistory()
		var out C.CtBuildResult
		defer C.ct_build_result_free(&out)
		var handle *C.CtBuildStream
		code := C.ct_build_open(&creq, C.uint64_t(max(maxChunkSpans, 0)), s.token, &out, &handle)
		output, err := decodeOutput(Code(code), bufferBytes(out.error_message), bufferBytes(out.warnings), nil, bufferBytes(out.metrics))
		if err == nil {
			err = decodeLogs(&output, bufferBytes(out.logs))
		}
		if err != nil {
			C.ct_build_stream_close(handle) // null on error; closed anyway should one come
			return err
		}
		res = Result{Output: output, Summary: summaryOf(&out)}
		if handle != nil {
			var info C.CtTraceStreamInfo
			C.ct_build_stream_info(handle, &info)
			stream = &TraceStream{handle: handle, Info: StreamInfo{
				Spans:   uint64(info.spans),
				Chunks:  int(info.chunks),
				TraceID: traceIDOf(&info),
			}}
			res.HasTraces = true
		}
		return nil
	})
	return res, stream, err
}

func traceIDOf(info *C.CtTraceStreamInfo) (id [16]byte) {
	for i := range id {
		id[i] = byte(info.trace_id[i])
	}
	return id
}

// RawChunk is one encoded request, in core memory until Free.
type RawChunk struct {
	out C.CtChunkResult
}

// Encode has the core encode chunk k. The caller must Free the result.
func (s *TraceStream) Encode(ctx context.Context, k int) (*RawChunk, error) {
	var chunk *RawChunk
	err := coreCall(ctx, func(sc *callScope) error {
		c := &RawChunk{}
		code := C.ct_build_stream_chunk(s.handle, C.uint64_t(k), sc.token, &c.out)
		if Code(code) != CodeOK {
			err := &Error{Code: Code(code), Message: string(bufferBytes(c.out.error_message))}
			C.ct_chunk_result_free(&c.out)
			return err
		}
		chunk = c
		return nil
	})
	return chunk, err
}

// Decode copies the chunk into pdata (nothing of it points into core
// memory, see decodeOutput; unmarshalTraces says how).
func (c *RawChunk) Decode() (ptrace.Traces, error) {
	td, _, err := decodeSignal(bufferBytes(c.out.traces), "traces", unmarshalTraces)
	return td, err
}

// Size is the chunk's encoded size in bytes.
func (c *RawChunk) Size() int { return int(c.out.traces.len) }

// Free gives the chunk's memory back to the core; a second call is a no-op.
func (c *RawChunk) Free() { C.ct_chunk_result_free(&c.out) }

// Chunk encodes and decodes chunk k in one step.
func (s *TraceStream) Chunk(ctx context.Context, k int) (ptrace.Traces, error) {
	c, err := s.Encode(ctx, k)
	if err != nil {
		return ptrace.Traces{}, err
	}
	defer c.Free()
	return c.Decode()
}

// Close frees the build the core holds; later calls do nothing.
func (s *TraceStream) Close() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		C.ct_build_stream_close(s.handle)
		s.handle = nil
	})
}

// OpenStreams is the number of streams the core holds open (leak checks).
func OpenStreams() uint64 { return uint64(C.ct_build_streams_open()) }
