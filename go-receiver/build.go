package compiletoolsreceiver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/bmatcuk/doublestar/v4"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/gitsha"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/pipelinename"
)

// processBuild parses one build once and hands it to every consumer not
// served yet: the trace as a stream of bounded requests the core encodes
// one at a time (see consumeTraceStream), the metrics in one request; it
// checkpoints the build only after every request was accepted.
// It returns false when a consumer asked to retry later (congestion).
func (r *compiletoolsReceiver) processBuild(ctx context.Context, b discovery.Build) bool {
	open := r.ledger.snapshot(b.Dir)
	want := r.consumedSignals() &^ open.delivered
	if want == 0 {
		r.ledger.settle(ctx, b, checkpoint.Delivered, open.delivered)
		r.telemetry.build(ctx, outcomeDelivered)
		return true
	}

	req := r.request(ctx, b, want, open)
	if r.logs != nil {
		req.Signals |= ffi.SignalLogs // the build's ct.clang.* records
	}
	release, err := r.holdBudget(ctx, b, req)
	if err != nil {
		return true // shutting down: the build is taken up again after a restart
	}
	defer release() // the core's model lives until the last request went out
	res, stream, err := ffi.Open(ctx, req, r.cfg.MaxRequestSpans)
	defer stream.Close()
	if err != nil {
		if r.deferUnreadable(ctx, b, err) {
			return true // permission denied: tried again until readable
		}
		return r.unreadable(ctx, b, err, 0)
	}
	for _, w := range res.Warnings {
		r.logger.Warn("build read with a problem", zap.String("path", b.Dir), zap.String("warning", w))
	}
	r.telemetry.ReceiverCompiletoolsUnanchoredEvents.Add(ctx, int64(res.Summary.UnanchoredRules))
	r.telemetry.ReceiverCompiletoolsDroppedAttributes.Add(ctx, int64(res.Summary.DroppedAttributes))
	r.deliverBuildLogs(ctx, b, res)

	delivered, dropped, retry := open.delivered, false, false
	record := func(sig ffi.Signals, err error) {
		switch {
		case err == nil:
			delivered |= sig
		case consumererror.IsPermanent(err):
			delivered |= sig
			dropped = true
			r.logger.Warn("consumer rejected build permanently; dropping it", zap.String("path", b.Dir), zap.Error(err))
		default:
			retry = true
			r.logger.Debug("consumer failed; retrying later", zap.String("path", b.Dir), zap.Error(err))
		}
	}
	progress := open.traces
	if want&ffi.SignalTraces != 0 && stream != nil {
		var tracesErr error
		progress, tracesErr = r.consumeTraceStream(ctx, stream, open.traces)
		var coreErr *ffi.Error
		if errors.As(tracesErr, &coreErr) {
			// The core failed in the middle of the trace: what went out
			// stays delivered, the rest of the build is unreadable.
			return r.unreadable(ctx, b, coreErr, open.delivered)
		}
		record(ffi.SignalTraces, tracesErr)
	}
	if want&ffi.SignalMetrics != 0 && res.HasMetrics {
		record(ffi.SignalMetrics, r.consumeMetrics(ctx, res.Metrics))
	}
	// A signal without output (no trace asked, no ccache data) is done.
	if want&ffi.SignalTraces != 0 && stream == nil {
		record(ffi.SignalTraces, nil)
	}
	if want&ffi.SignalMetrics != 0 && !res.HasMetrics {
		record(ffi.SignalMetrics, nil)
	}

	if retry && r.ledger.retryLater(b.Dir, delivered, progress) {
		r.telemetry.build(ctx, outcomeRetried)
		return false
	}
	if retry {
		dropped = true // retries disabled or their time budget spent
		r.logger.Warn("consumer kept failing; dropping build", zap.String("path", b.Dir))
	}
	r.telemetry.ReceiverCompiletoolsBuildLag.Record(ctx, r.now().Sub(b.ModTime).Seconds())
	if dropped {
		r.telemetry.build(ctx, outcomeDropped)
		r.ledger.settle(ctx, b, checkpoint.Dropped, delivered)
		return !retry
	}
	r.telemetry.build(ctx, outcomeDelivered)
	r.ledger.settle(ctx, b, checkpoint.Delivered, delivered)
	return true
}

// unreadable settles a build the core could not read (or stopped reading
// in the middle of its trace): a warning, a parse failure counted, the
// build checkpointed as failed. A cancelled call (shutdown) settles
// nothing: the build is taken up again after a restart.
func (r *compiletoolsReceiver) unreadable(ctx context.Context, b discovery.Build, err error, delivered ffi.Signals) bool {
	code := ffi.CodeOf(err)
	if code == ffi.CodeCancelled {
		return true
	}
	r.logger.Warn("cannot read build; skipping it",
		zap.String("path", filepath.Join(b.Dir, discovery.TimingFile)),
		zap.String("reason", code.String()),
		zap.Error(err))
	r.telemetry.parseFailure(ctx, code.String())
	r.telemetry.build(ctx, outcomeFailed)
	r.ledger.settle(ctx, b, checkpoint.Failed, delivered)
	return true
}

func (r *compiletoolsReceiver) request(ctx context.Context, b discovery.Build, signals ffi.Signals, open openBuild) ffi.Request {
	req := ffi.Request{
		InvocationDir:   b.Dir,
		StatslogPath:    r.sideFile(ctx, b.Dir, capture.Statslog),
		OutcomesPath:    r.sideFile(ctx, b.Dir, capture.Outcomes),
		HostName:        r.hostName,
		ServiceName:     r.cfg.ServiceName,
		GitCommitSHA:    open.gitSHA,
		VCS:             open.vcs,
		PipelineName:    r.pipelineName(b, open.workTree),
		SemconvRootSpan: r.cfg.SemconvRootSpan,
		History:         r.history.Handle(),
		Signals:         signals,
		MetricsAsSpans:  r.cfg.MetricsAsSpans,
		BuildMetrics:    r.metricSwitches.buildMetricsWanted(),
		// The compatibility switch keeps ct-cake's per-build series.
		HostMetricIdentity: !r.cfg.PerBuildMetricIdentity,
		TimeTrace:          r.cfg.TimeTrace.request(),
		Limits: ffi.Limits{
			MaxFileBytes:    uint64(r.cfg.Limits.MaxFileSize),
			MaxEvents:       uint64(r.cfg.Limits.MaxEvents),
			MaxDepth:        uint32(r.cfg.Limits.MaxDepth),
			MaxAttributeLen: uint32(r.cfg.Limits.MaxAttributeLength),
		},
	}
	if req.StatslogPath == "" {
		req.StatslogPath = r.cfg.mappedStatslog(b.Dir)
	}
	req.BuildGraphPath = r.mappedBuildGraph(b.Dir)
	req.ResourceAttributes = r.userAttributes()
	return req
}

// pipelineName is `cicd.pipeline.name` (internal/pipelinename: the
// configured name, else the git work tree's directory name, else a
// readable name from the build's location).
func (r *compiletoolsReceiver) pipelineName(b discovery.Build, workTree string) string {
	return pipelinename.Of(r.cfg.PipelineName, workTree, b.Dir)
}

// livePipelineName is a running build's cicd.pipeline.name by the same
// rule, its work tree looked up as the ledger does (noteGitSHA).
func (r *compiletoolsReceiver) livePipelineName(dir string) string {
	workTree, _ := gitsha.WorkTree(dir)
	return pipelinename.Of(r.cfg.PipelineName, workTree, dir)
}

// userAttributes lists the configured resource attributes in key order:
// maps have none, and a re-read build must give identical bytes.
func (r *compiletoolsReceiver) userAttributes() []ffi.Attribute {
	keys := make([]string, 0, len(r.cfg.ResourceAttributes))
	for k := range r.cfg.ResourceAttributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]ffi.Attribute, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, ffi.Attribute{Key: k, Value: r.cfg.ResourceAttributes[k]})
	}
	return attrs
}

// sideFile returns the file name of a build: the original while it exists,
// else the copy captured while the build ran, else "". Anything else there
// is warned about and counted once per build; a symbolic link is refused,
// never followed: it
// could point anywhere the collector may read. The core opens the file
// with O_NOFOLLOW as well, in case one is swapped in after this check.
func (r *compiletoolsReceiver) sideFile(ctx context.Context, dir, name string) string {
	path := filepath.Join(dir, name)
	st, err := os.Lstat(path)
	if err == nil && st.Mode().IsRegular() {
		return path
	}
	switch {
	case err != nil || !r.ledger.warnOnce(dir, problemSideFile):
	case st.Mode()&os.ModeSymlink != 0:
		r.logger.Warn("side file is a symbolic link; not followed", zap.String("path", path))
		r.telemetry.ReceiverCompiletoolsSymlinksRefused.Add(ctx, 1)
	default: // a FIFO, a directory, a device: never opened
		r.logger.Warn("side file is not a regular file; ignored", zap.String("path", path), zap.String("type", st.Mode().Type().String()))
		r.telemetry.ReceiverCompiletoolsPathProblems.Add(ctx, 1)
	}
	if r.capturer != nil {
		return r.capturer.Path(dir, name)
	}
	return ""
}

// mappedBuildGraph returns the configured build file of a build (the first
// matching analytics.build_graphs entry).
func (r *compiletoolsReceiver) mappedBuildGraph(dir string) string {
	for _, m := range r.cfg.Analytics.BuildGraphs {
		if ok, _ := doublestar.PathMatch(m.Include, dir); ok {
			return m.Path
		}
	}
	return ""
}

// mappedStatslog returns the configured explicit statslog of a build.
func (c *Config) mappedStatslog(dir string) string {
	for _, m := range c.Capture.Statslogs {
		if ok, _ := doublestar.PathMatch(m.Include, dir); ok {
			return m.Path
		}
	}
	return ""
}
