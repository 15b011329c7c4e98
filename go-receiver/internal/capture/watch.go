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
	fsw      *fsnotify.Watcher
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
	return &Watcher{fsw: w, capturer: c, logger: logger, onNew: onNew, parents: map[string]bool{}, builds: map[string]bool{}}, nil
}

// SetListener makes l hear of new builds and statslog writes; call it
// before Run.
func (w *Watcher) SetListener(l Listener) { w.grown = l }

// Close ends the watches of a Watcher never run (Run closes them itself).
func (w *Watcher) Close() error { return w.fsw.Close() }

// WatchParents adds every diagnostics parent found by a poll.
func (w *Watcher) WatchParents(parents []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range parents {
		if w.parents[p] {
			continue
		}
		if err := w.fsw.Add(p); err == nil {
			w.parents[p] = true
		}
	}
}

// WatchBuild watches a running build's directory.
func (w *Watcher) WatchBuild(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.builds[dir] {
		if err := w.fsw.Add(dir); err == nil {
			w.builds[dir] = true
		}
	}
}

// ForgetBuild stops watching a settled build.
func (w *Watcher) ForgetBuild(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.builds[dir] {
		_ = w.fsw.Remove(dir)
		delete(w.builds, dir)
	}
}

func (w *Watcher) observe(dir string) {
	n, err := w.capturer.Observe(dir)
	if n > 0 && w.onNew != nil {
		w.onNew(n)
	}
	if err != nil {
		w.logger.Debug("live capture failed; polling will retry", zap.String("path", dir), zap.Error(err))
	}
}

// Run handles events until ctx ends, then closes the watches.
func (w *Watcher) Run(ctx context.Context) {
	defer w.fsw.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.logger.Debug("file watch error; polling continues", zap.Error(err))
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.handle(ev)
		}
	}
}

func (w *Watcher) handle(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) {
		return
	}
	dir, name := filepath.Split(ev.Name)
	dir = filepath.Clean(dir)
	w.mu.Lock()
	inBuild, inParent := w.builds[dir], w.parents[dir]
	w.mu.Unlock()
	switch {
	case inBuild && (name == Statslog || name == Outcomes):
		w.observe(dir)
		if name == Statslog && w.grown != nil {
			w.grown.StatslogGrew()
		}
	case inParent && ev.Has(fsnotify.Create) && discovery.IsInvocationDirName(name):
		w.WatchBuild(ev.Name)
		w.observe(ev.Name) // files created before the watch existed
		if w.grown != nil {
			w.grown.BuildAppeared(ev.Name)
		}
	}
}
