package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// secondFilesystem mounts a small tmpfs for the test and returns its path:
// a directory no hard link from t.TempDir() can reach. Mounting needs root;
// CI runs as root, so there a missing mount is a failure, elsewhere a skip.
func secondFilesystem(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if strings.EqualFold(os.Getenv("CI"), "true") {
			t.Fatal("CI=true: this test mounts a tmpfs and must run as root")
		}
		t.Skip("mounting a tmpfs (a second filesystem) needs root; CI runs this test")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	// Registered after t.TempDir's cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// The hard link → copy fallback, reached as in production: the capture
// directory is on another filesystem than the build, so os.Link fails with
// EXDEV and the file is copied, then followed on each Observe.
func TestCopyAndFollowAcrossFilesystems(t *testing.T) {
	other := secondFilesystem(t)
	build := filepath.Join(t.TempDir(), "20261130T000000-4")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(build, Outcomes)
	appendTo(t, src, "a\tobj\t0\t0\n")
	if err := os.Link(src, filepath.Join(other, "probe")); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("linking across the two filesystems: got %v, want EXDEV", err)
	}

	c, err := New(filepath.Join(other, "capture"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Observe(build); err != nil || !c.Copying(build) {
		t.Fatalf("first observe: %v, copying %v; want a copy queued", err, c.Copying(build))
	}
	copyNow(t, c, build)
	dst := c.Path(build, Outcomes)
	if dst == "" {
		t.Fatal("no capture after the first observe")
	}
	srcInfo, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	dstInfo, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(srcInfo, dstInfo) {
		t.Fatal("the capture is the source's inode: no copy was made")
	}

	appendTo(t, src, "b\texe\t0\t0\n") // written after the copy: must be followed
	if n, err := c.Observe(build); err != nil || n != 0 {
		t.Fatalf("second observe: %d new, %v; want the existing capture followed", n, err)
	}
	copyNow(t, c, build)
	if err := os.Remove(src); err != nil { // ct-cake deletes it
		t.Fatal(err)
	}
	if _, err := c.Observe(build); err != nil { // source gone: keeps what it had
		t.Fatal(err)
	}
	copyNow(t, c, build)
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "a\tobj\t0\t0\nb\texe\t0\t0\n" {
		t.Fatalf("followed copy %q", got)
	}
	if err := c.Release(build); err != nil {
		t.Fatal(err)
	}
	if c.Path(build, Outcomes) != "" {
		t.Fatal("release kept the capture")
	}
}
