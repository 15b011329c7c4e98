//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import "context"

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
		var cachePtr *C.CtCasCache
		if cache != nil {
			cachePtr = cache.ptr
		}
		var out C.CtCasResult
		defer C.ct_cas_result_free(&out)
		code := C.ct_scan_cas(&creq, s.token, cachePtr, &out)
		output, err := decodeOutput(code, out.error_message, out.warnings, out.traces, out.metrics)
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
