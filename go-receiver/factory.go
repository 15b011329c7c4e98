package compiletoolsreceiver

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// NewFactory returns the factory of the `compiletools` receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		receiver.WithTraces(createTraces, metadata.TracesStability),
		receiver.WithMetrics(createMetrics, metadata.MetricsStability),
		receiver.WithLogs(createLogs, metadata.LogsStability),
	)
}

// One receiver instance serves every signal of one configured receiver, so
// each build is read once and checkpointed once; the logs signal carries
// the live progress of running builds (internal/livebuilds). The service
// hands the same *Config to every Create call of one receiver ID, which
// makes it the key.
var instances = &instanceMap{m: map[*Config]*compiletoolsReceiver{}}

type instanceMap struct {
	mu sync.Mutex
	m  map[*Config]*compiletoolsReceiver
}

func (im *instanceMap) getOrCreate(cfg *Config, set receiver.Settings) *compiletoolsReceiver {
	im.mu.Lock()
	defer im.mu.Unlock()
	if r, ok := im.m[cfg]; ok {
		return r
	}
	r := newReceiver(cfg, set, func() { im.remove(cfg) })
	im.m[cfg] = r
	return r
}

func (im *instanceMap) remove(cfg *Config) {
	im.mu.Lock()
	defer im.mu.Unlock()
	delete(im.m, cfg)
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	r := instances.getOrCreate(cfg.(*Config), set)
	if err := r.setTracesConsumer(next); err != nil {
		return nil, err
	}
	return r, nil
}

func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	r := instances.getOrCreate(cfg.(*Config), set)
	if err := r.setMetricsConsumer(next); err != nil {
		return nil, err
	}
	return r, nil
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	r := instances.getOrCreate(cfg.(*Config), set)
	if err := r.setLogsConsumer(next); err != nil {
		return nil, err
	}
	return r, nil
}
