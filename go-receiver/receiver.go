package compiletoolsreceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/casscan"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/cumulative"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/history"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/livebuilds"
)

// compiletoolsReceiver polls the configured directories and sends every
// finished build once to the traces and metrics consumers. One instance
// serves both signals of a receiver ID (see factory.go).
type compiletoolsReceiver struct {
	cfg    *Config
	set    receiver.Settings
	logger *zap.Logger
	finder discovery.Finder
	onStop func()

	traces     consumer.Traces
	metrics    consumer.Metrics
	obsTraces  *receiverhelper.ObsReport
	obsMetrics *receiverhelper.ObsReport
	// metricSwitches drop the metrics and resource attributes the
	// configuration disables; cumulative, when set, sums the series the
	// host's builds share (internal/cumulative).
	metricSwitches metricSwitches
	cumulative     *cumulative.Totals
	logs           consumer.Logs
	obsLogs        *receiverhelper.ObsReport

	// Set up in Start.
	hostName string
	budget   *parseBudget
	ledger   *buildLedger
	capturer *capture.Capturer
	// captureWatcher captures transient files as the file watches see
	// them (nil: capture disabled or watches unavailable).
	captureWatcher *capture.Watcher
	telemetry      *selfTelemetry
	history        *history.Keeper // nil: history disabled
	// liveBuilds follows running builds for the logs signal
	// (internal/livebuilds); nil without a logs pipeline or with
	// live.enabled false.
	liveBuilds *livebuilds.Tracker
	// firstPoll applies start_at once, on the first poll after Start.
	firstPoll bool
	// casScanner scans the CAS stores on their schedule (nil: no store
	// or pool configured).
	casScanner *casscan.Scanner

	startOnce        sync.Once
	stopOnce         sync.Once
	cancel           context.CancelFunc
	done             chan struct{}
	casDone          chan struct{}
	captureWatchDone chan struct{}
	captureCopyDone  chan struct{}
	// lastSweep is when the captures of vanished builds were last deleted.
	lastSweep      time.Time
	liveBuildsDone chan struct{}
	// now is the clock; tests replace it.
	now func() time.Time
}

var errConsumerTwice = errors.New("compiletools receiver: a consumer for this signal is already registered")

func newReceiver(cfg *Config, set receiver.Settings, onStop func()) *compiletoolsReceiver {
	return &compiletoolsReceiver{
		cfg:    cfg,
		set:    set,
		logger: set.Logger,
		finder: discovery.Finder{Include: cfg.Include, Exclude: cfg.Exclude},
		onStop: onStop,
		now:    time.Now,

		metricSwitches: newMetricSwitches(cfg),
		cumulative:     cumulativeTotalsFor(cfg),
	}
}

// cumulativeTotalsFor is the totals the configuration asks for: none
// with per-build identity (each build is its own cumulative series already)
// or with delta temporality.
func cumulativeTotalsFor(cfg *Config) *cumulative.Totals {
	if cfg.PerBuildMetricIdentity || cfg.MetricsTemporality == MetricsTemporalityDelta {
		return nil
	}
	return cumulative.New()
}

func (r *compiletoolsReceiver) newObsReport() (*receiverhelper.ObsReport, error) {
	return receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "file", ReceiverCreateSettings: r.set,
	})
}

func (r *compiletoolsReceiver) setTracesConsumer(next consumer.Traces) error {
	if r.traces != nil {
		return errConsumerTwice
	}
	obs, err := r.newObsReport()
	if err != nil {
		return err
	}
	r.traces, r.obsTraces = next, obs
	return nil
}

func (r *compiletoolsReceiver) setMetricsConsumer(next consumer.Metrics) error {
	if r.metrics != nil {
		return errConsumerTwice
	}
	obs, err := r.newObsReport()
	if err != nil {
		return err
	}
	r.metrics, r.obsMetrics = next, obs
	return nil
}

// setLogsConsumer registers the logs consumer (the live records).
func (r *compiletoolsReceiver) setLogsConsumer(next consumer.Logs) error {
	if r.logs != nil {
		return errConsumerTwice
	}
	obs, err := r.newObsReport()
	if err != nil {
		return err
	}
	r.logs, r.obsLogs = next, obs
	return nil
}

// Start checks the Rust core, loads checkpoints and starts polling in the
// background; it never blocks on scanning. Starting twice is a no-op.
func (r *compiletoolsReceiver) Start(ctx context.Context, host component.Host) error {
	var err error
	r.startOnce.Do(func() { err = r.start(ctx, host) })
	return err
}

func (r *compiletoolsReceiver) start(ctx context.Context, host component.Host) error {
	if err := r.setUp(ctx, host); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan struct{})
	if r.captureWatcher != nil {
		r.captureWatchDone = make(chan struct{})
		go func() {
			defer close(r.captureWatchDone)
			r.captureWatcher.Run(runCtx)
		}()
	}
	if r.capturer != nil {
		r.captureCopyDone = make(chan struct{})
		go func() {
			defer close(r.captureCopyDone)
			r.capturer.Run(runCtx)
		}()
	}
	if r.liveBuilds != nil {
		r.liveBuildsDone = make(chan struct{})
		go func() {
			defer close(r.liveBuildsDone)
			r.liveBuilds.Run(runCtx)
		}()
	}
	go r.run(runCtx)
	if r.casScanner != nil {
		r.casDone = make(chan struct{})
		go func() {
			defer close(r.casDone)
			r.casScanner.Run(runCtx)
		}()
	}
	return nil
}

// Shutdown stops polling, cancels a parse in flight in the core, waits for
// the workers within ctx and closes the storage client. Safe before Start
// and when repeated.
func (r *compiletoolsReceiver) Shutdown(ctx context.Context) error {
	var err error
	r.stopOnce.Do(func() {
		r.startOnce.Do(func() {}) // a later Start must not start polling
		if r.onStop != nil {
			r.onStop()
		}
		if r.cancel == nil {
			return
		}
		r.cancel()
		for _, done := range []chan struct{}{r.done, r.casDone, r.captureWatchDone, r.captureCopyDone, r.liveBuildsDone} {
			if done == nil {
				continue
			}
			select {
			case <-done:
			case <-ctx.Done():
				err = fmt.Errorf("compiletools receiver: shutdown: %w", ctx.Err())
				return // a goroutine still uses the store: leave it open
			}
		}
		r.telemetry.shutdown()
		r.history.Close()
		err = errors.Join(r.ledger.close(ctx), r.liveBuilds.Close(ctx))
	})
	return err
}

func (r *compiletoolsReceiver) run(ctx context.Context) {
	defer close(r.done)
	ticker := time.NewTicker(r.cfg.PollInterval)
	defer ticker.Stop()
	for {
		r.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
