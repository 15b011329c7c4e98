// Package capture keeps ct-cake's transient files of running builds.
//
// In auto mode ct-cake deletes `ccache.statslog` and `rule_outcomes.log`
// right after it writes timing.json. A hard link made while the build runs
// keeps the inode alive, and every later append (ccache keeps appending to
// the same inode) lands in it too. Where a hard link is impossible (another
// filesystem), the file is copied and then followed, by the copier's own
// goroutine (copy.go), never by the caller. The polls call Observe; a
// Watcher (watch.go) calls it the moment the file watches see such a file
// appear.
//
// The build directory belongs to another user (issue 22): it is opened
// without following a link and its files are linked or opened relative to
// that handle (package dirfd), so a directory swapped for a link to
// someone else's never leaks their files into the capture. Each capture
// remembers the identity of the directory it was taken from: a directory
// deleted and made again under the same name is a new build, whose capture
// starts empty, and a capture whose directory is gone is deleted (Sweep).
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// Transient names ct-cake deletes after writing timing.json.
const (
	Statslog = "ccache.statslog"
	Outcomes = "rule_outcomes.log"
)

var transientNames = []string{Statslog, Outcomes}

// sourceFile, in a build's capture directory, holds the identity and path
// of the invocation directory the capture was taken from.
const sourceFile = ".source"

// Capturer owns a directory of captured files, one subdirectory per build.
type Capturer struct {
	root string
	// maxBytes bounds a copy (limits.max_file_size, the size the core reads
	// of a statslog at most): a larger source is not captured.
	maxBytes int64

	mu sync.Mutex
	// copies: captured path → bytes of the source copied so far (copy mode).
	copies map[string]int64
	// tooLarge: captured paths given up (the source outgrew maxBytes).
	tooLarge map[string]bool
	copier   *copier
}

// New prepares root (created 0700 if missing); maxBytes bounds a copy.
func New(root string, maxBytes int64) (*Capturer, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("capture directory: %w", err)
	}
	c := &Capturer{root: root, maxBytes: maxBytes, copies: map[string]int64{}, tooLarge: map[string]bool{}}
	c.copier = newCopier(c)
	return c, nil
}

// buildDir is the capture subdirectory of an invocation directory; derived
// from its path, so captures made before a restart are found again.
func (c *Capturer) buildDir(invocationDir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(invocationDir)))
	return filepath.Join(c.root, hex.EncodeToString(sum[:12]))
}

// Observe captures (or has the copier follow) the transient files that
// exist now in a running build's directory. It returns how many files were
// newly linked (copies are counted when made, through Copied).
func (c *Capturer) Observe(invocationDir string) (int, error) {
	return c.ObserveFound(invocationDir, dirfd.ID{})
}

// ErrNotFound: the directory opened is not the one discovery found.
var ErrNotFound = errors.New("not the directory discovery found; not captured")

// ObserveFound is Observe of the directory discovery found with identity
// found (zero: any): a directory swapped in since (it, or one above it)
// is refused with ErrNotFound, nothing of it captured (issue 22, defect
// 2). The capture's first claim records this identity; later looks
// compare with it.
func (c *Capturer) ObserveFound(invocationDir string, found dirfd.ID) (int, error) {
	d, err := dirfd.Open(invocationDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer d.Close()
	if !found.IsZero() && d.ID() != found {
		return 0, fmt.Errorf("%s: %w (identity %s, opened %s)", invocationDir, ErrNotFound, found, d.ID())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sub := c.buildDir(invocationDir)
	if err := c.claim(sub, invocationDir, d.ID()); err != nil {
		return 0, err
	}
	var captured int
	var errs []error
	for _, name := range transientNames {
		e, err := d.Stat(name)
		if err != nil || !e.Regular {
			continue // absent, or not something ct-cake wrote: never follow symlinks
		}
		isNew, err := c.captureOne(d, name, e, filepath.Join(sub, name), invocationDir)
		if err != nil {
			errs = append(errs, err)
		}
		if isNew {
			captured++
		}
	}
	return captured, errors.Join(errs...)
}

// claim makes sub the capture of the directory with identity id: a
// capture of another directory under the same path (deleted and made
// again: another build) is emptied first.
func (c *Capturer) claim(sub, invocationDir string, id dirfd.ID) error {
	was, _, err := readSource(sub)
	if err == nil && was == id {
		return nil
	}
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		c.forget(sub)
		if err := os.RemoveAll(sub); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return err
	}
	return writeSource(sub, invocationDir, id)
}

func (c *Capturer) captureOne(d *dirfd.Dir, name string, src dirfd.Entry, dst, invocationDir string) (bool, error) {
	if c.tooLarge[dst] {
		return false, nil
	}
	if _, following := c.copies[dst]; following {
		c.copier.enqueue(invocationDir)
		return false, nil
	}
	if st, err := os.Lstat(dst); err == nil {
		if sameInode(st, src.ID) {
			return false, nil // linked: the inode is shared, nothing to do
		}
		// The name holds another file than the one linked: the newer wins.
		if err := os.Remove(dst); err != nil {
			return false, err
		}
	}
	// linkat without AT_SYMLINK_FOLLOW links the entry itself: should it
	// have become a link since the stat, the capture is that link, which
	// the check below (and every reader's O_NOFOLLOW) refuses.
	err := unix.Linkat(d.Fd(), name, unix.AT_FDCWD, dst, 0)
	if err == nil {
		if st, err := os.Lstat(dst); err != nil || !st.Mode().IsRegular() || !sameInode(st, src.ID) {
			_ = os.Remove(dst)
			return false, nil
		}
		return true, nil
	}
	// Another filesystem (EXDEV), or a link the kernel refuses (EPERM
	// under protected_hardlinks): copy, off the caller's path.
	c.copies[dst] = 0
	c.copier.enqueue(invocationDir)
	return false, nil
}

func sameInode(st os.FileInfo, id dirfd.ID) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == id.Dev && sys.Ino == id.Ino
}

// Path returns the captured copy of name for a build, or "" if none — and
// "" for a capture taken of another directory under the same path.
func (c *Capturer) Path(invocationDir, name string) string {
	sub := c.buildDir(invocationDir)
	was, _, err := readSource(sub)
	if err == nil {
		now, ok := identity(invocationDir)
		if !ok || now != was {
			return ""
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	dst := filepath.Join(sub, name)
	if st, err := os.Lstat(dst); err == nil && st.Mode().IsRegular() {
		return dst
	}
	return ""
}

// Copying reports whether a copy for the build is queued or running: its
// capture may not hold every byte yet.
func (c *Capturer) Copying(invocationDir string) bool { return c.copier.busy(invocationDir) }

// Release deletes a build's captured files once the build was delivered
// (or abandoned).
func (c *Capturer) Release(invocationDir string) error {
	dir := c.buildDir(invocationDir)
	c.mu.Lock()
	c.forget(dir)
	c.mu.Unlock()
	return os.RemoveAll(dir)
}

// forget drops the copy state of a capture directory (c.mu held).
func (c *Capturer) forget(sub string) {
	for _, name := range transientNames {
		delete(c.copies, filepath.Join(sub, name))
		delete(c.tooLarge, filepath.Join(sub, name))
	}
}

// legacyAge: a capture made before captures recorded their directory is
// deleted once nothing in it changed for this long.
const legacyAge = 24 * time.Hour

// Sweep deletes the captures whose build directory is gone, or is another
// directory now (a build killed and its directory removed leaves its
// capture behind otherwise). It returns how many it deleted.
func (c *Capturer) Sweep(now time.Time) (int, error) {
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return 0, err
	}
	var removed int
	var errs []error
	for _, e := range entries {
		sub := filepath.Join(c.root, e.Name())
		if !e.IsDir() {
			continue
		}
		was, path, err := readSource(sub)
		stale := false
		switch {
		case err == nil:
			id, ok := identity(path)
			stale = !ok || id != was
		case errors.Is(err, fs.ErrNotExist):
			st, statErr := os.Lstat(sub)
			stale = statErr == nil && now.Sub(st.ModTime()) > legacyAge
		default:
			stale = true // unreadable or damaged: not a capture of ours to keep
		}
		if !stale {
			continue
		}
		c.mu.Lock()
		c.forget(sub)
		c.mu.Unlock()
		if err := os.RemoveAll(sub); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// identity is the identity of the directory at path (never a link).
func identity(path string) (dirfd.ID, bool) {
	st, err := os.Lstat(path)
	if err != nil || !st.IsDir() {
		return dirfd.ID{}, false
	}
	id, err := dirfd.Of(path)
	return id, err == nil
}

func writeSource(sub, invocationDir string, id dirfd.ID) error {
	tmp := filepath.Join(sub, sourceFile+".tmp")
	text := fmt.Sprintf("%d %d %d\n%s\n", id.Dev, id.Ino, id.Born, invocationDir)
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(sub, sourceFile))
}

func readSource(sub string) (dirfd.ID, string, error) {
	b, err := os.ReadFile(filepath.Join(sub, sourceFile))
	if err != nil {
		return dirfd.ID{}, "", err
	}
	head, path, ok := strings.Cut(strings.TrimSuffix(string(b), "\n"), "\n")
	var id dirfd.ID
	if _, err := fmt.Sscanf(head, "%d %d %d", &id.Dev, &id.Ino, &id.Born); err != nil || !ok || path == "" {
		return dirfd.ID{}, "", fmt.Errorf("capture %s: damaged %s", sub, sourceFile)
	}
	return id, path, nil
}
