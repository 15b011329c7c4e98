package compiletoolsreceiver

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/config/configretry"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/gitsha"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/history"
)

// checkpointTimeout bounds a checkpoint write that happens while shutting
// down, so a build consumed just before Shutdown is still recorded.
const checkpointTimeout = 5 * time.Second

// buildLedger owns a build's life from discovery to checkpoint. While a
// build is open it remembers, in memory, what was delivered (signals, and
// the requests of a trace cut into several), the retry schedule, the git
// HEAD and which warnings were given; settling writes the checkpoint and
// lets go of everything else held for the build (that memory, its captured
// files, its file watch). A retry sends only what was not delivered; after
// a restart a half-delivered build is sent again whole, which deterministic
// IDs make an exact duplicate.
type buildLedger struct {
	store     *checkpoint.Store
	capturer  *capture.Capturer // nil: capture disabled
	watcher   *capture.Watcher  // nil: no file watches
	retry     configretry.BackOffConfig
	gitCommit GitCommitConfig
	logger    *zap.Logger
	now       func() time.Time
	// writeFailed counts a checkpoint write that failed (nil: not counted):
	// the build is then remembered in memory only, so the log's error is
	// not the only trace of it on a host whose logs are sampled.
	writeFailed func(context.Context)
	history     *history.Keeper // nil: disabled; committed to as builds settle

	mu   sync.Mutex
	open map[string]*openBuild // by invocation directory
	// pathProblems are the problems of the last discovery pass that belong
	// to no build (a glob, a diagnostics parent), already logged.
	pathProblems map[string]bool
}

// openBuild is what the ledger knows of a build it has not settled.
type openBuild struct {
	delivered    ffi.Signals   // signals every consumer of which accepted the build
	traces       traceProgress // requests of the trace accepted while traces are not delivered
	attempts     int           // failed delivery attempts so far
	firstFailure time.Time     // start of the retry budget (max_elapsed_time)
	nextAttempt  time.Time     // retry backoff
	gitSHA       string        // HEAD read when the build was first seen, if in time
	vcs          ffi.VCS       // the ref HEAD names and the origin, read with gitSHA
	workTree     string        // root of the git work tree above the build ("": none)
	gitChecked   bool
	warned       buildProblem // problems already logged: warn once, not every poll
	finishedSeen time.Time    // first poll that found its timing.json (monotonic)
	rechecks     int          // attempts that found its timing.json unreadable
}

// buildProblem is a kind of problem an open build can have.
type buildProblem uint8

const (
	problemUnreadable buildProblem = 1 << iota // its timing.json cannot be examined
	problemCapture                             // its transient files cannot be captured
	problemSideFile                            // a side file is a symlink, FIFO, directory…
)

func newBuildLedger(store *checkpoint.Store, capturer *capture.Capturer, watcher *capture.Watcher, cfg *Config, logger *zap.Logger, now func() time.Time) *buildLedger {
	return &buildLedger{
		store:        store,
		capturer:     capturer,
		watcher:      watcher,
		retry:        cfg.RetryOnFailure,
		gitCommit:    cfg.GitCommit,
		logger:       logger,
		now:          now,
		open:         map[string]*openBuild{},
		pathProblems: map[string]bool{},
	}
}

// update runs f on the open build of dir, opening it if needed.
func (l *buildLedger) update(dir string, f func(*openBuild)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.open[dir]
	if !ok {
		b = &openBuild{}
		l.open[dir] = b
	}
	f(b)
}

// snapshot returns a copy of the open build of dir (zero if not open).
func (l *buildLedger) snapshot(dir string) openBuild {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.open[dir]; ok {
		return *b
	}
	return openBuild{}
}

// hasCheckpoints reports whether any build was ever settled (start_at
// applies only without).
func (l *buildLedger) hasCheckpoints() bool { return l.store.Len() > 0 }

// settledFile returns the timing.json a directory was settled with (in any
// state), for discovery to tell a replaced file from the one handled.
func (l *buildLedger) settledFile(dir string) (discovery.FileID, bool) {
	rec, ok := l.store.Get(dir)
	return discovery.FileID{ModNs: rec.TimingModNs, Size: rec.TimingSize}, ok
}

// finishedSince returns when a poll first found the build finished.
func (l *buildLedger) finishedSince(dir string, now time.Time) time.Time {
	var seen time.Time
	l.update(dir, func(b *openBuild) {
		if b.finishedSeen.IsZero() {
			b.finishedSeen = now
		}
		seen = b.finishedSeen
	})
	return seen
}

// warnOnce reports whether an open build's problem of this kind is new,
// to be logged once and not every poll.
func (l *buildLedger) warnOnce(dir string, kind buildProblem) bool {
	first := false
	l.update(dir, func(b *openBuild) {
		first = b.warned&kind == 0
		b.warned |= kind
	})
	return first
}

// unwarned returns the problems of a discovery pass not logged yet. A
// build's problem is remembered until the build settles or vanishes; any
// other for as long as each pass reports it.
func (l *buildLedger) unwarned(problems []discovery.Problem) []discovery.Problem {
	var fresh []discovery.Problem
	current := map[string]bool{}
	for _, p := range problems {
		if p.Dir != "" {
			if l.warnOnce(p.Dir, problemUnreadable) {
				fresh = append(fresh, p)
			}
			continue
		}
		current[p.Path] = true
		l.mu.Lock()
		known := l.pathProblems[p.Path]
		l.mu.Unlock()
		if !known {
			fresh = append(fresh, p)
		}
	}
	l.mu.Lock()
	l.pathProblems = current
	l.mu.Unlock()
	return fresh
}

// noteGitSHA reads the source tree once per build: where its work tree is
// (for the pipeline name; a directory does not move), and — only while the
// build ended recently enough for HEAD to still be its commit — HEAD, the
// ref it names and the origin remote.
func (l *buildLedger) noteGitSHA(b discovery.Build, now time.Time) {
	l.update(b.Dir, func(p *openBuild) {
		if p.gitChecked {
			return
		}
		p.gitChecked = true
		if wt, err := gitsha.WorkTree(b.Dir); err == nil {
			p.workTree = wt
		}
		if !l.gitCommit.Enabled || now.Sub(b.ModTime) > l.gitCommit.MaxLag {
			return
		}
		repo, err := gitsha.Inspect(b.Dir)
		if err != nil {
			return
		}
		p.gitSHA = repo.Head
		p.vcs = ffi.VCS{
			RefHeadName:       repo.RefName,
			RefHeadType:       repo.RefType,
			RepositoryURLFull: repo.OriginURL,
			ProviderName:      repo.Provider,
		}
	})
}

// due reports whether a build's retry backoff, if any, has passed.
func (l *buildLedger) due(dir string, now time.Time) bool {
	return !now.Before(l.snapshot(dir).nextAttempt)
}

// retryLater books the next attempt of a build after a retryable error,
// with exponential backoff, remembering what was delivered so far (the next
// attempt sends only the rest); false means the build must be given up.
func (l *buildLedger) retryLater(dir string, delivered ffi.Signals, traces traceProgress) bool {
	rc := l.retry
	if !rc.Enabled {
		return false
	}
	now := l.now()
	ok := true
	l.update(dir, func(p *openBuild) {
		p.delivered = delivered
		p.traces = traces
		if p.attempts == 0 {
			p.firstFailure = now
		}
		p.attempts++
		if rc.MaxElapsedTime > 0 && now.Sub(p.firstFailure) > rc.MaxElapsedTime {
			ok = false
			return
		}
		p.nextAttempt = now.Add(backoff(rc, p.attempts))
	})
	return ok
}

// recheckLater books the next attempt of a build whose timing.json cannot
// be read yet, on the retry backoff but without its time budget.
func (l *buildLedger) recheckLater(dir string) {
	rc := l.retry
	if rc.MaxInterval <= 0 || rc.MaxInterval > maxRecheckInterval {
		rc.MaxInterval = maxRecheckInterval // a fix must not wait for hours
	}
	now := l.now()
	l.update(dir, func(p *openBuild) {
		p.rechecks++
		p.nextAttempt = now.Add(backoff(rc, p.rechecks))
	})
}

// backoff is the delay before attempt n+1 after n failures.
func backoff(rc configretry.BackOffConfig, n int) time.Duration {
	d := float64(rc.InitialInterval) * math.Pow(max(rc.Multiplier, 1), float64(n-1))
	if rc.MaxInterval > 0 {
		d = math.Min(d, float64(rc.MaxInterval))
	}
	if f := rc.RandomizationFactor; f > 0 {
		d *= 1 - f + 2*f*rand.Float64()
	}
	return time.Duration(d)
}

// settle checkpoints a build and releases what was held for it; the write
// survives a shutdown in progress.
func (l *buildLedger) settle(ctx context.Context, b discovery.Build, state checkpoint.State, signals ffi.Signals) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	id := b.FileID()
	rec := checkpoint.Record{State: state, Signals: uint32(signals), TimingModNs: id.ModNs, TimingSize: id.Size, At: l.now().UnixNano()}
	if err := l.store.Put(wctx, b.Dir, rec); err != nil {
		l.logger.Error("cannot write checkpoint; the build may be sent again after a restart", zap.String("path", b.Dir), zap.Error(err))
		if l.writeFailed != nil {
			l.writeFailed(wctx)
		}
	}
	l.history.Settled(wctx, b.Dir)
	l.mu.Lock()
	delete(l.open, b.Dir)
	l.mu.Unlock()
	if l.watcher != nil {
		l.watcher.ForgetBuild(b.Dir)
	}
	if l.capturer != nil {
		_ = l.capturer.Release(b.Dir)
	}
}

// forgetVanished drops what is kept of builds whose directory no longer
// exists: checkpoints and open builds alike.
func (l *buildLedger) forgetVanished(ctx context.Context, seen map[string]struct{}) {
	for _, dir := range l.store.Dirs() {
		if !vanished(dir, seen) {
			continue
		}
		if err := l.store.Forget(ctx, dir); err != nil {
			l.logger.Warn("cannot forget checkpoint of a removed build", zap.String("path", dir), zap.Error(err))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for dir := range l.open {
		if vanished(dir, seen) {
			delete(l.open, dir)
		}
	}
}

// vanished reports whether a build directory is gone. One that is no longer
// matched (config change, excluded) but still present is kept.
func vanished(dir string, seen map[string]struct{}) bool {
	if _, ok := seen[dir]; ok {
		return false
	}
	_, err := os.Lstat(dir)
	return os.IsNotExist(err)
}

// close releases the checkpoint store.
func (l *buildLedger) close(ctx context.Context) error { return l.store.Close(ctx) }
