package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// defaultMaxParseBytesInFlight is limits.max_parse_bytes_in_flight's
// default: one build of the default max_file_size at a time, or several
// smaller ones.
const defaultMaxParseBytesInFlight = 256 << 20

// parseBudget bounds the memory of the builds parsed at once by the size of
// their input. The core's memory (cgo, invisible to the Go runtime and so to
// the memory_limiter processor) grows with the bytes it reads, about twice
// the input at its peak, and the pdata built from its output lives on the Go
// heap until every consumer returned; max_concurrent_builds alone bounds the
// number of builds, not their size. A build holds its share from before the
// core reads it until its consumers returned.
//
// A build larger than the whole budget is not refused: it waits until no
// other build holds any budget and then runs alone, so it can neither
// deadlock nor starve (waiters are served in order).
type parseBudget struct {
	sem   *semaphore.Weighted
	total int64
	// clangSeen: a build read so far had clang traces, so later builds
	// may too, and each then holds one trace of up to max_trace_size.
	// A receiver whose builds have none never pays for them.
	clangSeen atomic.Bool
}

func newParseBudget(total int64) *parseBudget {
	if total <= 0 {
		total = defaultMaxParseBytesInFlight
	}
	return &parseBudget{sem: semaphore.NewWeighted(total), total: total}
}

// acquire waits until bytes of the budget are free (all of it, for a build
// larger than the budget) and returns the function that gives them back,
// or ctx's error.
func (p *parseBudget) acquire(ctx context.Context, bytes int64) (release func(), err error) {
	w := min(max(bytes, 1), p.total)
	if err := p.sem.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { p.sem.Release(w) }, nil
}

// A build graph takes more memory than its file (issue 22, defect 6): the
// core gives up a graph that would take more than graphMemoryPerFileByte
// bytes per byte of the file plus graphMemorySlack, and holds one logical
// line of at most graphMaxLine bytes while reading it (rust/src/analytics:
// dep_graph.rs GRAPH_MEMORY_PER_FILE_BYTE and GRAPH_MEMORY_SLACK,
// build_file_lines.rs MAX_LINE_BYTES; keep them equal). A build is charged
// that much for its graph.
const (
	graphMemoryPerFileByte = 4
	graphMemorySlack       = 16 << 20
	graphMaxLine           = 8 << 20
)

// inputBytes is what the core will hold for a build: its timing.json (as
// discovered) and side files, stat'ed now, and what its build graph may
// take. A file that cannot be stat'ed counts zero (the core skips or warns
// about it); a graph path with {variant} counts its largest match.
func inputBytes(b discovery.Build, req ffi.Request) int64 {
	n := b.Size
	for _, p := range []string{req.StatslogPath, req.OutcomesPath} {
		if p == "" {
			continue
		}
		// Lstat: a link is refused by the core's open, so it costs nothing
		// (and another user's file's size is not looked at).
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			n += st.Size()
		}
	}
	if size, ok := graphFileSize(req.BuildGraphPath); ok {
		n += graphMemoryPerFileByte*size + graphMemorySlack + graphMaxLine
	}
	return n
}

// graphFileSize is the size of the build graph a path names; with the
// {variant} placeholder, the largest file it can name.
func graphFileSize(path string) (int64, bool) {
	if path == "" {
		return 0, false
	}
	paths := []string{path}
	if strings.Contains(path, variantPlaceholder) {
		pattern := strings.ReplaceAll(globEscape(path), globEscape(variantPlaceholder), "*")
		paths, _ = filepath.Glob(pattern)
	}
	var largest int64
	found := false
	for _, p := range paths {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			largest, found = max(largest, st.Size()), true
		}
	}
	return largest, found
}

// holdBudget takes a build's share of the parse budget, noting a build
// that is larger than all of it. With time_trace on, the core also holds
// one clang trace at a time of at most max_trace_size bytes: that counts
// once the receiver has seen a build with traces.
func (r *compiletoolsReceiver) holdBudget(ctx context.Context, b discovery.Build, req ffi.Request) (func(), error) {
	n := inputBytes(b, req)
	if !req.TimeTrace.Disabled && r.budget.clangSeen.Load() {
		n += int64(req.TimeTrace.MaxTraceBytes)
	}
	if n > r.budget.total {
		r.logger.Debug("build input exceeds limits.max_parse_bytes_in_flight; it is parsed alone",
			zap.String("path", b.Dir), zap.Int64("bytes", n), zap.Int64("max_parse_bytes_in_flight", r.budget.total))
	}
	return r.budget.acquire(ctx, n)
}

// variantPlaceholder is the core's stand-in for the build's variant in a
// build graph path.
const variantPlaceholder = "{variant}"

// globEscape makes every byte of s literal in a filepath.Glob pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
