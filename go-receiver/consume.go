package compiletoolsreceiver

import (
	"context"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// dataFormat names what the receiver reads, for its ObsReport telemetry.
const dataFormat = "compiletools"

// consumedSignals lists the signals that have a consumer.
func (r *compiletoolsReceiver) consumedSignals() ffi.Signals {
	var s ffi.Signals
	if r.traces != nil {
		s |= ffi.SignalTraces
	}
	if r.metrics != nil {
		s |= ffi.SignalMetrics
	}
	return s
}

// consume hands the wanted signals of one core output to their consumers,
// each call inside an ObsReport operation (the collector's accepted and
// refused counts for this receiver), and returns each signal's error. A
// wanted signal the core did not produce has nothing to send: nil.
func (r *compiletoolsReceiver) consume(ctx context.Context, want ffi.Signals, out ffi.Output) (tracesErr, metricsErr error) {
	if want&ffi.SignalTraces != 0 && out.HasTraces {
		octx := r.obsTraces.StartTracesOp(ctx)
		tracesErr = r.traces.ConsumeTraces(octx, out.Traces)
		r.obsTraces.EndTracesOp(octx, dataFormat, out.Traces.SpanCount(), tracesErr)
	}
	if want&ffi.SignalMetrics != 0 && out.HasMetrics {
		octx := r.obsMetrics.StartMetricsOp(ctx)
		metricsErr = r.metrics.ConsumeMetrics(octx, out.Metrics)
		r.obsMetrics.EndMetricsOp(octx, dataFormat, out.Metrics.DataPointCount(), metricsErr)
	}
	return tracesErr, metricsErr
}
