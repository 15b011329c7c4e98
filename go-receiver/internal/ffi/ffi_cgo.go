//go:build cgo

package ffi

/*
#include "compiletools_core.h"
*/
import "C"

import "context"

// Process runs the core on one build, its trace as one request (tests
// and tools; the receiver streams with Open). Cancelling ctx sets the
// core's cancel token, so a long parse stops at its next check instead of
// pinning a thread.
func Process(ctx context.Context, req Request) (Result, error) {
	var res Result
	err := coreCall(ctx, func(s *callScope) error {
		creq, releaseHistory := s.buildRequest(req)
		defer releaseHistory()
		var out C.CtBuildResult
		defer C.ct_build_result_free(&out)
		code := C.ct_process_build(&creq, s.token, &out)
		output, err := decodeOutput(Code(code), bufferBytes(out.error_message), bufferBytes(out.warnings), bufferBytes(out.traces), bufferBytes(out.metrics))
		if err == nil {
			err = decodeLogs(&output, bufferBytes(out.logs))
		}
		if err != nil {
			return err
		}
		res = Result{Output: output, Summary: summaryOf(&out)}
		return nil
	})
	return res, err
}

// buildRequest is req as the core's request struct, its strings pinned
// for the call; the history handle it holds stays valid until release is
// called, after the core returned.
func (s *callScope) buildRequest(req Request) (creq C.CtBuildRequest, release func()) {
	var flags C.uint32_t
	if req.MetricsAsSpans {
		flags |= C.CT_FLAG_METRICS_AS_SPANS
	}
	if req.SemconvRootSpan {
		flags |= C.CT_FLAG_ROOT_SPAN_SERVER
	}
	if req.BuildMetrics {
		flags |= C.CT_FLAG_BUILD_METRICS
	}
	if req.HostMetricIdentity {
		flags |= C.CT_FLAG_HOST_METRIC_IDENTITY
	}
	if req.TimeTrace.Disabled {
		flags |= C.CT_FLAG_TIME_TRACE_OFF
	}
	if req.forcePanic {
		flags |= C.CT_FLAG_FORCE_PANIC
	}
	if req.forcePanicInChunk {
		flags |= C.CT_FLAG_FORCE_PANIC_IN_CHUNK
	}
	creq = C.CtBuildRequest{
		invocation_dir:      s.view(req.InvocationDir),
		statslog_path:       s.view(req.StatslogPath),
		outcomes_path:       s.view(req.OutcomesPath),
		host_name:           s.view(req.HostName),
		service_name:        s.view(req.ServiceName),
		git_commit_sha:      s.view(req.GitCommitSHA),
		resource_attributes: s.view(encodePairs(req.ResourceAttributes)),
		signals:             C.uint32_t(req.Signals),
		flags:               flags,
		limits: C.CtLimits{
			max_file_bytes:    C.uint64_t(req.Limits.MaxFileBytes),
			max_events:        C.uint64_t(req.Limits.MaxEvents),
			max_depth:         C.uint32_t(req.Limits.MaxDepth),
			max_attribute_len: C.uint32_t(req.Limits.MaxAttributeLen),
		},
		pipeline_name:           s.view(req.PipelineName),
		vcs_ref_head_name:       s.view(req.VCS.RefHeadName),
		vcs_ref_head_type:       s.view(req.VCS.RefHeadType),
		vcs_repository_url_full: s.view(req.VCS.RepositoryURLFull),
		vcs_provider_name:       s.view(req.VCS.ProviderName),
		build_graph_path:        s.view(req.BuildGraphPath),
		time_trace: C.CtTimeTrace{
			min_event_us:          C.uint64_t(req.TimeTrace.MinEventMicros),
			max_trace_bytes:       C.uint64_t(req.TimeTrace.MaxTraceBytes),
			max_spans_per_compile: C.uint32_t(req.TimeTrace.MaxSpansPerCompile),
			max_spans_per_build:   C.uint32_t(req.TimeTrace.MaxSpansPerBuild),
			top_n:                 C.uint32_t(req.TimeTrace.TopN),
			max_log_records:       C.uint32_t(req.TimeTrace.MaxLogRecords),
		},
	}
	creq.history, release = req.History.acquire()
	return creq, release
}

func summaryOf(out *C.CtBuildResult) Summary {
	return Summary{
		Spans:              uint64(out.summary.spans),
		MetricPoints:       uint64(out.summary.metric_points),
		UnanchoredRules:    uint64(out.summary.unanchored_rules),
		DroppedAttributes:  uint64(out.summary.dropped_attributes),
		ClangTraces:        uint64(out.summary.clang_traces),
		ClangTracesRefused: uint64(out.summary.clang_traces_refused),
	}
}

// ReleaseKeptBuffers frees the large buffers the core keeps from one build
// for the next (text, model tables, output; at most four, each 4–96 MiB)
// and returns their capacity in bytes. Buffers of a build in flight stay
// with that build.
func ReleaseKeptBuffers() uint64 { return uint64(C.ct_kept_buffers_release()) }
