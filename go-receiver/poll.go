package compiletoolsreceiver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// poll is one pass: capture transient files of running builds, then send
// finished builds not settled yet, oldest first, a bounded number at once.
func (r *compiletoolsReceiver) poll(ctx context.Context) {
	scan := r.finder.Find(r.ledger.settledFile)
	if len(scan.Problems) > 0 {
		r.telemetry.ReceiverCompiletoolsPathProblems.Add(ctx, int64(len(scan.Problems)))
	}
	for _, p := range r.ledger.unwarned(scan.Problems) {
		r.logger.Warn("cannot examine path; skipping it", zap.String("path", p.Path), zap.Error(p.Err))
		if errors.Is(p.Err, discovery.ErrSymlink) {
			r.telemetry.ReceiverCompiletoolsSymlinksRefused.Add(ctx, 1)
		}
	}
	r.followRunning(ctx, scan)
	r.liveBuilds.Offer(scan.Running, scan.RunningIDs)
	if r.firstPoll {
		r.firstPoll = false
		r.warnEmptyStorage(scan.Finished)
		if r.cfg.StartAt == StartAtEnd && !r.ledger.hasCheckpoints() {
			r.skipExisting(ctx, scan.Finished)
			return
		}
	}
	r.telemetry.backlog.Store(int64(len(scan.Finished)))
	ready := r.ready(ctx, scan.Finished)
	r.processAll(ctx, ready)
	r.ledger.forgetVanished(ctx, scan.Seen)
	if len(ready) == 0 {
		r.releaseIdleMemory()
	}
}

// releaseIdleMemory gives back the buffers the core keeps between builds
// (README, Memory kept between builds): kept while builds keep coming, so
// each lands in memory already faulted in, and freed at the first poll
// with nothing to send, so an idle collector does not hold them. The
// buffers are the process's: with several receivers, an idle one frees
// them while another is busy, which costs that one fresh pages, no more.
func (r *compiletoolsReceiver) releaseIdleMemory() {
	if freed := ffi.ReleaseKeptBuffers(); freed > 0 {
		r.logger.Debug("freed the buffers kept between builds", zap.Uint64("bytes", freed))
	}
}

// followRunning watches the diagnostics parents and running builds and
// captures the transient files that exist now.
func (r *compiletoolsReceiver) followRunning(ctx context.Context, scan discovery.Scan) {
	if r.captureWatcher != nil {
		r.captureWatcher.WatchParents(scan.Parents)
		for _, dir := range scan.Running {
			r.captureWatcher.WatchBuild(dir)
		}
	}
	if r.capturer == nil {
		return
	}
	if r.now().Sub(r.lastSweep) >= captureSweepEvery {
		r.sweepCaptures()
	}
	for _, dir := range scan.Running {
		if r.liveBuilds.IsAbandoned(dir) {
			continue // its ct-cake died: its capture was deleted (issue 22, defect 7)
		}
		n, err := r.capturer.ObserveFound(dir, scan.RunningIDs[dir])
		if n > 0 {
			r.telemetry.ReceiverCompiletoolsCapturedFiles.Add(ctx, int64(n))
		}
		if err != nil && r.ledger.warnOnce(dir, problemCapture) {
			r.logger.Warn("cannot capture transient build files", zap.String("path", dir), zap.Error(err))
		}
	}
}

// ready selects the finished builds to start now: not older than max_age
// (those are settled as skipped), done post-processing, past their retry
// backoff; at most max_builds_per_poll, oldest first.
func (r *compiletoolsReceiver) ready(ctx context.Context, finished []discovery.Build) []discovery.Build {
	now := r.now()
	var ready []discovery.Build
	for _, b := range finished {
		if r.cfg.MaxAge > 0 && now.Sub(b.ModTime) > r.cfg.MaxAge {
			r.ledger.settle(ctx, b, checkpoint.Skipped, 0)
			r.telemetry.build(ctx, outcomeSkipped)
			continue
		}
		r.ledger.noteGitSHA(b, now)
		if r.stillPostProcessing(b, now) || !r.ledger.due(b.Dir, now) {
			continue
		}
		ready = append(ready, b)
	}
	if len(ready) > r.cfg.MaxBuildsPerPoll {
		ready = ready[:r.cfg.MaxBuildsPerPoll]
	}
	return ready
}

// warnEmptyStorage: a storage extension without a single checkpoint while
// finished builds are on disk is a first start — or a database that was
// lost, emptied or pointed elsewhere, which nothing else tells apart. Either
// way start_at decides, as on a first start (docs/configuration.md): the
// operator must hear of it, since with "beginning" every build on disk is
// sent again.
func (r *compiletoolsReceiver) warnEmptyStorage(finished []discovery.Build) {
	if r.cfg.Storage == nil || r.ledger.hasCheckpoints() || len(finished) == 0 {
		return
	}
	what := "recorded as seen and NOT sent (start_at: end)"
	if r.cfg.StartAt == StartAtBeginning {
		what = "all sent, again if they were sent before (start_at: beginning)"
	}
	r.logger.Warn("the storage holds no checkpoint but finished builds are on disk: a first start, or a lost or emptied "+
		"database (then builds sent before are sent again with start_at: beginning); the builds on disk are "+what,
		zap.String("storage", r.cfg.Storage.String()), zap.Int("builds_on_disk", len(finished)), zap.String("start_at", r.cfg.StartAt))
}

// skipExisting applies start_at: end: builds already on disk at the first
// start are recorded as skipped, not sent.
func (r *compiletoolsReceiver) skipExisting(ctx context.Context, builds []discovery.Build) {
	for _, b := range builds {
		r.ledger.settle(ctx, b, checkpoint.Skipped, 0)
	}
	if len(builds) > 0 {
		r.logger.Info("start_at is \"end\": builds already on disk are not sent", zap.Int("builds", len(builds)))
	}
}

// stillPostProcessing: ct-cake deletes rule_outcomes.log and an auto
// ccache.statslog after writing timing.json; while they exist (and the
// settle timeout has not passed) the build is not complete.
func (r *compiletoolsReceiver) stillPostProcessing(b discovery.Build, now time.Time) bool {
	// The wait ends settle_timeout after the file's time or after this
	// receiver first saw it, whichever comes first: a clock stepped back
	// puts the file's time in the future, and a side file left by a
	// ct-cake that died would otherwise hold the build until the clock
	// caught up (monotonic time is immune to the step).
	if now.Sub(b.ModTime) >= r.cfg.SettleTimeout ||
		now.Sub(r.ledger.finishedSince(b.Dir, now)) >= r.cfg.SettleTimeout {
		return false
	}
	for _, name := range []string{capture.Outcomes, capture.Statslog} {
		if _, err := os.Lstat(filepath.Join(b.Dir, name)); err == nil {
			if r.capturer != nil {
				_, _ = r.capturer.Observe(b.Dir) // keep following until deleted
			}
			return true
		}
	}
	// A copy still under way (copy mode, capture.copier) has not every
	// byte of the deleted file yet.
	return r.capturer != nil && r.capturer.Copying(b.Dir)
}

// captureSweepEvery is how often the captures of builds whose directory
// is gone are deleted (also at start).
const captureSweepEvery = 10 * time.Minute

// sweepCaptures deletes the captures of builds whose directory is gone or
// was made again (a build killed, its directory removed).
func (r *compiletoolsReceiver) sweepCaptures() {
	r.lastSweep = r.now()
	n, err := r.capturer.Sweep(r.lastSweep)
	if n > 0 {
		r.logger.Info("deleted the captures of builds no longer on disk", zap.Int("captures", n))
	}
	if err != nil {
		r.logger.Warn("cannot delete the captures of builds no longer on disk", zap.Error(err))
	}
}

// buildConcurrency is how many builds are read at once: max_concurrent_builds,
// or one with the compile history, whose numbers are exact on a re-read only
// when builds settle in start order (README "Re-reads give the same
// numbers"), which oldest-first processing gives one build at a time.
func (r *compiletoolsReceiver) buildConcurrency() int {
	if r.history != nil {
		return 1
	}
	return r.cfg.MaxConcurrentBuilds
}

// processAll runs builds through the core and the consumers with at most
// max_concurrent_builds at once. After a retryable consumer error (typically
// an exporter queue that is full) it starts no more builds this poll: the
// pipeline is congested, and the rest waits for the next poll instead of
// each failing and backing off in turn.
func (r *compiletoolsReceiver) processAll(ctx context.Context, builds []discovery.Build) {
	sem := make(chan struct{}, r.buildConcurrency())
	var wg sync.WaitGroup
	var congested atomic.Bool
	for _, b := range builds {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case sem <- struct{}{}:
		}
		// Checked with the slot held: a build that just failed set the flag
		// before giving its slot back.
		if congested.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func(b discovery.Build) {
			defer wg.Done()
			defer func() { <-sem }()
			if !r.processBuild(ctx, b) {
				congested.Store(true)
			}
		}(b)
	}
	wg.Wait()
}
