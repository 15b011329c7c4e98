//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
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
// so an unchanged obj shard is not listed again. Its methods may be called
// from any goroutine: a lock keeps Close from freeing the cache while a
// scan (or Retain) uses it, and scans using one cache run one at a time.
type CASCache struct {
	mu  sync.Mutex
	ptr *C.CtCasCache // nil once closed
}

// NewCASCache allocates an empty cache in the core.
func NewCASCache() (*CASCache, error) {
	p := C.ct_cas_cache_new()
	if p == nil {
		return nil, &Error{Code: CodePanic, Message: "ct_cas_cache_new failed"}
	}
	return &CASCache{ptr: p}, nil
}

// Close frees the cache once no scan uses it; safe on nil and when
// repeated. Scans after Close run without a cache.
func (c *CASCache) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.ct_cas_cache_free(c.ptr)
		c.ptr = nil
	}
}

// Retain drops what the cache keeps for every cell whose path is not in
// paths (spelled as the cells are scanned), and returns how many cells it
// dropped. A pool variant that disappeared is never scanned again, so
// without this its shards would stay in memory for the receiver's life.
func (c *CASCache) Retain(paths []string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return 0
	}
	var pinner runtime.Pinner
	defer pinner.Unpin()
	views := make([]C.CtByteView, len(paths))
	for i, p := range paths {
		if p == "" {
			continue
		}
		b := unsafe.StringData(p)
		pinner.Pin(b)
		views[i] = C.CtByteView{ptr: (*C.uint8_t)(unsafe.Pointer(b)), len: C.size_t(len(p))}
	}
	var first *C.CtByteView
	if len(views) > 0 {
		first = &views[0]
	}
	return int(C.ct_cas_cache_retain(c.ptr, first, C.size_t(len(views))))
}

// Footprint reports what the cache holds (zeros once closed).
func (c *CASCache) Footprint() CASCacheFootprint {
	if c == nil {
		return CASCacheFootprint{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return CASCacheFootprint{}
	}
	f := C.ct_cas_cache_footprint(c.ptr)
	return CASCacheFootprint{Cells: uint64(f.cells), Shards: uint64(f.shards), Buckets: uint64(f.buckets), Bytes: uint64(f.bytes)}
}

// lockedForScan holds the cache for one scan and returns its pointer (nil
// without a usable cache) and the release function.
func (c *CASCache) lockedForScan() (*C.CtCasCache, func()) {
	if c == nil {
		return nil, func() {}
	}
	c.mu.Lock()
	return c.ptr, c.mu.Unlock
}

// beforeScanCall, when set (tests only), runs inside ScanCAS with the cache
// held, right before the core is called.
var beforeScanCall func()

// ScanCAS scans the cells of one store set in the core; cache may be nil.
func ScanCAS(ctx context.Context, req CASRequest, cache *CASCache) (CASResult, error) {
	var res CASResult
	err := coreCall(ctx, func(s *callScope) error {
		cells := make([]C.CtCasCell, len(req.Cells))
		for i, c := range req.Cells {
			cells[i] = C.CtCasCell{kind: C.uint32_t(c.Kind), path: s.view(c.Path)}
			if c.Explicit {
				cells[i].explicit_ = 1
			}
		}
		var cellsPtr *C.CtCasCell
		if len(cells) > 0 {
			cellsPtr = &cells[0]
			s.pinner.Pin(cellsPtr)
		}
		var flags C.uint32_t
		if req.AsSpans {
			flags |= C.CT_FLAG_METRICS_AS_SPANS
		}
		creq := C.CtCasRequest{
			cells:               cellsPtr,
			cell_count:          C.size_t(len(cells)),
			host_name:           s.view(req.HostName),
			service_name:        s.view(req.ServiceName),
			variant:             s.view(req.Variant),
			resource_attributes: s.view(encodePairs(req.ResourceAttributes)),
			time_unix_nano:      C.uint64_t(req.TimeUnixNano),
			flags:               flags,
			max_threads:         C.uint32_t(req.MaxThreads),
		}
		cachePtr, release := cache.lockedForScan()
		defer release()
		if beforeScanCall != nil {
			beforeScanCall()
		}
		var out C.CtCasResult
		defer C.ct_cas_result_free(&out)
		code := C.ct_scan_cas(&creq, s.token, cachePtr, &out)
		output, err := decodeOutput(Code(code), bufferBytes(out.error_message), bufferBytes(out.warnings), bufferBytes(out.traces), bufferBytes(out.metrics))
		if err != nil {
			return err
		}
		res = CASResult{
			Output:       output,
			CellsScanned: uint32(out.cells_scanned),
			Points:       uint64(out.points),
			Anomalies:    uint64(out.anomalies),
		}
		return nil
	})
	return res, err
}
