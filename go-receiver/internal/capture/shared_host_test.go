package capture

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

// Issue 22, defect 2: a build directory replaced by a link to another
// user's directory is never captured from.
func TestSwappedDirectoryIsNotCaptured(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	os.Mkdir(victim, 0o700)
	appendTo(t, filepath.Join(victim, Statslog), "# /SECRET/key0.cpp\ncache_miss\n")
	build := filepath.Join(root, "20261130T000000-5")
	if err := os.Symlink(victim, build); err != nil {
		t.Fatal(err)
	}
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	if n, _ := c.Observe(build); n != 0 || c.Path(build, Statslog) != "" {
		t.Fatal("a file behind a swapped directory was captured")
	}
}

// Issue 22, defect 5: a directory made again under the same name is a new
// build; the old capture is neither used nor kept.
func TestRecreatedDirectoryStartsANewCapture(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(root, "20261130T000000-6")
	os.Mkdir(build, 0o755)
	appendTo(t, filepath.Join(build, Statslog), "# /old.cpp\ncache_miss\n")
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	if n, err := c.Observe(build); n != 1 || err != nil {
		t.Fatalf("observe: %d %v", n, err)
	}
	if err := os.RemoveAll(build); err != nil {
		t.Fatal(err)
	}
	// Keep the old inode number from being reused at once.
	keep := filepath.Join(root, "keep")
	os.Mkdir(keep, 0o755)
	os.Mkdir(build, 0o755)
	if c.Path(build, Statslog) != "" {
		t.Fatal("the old run's capture is offered for the new directory")
	}
	appendTo(t, filepath.Join(build, Statslog), "# /new.cpp\ndirect_cache_hit\n")
	if n, err := c.Observe(build); n != 1 || err != nil {
		t.Fatalf("observe the new run: %d %v", n, err)
	}
	got, _ := os.ReadFile(c.Path(build, Statslog))
	if string(got) != "# /new.cpp\ndirect_cache_hit\n" {
		t.Fatalf("capture %q", got)
	}
}

// Issue 22, defect 3: a copy skips holes and refuses a source beyond the
// limit.
func TestCopySkipsHolesAndStopsAtTheLimit(t *testing.T) {
	root := t.TempDir()
	build := filepath.Join(root, "20261130T000000-7")
	os.Mkdir(build, 0o755)
	src := filepath.Join(build, Statslog)
	f, _ := os.Create(src)
	f.WriteAt([]byte("# /a.cpp\ncache_miss\n"), 512<<10) // a 512 KiB hole first
	f.Close()
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	dst := filepath.Join(c.buildDir(build), Statslog)
	c.Observe(build)
	os.Remove(dst)
	c.copies[dst] = 0 // copy mode, as across filesystems
	c.copier.enqueue(build)
	copyNow(t, c, build)
	st, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 512<<10+20 {
		t.Fatalf("capture is %d bytes", st.Size())
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 64<<10 {
		t.Fatalf("the hole was written as data: %d bytes allocated", blocks)
	}
	// Beyond the limit: given up, and the capture deleted.
	f, _ = os.OpenFile(src, os.O_WRONLY, 0)
	f.WriteAt([]byte("x\n"), 2<<20)
	f.Close()
	c.Observe(build)
	if err := copyQueued(c, build); !errors.Is(err, errTooLarge) {
		t.Fatalf("copy beyond the limit: %v", err)
	}
	if c.Path(build, Statslog) != "" {
		t.Fatal("a source beyond the limit is still captured")
	}
}

// Issue 22, defect 7: a capture whose build directory is gone is deleted.
func TestSweepDeletesCapturesOfVanishedBuilds(t *testing.T) {
	root := t.TempDir()
	gone := filepath.Join(root, "20261130T000000-8")
	kept := filepath.Join(root, "20261130T000000-9")
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	for _, d := range []string{gone, kept} {
		os.Mkdir(d, 0o755)
		appendTo(t, filepath.Join(d, Statslog), "# /a.cpp\ncache_miss\n")
		c.Observe(d)
	}
	os.RemoveAll(gone)
	if n, err := c.Sweep(time.Now()); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := os.Stat(c.buildDir(gone)); !os.IsNotExist(err) {
		t.Fatal("the capture of a removed build is kept")
	}
	if c.Path(kept, Statslog) == "" {
		t.Fatal("the capture of a build still on disk was deleted")
	}
}

// Issue 22, defect 2: a directory above a build swapped for a link to
// another user's tree between discovery and the capture's first open: the
// path now names the victim's build directory, a real directory, so only
// the identity discovery took tells them apart. Nothing is captured.
func TestSwapBetweenDiscoveryAndCaptureIsRefused(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "alice", "diagnostics")
	build := filepath.Join(own, "20261130T000000-5")
	os.MkdirAll(build, 0o755)
	victimDiag := filepath.Join(root, "bob", "diagnostics")
	os.MkdirAll(filepath.Join(victimDiag, "20261130T000000-5"), 0o700)
	appendTo(t, filepath.Join(victimDiag, "20261130T000000-5", Statslog), "# /SECRET/key0.cpp\ncache_miss\n")
	found, err := dirfd.OfDir(build)
	if err != nil {
		t.Fatal(err)
	}
	os.Rename(own, own+".old")
	if err := os.Symlink(victimDiag, own); err != nil {
		t.Fatal(err)
	}
	c, _ := New(filepath.Join(root, "capture"), 1<<20)
	n, err := c.ObserveFound(build, found)
	if !errors.Is(err, ErrNotFound) || n != 0 || c.Path(build, Statslog) != "" {
		t.Fatalf("the victim's build was captured: %d %v", n, err)
	}
	// The directory discovery found, back in place, is captured.
	os.Remove(own)
	os.Rename(own+".old", own)
	appendTo(t, filepath.Join(build, Statslog), "# /a.cpp\ncache_miss\n")
	if n, err := c.ObserveFound(build, found); n != 1 || err != nil {
		t.Fatalf("observe: %d %v", n, err)
	}
}
