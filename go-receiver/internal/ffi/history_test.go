//go:build cgo

package ffi

import (
	"context"
	"testing"
)

// A build processed with a history is only remembered once committed; the
// saved bytes restore the same targets into a new history, within its
// (smaller) bound; garbage is refused and changes nothing.
func TestHistoryCommitSaveRestoreThroughTheBinding(t *testing.T) {
	h, err := NewHistory(1000, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	dir := bigBuild(t, 50)
	req := Request{InvocationDir: dir, HostName: "h", Signals: SignalTraces, History: h}
	if _, err := Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if f := h.Footprint(); f.Targets != 0 || f.StagedBuilds != 1 {
		t.Fatalf("before commit: %+v", f)
	}
	if n := h.Commit(dir); n != 50 {
		t.Fatalf("committed %d rules, want 50", n)
	}
	if n := h.Commit(dir); n != 0 {
		t.Fatalf("a second commit applied %d", n)
	}
	f := h.Footprint()
	if f.Targets != 50 || f.Compiles != 50 || f.Bytes == 0 || f.StagedBuilds != 0 {
		t.Fatalf("after commit: %+v", f)
	}
	saved, err := h.Save()
	if err != nil || len(saved) == 0 {
		t.Fatalf("save: %d bytes, %v", len(saved), err)
	}

	small, err := NewHistory(20, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if n, note, err := small.Restore(saved); err != nil || n != 50 || note != "" {
		t.Fatalf("restore: %d, %v", n, err)
	}
	if f := small.Footprint(); f.Targets != 20 || f.Evicted != 30 {
		t.Fatalf("restored into 20 targets: %+v", f)
	}
	if _, _, err := small.Restore([]byte("not a history at all")); CodeOf(err) != CodeInvalidRequest {
		t.Fatalf("garbage restored: %v", err)
	}
	if f := small.Footprint(); f.Targets != 20 {
		t.Fatalf("garbage changed the history: %+v", f)
	}
	small.Close()
	small.Close()
	if _, err := small.Save(); err == nil {
		t.Fatal("save after close")
	}
	// A closed history is no history: the build still goes through.
	req.History = small
	if _, err := Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}
