package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestHardLinkKeepsAppendsAfterDeletion(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(root, "diag", "20261130T000000-1")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(filepath.Join(root, "capture"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(build, Statslog)
	appendTo(t, src, "# /a.cpp\ncache_miss\n")
	if n, err := c.Observe(build); err != nil || n != 1 {
		t.Fatalf("observe: %d %v", n, err)
	}
	appendTo(t, src, "# /b.cpp\ndirect_cache_hit\n") // ccache appends after the capture
	if err := os.Remove(src); err != nil {           // ct-cake deletes it
		t.Fatal(err)
	}
	got, err := os.ReadFile(c.Path(build, Statslog))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "# /a.cpp\ncache_miss\n# /b.cpp\ndirect_cache_hit\n" {
		t.Fatalf("captured %q", got)
	}
	if c.Path(build, Outcomes) != "" {
		t.Fatal("a file that never existed has a capture")
	}
	if err := c.Release(build); err != nil {
		t.Fatal(err)
	}
	if c.Path(build, Statslog) != "" {
		t.Fatal("release kept the capture")
	}
}

func TestCopyAndFollowWhenLinkImpossible(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(root, "20261130T000000-2")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(filepath.Join(root, "capture"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(build, Outcomes)
	appendTo(t, src, "a\tobj\t0\t0\n")
	dst := filepath.Join(c.buildDir(build), Outcomes)
	// Simulate a cross-device capture: start in copy mode.
	if _, err := c.Observe(build); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(dst)
	c.copies[dst] = 0
	copyNow(t, c, build)
	appendTo(t, src, "b\texe\t0\t0\n")
	if _, err := c.Observe(build); err != nil {
		t.Fatal(err)
	}
	copyNow(t, c, build)
	os.Remove(src)
	if _, err := c.Observe(build); err != nil { // source gone: keeps what it had
		t.Fatal(err)
	}
	copyNow(t, c, build)
	got, _ := os.ReadFile(c.Path(build, Outcomes))
	if string(got) != "a\tobj\t0\t0\nb\texe\t0\t0\n" {
		t.Fatalf("followed copy %q", got)
	}
}

// copyNow runs the copies Observe queued, as the copier goroutine would.
func copyNow(t *testing.T, c *Capturer, build string) {
	t.Helper()
	if err := copyQueued(c, build); err != nil {
		t.Fatal(err)
	}
}

func copyQueued(c *Capturer, build string) error {
	var errs []error
	for c.Copying(build) {
		dir := <-c.copier.queue
		if _, err := c.copyBuild(context.Background(), dir); err != nil {
			errs = append(errs, err)
		}
		c.copier.mu.Lock()
		delete(c.copier.pending, dir)
		c.copier.mu.Unlock()
	}
	return errors.Join(errs...)
}

func TestSymlinkedTransientFileIsNotFollowed(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(root, "20261130T000000-3")
	os.MkdirAll(build, 0o755)
	secret := filepath.Join(root, "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	if err := os.Symlink(secret, filepath.Join(build, Statslog)); err != nil {
		t.Fatal(err)
	}
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	if n, _ := c.Observe(build); n != 0 || c.Path(build, Statslog) != "" {
		t.Fatal("a symlink was captured")
	}
}
