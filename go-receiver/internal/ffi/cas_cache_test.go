//go:build cgo

package ffi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Close while a scan is in the core must wait for the scan: freeing the
// cache under it would be a use-after-free in Rust. The scan is held at
// the point where it calls the core, with the cache in hand.
func TestCloseWaitsForAScanInFlight(t *testing.T) {
	cache, err := NewCASCache()
	if err != nil {
		t.Fatal(err)
	}
	cell := filepath.Join(t.TempDir(), "gcc.debug")
	if err := os.MkdirAll(filepath.Join(cell, "0d"), 0o755); err != nil {
		t.Fatal(err)
	}
	inCall, resume := make(chan struct{}), make(chan struct{})
	beforeScanCall = func() {
		close(inCall)
		<-resume
	}
	t.Cleanup(func() { beforeScanCall = nil })

	scanned := make(chan error, 1)
	go func() {
		_, err := ScanCAS(context.Background(), CASRequest{
			Cells:    []CASCell{{Kind: casKinds[0].kind, Path: cell, Explicit: true}},
			HostName: "h",
		}, cache)
		scanned <- err
	}()
	<-inCall
	closed := make(chan struct{})
	go func() {
		cache.Close()
		close(closed)
	}()
	select {
	case <-closed:
		close(resume)
		// The scan now runs on freed memory: it may crash or hang there.
		select {
		case <-scanned:
		case <-time.After(5 * time.Second):
		}
		t.Fatal("Close returned while a scan was using the cache")
	case <-time.After(100 * time.Millisecond):
	}
	close(resume)
	if err := <-scanned; err != nil {
		t.Fatalf("scan: %v", err)
	}
	beforeScanCall = nil
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the scan ended")
	}
	if f := cache.Footprint(); f != (CASCacheFootprint{}) {
		t.Errorf("a closed cache reports %+v", f)
	}
	// A closed cache still scans, without caching.
	if _, err := ScanCAS(context.Background(), CASRequest{HostName: "h"}, cache); err != nil {
		t.Fatalf("scan after Close: %v", err)
	}
}

func TestRetainDropsCellsNoLongerScanned(t *testing.T) {
	cache, err := NewCASCache()
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	root := t.TempDir()
	var cells []string
	for _, v := range []string{"gcc.debug", "gcc.release"} {
		cell := filepath.Join(root, v)
		if err := os.MkdirAll(filepath.Join(cell, "0d"), 0o755); err != nil {
			t.Fatal(err)
		}
		cells = append(cells, cell)
		if _, err := ScanCAS(context.Background(), CASRequest{
			Cells:    []CASCell{{Kind: casKinds[0].kind, Path: cell}},
			HostName: "h",
		}, cache); err != nil {
			t.Fatal(err)
		}
	}
	if got := cache.Footprint().Cells; got != 2 {
		t.Fatalf("cells cached: %d, want 2", got)
	}
	if dropped := cache.Retain(cells[1:]); dropped != 1 {
		t.Errorf("Retain dropped %d cells, want 1", dropped)
	}
	if got := cache.Footprint().Cells; got != 1 {
		t.Errorf("cells cached after Retain: %d, want 1", got)
	}
}
