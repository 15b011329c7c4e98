package compiletoolsreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/casscan"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/history"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/livebuilds"
)

// setUp prepares everything a poll needs, without starting anything.
func (r *compiletoolsReceiver) setUp(ctx context.Context, host component.Host) error {
	if err := ffi.CheckABI(); err != nil {
		return err
	}
	r.hostName = r.cfg.HostName
	if r.hostName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("compiletools receiver: host_name is not set and os.Hostname failed: %w", err)
		}
		r.hostName = h
	}
	warnUnstableHostName(r.logger, r.cfg.HostName, r.hostName, containerDetector)
	for _, k := range r.cfg.deprecatedKeys {
		r.logger.Warn("deprecated configuration key; it still works", zap.String("key", k[0]), zap.String("use", k[1]))
	}
	store, err := r.openStore(ctx, host)
	if err != nil {
		return err
	}
	if r.cfg.Capture.Enabled {
		dir := r.cfg.Capture.Directory
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "otelcol-compiletools-capture", sanitize(r.set.ID.String()))
		}
		if r.capturer, err = capture.New(dir, r.cfg.maxFileSize()); err != nil {
			_ = store.Close(ctx)
			return fmt.Errorf("compiletools receiver: %w", err)
		}
		r.sweepCaptures()
	}
	if r.telemetry, err = newSelfTelemetry(r.set.TelemetrySettings); err != nil {
		_ = store.Close(ctx)
		return err
	}
	if r.capturer != nil {
		watcher, err := capture.NewWatcher(r.capturer, r.logger, func(n int) {
			r.telemetry.ReceiverCompiletoolsCapturedFiles.Add(context.Background(), int64(n))
		})
		if err != nil {
			r.logger.Warn("file watches unavailable; capturing transient files by polling only", zap.Error(err))
		}
		r.captureWatcher = watcher
		r.capturer.OnCopy(func(n int) {
			r.telemetry.ReceiverCompiletoolsCapturedFiles.Add(context.Background(), int64(n))
		}, func(dir string, err error) {
			if r.ledger.warnOnce(dir, problemCapture) {
				r.logger.Warn("cannot capture transient build files", zap.String("path", dir), zap.Error(err))
			}
		})
	}
	r.budget = newParseBudget(r.cfg.Limits.MaxParseBytesInFlight)
	r.ledger = newBuildLedger(store, r.capturer, r.captureWatcher, r.cfg, r.logger, r.now)
	r.ledger.writeFailed = func(ctx context.Context) { r.telemetry.ReceiverCompiletoolsCheckpointWriteFailures.Add(ctx, 1) }
	if r.cfg.History.Enabled {
		opts := history.Options{MaxTargets: r.cfg.History.MaxTargets, MedianOf: r.cfg.History.MedianOf}
		if r.history, err = history.Open(ctx, opts, store, r.logger); err != nil {
			_ = store.Close(ctx)
			return err
		}
	}
	r.ledger.history = r.history
	if err := r.setUpLiveTracker(ctx, host); err != nil {
		_ = store.Close(ctx)
		return err
	}
	r.firstPoll = true
	r.casScanner = r.newCASScanner()
	return nil
}

// newCASScanner prepares the scheduled CAS scans, if any store or pool is
// configured.
func (r *compiletoolsReceiver) newCASScanner() *casscan.Scanner {
	if len(r.cfg.CAS.Stores)+len(r.cfg.CAS.Pools) == 0 {
		return nil
	}
	stores := func(in []CASStore) []casscan.Store {
		out := make([]casscan.Store, 0, len(in))
		for _, st := range in {
			out = append(out, casscan.Store{Kind: st.Kind, Path: st.Path, ID: st.ID, Scan: st.Scan})
		}
		return out
	}
	return casscan.New(casscan.Options{
		Stores:             stores(r.cfg.CAS.Stores),
		Pools:              stores(r.cfg.CAS.Pools),
		InitialDelay:       r.cfg.CAS.InitialDelay,
		ScanInterval:       r.cfg.CAS.ScanInterval,
		Timeout:            r.cfg.CAS.Timeout,
		MaxThreads:         r.cfg.CAS.MaxThreads,
		AsSpans:            r.cfg.MetricsAsSpans,
		HostName:           r.hostName,
		ServiceName:        r.cfg.ServiceName,
		ResourceAttributes: r.userAttributes(),
		Holder:             r.hostName + "/" + r.set.ID.String(),
		LeaseDuration:      r.cfg.CAS.leaseDuration(),
	}, casscan.Settings{
		Logger: r.logger,
		Now:    r.now,
		Telemetry: casscan.Telemetry{
			ScanDuration:  r.telemetry.ReceiverCompiletoolsCasScanDuration,
			ScanErrors:    r.telemetry.ReceiverCompiletoolsCasScanErrors,
			Anomalies:     r.telemetry.ReceiverCompiletoolsCasAnomalies,
			LeaseProblems: r.telemetry.ReceiverCompiletoolsCasLeaseProblems,
			LeasesHeld:    r.telemetry.ReceiverCompiletoolsCasLeasesHeld,
		},
		Consumed: r.consumedSignals,
		Consume: func(ctx context.Context, want ffi.Signals, out ffi.Output) error {
			_, tracesErr, metricsErr := r.consume(ctx, want, out, traceProgress{})
			return errors.Join(tracesErr, metricsErr)
		},
	})
}

// openStore opens the configured storage extension's client, or a memory store.
func (r *compiletoolsReceiver) openStore(ctx context.Context, host component.Host) (*checkpoint.Store, error) {
	if r.cfg.Storage == nil {
		return checkpoint.NewMemory(), nil
	}
	se, err := storageExtension(host, r.cfg.Storage)
	if err != nil {
		return nil, err
	}
	client, err := se.GetClient(ctx, component.KindReceiver, r.set.ID, "")
	if err != nil {
		return nil, fmt.Errorf("compiletools receiver: storage %q: %w", r.cfg.Storage, err)
	}
	store, err := checkpoint.Open(ctx, client)
	if err != nil {
		_ = client.Close(ctx)
		return nil, fmt.Errorf("compiletools receiver: storage %q: %w", r.cfg.Storage, err)
	}
	return store, nil
}

// storageExtension is the storage extension id names.
func storageExtension(host component.Host, id *component.ID) (storage.Extension, error) {
	ext, ok := host.GetExtensions()[*id]
	if !ok {
		return nil, fmt.Errorf("compiletools receiver: storage extension %q not found (is it listed under service.extensions?)", id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("compiletools receiver: extension %q is not a storage extension", id)
	}
	return se, nil
}

// setUpLiveTracker creates the live-build follower when the receiver is
// in a logs pipeline and live.enabled is on.
func (r *compiletoolsReceiver) setUpLiveTracker(ctx context.Context, host component.Host) error {
	if r.logs == nil || !r.cfg.Live.Enabled {
		return nil
	}
	client, err := r.openLiveStateClient(ctx, host)
	if err != nil {
		return err
	}
	var consumeMetrics func(context.Context, pmetric.Metrics) error
	if r.metrics != nil {
		consumeMetrics = r.consumeMetrics
	}
	r.liveBuilds, err = livebuilds.New(ctx, client, livebuilds.Options{
		Interval:             r.cfg.Live.Interval,
		MaxRecordsPerBuild:   r.cfg.Live.MaxRecordsPerBuild,
		MaxRequestRecords:    r.cfg.Live.MaxRequestRecords,
		MaxRequestBytes:      r.cfg.Live.MaxRequestBytes,
		MaxFilesPerBuild:     r.cfg.Live.MaxFilesPerBuild,
		MaxOpenFilesPerBuild: r.cfg.Live.MaxOpenFilesPerBuild,
		MaxOpenFiles:         r.cfg.Live.MaxOpenFiles,
		AbandonAfter:         r.cfg.Live.AbandonAfter,
		AbandonWhenPIDGone:   r.cfg.Live.AbandonWhenPIDGone,
		Files:                r.cfg.Live.trackerFiles(),
		Exclude:              r.cfg.Exclude,
		HostName:             r.hostName,
		ServiceName:          r.cfg.ServiceName,
		ResourceAttributes:   r.userAttributes(),
		MaxAttributeLen:      uint32(r.cfg.Limits.MaxAttributeLength),
		MetricsEvery:         r.cfg.PollInterval,
		PipelineName:         r.livePipelineName,
	}, livebuilds.Settings{
		Logger:           r.logger,
		Now:              r.now,
		Capturer:         r.capturer,
		Checkpoints:      r.ledger.store,
		ExplicitStatslog: r.cfg.mappedStatslog,
		ConsumeLogs:      r.consumeLogs,
		ConsumeMetrics:   consumeMetrics,
	})
	if err != nil { // only a saved state that could not be read
		if client != nil {
			_ = client.Close(ctx)
		}
		return fmt.Errorf("compiletools receiver: storage %q (live): %w", r.cfg.Storage, err)
	}
	if r.captureWatcher != nil {
		r.captureWatcher.SetListener(r.liveBuilds)
	}
	return nil
}

// openLiveStateClient opens the storage extension's client "live", beside
// the build checkpoints, for the live builds' state (nil without storage:
// the state is kept in memory).
func (r *compiletoolsReceiver) openLiveStateClient(ctx context.Context, host component.Host) (storage.Client, error) {
	if r.cfg.Storage == nil {
		return nil, nil
	}
	se, err := storageExtension(host, r.cfg.Storage)
	if err != nil {
		return nil, err
	}
	client, err := se.GetClient(ctx, component.KindReceiver, r.set.ID, "live")
	if err != nil {
		return nil, fmt.Errorf("compiletools receiver: storage %q (live): %w", r.cfg.Storage, err)
	}
	return client, nil
}

// sanitize makes a component ID usable as a directory name.
func sanitize(id string) string {
	out := []byte(id)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			out[i] = '_'
		}
	}
	return string(out)
}
