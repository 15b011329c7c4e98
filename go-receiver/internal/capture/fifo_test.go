package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// A transient file replaced by a FIFO between Observe's Lstat and the copy
// (or a FIFO planted at the capture's own path) must fail the copy at once:
// a blocked open would wedge the poll, and Shutdown with it.
func TestCopyNeverWaitsOnAFIFO(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, Statslog)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	regular := filepath.Join(root, "regular")
	if err := os.WriteFile(regular, []byte("cache_miss\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		err error
	}
	for _, c := range []struct{ name, src, dst string }{
		{"source is a FIFO", fifo, filepath.Join(root, "out")},
		{"capture is a FIFO", regular, fifo},
	} {
		done := make(chan result, 1)
		go func() {
			d, err := dirfd.Open(filepath.Dir(c.src))
			if err != nil {
				done <- result{0, err}
				return
			}
			defer d.Close()
			n, err := (&Capturer{maxBytes: 1 << 20}).copyFile(context.Background(), d, filepath.Base(c.src), c.dst, 0)
			done <- result{n, err}
		}()
		select {
		case r := <-done:
			if r.err == nil || r.n != 0 {
				t.Errorf("%s: want an error and nothing copied, got %d bytes, %v", c.name, r.n, r.err)
			}
			if c.src == fifo && !errors.Is(r.err, regularfile.ErrNotRegular) {
				t.Errorf("%s: want ErrNotRegular, got %v", c.name, r.err)
			}
		case <-time.After(2 * time.Second):
			// Free the stuck open from the other end, then fail.
			if c.src == fifo {
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
			} else if r, err := os.Open(fifo); err == nil {
				r.Close()
			}
			<-done
			t.Fatalf("%s: the copy blocked on the FIFO", c.name)
		}
	}
}
