package compiletoolsreceiver

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

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

// traceProgress is how far the delivery of one trace got: the number of
// its requests (the core's chunks, or splitTraces' cut of a CAS snapshot)
// the traces consumer accepted, and what identifies the cut, so a re-read
// that would cut differently starts over.
type traceProgress struct {
	requests int
	spans    int
	traceID  pcommon.TraceID
}

// consume hands the wanted signals of one core output to their consumers
// and returns each signal's error; for traces, done is what an earlier
// attempt delivered and progress what has been delivered now. A wanted
// signal the core did not produce has nothing to send: nil.
func (r *compiletoolsReceiver) consume(ctx context.Context, want ffi.Signals, out ffi.Output, done traceProgress) (progress traceProgress, tracesErr, metricsErr error) {
	progress = done
	if want&ffi.SignalTraces != 0 && out.HasTraces {
		progress, tracesErr = r.consumeTraces(ctx, out.Traces, done)
	}
	if want&ffi.SignalMetrics != 0 && out.HasMetrics {
		metricsErr = r.consumeMetrics(ctx, out.Metrics)
	}
	return progress, tracesErr, metricsErr
}

// consumeTraces hands a trace to the traces consumer as requests of at most
// max_request_spans spans, in order, each inside its own ObsReport
// operation (the collector's accepted and refused counts for this
// receiver), and stops at the first error. Requests an earlier attempt of
// the same cut delivered (done) are not sent again. It returns the progress
// made, done included, and the error that stopped it.
func (r *compiletoolsReceiver) consumeTraces(ctx context.Context, td ptrace.Traces, done traceProgress) (traceProgress, error) {
	progress := traceProgress{spans: td.SpanCount(), traceID: firstTraceID(td)}
	if done.spans != progress.spans || done.traceID != progress.traceID {
		done = traceProgress{} // another cut: every request goes out
	}
	for i, chunk := range splitTraces(td, r.cfg.MaxRequestSpans) {
		if i < done.requests {
			continue
		}
		octx := r.obsTraces.StartTracesOp(ctx)
		err := r.traces.ConsumeTraces(octx, chunk)
		r.obsTraces.EndTracesOp(octx, dataFormat, chunk.SpanCount(), err)
		if err != nil {
			return progress, err
		}
		progress.requests = i + 1
	}
	return progress, nil
}

// consumeMetrics hands metrics to the metrics consumer in one request
// inside an ObsReport operation: a build's metrics are a few points. The
// disabled metrics and resource attributes are dropped first, and the
// series a host's builds share are made cumulative when so configured.
func (r *compiletoolsReceiver) consumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	r.metricSwitches.apply(md)
	if md.ResourceMetrics().Len() == 0 {
		return nil // everything in it is disabled
	}
	if r.cumulative != nil {
		return r.cumulative.Deliver(md, func(md pmetric.Metrics) error { return r.sendMetrics(ctx, md) })
	}
	return r.sendMetrics(ctx, md)
}

func (r *compiletoolsReceiver) sendMetrics(ctx context.Context, md pmetric.Metrics) error {
	octx := r.obsMetrics.StartMetricsOp(ctx)
	err := r.metrics.ConsumeMetrics(octx, md)
	r.obsMetrics.EndMetricsOp(octx, dataFormat, md.DataPointCount(), err)
	return err
}

// consumeLogs hands live records to the logs consumer in one request
// inside an ObsReport operation.
func (r *compiletoolsReceiver) consumeLogs(ctx context.Context, ld plog.Logs) error {
	octx := r.obsLogs.StartLogsOp(ctx)
	n := ld.LogRecordCount()
	err := r.logs.ConsumeLogs(octx, ld)
	r.obsLogs.EndLogsOp(octx, dataFormat, n, err)
	return err
}

// firstTraceID is the trace id of td's first span (zero without spans).
func firstTraceID(td ptrace.Traces) pcommon.TraceID {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			if ss.Spans().Len() > 0 {
				return ss.Spans().At(0).TraceID()
			}
		}
	}
	return pcommon.TraceID{}
}

// decodeAhead is how many chunks are encoded and decoded ahead of the one
// being consumed: the core encodes chunk k+2 while chunks k+1 and k+2 are
// decoded on other goroutines and chunk k is consumed, so pdata decoding,
// the Go side's largest cost, uses every core. At most decodeAhead+2
// chunks exist at once, as bytes or pdata; the whole trace never does.
const decodeAhead = 2

// decodedChunk is one chunk as pdata, or why it is not.
type decodedChunk struct {
	td  ptrace.Traces
	err error
}

// consumeTraceStream hands a build's trace to the traces consumer as the
// core's chunks (each at most max_request_spans spans), in order, each
// inside its own ObsReport operation, and stops at the first error.
// Chunks an earlier attempt of the same cut delivered (done) are neither
// encoded nor sent again. It returns the progress made, done included,
// and the error that stopped it: a consumer's, or an *ffi.Error when the
// core failed (a panic, a cancelled call) or a chunk did not decode.
func (r *compiletoolsReceiver) consumeTraceStream(ctx context.Context, stream *ffi.TraceStream, done traceProgress) (traceProgress, error) {
	return r.consumeChunks(ctx, stream.Info, stream.Encode, done)
}

// encodeChunk has chunk k of a trace encoded; the caller frees it.
type encodeChunk func(ctx context.Context, k int) (*ffi.RawChunk, error)

// consumeChunks is consumeTraceStream with the encoder as a parameter, so
// a benchmark can time the Go side alone on chunks encoded beforehand.
func (r *compiletoolsReceiver) consumeChunks(ctx context.Context, info ffi.StreamInfo, encode encodeChunk, done traceProgress) (traceProgress, error) {
	progress := traceProgress{spans: int(info.Spans), traceID: info.TraceID}
	if done.spans == progress.spans && done.traceID == progress.traceID {
		progress.requests = done.requests
	}
	// In chunk order: each chunk's decode result, filled by its own
	// goroutine; the channel's capacity bounds the chunks in flight.
	pending := make(chan chan decodedChunk, decodeAhead)
	ectx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pending)
		for k := progress.requests; k < info.Chunks && ectx.Err() == nil; k++ {
			result := make(chan decodedChunk, 1)
			raw, err := encode(ectx, k)
			if err != nil {
				result <- decodedChunk{err: err}
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					td, err := raw.Decode()
					raw.Free()
					result <- decodedChunk{td, err}
				}()
			}
			pending <- result
			if err != nil {
				return
			}
		}
	}()
	// On every way out: stop encoding, let the decodes in flight finish
	// (each frees its chunk) and wait for them, so the caller may close
	// the stream.
	defer func() {
		stop()
		for range pending {
		}
		wg.Wait()
	}()
	for result := range pending {
		c := <-result
		if c.err != nil {
			return progress, c.err
		}
		octx := r.obsTraces.StartTracesOp(ctx)
		err := r.traces.ConsumeTraces(octx, c.td)
		r.obsTraces.EndTracesOp(octx, dataFormat, c.td.SpanCount(), err)
		if err != nil {
			return progress, err
		}
		progress.requests++
	}
	return progress, nil
}
