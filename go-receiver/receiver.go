package compiletoolsreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// compiletoolsReceiver polls the configured directories and sends every
// finished build once to the traces and metrics consumers.
type compiletoolsReceiver struct {
	cfg      *Config
	set      receiver.Settings
	logger   *zap.Logger
	finder   discovery.Finder
	hostName string
	onStop   func()

	traces     consumer.Traces
	metrics    consumer.Metrics
	obsTraces  *receiverhelper.ObsReport
	obsMetrics *receiverhelper.ObsReport

	// state is touched only by the poll goroutine.
	state *buildState

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	done      chan struct{}
}

var errConsumerTwice = errors.New("compiletools receiver: a consumer for this signal is already registered")

func newReceiver(cfg *Config, set receiver.Settings, onStop func()) *compiletoolsReceiver {
	return &compiletoolsReceiver{
		cfg:    cfg,
		set:    set,
		logger: set.Logger,
		finder: discovery.Finder{Include: cfg.Include, Exclude: cfg.Exclude},
		onStop: onStop,
		state:  newBuildState(),
	}
}

func (r *compiletoolsReceiver) setTracesConsumer(next consumer.Traces) error {
	if r.traces != nil {
		return errConsumerTwice
	}
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "file", ReceiverCreateSettings: r.set,
	})
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
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: r.set.ID, Transport: "file", ReceiverCreateSettings: r.set,
	})
	if err != nil {
		return err
	}
	r.metrics, r.obsMetrics = next, obs
	return nil
}

// Start checks the Rust core and starts polling in the background; it never
// blocks on disk work. Starting the shared instance twice is a no-op.
func (r *compiletoolsReceiver) Start(_ context.Context, _ component.Host) error {
	var err error
	r.startOnce.Do(func() {
		if err = ffi.CheckABI(); err != nil {
			return
		}
		r.hostName = r.cfg.HostName
		if r.hostName == "" {
			if r.hostName, err = os.Hostname(); err != nil {
				err = fmt.Errorf("compiletools receiver: host_name is not set and os.Hostname failed: %w", err)
				return
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.done = make(chan struct{})
		go r.run(ctx)
	})
	return err
}

// Shutdown stops polling, cancels a build in flight in the core, and waits
// for the poll goroutine within ctx. Safe before Start and when repeated.
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
		select {
		case <-r.done:
		case <-ctx.Done():
			err = fmt.Errorf("compiletools receiver: shutdown: %w", ctx.Err())
		}
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

// poll sends every finished build not sent yet, oldest first.
func (r *compiletoolsReceiver) poll(ctx context.Context) {
	builds, problems := r.finder.Find()
	for _, p := range problems {
		if r.state.firstProblem(p.Path) {
			r.logger.Warn("cannot examine path; skipping it", zap.String("path", p.Path), zap.Error(p.Err))
		}
	}
	for _, b := range builds {
		if ctx.Err() != nil {
			return
		}
		if r.state.finished(b.Dir) {
			continue
		}
		r.processBuild(ctx, b)
	}
}
