package capture

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
)

// Watcher reacts to ct-cake's transient files the moment they appear.
// A short build (a no-op, say) can create its auto statslog and delete it
// between two polls; inotify closes that gap. Polling still captures too,
// so a missed or overflowed event costs nothing but the speed-up.
type Watcher struct {
	w        *fsnotify.Watcher
	capturer *Capturer
	logger   *zap.Logger
	onNew    func(n int)
	// grown, when set (the live-build follower), hears of new invocation
	// directories and of writes to a running build's statslog, so live
	// records need not wait for the next interval. Set before Run.
	grown Listener

	mu      sync.Mutex
	parents map[string]bool
	builds  map[string]bool
}

// Listener hears of new invocation directories (BuildAppeared) and of
// writes to a running build's statslog (StatslogGrew); neither may block.
type Listener interface {
	BuildAppeared(dir string)
	StatslogGrew()
}

// NewWatcher makes the file watches that capture into c; onNew, if set,
// hears how many files each capture took.
func NewWatcher(c *Capturer, logger *zap.Logger, onNew func(int)) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return &Watcher{w: w, capturer: c, logger: logger, onNew: onNew, parents: map[string]bool{}, builds: map[string]bool{}}, nil
}

// SetListener sets grown; call it before Run.
func (l *Watcher) SetListener(grown Listener) { l.grown = grown }

// Close ends the watches of a Watcher never run (Run closes them itself).
func (l *Watcher) Close() error { return l.w.Close() }

// WatchParents adds every diagnostics parent found by a poll.
func (l *Watcher) WatchParents(parents []string) {
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

// WatchBuild watches a running build's directory.
func (l *Watcher) WatchBuild(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.builds[dir] {
		if err := l.w.Add(dir); err == nil {
			l.builds[dir] = true
		}
	}
}

// ForgetBuild stops watching a settled build.
func (l *Watcher) ForgetBuild(dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.builds[dir] {
		_ = l.w.Remove(dir)
		delete(l.builds, dir)
	}
}

func (l *Watcher) observe(dir string) {
	n, err := l.capturer.Observe(dir)
	if n > 0 && l.onNew != nil {
		l.onNew(n)
	}
	if err != nil {
		l.logger.Debug("live capture failed; polling will retry", zap.String("path", dir), zap.Error(err))
	}
}

// Run handles events until ctx ends, then closes the watches.
func (l *Watcher) Run(ctx context.Context) {
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

func (l *Watcher) handle(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) {
		return
	}
	dir, name := filepath.Split(ev.Name)
	dir = filepath.Clean(dir)
	l.mu.Lock()
	inBuild, inParent := l.builds[dir], l.parents[dir]
	l.mu.Unlock()
	switch {
	case inBuild && (name == Statslog || name == Outcomes):
		l.observe(dir)
		if name == Statslog && l.grown != nil {
			l.grown.StatslogGrew()
		}
	case inParent && ev.Has(fsnotify.Create) && discovery.IsInvocationDirName(name):
		l.WatchBuild(ev.Name)
		l.observe(ev.Name) // files created before the watch existed
		if l.grown != nil {
			l.grown.BuildAppeared(ev.Name)
		}
	}
}
