//go:build cgo

package ffi

import (
	"context"
	"testing"
)

// A panic in the core while it encodes a chunk is an error for that chunk
// only: the handle stays usable, closes, and nothing stays open.
func TestPanicInTheMiddleOfAStreamIsAnErrorAndTheStreamCloses(t *testing.T) {
	before := OpenStreams()
	dir := bigBuild(t, 25)
	req := Request{InvocationDir: dir, HostName: "h", Signals: SignalTraces, forcePanicInChunk: true}
	res, stream, err := Open(context.Background(), req, 10)
	if err != nil || stream == nil || !res.HasTraces {
		t.Fatalf("open: %v, stream %v", err, stream)
	}
	if OpenStreams() != before+1 {
		t.Fatalf("%d streams open, want %d", OpenStreams(), before+1)
	}
	if stream.Info.Chunks != 3 || stream.Info.Spans != 27 || res.Summary.Spans != 27 {
		t.Fatalf("info %+v, summary %+v", stream.Info, res.Summary)
	}
	if td, err := stream.Chunk(context.Background(), 0); err != nil || td.SpanCount() != 10 {
		t.Fatalf("chunk 0: %v, %d spans", err, td.SpanCount())
	}
	if _, err := stream.Chunk(context.Background(), 1); CodeOf(err) != CodePanic {
		t.Fatalf("chunk 1: want a panic error, got %v", err)
	}
	if td, err := stream.Chunk(context.Background(), 2); err != nil || td.SpanCount() != 7 {
		t.Fatalf("chunk 2 after the panic: %v, %d spans", err, td.SpanCount())
	}
	if _, err := stream.Chunk(context.Background(), 3); CodeOf(err) != CodeInvalidRequest {
		t.Fatalf("chunk past the end: %v", err)
	}
	stream.Close()
	stream.Close() // a second close is a no-op
	if OpenStreams() != before {
		t.Fatalf("%d streams open after close, want %d", OpenStreams(), before)
	}
}

// A failed open returns no stream and leaves none open; a cancelled chunk
// is an error.
func TestFailedOpenAndCancelledChunkLeaveNoStream(t *testing.T) {
	before := OpenStreams()
	if _, stream, err := Open(context.Background(), Request{InvocationDir: t.TempDir(), Signals: SignalTraces}, 10); CodeOf(err) != CodeIO || stream != nil {
		t.Fatalf("missing timing.json: %v, stream %v", err, stream)
	}
	if _, stream, err := Open(context.Background(), Request{InvocationDir: t.TempDir(), Signals: SignalTraces, forcePanic: true}, 10); CodeOf(err) != CodePanic || stream != nil {
		t.Fatalf("panic in open: %v, stream %v", err, stream)
	}
	_, stream, err := Open(context.Background(), Request{InvocationDir: bigBuild(t, 5), Signals: SignalTraces}, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := stream.Chunk(ctx, 0); CodeOf(err) != CodeCancelled {
		t.Fatalf("cancelled chunk: %v", err)
	}
	stream.Close()
	// Metrics only: no trace, no stream.
	if res, stream, err := Open(context.Background(), Request{InvocationDir: bigBuild(t, 5), Signals: SignalMetrics}, 2); err != nil || stream != nil || res.HasTraces {
		t.Fatalf("metrics only: %v, stream %v", err, stream)
	}
	if OpenStreams() != before {
		t.Fatalf("%d streams open, want %d", OpenStreams(), before)
	}
}
