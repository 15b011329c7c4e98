// Package capture keeps ct-cake's transient files of running builds.
//
// In auto mode ct-cake deletes `ccache.statslog` and `rule_outcomes.log`
// right after it writes timing.json. A hard link made while the build runs
// keeps the inode alive, and every later append (ccache keeps appending to
// the same inode) lands in it too. Where a hard link is impossible (another
// filesystem), the file is copied and then followed: each Observe appends
// what was written since. The polls call Observe; a Watcher (watch.go)
// calls it the moment the file watches see such a file appear.
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// Transient names ct-cake deletes after writing timing.json.
const (
	Statslog = "ccache.statslog"
	Outcomes = "rule_outcomes.log"
)

var transientNames = []string{Statslog, Outcomes}

// Capturer owns a directory of captured files, one subdirectory per build.
type Capturer struct {
	root string

	mu     sync.Mutex
	copies map[string]int64 // captured path → bytes copied so far (copy mode only)
}

// New prepares root (created 0700 if missing).
func New(root string) (*Capturer, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("capture directory: %w", err)
	}
	return &Capturer{root: root, copies: map[string]int64{}}, nil
}

// buildDir is the capture subdirectory of an invocation directory; derived
// from its path, so captures made before a restart are found again.
func (c *Capturer) buildDir(invocationDir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(invocationDir)))
	return filepath.Join(c.root, hex.EncodeToString(sum[:12]))
}

// Observe captures (or follows) the transient files that exist now in a
// running build's directory. It returns how many files were newly captured.
func (c *Capturer) Observe(invocationDir string) (int, error) {
	var captured int
	var errs []error
	for _, name := range transientNames {
		src := filepath.Join(invocationDir, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // absent, or not something ct-cake wrote: never follow symlinks
		}
		dst := filepath.Join(c.buildDir(invocationDir), name)
		isNew, err := c.captureOne(src, dst)
		if err != nil {
			errs = append(errs, err)
		}
		if isNew {
			captured++
		}
	}
	return captured, errors.Join(errs...)
}

func (c *Capturer) captureOne(src, dst string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if copied, following := c.copies[dst]; following {
		n, err := appendFrom(src, dst, copied)
		c.copies[dst] = copied + n
		return false, err
	}
	if _, err := os.Lstat(dst); err == nil {
		return false, nil // already linked: the inode is shared, nothing to do
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return false, err
	}
	if err := os.Link(src, dst); err == nil {
		return true, nil
	}
	n, err := appendFrom(src, dst, 0)
	if err != nil {
		return false, err
	}
	c.copies[dst] = n
	return true, nil
}

// appendFrom copies src[offset:] to the end of dst. Neither open waits: src
// was a regular file at Observe's Lstat but may have been replaced since,
// and dst lives in a directory other users may write to.
func appendFrom(src, dst string, offset int64) (int64, error) {
	in, _, err := regularfile.Open(src)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil // deleted meanwhile: keep what was copied
		}
		return 0, err
	}
	defer in.Close()
	if _, err := in.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return 0, err
	}
	n, copyErr := io.Copy(out, in)
	if err := out.Close(); copyErr == nil {
		copyErr = err
	}
	return n, copyErr
}

// Path returns the captured copy of name for a build, or "" if none.
func (c *Capturer) Path(invocationDir, name string) string {
	dst := filepath.Join(c.buildDir(invocationDir), name)
	if st, err := os.Lstat(dst); err == nil && st.Mode().IsRegular() {
		return dst
	}
	return ""
}

// Release deletes a build's captured files once the build was delivered.
func (c *Capturer) Release(invocationDir string) error {
	dir := c.buildDir(invocationDir)
	c.mu.Lock()
	for _, name := range transientNames {
		delete(c.copies, filepath.Join(dir, name))
	}
	c.mu.Unlock()
	return os.RemoveAll(dir)
}
