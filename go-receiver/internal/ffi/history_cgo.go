//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// History is the receiver's per-target compile history, owned by the core
// (time saved by cache hits, duration deltas). Builds processed with it are
// evaluated against it and staged; Commit applies a build's part when the
// receiver checkpoints it. Its methods may be called from any goroutine: a
// lock keeps Close from freeing it while a build or a method uses it.
type History struct {
	mu  sync.RWMutex
	ptr *C.CtHistory // nil once closed
}

// NewHistory allocates an empty history of at most maxTargets targets and
// the last window compiles of each (the core clamps window to 1..254).
func NewHistory(maxTargets uint64, window uint32) (*History, error) {
	p := C.ct_history_new(C.uint64_t(maxTargets), C.uint32_t(window))
	if p == nil {
		return nil, &Error{Code: CodePanic, Message: "ct_history_new failed"}
	}
	return &History{ptr: p}, nil
}

// Close frees the history; safe on nil and when repeated. Builds processed
// after Close get no history numbers.
func (h *History) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ptr != nil {
		C.ct_history_free(h.ptr)
		h.ptr = nil
	}
}

// acquire holds the history for one build (many builds at once) and
// returns its pointer (nil without a usable history) and the release.
func (h *History) acquire() (*C.CtHistory, func()) {
	if h == nil {
		return nil, func() {}
	}
	h.mu.RLock()
	return h.ptr, h.mu.RUnlock
}

// withView runs f with a byte view of s, pinned during f.
func withView[T any](s string, f func(C.CtByteView) T) T {
	if s == "" {
		return f(C.CtByteView{})
	}
	var pinner runtime.Pinner
	defer pinner.Unpin()
	b := unsafe.StringData(s)
	pinner.Pin(b)
	return f(C.CtByteView{ptr: (*C.uint8_t)(unsafe.Pointer(b)), len: C.size_t(len(s))})
}

// Commit applies what the build in dir (spelled as in its Request) staged
// when it was processed; it returns how many rules it recorded or touched
// (0: nothing was staged).
func (h *History) Commit(dir string) int {
	ptr, release := h.acquire()
	defer release()
	if ptr == nil {
		return 0
	}
	return withView(dir, func(v C.CtByteView) int { return int(C.ct_history_commit(ptr, v)) })
}

// Discard drops what the build in dir staged; true if there was anything.
func (h *History) Discard(dir string) bool {
	ptr, release := h.acquire()
	defer release()
	if ptr == nil {
		return false
	}
	return withView(dir, func(v C.CtByteView) bool { return C.ct_history_discard(ptr, v) != 0 })
}

// Save returns the committed history as bytes for the storage extension.
func (h *History) Save() ([]byte, error) {
	ptr, release := h.acquire()
	defer release()
	if ptr == nil {
		return nil, &Error{Code: CodeInvalidRequest, Message: "history is closed"}
	}
	var out C.CtBuffer
	defer C.ct_buffer_free(&out)
	if code := C.ct_history_save(ptr, &out); code != 0 {
		return nil, &Error{Code: Code(code), Message: "saving the compile history failed"}
	}
	return append([]byte(nil), bufferBytes(out)...), nil
}

// Restore adds bytes from Save to the history and returns the number of
// targets they held and, when the bytes were of an older format that was
// converted, a note to warn with; malformed bytes change nothing and are
// an error.
func (h *History) Restore(b []byte) (int, string, error) {
	ptr, release := h.acquire()
	defer release()
	if ptr == nil {
		return 0, "", &Error{Code: CodeInvalidRequest, Message: "history is closed"}
	}
	var restored C.uint64_t
	var msg C.CtBuffer
	defer C.ct_buffer_free(&msg)
	var view string
	if len(b) > 0 {
		view = unsafe.String(&b[0], len(b)) // read only, during the call
	}
	code := withView(view, func(v C.CtByteView) C.int32_t {
		return C.ct_history_restore(ptr, v, &restored, &msg)
	})
	if code != 0 {
		return 0, "", &Error{Code: Code(code), Message: string(bufferBytes(msg))}
	}
	return int(restored), string(bufferBytes(msg)), nil
}

// Footprint reports what the history holds (zeros once closed).
func (h *History) Footprint() HistoryFootprint {
	ptr, release := h.acquire()
	defer release()
	if ptr == nil {
		return HistoryFootprint{}
	}
	f := C.ct_history_footprint(ptr)
	return HistoryFootprint{
		Targets:      uint64(f.targets),
		Compiles:     uint64(f.compiles),
		Bytes:        uint64(f.bytes),
		StagedBuilds: uint64(f.staged_builds),
		Evicted:      uint64(f.evicted),
	}
}
