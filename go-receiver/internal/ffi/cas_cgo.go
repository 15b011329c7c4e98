//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"runtime"
	"strings"
	"unsafe"
)

// casKinds is the only list of store kinds on the Go side: names as the
// configuration spells them (ct-cache-report's store names), values from
// the header, so a renumbered or renamed kind fails to compile here.
var casKinds = [...]casKindName{
	{"obj", C.CT_CAS_KIND_OBJ},
	{"pch", C.CT_CAS_KIND_PCH},
	{"pcm", C.CT_CAS_KIND_PCM},
	{"exe", C.CT_CAS_KIND_EXE},
}

// CASCache keeps per-shard scan results in the core between periodic scans,
// so an unchanged obj shard is not listed again. Scans using one cache must
// not overlap; Close frees it.
type CASCache struct {
	ptr *C.CtCasCache
}

// NewCASCache allocates an empty cache in the core.
func NewCASCache() (*CASCache, error) {
	p := C.ct_cas_cache_new()
	if p == nil {
		return nil, &Error{Code: CodePanic, Message: "ct_cas_cache_new failed"}
	}
	return &CASCache{ptr: p}, nil
}

// Close frees the cache; safe on nil and when repeated.
func (c *CASCache) Close() {
	if c != nil && c.ptr != nil {
		C.ct_cas_cache_free(c.ptr)
		c.ptr = nil
	}
}

// ScanCAS scans the cells of one store set in the core; cache may be nil.
func ScanCAS(ctx context.Context, req CASRequest, cache *CASCache) (CASResult, error) {
	if err := ctx.Err(); err != nil {
		return CASResult{}, &Error{Code: CodeCancelled, Message: err.Error()}
	}
	token, release, err := watchCancel(ctx)
	if err != nil {
		return CASResult{}, err
	}
	defer release()

	var pinner runtime.Pinner
	defer pinner.Unpin()
	view := pinnedView(&pinner)

	cells := make([]C.CtCasCell, len(req.Cells))
	for i, c := range req.Cells {
		cells[i] = C.CtCasCell{kind: C.uint32_t(c.Kind), path: view(c.Path)}
		if c.Explicit {
			cells[i].explicit_ = 1
		}
	}
	var cellsPtr *C.CtCasCell
	if len(cells) > 0 {
		cellsPtr = &cells[0]
		pinner.Pin(cellsPtr)
	}
	var flags C.uint32_t
	if req.AsSpans {
		flags |= C.CT_FLAG_METRICS_AS_SPANS
	}
	creq := C.CtCasRequest{
		cells:               cellsPtr,
		cell_count:          C.size_t(len(cells)),
		host_name:           view(req.HostName),
		service_name:        view(req.ServiceName),
		variant:             view(req.Variant),
		resource_attributes: view(encodePairs(req.ResourceAttributes)),
		time_unix_nano:      C.uint64_t(req.TimeUnixNano),
		flags:               flags,
		max_threads:         C.uint32_t(req.MaxThreads),
	}
	var out C.CtCasResult
	var cachePtr *C.CtCasCache
	if cache != nil {
		cachePtr = cache.ptr
	}
	code := Code(C.ct_scan_cas(&creq, token, cachePtr, &out))
	defer C.ct_cas_result_free(&out)
	if code != CodeOK {
		return CASResult{}, &Error{Code: code, Message: string(bufferBytes(out.error_message))}
	}
	res := CASResult{
		CellsScanned: uint32(out.cells_scanned),
		Points:       uint64(out.points),
		Anomalies:    uint64(out.anomalies),
	}
	if w := bufferBytes(out.warnings); len(w) > 0 {
		res.Warnings = strings.Split(string(w), "\n")
	}
	if res.Metrics, res.HasMetrics, err = decodeMetrics(out.metrics); err != nil {
		return CASResult{}, err
	}
	if res.Traces, res.HasTraces, err = decodeTraces(out.traces); err != nil {
		return CASResult{}, err
	}
	return res, nil
}

// pinnedView returns a function making byte views of strings, pinning each
// so the Go-memory request struct may hold them (cgo pointer rules).
func pinnedView(pinner *runtime.Pinner) func(string) C.CtByteView {
	return func(s string) C.CtByteView {
		if s == "" {
			return C.CtByteView{}
		}
		b := unsafe.StringData(s)
		pinner.Pin(b)
		return C.CtByteView{ptr: (*C.uint8_t)(unsafe.Pointer(b)), len: C.size_t(len(s))}
	}
}

// watchCancel makes a core cancel token that is set when ctx is done; the
// release function stops the watcher and frees the token after it exited.
func watchCancel(ctx context.Context) (*C.CtCancel, func(), error) {
	token := C.ct_cancel_new()
	if token == nil {
		return nil, nil, &Error{Code: CodePanic, Message: "ct_cancel_new failed"}
	}
	stop := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
			C.ct_cancel_set(token)
		case <-stop:
		}
	}()
	return token, func() {
		close(stop)
		<-exited
		C.ct_cancel_free(token)
	}, nil
}
