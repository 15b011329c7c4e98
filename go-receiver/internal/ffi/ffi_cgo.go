//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ABIVersion is the version the linked library reports.
func ABIVersion() uint32 { return uint32(C.ct_abi_version()) }

// CheckABI fails when the linked library and the header this package was
// compiled with disagree (a stale .a next to a newer header, or vice versa).
func CheckABI() error {
	if got, want := ABIVersion(), uint32(C.CT_ABI_VERSION); got != want {
		return fmt.Errorf("compiletools core: library ABI version %d, header expects %d: rebuild the Rust library", got, want)
	}
	return nil
}

// Process runs the core on one build. Cancelling ctx sets the core's cancel
// token, so a long parse stops at its next check instead of pinning a thread.
func Process(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Code: CodeCancelled, Message: err.Error()}
	}

	token, release, err := watchCancel(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()

	// The request struct lives in Go memory and holds pointers to Go byte
	// slices; cgo allows that only when those pointers are pinned.
	var pinner runtime.Pinner
	defer pinner.Unpin()
	view := pinnedView(&pinner)

	var flags C.uint32_t
	if req.MetricsAsSpans {
		flags |= C.CT_FLAG_METRICS_AS_SPANS
	}
	if req.forcePanic {
		flags |= C.CT_FLAG_FORCE_PANIC
	}
	creq := C.CtBuildRequest{
		invocation_dir:      view(req.InvocationDir),
		statslog_path:       view(req.StatslogPath),
		outcomes_path:       view(req.OutcomesPath),
		host_name:           view(req.HostName),
		service_name:        view(req.ServiceName),
		git_commit_sha:      view(req.GitCommitSHA),
		resource_attributes: view(encodePairs(req.ResourceAttributes)),
		signals:             C.uint32_t(req.Signals),
		flags:               flags,
		limits: C.CtLimits{
			max_file_bytes:    C.uint64_t(req.Limits.MaxFileBytes),
			max_events:        C.uint64_t(req.Limits.MaxEvents),
			max_depth:         C.uint32_t(req.Limits.MaxDepth),
			max_attribute_len: C.uint32_t(req.Limits.MaxAttributeLen),
		},
	}

	var out C.CtBuildResult
	code := Code(C.ct_process_build(&creq, token, &out))
	defer C.ct_build_result_free(&out)

	if code != CodeOK {
		return Result{}, &Error{Code: code, Message: string(bufferBytes(out.error_message))}
	}
	return decodeResult(&out)
}

func decodeResult(out *C.CtBuildResult) (Result, error) {
	res := Result{
		Summary: Summary{
			Spans:             uint64(out.summary.spans),
			MetricPoints:      uint64(out.summary.metric_points),
			UnanchoredRules:   uint64(out.summary.unanchored_rules),
			DroppedAttributes: uint64(out.summary.dropped_attributes),
		},
	}
	if w := bufferBytes(out.warnings); len(w) > 0 {
		res.Warnings = strings.Split(string(w), "\n")
	}
	var err error
	if res.Traces, res.HasTraces, err = decodeTraces(out.traces); err != nil {
		return Result{}, err
	}
	if res.Metrics, res.HasMetrics, err = decodeMetrics(out.metrics); err != nil {
		return Result{}, err
	}
	return res, nil
}

// decodeTraces turns a Rust buffer into pdata. pdata's unmarshalers copy
// every string and byte slice out of the input, so decoding straight from
// Rust memory is safe and the buffer can be freed right after.
func decodeTraces(b C.CtBuffer) (ptrace.Traces, bool, error) {
	raw := bufferBytes(b)
	if len(raw) == 0 {
		return ptrace.Traces{}, false, nil
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	if err != nil {
		return ptrace.Traces{}, false, &Error{Code: CodeDecode, Message: "traces: " + err.Error()}
	}
	return td, true, nil
}

// decodeMetrics is decodeTraces for metrics.
func decodeMetrics(b C.CtBuffer) (pmetric.Metrics, bool, error) {
	raw := bufferBytes(b)
	if len(raw) == 0 {
		return pmetric.Metrics{}, false, nil
	}
	md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(raw)
	if err != nil {
		return pmetric.Metrics{}, false, &Error{Code: CodeDecode, Message: "metrics: " + err.Error()}
	}
	return md, true, nil
}

// bufferBytes views a Rust-owned buffer without copying; valid until freed.
func bufferBytes(b C.CtBuffer) []byte {
	if b.ptr == nil || b.len == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(b.ptr)), int(b.len))
}

// encodePairs encodes attributes as the core expects: key\0value\0…
func encodePairs(attrs []Attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, a := range attrs {
		sb.WriteString(a.Key)
		sb.WriteByte(0)
		sb.WriteString(a.Value)
		sb.WriteByte(0)
	}
	return sb.String()
}
