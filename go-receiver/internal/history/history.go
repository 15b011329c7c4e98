// Package history keeps the core's per-target compile history (history:
// enabled) across restarts, next to the build checkpoints.
package history

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

// historyBlob names the saved compile history in the checkpoint storage.
const historyBlob = "compile-history"

// Keeper is the receiver's side of the compile history: the core owns the
// data and its format; this keeps it across restarts. Builds are
// evaluated against it while processed (ffi.Request.History) and each
// build's part is committed when the build is checkpointed, then the whole
// history is saved next to the checkpoints. So the saved history is that
// of the checkpointed builds, and a build read again after a crash gets
// the numbers it got the first time (README, Build analytics). A nil
// *Keeper (history disabled) does nothing.
type Keeper struct {
	core   *ffi.History
	store  Blobs
	logger *zap.Logger
	// saveMu orders saves: an older snapshot never overwrites a newer one.
	saveMu sync.Mutex
}

// Blobs is where the history is saved: the checkpoint store's named values.
type Blobs interface {
	GetBlob(ctx context.Context, name string) ([]byte, error)
	PutBlob(ctx context.Context, name string, value []byte) error
}

// Options size the history (history.max_targets, history.median_of).
type Options struct {
	MaxTargets int
	MedianOf   int
}

// Open makes the history and restores what the storage kept; a saved
// history that cannot be read is warned about and replaced.
func Open(ctx context.Context, o Options, store Blobs, logger *zap.Logger) (*Keeper, error) {
	core, err := ffi.NewHistory(uint64(o.MaxTargets), uint32(o.MedianOf))
	if err != nil {
		return nil, err
	}
	h := &Keeper{core: core, store: store, logger: logger}
	saved, err := store.GetBlob(ctx, historyBlob)
	if err != nil {
		logger.Warn("cannot read the saved compile history; starting with an empty one", zap.Error(err))
		return h, nil
	}
	if len(saved) == 0 {
		return h, nil
	}
	n, note, err := core.Restore(saved)
	if err != nil {
		logger.Warn("saved compile history is unreadable; starting with an empty one", zap.Error(err))
		return h, nil
	}
	if note != "" {
		logger.Warn("saved compile history was of an older format", zap.String("conversion", note), zap.Int("targets", n))
		return h, nil
	}
	logger.Info("compile history restored", zap.Int("targets", n))
	return h, nil
}

// Handle is what a build request carries (nil when disabled).
func (h *Keeper) Handle() *ffi.History {
	if h == nil {
		return nil
	}
	return h.core
}

// Settled commits the build's part of the history, if it staged any, and
// saves the history.
func (h *Keeper) Settled(ctx context.Context, dir string) {
	if h == nil || h.core.Commit(dir) == 0 {
		return
	}
	h.save(ctx)
}

func (h *Keeper) save(ctx context.Context) {
	h.saveMu.Lock()
	defer h.saveMu.Unlock()
	b, err := h.core.Save()
	if err == nil {
		err = h.store.PutBlob(ctx, historyBlob, b)
	}
	if err != nil {
		h.logger.Warn("cannot save the compile history; builds since the last save are forgotten on a restart", zap.Error(err))
		return
	}
	f := h.footprint()
	h.logger.Debug("compile history saved", zap.Int("bytes", len(b)), zap.Uint64("targets", f.Targets),
		zap.Uint64("heap_bytes", f.Bytes), zap.Uint64("evicted", f.Evicted))
}

// footprint reports what the history holds (zeros when disabled).
func (h *Keeper) footprint() ffi.HistoryFootprint {
	if h == nil {
		return ffi.HistoryFootprint{}
	}
	return h.core.Footprint()
}

// Close frees the core's history; no build may still be processed.
func (h *Keeper) Close() {
	if h != nil {
		h.core.Close()
	}
}
