package compiletoolsreceiver

import (
	"context"
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
)

// processBuild parses one build once and hands it to every consumer not
// served yet (a trace as several bounded requests, see splitTraces); it
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
	release, err := r.holdBudget(ctx, b, req)
	if err != nil {
		return true // shutting down: the build is taken up again after a restart
	}
	defer release() // the pdata lives until every consumer returned
	res, err := ffi.Process(ctx, req)
	if err != nil {
		code := ffi.CodeOf(err)
		if code == ffi.CodeCancelled {
			return true // shutting down: the build is taken up again after a restart
		}
		if r.deferUnreadable(ctx, b, err) {
			return true
		}
		r.logger.Warn("cannot read build; skipping it",
			zap.String("path", filepath.Join(b.Dir, discovery.TimingFile)),
			zap.String("reason", code.String()),
			zap.Error(err))
		r.telemetry.parseFailure(ctx, code.String())
		r.telemetry.build(ctx, outcomeFailed)
		r.ledger.settle(ctx, b, checkpoint.Failed, 0)
		return true
	}
	for _, w := range res.Warnings {
		r.logger.Warn("build read with a problem", zap.String("path", b.Dir), zap.String("warning", w))
	}
	r.telemetry.ReceiverCompiletoolsUnanchoredEvents.Add(ctx, int64(res.Summary.UnanchoredRules))
	r.telemetry.ReceiverCompiletoolsDroppedAttributes.Add(ctx, int64(res.Summary.DroppedAttributes))

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
	progress, tracesErr, metricsErr := r.consume(ctx, want, res.Output, open.traces)
	if want&ffi.SignalTraces != 0 {
		record(ffi.SignalTraces, tracesErr)
	}
	if want&ffi.SignalMetrics != 0 {
		record(ffi.SignalMetrics, metricsErr)
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

func (r *compiletoolsReceiver) request(ctx context.Context, b discovery.Build, signals ffi.Signals, open openBuild) ffi.Request {
	req := ffi.Request{
		InvocationDir:  b.Dir,
		StatslogPath:   r.sideFile(ctx, b.Dir, capture.Statslog),
		OutcomesPath:   r.sideFile(ctx, b.Dir, capture.Outcomes),
		HostName:       r.hostName,
		ServiceName:    r.cfg.ServiceName,
		GitCommitSHA:   open.gitSHA,
		VCS:            open.vcs,
		PipelineName:   r.pipelineName(b, open.workTree),
		RootSpanServer: r.cfg.RootSpanKind == RootSpanServer,
		Signals:        signals,
		MetricsAsSpans: r.cfg.MetricsAsSpans,
		Limits: ffi.Limits{
			MaxFileBytes:    uint64(r.cfg.Limits.MaxFileSize),
			MaxEvents:       uint64(r.cfg.Limits.MaxEvents),
			MaxDepth:        uint32(r.cfg.Limits.MaxDepth),
			MaxAttributeLen: uint32(r.cfg.Limits.MaxAttributeLength),
		},
	}
	if req.StatslogPath == "" {
		req.StatslogPath = r.mappedStatslog(b.Dir)
	}
	req.ResourceAttributes = r.userAttributes()
	return req
}

// pipelineName is `cicd.pipeline.name`: the configured name, else the name
// of the git work tree's directory (the project), else the diagnostics
// directory holding the build (one per project or variant).
func (r *compiletoolsReceiver) pipelineName(b discovery.Build, workTree string) string {
	switch {
	case r.cfg.PipelineName != "":
		return r.cfg.PipelineName
	case workTree != "":
		return filepath.Base(workTree)
	default:
		return filepath.Dir(b.Dir)
	}
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

// mappedStatslog returns the configured explicit statslog of a build.
func (r *compiletoolsReceiver) mappedStatslog(dir string) string {
	for _, m := range r.cfg.Capture.Statslogs {
		if ok, _ := doublestar.PathMatch(m.Include, dir); ok {
			return m.Path
		}
	}
	return ""
}
