//go:build cgo

package ffi

import (
	"context"
	"testing"
)

// The core keeps a large build's buffers for the next build; the receiver
// frees them when it goes idle (ReleaseKeptBuffers), and they are gone then.
func TestReleaseKeptBuffersFreesWhatALargeBuildLeft(t *testing.T) {
	ReleaseKeptBuffers() // whatever earlier tests left
	// ~7 MB of text and more of output: within what the core keeps.
	req := Request{InvocationDir: bigBuild(t, 30_000), HostName: "h", Signals: SignalTraces}
	res, err := Process(context.Background(), req)
	if err != nil || !res.HasTraces {
		t.Fatalf("process: %v (traces: %v)", err, res.HasTraces)
	}
	freed := ReleaseKeptBuffers()
	if freed < 4<<20 {
		t.Fatalf("freed %d bytes after a large build, want at least the 4 MiB the core keeps at the least", freed)
	}
	if again := ReleaseKeptBuffers(); again != 0 {
		t.Fatalf("a second release freed %d bytes, want 0", again)
	}
}
