// Package casscan scans compiletools' CAS stores on a schedule (the
// receiver's cas block), like `ct-cache-report`, and hands each variant's
// snapshot to the receiver's consumers.
package casscan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// group is one store set scanned in one core call: the cells of one
// variant in the stores of one id, reported under one resource
// (ct.variant, ct.cas.store.id).
type group struct {
	variant, storeID string
	cells            []ffi.CASCell
}

// StoreIDAttribute is the resource attribute naming a snapshot's store.
const StoreIDAttribute = "ct.cas.store.id"

// twoHex matches the shard directories of a store, which are not variants.
var twoHex = regexp.MustCompile(`^[0-9a-f]{2}$`)

// groups resolves the configured cells and pools into store sets. Pool
// children are enumerated like `ct-cache-report --all-variants`: real
// directories only, without dot-names, TraceStore, diagnostics and 2-hex
// shard names. (compiletools also requires the name to resolve as a variant
// against its ct.conf files, which a receiver cannot read; any other
// directory is scanned and reported under its name.)
//
// Only the stores this receiver scans this cycle (elect) are in a group.
func (s *Scanner) groups() []group {
	type key struct{ storeID, variant string }
	byKey := map[key]*group{}
	var storeID string
	add := func(variant string, cell ffi.CASCell) {
		k := key{storeID, variant}
		g, ok := byKey[k]
		if !ok {
			g = &group{variant: variant, storeID: storeID}
			byKey[k] = g
		}
		g.cells = append(g.cells, cell)
	}
	for _, st := range s.entries {
		if st.pool || !st.scanning {
			continue
		}
		storeID = st.id
		kind, _ := ffi.ParseCASKind(st.Kind)
		add(filepath.Base(filepath.Clean(st.Path)), ffi.CASCell{Kind: kind, Path: st.Path, Explicit: true})
	}
	for _, pool := range s.entries {
		if !pool.pool || !pool.scanning {
			continue
		}
		storeID = pool.id
		kind, _ := ffi.ParseCASKind(pool.Kind)
		entries, err := os.ReadDir(pool.Path)
		if err != nil {
			if !s.failingPools[pool.Path] {
				s.set.Logger.Warn("cannot list CAS pool", zap.String("path", pool.Path), zap.Error(err))
				s.failingPools[pool.Path] = true
			}
			continue
		}
		delete(s.failingPools, pool.Path)
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || name[0] == '.' || name == "TraceStore" || name == "diagnostics" || twoHex.MatchString(name) {
				continue
			}
			add(name, ffi.CASCell{Kind: kind, Path: filepath.Join(pool.Path, name)})
		}
	}
	groups := make([]group, 0, len(byKey))
	for _, g := range byKey {
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].variant != groups[j].variant {
			return groups[i].variant < groups[j].variant
		}
		return groups[i].storeID < groups[j].storeID
	})
	return groups
}

// Run scans the stores every scan_interval after initial_delay until ctx
// ends. One goroutine does every scan in turn, so scans never overlap.
func (s *Scanner) Run(ctx context.Context) {
	// One cache for the receiver's life: unchanged obj shards are reused
	// between scans (the core checks each shard directory's identity).
	cache, err := ffi.NewCASCache()
	if err != nil {
		s.set.Logger.Warn("CAS scan cache unavailable; scanning without it", zap.Error(err))
	}
	defer cache.Close()
	defer s.releaseLeases()
	select {
	case <-ctx.Done():
		return
	case <-time.After(s.o.InitialDelay):
	}
	ticker := time.NewTicker(s.o.ScanInterval)
	defer ticker.Stop()
	for {
		s.scan(ctx, cache)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// scanGroup scans one store set within cas.timeout, if set; a scan cut
// short by it fails like any other (counted and logged), and the next one
// starts on schedule.
func (s *Scanner) scanGroup(ctx context.Context, req ffi.CASRequest, cache *ffi.CASCache) (ffi.CASResult, error) {
	if s.o.Timeout <= 0 {
		return ffi.ScanCAS(ctx, req, cache)
	}
	tctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	res, err := ffi.ScanCAS(tctx, req, cache)
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		err = fmt.Errorf("scan exceeded cas.timeout (%s): %w", s.o.Timeout, err)
	}
	return res, err
}

// scan scans every store set once and hands each snapshot on.
func (s *Scanner) scan(ctx context.Context, cache *ffi.CASCache) {
	asSpans := s.o.AsSpans
	want := ffi.SignalMetrics
	if asSpans {
		want = ffi.SignalTraces
	}
	if s.set.Consumed()&want == 0 {
		return // nobody consumes the result
	}
	s.elect(ctx)
	groups := s.groups()
	// A pool variant that disappeared is not in groups and never scanned
	// again: the core's cache must let go of it now.
	var paths []string
	for _, g := range groups {
		for _, c := range g.cells {
			paths = append(paths, c.Path)
		}
	}
	if n := cache.Retain(paths); n > 0 {
		s.set.Logger.Debug("CAS scan cache: cells no longer scanned dropped", zap.Int("cells", n))
	}
	for i, g := range groups {
		if i > 0 {
			s.renewHeld() // a cycle may outlast a lease
		}
		start := s.set.Now()
		req := ffi.CASRequest{
			Cells:              g.cells,
			HostName:           s.o.HostName,
			ServiceName:        s.o.ServiceName,
			Variant:            g.variant,
			ResourceAttributes: s.resourceAttributes(g.storeID),
			TimeUnixNano:       uint64(start.UnixNano()),
			AsSpans:            asSpans,
			MaxThreads:         uint32(s.o.MaxThreads),
		}
		res, err := s.scanGroup(ctx, req, cache)
		s.set.Telemetry.ScanDuration.Record(ctx, s.set.Now().Sub(start).Seconds())
		if err != nil {
			if ffi.CodeOf(err) == ffi.CodeCancelled && ctx.Err() != nil {
				return // shutting down
			}
			s.set.Telemetry.ScanErrors.Add(ctx, 1)
			s.set.Logger.Warn("CAS scan failed", zap.String("variant", g.variant), zap.Error(err))
			continue
		}
		if res.Anomalies > 0 {
			s.set.Telemetry.Anomalies.Add(ctx, int64(res.Anomalies))
		}
		s.logWarnings(g, res.Warnings)
		if err := s.set.Consume(ctx, want, res.Output); err != nil {
			// A snapshot is superseded by the next scan: no retry.
			s.set.Logger.Debug("CAS snapshot not accepted", zap.String("variant", g.variant), zap.Error(err))
		}
	}
}

// resourceAttributes are a snapshot's resource attributes beyond the
// core's own: the configured ones and the store id, if known and not
// configured.
func (s *Scanner) resourceAttributes(storeID string) []ffi.Attribute {
	if storeID == "" {
		return s.o.ResourceAttributes
	}
	attrs := make([]ffi.Attribute, 0, len(s.o.ResourceAttributes)+1)
	for _, a := range s.o.ResourceAttributes {
		if a.Key == StoreIDAttribute {
			return s.o.ResourceAttributes
		}
		attrs = append(attrs, a)
	}
	return append(attrs, ffi.Attribute{Key: StoreIDAttribute, Value: storeID})
}

// logWarnings logs the warnings of a scan not given by the variant's
// previous scan: a problem is logged when it appears, not every scan while
// it lasts (the anomaly count still counts every scan's).
func (s *Scanner) logWarnings(g group, warnings []string) {
	key := g.storeID + "\x00" + g.variant
	last := s.warned[key]
	current := make(map[string]bool, len(warnings))
	for _, w := range warnings {
		current[w] = true
		if !last[w] {
			s.set.Logger.Warn("CAS scan", zap.String("variant", g.variant), zap.String("warning", w))
		}
	}
	s.warned[key] = current
}
