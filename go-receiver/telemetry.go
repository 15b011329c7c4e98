package compiletoolsreceiver

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// Build outcomes, the `outcome` attribute of otelcol_receiver_compiletools_builds.
const (
	outcomeDelivered = "delivered"
	outcomeDropped   = "dropped"
	outcomeFailed    = "failed"
	outcomeSkipped   = "skipped"
	outcomeRetried   = "retried"
)

// selfTelemetry is the receiver's own metrics beyond ObsReport's accepted /
// refused counts; metadata.yaml documents each instrument.
type selfTelemetry struct {
	builds          metric.Int64Counter
	parseFailures   metric.Int64Counter
	unanchored      metric.Int64Counter
	droppedAttrs    metric.Int64Counter
	capturedFiles   metric.Int64Counter
	pathProblems    metric.Int64Counter
	buildLag        metric.Float64Histogram
	casScanDuration metric.Float64Histogram
	casScanErrors   metric.Int64Counter
	casAnomalies    metric.Int64Counter
	backlog         atomic.Int64
	backlogGauge    metric.Int64ObservableGauge
	registration    metric.Registration
}

// The collector's meter provider already carries the component's identity.
func newSelfTelemetry(set component.TelemetrySettings) (*selfTelemetry, error) {
	m := set.MeterProvider.Meter(metadata.ScopeName)
	t := &selfTelemetry{}
	var err error
	if t.builds, err = m.Int64Counter("otelcol_receiver_compiletools_builds",
		metric.WithDescription("Builds settled by the receiver, by outcome (delivered, dropped, failed, skipped) plus retried attempts."),
		metric.WithUnit("{builds}")); err != nil {
		return nil, err
	}
	if t.parseFailures, err = m.Int64Counter("otelcol_receiver_compiletools_parse_failures",
		metric.WithDescription("Builds whose files could not be read, by reason (io, malformed, limit_exceeded, panic)."),
		metric.WithUnit("{builds}")); err != nil {
		return nil, err
	}
	if t.unanchored, err = m.Int64Counter("otelcol_receiver_compiletools_unanchored_events",
		metric.WithDescription("Rules skipped because their times cannot be placed on the wall clock."),
		metric.WithUnit("{events}")); err != nil {
		return nil, err
	}
	if t.droppedAttrs, err = m.Int64Counter("otelcol_receiver_compiletools_dropped_attributes",
		metric.WithDescription("Metadata values that could not become span attributes."),
		metric.WithUnit("{attributes}")); err != nil {
		return nil, err
	}
	if t.capturedFiles, err = m.Int64Counter("otelcol_receiver_compiletools_captured_files",
		metric.WithDescription("Transient files (ccache.statslog, rule_outcomes.log) captured from running builds."),
		metric.WithUnit("{files}")); err != nil {
		return nil, err
	}
	if t.pathProblems, err = m.Int64Counter("otelcol_receiver_compiletools_path_problems",
		metric.WithDescription("Paths under the include globs that could not be examined (permission denied, vanished, symlink loops)."),
		metric.WithUnit("{paths}")); err != nil {
		return nil, err
	}
	if t.buildLag, err = m.Float64Histogram("otelcol_receiver_compiletools_build_lag",
		metric.WithDescription("Time from a build's end (timing.json written) to its delivery to the consumers."),
		metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if t.casScanDuration, err = m.Float64Histogram("otelcol_receiver_compiletools_cas_scan_duration",
		metric.WithDescription("Duration of one CAS store-set scan."),
		metric.WithUnit("s")); err != nil {
		return nil, err
	}
	if t.casScanErrors, err = m.Int64Counter("otelcol_receiver_compiletools_cas_scan_errors",
		metric.WithDescription("CAS store-set scans that failed."),
		metric.WithUnit("{scans}")); err != nil {
		return nil, err
	}
	if t.casAnomalies, err = m.Int64Counter("otelcol_receiver_compiletools_cas_anomalies",
		metric.WithDescription("CAS oddities met while scanning (manifests treated as missing, unreadable directories, missing configured cells)."),
		metric.WithUnit("{anomalies}")); err != nil {
		return nil, err
	}
	if t.backlogGauge, err = m.Int64ObservableGauge("otelcol_receiver_compiletools_backlog",
		metric.WithDescription("Finished builds waiting to be sent after the last poll."),
		metric.WithUnit("{builds}")); err != nil {
		return nil, err
	}
	t.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(t.backlogGauge, t.backlog.Load())
		return nil
	}, t.backlogGauge)
	return t, err
}

func (t *selfTelemetry) build(ctx context.Context, outcome string) {
	t.builds.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (t *selfTelemetry) parseFailure(ctx context.Context, reason string) {
	t.parseFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func (t *selfTelemetry) shutdown() {
	if t.registration != nil {
		_ = t.registration.Unregister()
	}
}
