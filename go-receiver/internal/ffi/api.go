package ffi

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Signals selects what the core produces; an unconsumed signal is not asked for.
type Signals uint32

const (
	SignalTraces  Signals = 1 // CT_SIGNAL_TRACES
	SignalMetrics Signals = 2 // CT_SIGNAL_METRICS
	SignalLogs    Signals = 4 // CT_SIGNAL_LOGS
)

// Limits bound what the core reads; a zero field means the core's default.
type Limits struct {
	MaxFileBytes    uint64
	MaxEvents       uint64
	MaxDepth        uint32
	MaxAttributeLen uint32
}

// TimeTrace holds the time_trace settings; a zero field means the core's
// default.
type TimeTrace struct {
	Disabled           bool
	MinEventMicros     uint64
	MaxTraceBytes      uint64
	MaxSpansPerCompile uint32
	MaxSpansPerBuild   uint32
	TopN               uint32
	MaxLogRecords      uint32
}

// Attribute is one user resource attribute; order is kept.
type Attribute struct {
	Key, Value string
}

// Request describes one build to process.
type Request struct {
	InvocationDir      string
	StatslogPath       string
	OutcomesPath       string
	HostName           string
	ServiceName        string
	GitCommitSHA       string
	ResourceAttributes []Attribute
	Signals            Signals
	MetricsAsSpans     bool
	Limits             Limits
	// PipelineName is `cicd.pipeline.name` ("": omitted).
	PipelineName string
	// VCS holds the `vcs.*` resource attributes ("" fields omitted).
	VCS VCS
	// SemconvRootSpan makes the root span the CI/CD conventions' pipeline
	// run: named `BUILD <pipeline>` and of kind SERVER, instead of ct-cake's
	// `compiletools.build`, INTERNAL.
	SemconvRootSpan bool
	// History, when set, gives the build its compile-history numbers and
	// stages what it adds until History.Commit(InvocationDir).
	History *History
	// BuildMetrics asks for the build metrics with the metrics signal
	// (cicd.pipeline.run.*, ct.rule.duration, ct.compiles).
	BuildMetrics bool
	// HostMetricIdentity makes the metrics series of the host (a shared
	// resource, per-build deltas) instead of each build's, ct-cake's form.
	HostMetricIdentity bool
	// BuildGraphPath is the build's generated build.ninja or Makefile
	// ("{variant}" replaced by the core), for the exact critical path.
	BuildGraphPath string
	// TimeTrace says how the compiles' clang traces are read.
	TimeTrace TimeTrace

	// forcePanic makes the core panic inside the call (tests only).
	forcePanic bool
	// forcePanicInChunk makes the core panic while encoding chunk 1 of a
	// stream (tests only).
	forcePanicInChunk bool
}

// VCS is what the receiver read from the build's git work tree.
type VCS struct {
	RefHeadName, RefHeadType, RepositoryURLFull, ProviderName string
}

// Summary holds the counts the core reports for one build.
type Summary struct {
	Spans             uint64
	MetricPoints      uint64
	UnanchoredRules   uint64
	DroppedAttributes uint64
	// ClangTraces were read for the build's compiles; ClangTracesRefused
	// were found but not read (each also a warning).
	ClangTraces        uint64
	ClangTracesRefused uint64
}

// Output is what every core call returns besides its own counts: each
// signal as pdata (Has* false and the value empty when not produced) and
// what the core had to say about its input.
type Output struct {
	Traces     ptrace.Traces
	HasTraces  bool
	Metrics    pmetric.Metrics
	HasMetrics bool
	// Logs are the build's log records (ct.clang.header, ...), with
	// SignalLogs.
	Logs     plog.Logs
	HasLogs  bool
	Warnings []string
}

// Result is one build as pdata.
type Result struct {
	Output
	Summary Summary
}

// Code mirrors CtErrorCode.
type Code int32

const (
	CodeOK             Code = 0
	CodeInvalidRequest Code = 1
	CodeIO             Code = 2
	CodeMalformed      Code = 3
	CodeLimitExceeded  Code = 4
	CodeCancelled      Code = 5
	CodePanic          Code = 6
	// CodeDecode is Go-side: the core's bytes did not decode as OTLP.
	CodeDecode Code = 100
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeInvalidRequest:
		return "invalid_request"
	case CodeIO:
		return "io"
	case CodeMalformed:
		return "malformed"
	case CodeLimitExceeded:
		return "limit_exceeded"
	case CodeCancelled:
		return "cancelled"
	case CodePanic:
		return "panic"
	case CodeDecode:
		return "decode"
	default:
		return fmt.Sprintf("code_%d", int32(c))
	}
}

// Error is a failed core call.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("compiletools core: %s: %s", e.Code, e.Message) }

// ErrCgoRequired is returned by builds without cgo, where the core is absent.
var ErrCgoRequired = errors.New("compiletools receiver: built without cgo; the Rust core is unavailable (build with CGO_ENABLED=1)")

// CodeOf returns the core error code of err, or CodeOK when err is not a core error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeOK
}
