package compiletoolsreceiver

import (
	"strings"
	"testing"
	"time"
)

func TestTimeTraceDefaultsReachTheCore(t *testing.T) {
	cfg := validConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	req := cfg.TimeTrace.request()
	if req.Disabled || req.MinEventMicros != 50_000 || req.MaxSpansPerCompile != 100 ||
		req.MaxSpansPerBuild != 100_000 || req.TopN != 10 || req.MaxLogRecords != 50 || req.MaxTraceBytes != 64<<20 {
		t.Fatalf("defaults: %+v", req)
	}
	cfg.TimeTrace.Enabled = false
	if !cfg.TimeTrace.request().Disabled {
		t.Fatal("enabled: false does not reach the core")
	}
}

func TestTimeTraceValidation(t *testing.T) {
	for _, c := range []struct {
		key string
		set func(*TimeTraceConfig)
	}{
		{"time_trace.min_event_duration", func(t *TimeTraceConfig) { t.MinEventDuration = 0 }},
		{"time_trace.min_event_duration", func(t *TimeTraceConfig) { t.MinEventDuration = time.Nanosecond }},
		{"time_trace.max_spans_per_compile", func(t *TimeTraceConfig) { t.MaxSpansPerCompile = 0 }},
		{"time_trace.max_spans_per_compile", func(t *TimeTraceConfig) { t.MaxSpansPerCompile = 1<<32 + 5 }},
		{"time_trace.max_spans_per_build", func(t *TimeTraceConfig) { t.MaxSpansPerBuild = -1 }},
		{"time_trace.top_n", func(t *TimeTraceConfig) { t.TopN = 1001 }},
		{"time_trace.max_log_records", func(t *TimeTraceConfig) { t.MaxLogRecords = 0 }},
		{"time_trace.max_trace_size", func(t *TimeTraceConfig) { t.MaxTraceSize = 0 }},
	} {
		cfg := validConfig()
		c.set(&cfg.TimeTrace)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: want an error naming it, got %v", c.key, err)
		}
	}
}
