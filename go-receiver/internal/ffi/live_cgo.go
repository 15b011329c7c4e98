//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/plog"
)

// LiveRecords turns one look at a running build into OTLP log records.
func LiveRecords(ctx context.Context, req LiveRequest) (LiveResult, error) {
	var res LiveResult
	err := coreCall(ctx, func(s *callScope) error {
		var flags C.uint32_t
		if req.Final {
			flags |= C.CT_LIVE_FLAG_FINAL
		}
		if req.Abandoned {
			flags |= C.CT_LIVE_FLAG_ABANDONED
		}
		if req.LinkTrace {
			flags |= C.CT_LIVE_FLAG_LINK_TRACE
		}
		creq := C.CtLiveRequest{
			kind:                C.uint32_t(req.Kind),
			flags:               flags,
			invocation_dir:      s.view(req.InvocationDir),
			host_name:           s.view(req.HostName),
			service_name:        s.view(req.ServiceName),
			resource_attributes: s.view(encodePairs(req.ResourceAttributes)),
			data:                s.bytesView(req.Data),
			observed_unix_nano:  C.uint64_t(req.ObservedUnixNano),
			max_records:         C.uint32_t(req.MaxRecords),
			max_attribute_len:   C.uint32_t(req.MaxAttributeLen),
		}
		var out C.CtLiveResult
		defer C.ct_live_result_free(&out)
		code := Code(C.ct_live_records(&creq, s.token, &out))
		if code != CodeOK {
			return &Error{Code: code, Message: string(bufferBytes(out.error_message))}
		}
		logs, has, err := decodeSignal(bufferBytes(out.logs), "logs", (&plog.ProtoUnmarshaler{}).UnmarshalLogs)
		if err != nil {
			return err
		}
		res = LiveResult{
			Logs:     logs,
			HasLogs:  has,
			Consumed: uint64(out.consumed),
			Records:  uint64(out.records),
			Skipped:  uint64(out.skipped),
			Outcomes: LiveOutcomes{
				DirectHits:       uint64(out.direct_hits),
				PreprocessedHits: uint64(out.preprocessed_hits),
				Misses:           uint64(out.misses),
				Uncacheable:      uint64(out.uncacheable),
			},
		}
		if w := bufferBytes(out.warnings); len(w) > 0 {
			res.Warnings = strings.Split(string(w), "\n")
		}
		return nil
	})
	return res, err
}

// bytesView is view for a byte slice (pinned while the call runs).
func (s *callScope) bytesView(b []byte) C.CtByteView {
	if len(b) == 0 {
		return C.CtByteView{}
	}
	s.pinner.Pin(&b[0])
	return C.CtByteView{ptr: (*C.uint8_t)(unsafe.Pointer(&b[0])), len: C.size_t(len(b))}
}
