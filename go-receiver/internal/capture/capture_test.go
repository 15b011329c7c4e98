package capture

import (
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
	c, err := New(filepath.Join(root, "capture"))
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
	c, err := New(filepath.Join(root, "capture"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(build, Outcomes)
	appendTo(t, src, "a\tobj\t0\t0\n")
	dst := filepath.Join(c.buildDir(build), Outcomes)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	// Simulate a cross-device capture: start in copy mode.
	n, err := appendFrom(src, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.copies[dst] = n
	appendTo(t, src, "b\texe\t0\t0\n")
	if _, err := c.Observe(build); err != nil {
		t.Fatal(err)
	}
	os.Remove(src)
	if _, err := c.Observe(build); err != nil { // source gone: keeps what it had
		t.Fatal(err)
	}
	got, _ := os.ReadFile(c.Path(build, Outcomes))
	if string(got) != "a\tobj\t0\t0\nb\texe\t0\t0\n" {
		t.Fatalf("followed copy %q", got)
	}
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
	c, _ := New(filepath.Join(root, "capture"))
	if n, _ := c.Observe(build); n != 0 || c.Path(build, Statslog) != "" {
		t.Fatal("a symlink was captured")
	}
}
