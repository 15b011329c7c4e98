package compiletoolsreceiver

import (
	"context"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// dataFormat names what the receiver reads, for its ObsReport telemetry.
const dataFormat = "compiletools_timing"

// buildState remembers, per invocation directory, which signals were
// delivered (or given up on), so each build reaches each consumer once.
type buildState struct {
	done     map[string]ffi.Signals
	failed   map[string]bool
	problems map[string]bool
}

func newBuildState() *buildState {
	return &buildState{done: map[string]ffi.Signals{}, failed: map[string]bool{}, problems: map[string]bool{}}
}

func (s *buildState) finished(dir string) bool {
	return s.failed[dir] || s.done[dir]&allSignals == allSignals
}

// firstProblem reports whether a problem with path is new (warn once, not every poll).
func (s *buildState) firstProblem(path string) bool {
	if s.problems[path] {
		return false
	}
	s.problems[path] = true
	return true
}

const allSignals = ffi.SignalTraces | ffi.SignalMetrics

// wanted lists the signals that have a consumer and were not delivered yet.
func (r *compiletoolsReceiver) wanted(dir string) ffi.Signals {
	var s ffi.Signals
	if r.traces != nil {
		s |= ffi.SignalTraces
	}
	if r.metrics != nil {
		s |= ffi.SignalMetrics
	}
	return s &^ r.state.done[dir]
}

func (r *compiletoolsReceiver) processBuild(ctx context.Context, b discovery.Build) {
	want := r.wanted(b.Dir)
	// A signal without a consumer counts as delivered.
	r.state.done[b.Dir] |= allSignals &^ (want | r.state.done[b.Dir])
	if want == 0 {
		return
	}
	res, err := ffi.Process(ctx, r.request(b, want))
	if err != nil {
		if ffi.CodeOf(err) == ffi.CodeCancelled {
			return // shutting down: the build is taken up again after a restart
		}
		r.state.failed[b.Dir] = true
		r.logger.Warn("cannot read build; skipping it",
			zap.String("path", filepath.Join(b.Dir, discovery.TimingFile)),
			zap.String("reason", ffi.CodeOf(err).String()),
			zap.Error(err))
		return
	}
	for _, w := range res.Warnings {
		r.logger.Warn("build read with a problem", zap.String("path", b.Dir), zap.String("warning", w))
	}

	if want&ffi.SignalTraces != 0 {
		r.deliver(b, ffi.SignalTraces, func() error {
			if !res.HasTraces {
				return nil
			}
			ctx := r.obsTraces.StartTracesOp(ctx)
			err := r.traces.ConsumeTraces(ctx, res.Traces)
			r.obsTraces.EndTracesOp(ctx, dataFormat, res.Traces.SpanCount(), err)
			return err
		})
	}
	if want&ffi.SignalMetrics != 0 {
		r.deliver(b, ffi.SignalMetrics, func() error {
			if !res.HasMetrics {
				return nil
			}
			ctx := r.obsMetrics.StartMetricsOp(ctx)
			err := r.metrics.ConsumeMetrics(ctx, res.Metrics)
			r.obsMetrics.EndMetricsOp(ctx, dataFormat, res.Metrics.DataPointCount(), err)
			return err
		})
	}
}

// deliver runs one Consume call and records the outcome: success or a
// permanent error settles the signal; other errors leave it for the next poll.
func (r *compiletoolsReceiver) deliver(b discovery.Build, sig ffi.Signals, consume func() error) {
	err := consume()
	switch {
	case err == nil:
		r.state.done[b.Dir] |= sig
	case consumererror.IsPermanent(err):
		r.state.done[b.Dir] |= sig
		r.logger.Warn("consumer rejected build permanently; dropping it", zap.String("path", b.Dir), zap.Error(err))
	default:
		r.logger.Debug("consumer failed; retrying on the next poll", zap.String("path", b.Dir), zap.Error(err))
	}
}

func (r *compiletoolsReceiver) request(b discovery.Build, signals ffi.Signals) ffi.Request {
	req := ffi.Request{
		InvocationDir: b.Dir,
		HostName:      r.hostName,
		ServiceName:   r.cfg.ServiceName,
		Signals:       signals,
	}
	for k, v := range r.cfg.ResourceAttributes {
		req.ResourceAttributes = append(req.ResourceAttributes, ffi.Attribute{Key: k, Value: v})
	}
	sortAttributes(req.ResourceAttributes)
	return req
}

// sortAttributes gives user attributes a stable order (maps have none), so a
// re-read build produces identical bytes.
func sortAttributes(a []ffi.Attribute) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && strings.Compare(a[j-1].Key, a[j].Key) > 0; j-- {
			a[j-1], a[j] = a[j], a[j-1]
		}
	}
}
