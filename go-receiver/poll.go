package compiletoolsreceiver

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/checkpoint"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/gitsha"
)

// checkpointTimeout bounds a checkpoint write that happens while shutting
// down, so a build consumed just before Shutdown is still recorded.
const checkpointTimeout = 5 * time.Second

// poll is one pass: capture transient files of running builds, then send
// finished builds not settled yet, oldest first, a bounded number at once.
func (r *compiletoolsReceiver) poll(ctx context.Context) {
	scan := r.finder.Find(r.settled)
	for _, p := range scan.Problems {
		r.telemetry.ReceiverCompiletoolsPathProblems.Add(ctx, 1)
		if r.pending.firstProblem(p.Path) {
			r.logger.Warn("cannot examine path; skipping it", zap.String("path", p.Path), zap.Error(p.Err))
		}
	}
	if r.live != nil {
		r.live.watchParents(scan.Parents)
		for _, dir := range scan.Running {
			r.live.watchBuild(dir)
		}
	}
	if r.capturer != nil {
		for _, dir := range scan.Running {
			n, err := r.capturer.Observe(dir)
			if n > 0 {
				r.telemetry.ReceiverCompiletoolsCapturedFiles.Add(ctx, int64(n))
			}
			if err != nil && r.pending.firstProblem(dir+"#capture") {
				r.logger.Warn("cannot capture transient build files", zap.String("path", dir), zap.Error(err))
			}
		}
	}
	if r.firstPoll {
		r.firstPoll = false
		if r.cfg.StartAt == StartAtEnd && r.store.Len() == 0 {
			r.skipExisting(ctx, scan.Finished)
			return
		}
	}

	now := r.now()
	var ready []discovery.Build
	for _, b := range scan.Finished {
		if r.cfg.MaxAge > 0 && now.Sub(b.ModTime) > r.cfg.MaxAge {
			r.settle(ctx, b, checkpoint.Skipped, 0)
			r.telemetry.build(ctx, outcomeSkipped)
			continue
		}
		r.noteGitSHA(b, now)
		if r.stillPostProcessing(b, now) {
			continue
		}
		if p := r.pending.snapshot(b.Dir); now.Before(p.nextAttempt) {
			continue
		}
		ready = append(ready, b)
	}
	r.telemetry.backlog.Store(int64(len(scan.Finished)))
	if len(ready) > r.cfg.MaxBuildsPerPoll {
		ready = ready[:r.cfg.MaxBuildsPerPoll]
	}
	r.processAll(ctx, ready)
	r.forgetVanished(ctx, scan.Seen)
}

// settled reports whether dir needs no more work (checkpointed in any state).
func (r *compiletoolsReceiver) settled(dir string) bool {
	_, ok := r.store.Get(dir)
	return ok
}

// skipExisting applies start_at: end: builds already on disk at the first
// start are recorded as skipped, not sent.
func (r *compiletoolsReceiver) skipExisting(ctx context.Context, builds []discovery.Build) {
	for _, b := range builds {
		r.settle(ctx, b, checkpoint.Skipped, 0)
	}
	if len(builds) > 0 {
		r.logger.Info("start_at is \"end\": builds already on disk are not sent", zap.Int("builds", len(builds)))
	}
}

// stillPostProcessing: ct-cake deletes rule_outcomes.log and an auto
// ccache.statslog after writing timing.json; while they exist (and the
// settle timeout has not passed) the build is not complete.
func (r *compiletoolsReceiver) stillPostProcessing(b discovery.Build, now time.Time) bool {
	if now.Sub(b.ModTime) >= r.cfg.SettleTimeout {
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
	return false
}

// noteGitSHA reads the source tree's HEAD once per build, and only while
// the build ended recently enough for HEAD to still be its commit.
func (r *compiletoolsReceiver) noteGitSHA(b discovery.Build, now time.Time) {
	if !r.cfg.GitCommit.Enabled {
		return
	}
	r.pending.update(b.Dir, func(p *pendingBuild) {
		if p.gitChecked {
			return
		}
		p.gitChecked = true
		if now.Sub(b.ModTime) > r.cfg.GitCommit.MaxLag {
			return
		}
		if sha, err := gitsha.Head(b.Dir); err == nil {
			p.gitSHA = sha
		}
	})
}

// processAll runs builds through the core and the consumers with at most
// max_concurrent_builds at once. After a retryable consumer error (typically
// an exporter queue that is full) it starts no more builds this poll: the
// pipeline is congested, and the rest waits for the next poll instead of
// each failing and backing off in turn.
func (r *compiletoolsReceiver) processAll(ctx context.Context, builds []discovery.Build) {
	sem := make(chan struct{}, r.cfg.MaxConcurrentBuilds)
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

// settle checkpoints a build; the write survives a shutdown in progress.
func (r *compiletoolsReceiver) settle(ctx context.Context, b discovery.Build, state checkpoint.State, signals uint32) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	rec := checkpoint.Record{State: state, Signals: signals, TimingModNs: b.ModTime.UnixNano(), TimingSize: b.Size, At: r.now().UnixNano()}
	if err := r.store.Put(wctx, b.Dir, rec); err != nil {
		r.logger.Error("cannot write checkpoint; the build may be sent again after a restart", zap.String("path", b.Dir), zap.Error(err))
	}
	r.pending.remove(b.Dir)
	if r.live != nil {
		r.live.forgetBuild(b.Dir)
	}
	if r.capturer != nil {
		_ = r.capturer.Release(b.Dir)
	}
}

// forgetVanished drops checkpoints of directories that no longer exist.
func (r *compiletoolsReceiver) forgetVanished(ctx context.Context, seen map[string]struct{}) {
	for _, dir := range r.store.Dirs() {
		if _, ok := seen[dir]; ok {
			continue
		}
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			continue // not matched any more (config change, excluded) but present: keep it
		}
		if err := r.store.Forget(ctx, dir); err != nil {
			r.logger.Warn("cannot forget checkpoint of a removed build", zap.String("path", dir), zap.Error(err))
		}
	}
}
