package compiletoolsreceiver

import (
	"fmt"
	"time"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// TimeTraceConfig: the clang -ftime-trace files compiletools' `time-trace`
// variant axis leaves beside each object (docs/configuration.md). On by
// default wherever a trace exists; a build without traces costs a few
// failed opens.
type TimeTraceConfig struct {
	// Enabled looks for each compile's trace.
	Enabled bool `mapstructure:"enabled"`
	// MinEventDuration is the shortest clang event that becomes a child
	// span of its compile span.
	MinEventDuration time.Duration `mapstructure:"min_event_duration"`
	// MaxSpansPerCompile and MaxSpansPerBuild cap those child spans (the
	// longest are kept).
	MaxSpansPerCompile int `mapstructure:"max_spans_per_compile"`
	MaxSpansPerBuild   int `mapstructure:"max_spans_per_build"`
	// TopN is the length of the root span's ct.build.clang.top_* lists and
	// of the ct.clang.header.parse metric's headers.
	TopN int `mapstructure:"top_n"`
	// MaxLogRecords bounds the ct.clang.header (and ct.clang.template)
	// records of one build.
	MaxLogRecords int `mapstructure:"max_log_records"`
	// MaxTraceSize is the largest trace file read, bytes; a larger one is
	// refused with a warning.
	MaxTraceSize int64 `mapstructure:"max_trace_size"`

	_ struct{}
}

func defaultTimeTraceConfig() TimeTraceConfig {
	return TimeTraceConfig{
		Enabled:            true,
		MinEventDuration:   50 * time.Millisecond,
		MaxSpansPerCompile: 100,
		MaxSpansPerBuild:   100_000,
		TopN:               10,
		MaxLogRecords:      50,
		MaxTraceSize:       64 << 20,
	}
}

// Bounds the core's fields can hold.
const (
	maxTimeTraceCount = 1 << 31
	maxTimeTraceTopN  = 1000
)

// validate reports the time_trace settings' problems.
func (t TimeTraceConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.MinEventDuration < time.Microsecond {
		add("time_trace.min_event_duration: must be at least 1µs, got %s", t.MinEventDuration)
	}
	if t.MaxSpansPerCompile < 1 || t.MaxSpansPerCompile >= maxTimeTraceCount {
		add("time_trace.max_spans_per_compile: must be 1 to %d, got %d", maxTimeTraceCount-1, t.MaxSpansPerCompile)
	}
	if t.MaxSpansPerBuild < 1 || t.MaxSpansPerBuild >= maxTimeTraceCount {
		add("time_trace.max_spans_per_build: must be 1 to %d, got %d", maxTimeTraceCount-1, t.MaxSpansPerBuild)
	}
	if t.TopN < 1 || t.TopN > maxTimeTraceTopN {
		add("time_trace.top_n: must be 1 to %d, got %d", maxTimeTraceTopN, t.TopN)
	}
	if t.MaxLogRecords < 1 || t.MaxLogRecords > maxTimeTraceTopN {
		add("time_trace.max_log_records: must be 1 to %d, got %d", maxTimeTraceTopN, t.MaxLogRecords)
	}
	if t.MaxTraceSize < 1 {
		add("time_trace.max_trace_size: must be positive, got %d", t.MaxTraceSize)
	}
	return errs
}

// request is the core's form of the settings.
func (t TimeTraceConfig) request() ffi.TimeTrace {
	return ffi.TimeTrace{
		Disabled:           !t.Enabled,
		MinEventMicros:     uint64(t.MinEventDuration / time.Microsecond),
		MaxSpansPerCompile: uint32(t.MaxSpansPerCompile),
		MaxSpansPerBuild:   uint32(t.MaxSpansPerBuild),
		TopN:               uint32(t.TopN),
		MaxLogRecords:      uint32(t.MaxLogRecords),
		MaxTraceBytes:      uint64(t.MaxTraceSize),
	}
}
