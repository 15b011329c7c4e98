package dirfd

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOpenRefusesALinkAndFilesAreOpenedRelativeToTheHandle(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(real)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if e, err := d.Stat("f"); err != nil || !e.Regular || e.Size != 1 {
		t.Fatalf("stat: %+v %v", e, err)
	}
	// The path now names a link to another directory: the handle still
	// reads the directory that was opened.
	other := filepath.Join(root, "other")
	os.Mkdir(other, 0o755)
	os.Rename(real, filepath.Join(root, "moved"))
	if err := os.Symlink(other, real); err != nil {
		t.Fatal(err)
	}
	f, _, err := d.OpenFile("f")
	if err != nil {
		t.Fatalf("open relative to the handle: %v", err)
	}
	f.Close()
	if _, err := Open(real); err == nil {
		t.Fatal("a link was opened as a directory")
	}
	p, err := d.Parent()
	if err != nil || p.ID() == d.ID() {
		t.Fatalf("parent: %v", err)
	}
	if p2, _ := Open(root); p2 == nil || p2.ID() != p.ID() {
		t.Fatal("the parent is not the real parent")
	}
}
