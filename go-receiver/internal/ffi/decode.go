package ffi

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// decodeOutput turns what every core call returns into an Output, or into
// an error carrying the core's message when code is not CodeOK. The byte
// slices are views of the core's result buffers, which the caller frees
// right after this returns: nothing decoded may point into them. pdata's
// unmarshalers copy every string and byte slice out of their input,
// unmarshalTraces cuts its strings from Go copies of the input's bytes,
// and Go's string conversions copy (decode_test.go and
// decode_traces_test.go overwrite the input after decoding).
func decodeOutput(code Code, message, warnings, traces, metrics []byte) (Output, error) {
	if code != CodeOK {
		return Output{}, &Error{Code: code, Message: string(message)}
	}
	var out Output
	if len(warnings) > 0 {
		out.Warnings = strings.Split(string(warnings), "\n")
	}
	var err error
	if out.Traces, out.HasTraces, err = decodeSignal(traces, "traces", unmarshalTraces); err != nil {
		return Output{}, err
	}
	if out.Metrics, out.HasMetrics, err = decodeSignal(metrics, "metrics", (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics); err != nil {
		return Output{}, err
	}
	return out, nil
}

// decodeLogs adds a build's log records (CT_SIGNAL_LOGS) to out.
func decodeLogs(out *Output, logs []byte) error {
	var err error
	out.Logs, out.HasLogs, err = decodeSignal(logs, "logs", (&plog.ProtoUnmarshaler{}).UnmarshalLogs)
	return err
}

// decodeSignal unmarshals one signal's OTLP bytes; empty bytes mean the
// signal was not produced.
func decodeSignal[T any](raw []byte, signal string, unmarshal func([]byte) (T, error)) (T, bool, error) {
	var zero T
	if len(raw) == 0 {
		return zero, false, nil
	}
	v, err := unmarshal(raw)
	if err != nil {
		return zero, false, &Error{Code: CodeDecode, Message: signal + ": " + err.Error()}
	}
	return v, true, nil
}
