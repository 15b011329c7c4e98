package compiletoolsreceiver

import (
	"context"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// deliverBuildLogs hands a finished build's log records (the ct.clang.header
// and ct.clang.template records of its clang traces) to the logs consumer,
// the one the live records go to. They go out with the build's first
// delivery and are not checkpointed as a signal of their own: a consumer
// error is logged, not retried (the trace and the metrics carry the same
// numbers). Refused trace files were warned about with the other warnings;
// they are also counted as path problems.
func (r *compiletoolsReceiver) deliverBuildLogs(ctx context.Context, b discovery.Build, res ffi.Result) {
	if res.Summary.ClangTraces > 0 {
		r.budget.clangSeen.Store(true)
	}
	if n := res.Summary.ClangTracesRefused; n > 0 {
		r.telemetry.ReceiverCompiletoolsPathProblems.Add(ctx, int64(n))
	}
	if r.logs == nil || !res.HasLogs {
		return
	}
	if err := r.consumeLogs(ctx, res.Logs); err != nil {
		r.logger.Warn("logs consumer refused a build's clang records; not retried",
			zap.String("path", b.Dir), zap.Error(err))
	}
}
