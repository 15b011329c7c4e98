package compiletoolsreceiver

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
)

// liveCapture reacts to ct-cake's transient files the moment they appear.
// A short build (a no-op, say) can create its auto statslog and delete it
// between two polls; inotify closes that gap. Polling still captures too,
// so a missed or overflowed event costs nothing but the speed-up.
type liveCapture struct {
	w        *fsnotify.Watcher
	capturer *capture.Capturer
	logger   *zap.Logger
	onNew    func(n int)
	// grown, when set (live.go), hears of new invocation directories and
	// of writes to a running build's statslog, so live records need not
	// wait for the next interval. Set before the watch goroutine starts.
	grown liveListener

	mu      sync.Mutex
	parents map[string]bool
	builds  map[string]bool
}

func newLiveCapture(c *capture.Capturer, logger *zap.Logger, onNew func(int)) (*liveCapture, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &liveCapture{w: w, capturer: c, logger: logger, onNew: onNew, parents: map[string]bool{}, builds: map[string]bool{}}, nil
}

// watchParents adds every diagnostics parent found by a poll.
func (l *liveCapture) watchParents(parents []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range parents {
		if l.parents[p] {
			continue
		}
		if err := l.w.Add(p); err == nil {
			l.parents[p] = true
		}
	}
}

// watchBuild watches a running build's directory.
func (l *liveCapture) watchBuild(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.builds[dir] {
		if err := l.w.Add(dir); err == nil {
			l.builds[dir] = true
		}
	}
}

// forgetBuild stops watching a settled build.
func (l *liveCapture) forgetBuild(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.builds[dir] {
		_ = l.w.Remove(dir)
		delete(l.builds, dir)
	}
}

func (l *liveCapture) observe(dir string) {
	n, err := l.capturer.Observe(dir)
	if n > 0 && l.onNew != nil {
		l.onNew(n)
	}
	if err != nil {
		l.logger.Debug("live capture failed; polling will retry", zap.String("path", dir), zap.Error(err))
	}
}

// run handles events until ctx ends, then closes the watcher.
func (l *liveCapture) run(ctx context.Context) {
	defer l.w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-l.w.Errors:
			if !ok {
				return
			}
			l.logger.Debug("file watch error; polling continues", zap.Error(err))
		case ev, ok := <-l.w.Events:
			if !ok {
				return
			}
			l.handle(ev)
		}
	}
}

func (l *liveCapture) handle(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) {
		return
	}
	dir, name := filepath.Split(ev.Name)
	dir = filepath.Clean(dir)
	l.mu.Lock()
	inBuild, inParent := l.builds[dir], l.parents[dir]
	l.mu.Unlock()
	switch {
	case inBuild && (name == capture.Statslog || name == capture.Outcomes):
		l.observe(dir)
		if name == capture.Statslog && l.grown != nil {
			l.grown.statslogGrew()
		}
	case inParent && ev.Has(fsnotify.Create) && discovery.IsInvocationDirName(name):
		l.watchBuild(ev.Name)
		l.observe(ev.Name) // files created before the watch existed
		if l.grown != nil {
			l.grown.buildAppeared(ev.Name)
		}
	}
}
