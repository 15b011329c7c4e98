package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// The copy mode's own goroutine (issue 22, defect 3). A copy can be as
// large as the statslog limit and used to run inside the poll, where the
// finished builds waited for it. Observe only queues the build; Run
// copies what its files gained, one build at a time, and only their data:
// a hole of a sparse file is skipped (SEEK_DATA / SEEK_HOLE) and stays a
// hole in the capture, so a 10 GiB file with 4 KiB written costs 4 KiB.
// A source larger than the limit is not captured at all: the core would
// not read such a statslog either.

// copyChunk is what one write copies at most (the context is checked
// between chunks).
const copyChunk = 1 << 20

// queueLength bounds the builds waiting for a copy; a full queue leaves a
// build to the next poll's Observe.
const queueLength = 1024

type copier struct {
	c       *Capturer
	queue   chan string
	mu      sync.Mutex
	pending map[string]bool // queued or being copied
	// Copied, when set, hears of each file whose first copy was made.
	copied func(n int)
	// warn, when set, hears of a build whose copy failed or was given up.
	warn func(dir string, err error)
}

func newCopier(c *Capturer) *copier {
	return &copier{c: c, queue: make(chan string, queueLength), pending: map[string]bool{}}
}

// OnCopy sets who hears of copies made (the captured-files self-metric)
// and of copies that failed; call it before Run.
func (c *Capturer) OnCopy(copied func(n int), warn func(dir string, err error)) {
	c.copier.copied, c.copier.warn = copied, warn
}

// Run copies the queued builds until ctx ends.
func (c *Capturer) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case dir := <-c.copier.queue:
			n, err := c.copyBuild(ctx, dir)
			c.copier.mu.Lock()
			delete(c.copier.pending, dir)
			c.copier.mu.Unlock()
			if n > 0 && c.copier.copied != nil {
				c.copier.copied(n)
			}
			if err != nil && c.copier.warn != nil {
				c.copier.warn(dir, err)
			}
		}
	}
}

func (q *copier) enqueue(dir string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[dir] {
		return
	}
	select {
	case q.queue <- dir:
		q.pending[dir] = true
	default:
	}
}

func (q *copier) busy(dir string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending[dir]
}

// copyBuild appends what the build's copied files gained; it returns how
// many were copied for the first time.
func (c *Capturer) copyBuild(ctx context.Context, invocationDir string) (int, error) {
	d, err := dirfd.Open(invocationDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil // deleted meanwhile: keep what was copied
		}
		return 0, err
	}
	defer d.Close()
	sub := c.buildDir(invocationDir)
	if was, _, err := readSource(sub); err != nil || was != d.ID() {
		return 0, nil // another directory under that path now: Observe starts over
	}
	var first int
	var errs []error
	for _, name := range transientNames {
		dst := filepath.Join(sub, name)
		c.mu.Lock()
		offset, following := c.copies[dst]
		c.mu.Unlock()
		if !following {
			continue
		}
		n, err := c.copyFile(ctx, d, name, dst, offset)
		c.mu.Lock()
		if _, still := c.copies[dst]; still { // not released meanwhile
			if errors.Is(err, errTooLarge) {
				delete(c.copies, dst)
				c.tooLarge[dst] = true
				_ = os.Remove(dst)
			} else {
				c.copies[dst] = offset + n
				if offset == 0 && n > 0 {
					first++
				}
			}
		}
		c.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return first, errors.Join(errs...)
}

var errTooLarge = errors.New("larger than limits.max_file_size; not captured")

// copyFile copies name[offset:] of d into dst at the same offsets,
// data only.
func (c *Capturer) copyFile(ctx context.Context, d *dirfd.Dir, name, dst string, offset int64) (int64, error) {
	in, st, err := d.OpenFile(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil // deleted meanwhile: keep what was copied
		}
		return 0, err
	}
	defer in.Close()
	size := st.Size()
	if size > c.maxBytes {
		return 0, fmt.Errorf("%s: %d bytes: %w", in.Name(), size, errTooLarge)
	}
	if size <= offset {
		return 0, nil
	}
	// O_NOFOLLOW|O_NONBLOCK: the capture directory may be writable by
	// others, and a FIFO or link planted there must fail the copy at once.
	fd, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: dst, Err: err}
	}
	out := os.NewFile(uintptr(fd), dst)
	n, copyErr := copyData(ctx, in, out, offset, size)
	if copyErr == nil {
		// The tail may be a hole: the capture gets the source's length.
		copyErr = out.Truncate(offset + n)
	}
	if err := out.Close(); copyErr == nil {
		copyErr = err
	}
	return n, copyErr
}

// copyData copies in's data regions between from and to into out at the
// same offsets; holes are skipped. It returns to-from once done.
func copyData(ctx context.Context, in, out *os.File, from, to int64) (int64, error) {
	if st, err := out.Stat(); err != nil {
		return 0, err
	} else if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", out.Name())
	}
	buf := make([]byte, copyChunk)
	pos := from
	for pos < to {
		if err := ctx.Err(); err != nil {
			return pos - from, err
		}
		data, err := unix.Seek(int(in.Fd()), pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole up to the end
		}
		if err != nil {
			data = pos // no SEEK_DATA here: copy as it comes
		}
		if data >= to {
			break
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil || hole > to {
			hole = to
		}
		for pos = data; pos < hole; {
			if err := ctx.Err(); err != nil {
				return pos - from, err
			}
			n, err := in.ReadAt(buf[:min(int64(len(buf)), hole-pos)], pos)
			if n > 0 {
				if _, werr := out.WriteAt(buf[:n], pos); werr != nil {
					return pos - from, werr
				}
				pos += int64(n)
			}
			if err == io.EOF {
				return pos - from, nil
			}
			if err != nil {
				return pos - from, err
			}
		}
	}
	return to - from, nil
}
