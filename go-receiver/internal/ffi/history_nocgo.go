//go:build !cgo

package ffi

// History is unavailable without cgo.
type History struct{}

// NewHistory always fails without cgo.
func NewHistory(uint64, uint32) (*History, error) { return nil, ErrCgoRequired }

// Close does nothing.
func (h *History) Close() {}

// Commit does nothing.
func (h *History) Commit(string) int { return 0 }

// Discard does nothing.
func (h *History) Discard(string) bool { return false }

// Save always fails without cgo.
func (h *History) Save() ([]byte, error) { return nil, ErrCgoRequired }

// Restore always fails without cgo.
func (h *History) Restore([]byte) (int, string, error) { return 0, "", ErrCgoRequired }

// Footprint is always zero without cgo.
func (h *History) Footprint() HistoryFootprint { return HistoryFootprint{} }
