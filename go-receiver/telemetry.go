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

// selfTelemetry wraps the instruments mdatagen generates from
// metadata.yaml (see documentation.md) with the receiver's attributes.
type selfTelemetry struct {
	*metadata.TelemetryBuilder
	// backlog is observed by the gauge's callback.
	backlog atomic.Int64
}

// The collector's meter provider already carries the component's identity.
func newSelfTelemetry(set component.TelemetrySettings) (*selfTelemetry, error) {
	t := &selfTelemetry{}
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t.TelemetryBuilder = tb
	err = tb.RegisterReceiverCompiletoolsBacklogCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(t.backlog.Load())
		return nil
	})
	if err != nil {
		tb.Shutdown()
		return nil, err
	}
	return t, nil
}

func (t *selfTelemetry) build(ctx context.Context, outcome string) {
	t.ReceiverCompiletoolsBuilds.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (t *selfTelemetry) parseFailure(ctx context.Context, reason string) {
	t.ReceiverCompiletoolsParseFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func (t *selfTelemetry) shutdown() { t.Shutdown() }
