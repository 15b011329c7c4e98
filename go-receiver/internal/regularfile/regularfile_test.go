package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// withinDeadline runs f and fails the test if it has not returned after
// two seconds; opening fifo for writing then releases a reader stuck in
// open(2), so the test fails instead of hanging.
func withinDeadline(t *testing.T, fifo string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("opening the FIFO %s blocked", fifo)
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "HEAD")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var openErr, readErr error
	withinDeadline(t, fifo, func() {
		_, _, openErr = Open(fifo)
		_, readErr = ReadFile(fifo, 100)
	})
	for _, err := range []error{openErr, readErr} {
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
			t.Errorf("want ErrNotRegular naming a FIFO, got %v", err)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "hello" {
		t.Fatalf("got %q, %v", b, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	if _, err := ReadFile(dir, 5); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: want ErrNotRegular, got %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "nope"), 5); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
}
