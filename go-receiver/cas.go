package compiletoolsreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// casGroup is one store set scanned in one core call: the cells of one
// variant, reported under one resource (ct.variant).
type casGroup struct {
	variant string
	cells   []ffi.CASCell
}

// twoHex matches the shard directories of a store, which are not variants.
var twoHex = regexp.MustCompile(`^[0-9a-f]{2}$`)

// casGroups resolves the configured cells and pools into store sets. Pool
// children are enumerated like `ct-cache-report --all-variants`: real
// directories only, without dot-names, TraceStore, diagnostics and 2-hex
// shard names. (compiletools also requires the name to resolve as a variant
// against its ct.conf files, which a receiver cannot read; any other
// directory is scanned and reported under its name.)
func (r *compiletoolsReceiver) casGroups() []casGroup {
	byVariant := map[string]*casGroup{}
	add := func(variant string, cell ffi.CASCell) {
		g, ok := byVariant[variant]
		if !ok {
			g = &casGroup{variant: variant}
			byVariant[variant] = g
		}
		g.cells = append(g.cells, cell)
	}
	for _, st := range r.cfg.CAS.Stores {
		kind, _ := ffi.ParseCASKind(st.Kind)
		add(filepath.Base(filepath.Clean(st.Path)), ffi.CASCell{Kind: kind, Path: st.Path, Explicit: true})
	}
	for _, pool := range r.cfg.CAS.Pools {
		kind, _ := ffi.ParseCASKind(pool.Kind)
		entries, err := os.ReadDir(pool.Path)
		if err != nil {
			if !r.casFailingPools[pool.Path] {
				r.logger.Warn("cannot list CAS pool", zap.String("path", pool.Path), zap.Error(err))
				r.casFailingPools[pool.Path] = true
			}
			continue
		}
		delete(r.casFailingPools, pool.Path)
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || name[0] == '.' || name == "TraceStore" || name == "diagnostics" || twoHex.MatchString(name) {
				continue
			}
			add(name, ffi.CASCell{Kind: kind, Path: filepath.Join(pool.Path, name)})
		}
	}
	groups := make([]casGroup, 0, len(byVariant))
	for _, g := range byVariant {
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].variant < groups[j].variant })
	return groups
}

// runCAS scans the stores every scan_interval after initial_delay. One
// goroutine does every scan in turn, so scans never overlap.
func (r *compiletoolsReceiver) runCAS(ctx context.Context) {
	defer close(r.casDone)
	// One cache for the receiver's life: unchanged obj shards are reused
	// between scans (the core checks each shard directory's identity).
	cache, err := ffi.NewCASCache()
	if err != nil {
		r.logger.Warn("CAS scan cache unavailable; scanning without it", zap.Error(err))
	}
	defer cache.Close()
	select {
	case <-ctx.Done():
		return
	case <-time.After(r.cfg.CAS.InitialDelay):
	}
	ticker := time.NewTicker(r.cfg.CAS.ScanInterval)
	defer ticker.Stop()
	for {
		r.scanCAS(ctx, cache)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// scanOneGroup scans one store set within cas.timeout, if set; a scan cut
// short by it fails like any other (counted and logged), and the next one
// starts on schedule.
func (r *compiletoolsReceiver) scanOneGroup(ctx context.Context, req ffi.CASRequest, cache *ffi.CASCache) (ffi.CASResult, error) {
	if r.cfg.CAS.Timeout <= 0 {
		return ffi.ScanCAS(ctx, req, cache)
	}
	tctx, cancel := context.WithTimeout(ctx, r.cfg.CAS.Timeout)
	defer cancel()
	res, err := ffi.ScanCAS(tctx, req, cache)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		err = fmt.Errorf("scan exceeded cas.timeout (%s): %w", r.cfg.CAS.Timeout, err)
	}
	return res, err
}

func (r *compiletoolsReceiver) scanCAS(ctx context.Context, cache *ffi.CASCache) {
	asSpans := r.cfg.MetricsAsSpans
	want := ffi.SignalMetrics
	if asSpans {
		want = ffi.SignalTraces
	}
	if r.consumedSignals()&want == 0 {
		return // nobody consumes the result
	}
	groups := r.casGroups()
	// A pool variant that disappeared is not in groups and never scanned
	// again: the core's cache must let go of it now.
	var paths []string
	for _, g := range groups {
		for _, c := range g.cells {
			paths = append(paths, c.Path)
		}
	}
	if n := cache.Retain(paths); n > 0 {
		r.logger.Debug("CAS scan cache: cells no longer scanned dropped", zap.Int("cells", n))
	}
	for _, g := range groups {
		start := r.now()
		req := ffi.CASRequest{
			Cells:              g.cells,
			HostName:           r.hostName,
			ServiceName:        r.cfg.ServiceName,
			Variant:            g.variant,
			ResourceAttributes: r.userAttributes(),
			TimeUnixNano:       uint64(start.UnixNano()),
			AsSpans:            asSpans,
			MaxThreads:         uint32(r.cfg.CAS.MaxThreads),
		}
		res, err := r.scanOneGroup(ctx, req, cache)
		r.telemetry.ReceiverCompiletoolsCasScanDuration.Record(ctx, r.now().Sub(start).Seconds())
		if err != nil {
			if ffi.CodeOf(err) == ffi.CodeCancelled && ctx.Err() != nil {
				return // shutting down
			}
			r.telemetry.ReceiverCompiletoolsCasScanErrors.Add(ctx, 1)
			r.logger.Warn("CAS scan failed", zap.String("variant", g.variant), zap.Error(err))
			continue
		}
		if res.Anomalies > 0 {
			r.telemetry.ReceiverCompiletoolsCasAnomalies.Add(ctx, int64(res.Anomalies))
		}
		r.logCASWarnings(g.variant, res.Warnings)
		_, tracesErr, metricsErr := r.consume(ctx, want, res.Output, traceProgress{})
		if err := errors.Join(tracesErr, metricsErr); err != nil {
			// A snapshot is superseded by the next scan: no retry.
			r.logger.Debug("CAS snapshot not accepted", zap.String("variant", g.variant), zap.Error(err))
		}
	}
}

// logCASWarnings logs the warnings of a scan not given by the variant's
// previous scan: a problem is logged when it appears, not every scan while
// it lasts (the anomaly count still counts every scan's).
func (r *compiletoolsReceiver) logCASWarnings(variant string, warnings []string) {
	last := r.casWarned[variant]
	current := make(map[string]bool, len(warnings))
	for _, w := range warnings {
		current[w] = true
		if !last[w] {
			r.logger.Warn("CAS scan", zap.String("variant", variant), zap.String("warning", w))
		}
	}
	r.casWarned[variant] = current
}
