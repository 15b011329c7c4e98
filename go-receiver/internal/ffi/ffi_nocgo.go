//go:build !cgo

package ffi

import (
	"context"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// LibraryHeaderSHA256 reports "": there is no core without cgo.
func LibraryHeaderSHA256() string { return "" }

// CheckABI always fails without cgo.
func CheckABI() error { return ErrCgoRequired }

// Process always fails without cgo.
func Process(context.Context, Request) (Result, error) { return Result{}, ErrCgoRequired }

// casKinds is empty without cgo: no store can be scanned, so a
// configuration naming one is refused (Start would fail anyway).
var casKinds []casKindName

// CASCache is unavailable without cgo.
type CASCache struct{}

// NewCASCache always fails without cgo.
func NewCASCache() (*CASCache, error) { return nil, ErrCgoRequired }

// Close does nothing.
func (c *CASCache) Close() {}

// Retain does nothing.
func (c *CASCache) Retain([]string) int { return 0 }

// Footprint is always zero without cgo.
func (c *CASCache) Footprint() CASCacheFootprint { return CASCacheFootprint{} }

// ScanCAS always fails without cgo.
func ScanCAS(context.Context, CASRequest, *CASCache) (CASResult, error) {
	return CASResult{}, ErrCgoRequired
}

// TraceStream is unavailable without cgo.
type TraceStream struct{ Info StreamInfo }

// Open always fails without cgo.
func Open(context.Context, Request, int) (Result, *TraceStream, error) {
	return Result{}, nil, ErrCgoRequired
}

// Close does nothing.
func (s *TraceStream) Close() {}

// OpenStreams is always zero without cgo.
func OpenStreams() uint64 { return 0 }

// RawChunk is unavailable without cgo.
type RawChunk struct{}

// Encode always fails without cgo.
func (s *TraceStream) Encode(context.Context, int) (*RawChunk, error) { return nil, ErrCgoRequired }

// Chunk always fails without cgo.
func (s *TraceStream) Chunk(context.Context, int) (ptrace.Traces, error) {
	return ptrace.Traces{}, ErrCgoRequired
}

// Decode always fails without cgo.
func (c *RawChunk) Decode() (ptrace.Traces, error) { return ptrace.Traces{}, ErrCgoRequired }

// Size is zero without cgo.
func (c *RawChunk) Size() int { return 0 }

// Free does nothing.
func (c *RawChunk) Free() {}

// ReleaseKeptBuffers frees nothing without cgo: there is no core.
func ReleaseKeptBuffers() uint64 { return 0 }
