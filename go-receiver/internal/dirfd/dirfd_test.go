package dirfd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
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

// A link anywhere along a path is refused, by openat2 and by the
// component-by-component fallback alike; a path without one opens the
// very directory it names.
func TestOpenNoLinksRefusesALinkInAnyComponent(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, "alice", "bin", "gcc.debug")
	victim := filepath.Join(root, "bob", "bin", "gcc.debug")
	for _, d := range []string{own, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "mallory")
	if err := os.Symlink(filepath.Join(root, "bob"), link); err != nil {
		t.Fatal(err)
	}
	want, _ := Of(own)
	for name, open := range map[string]func(string) (*Dir, error){
		"openat2":  OpenNoLinks,
		"fallback": func(p string) (*Dir, error) { return openByComponents(filepath.Clean(p), p) },
	} {
		d, err := open(own)
		if err != nil || d.ID() != want {
			t.Fatalf("%s: %v", name, err)
		}
		d.Close()
		for _, p := range []string{filepath.Join(link, "bin", "gcc.debug"), filepath.Join(link, "bin"), link} {
			if d, err := open(p); !errors.Is(err, regularfile.ErrSymlink) {
				d.Close()
				t.Fatalf("%s: %s opened through a link: %v", name, p, err)
			}
		}
		// Dir.Open (the last component only) would have followed it.
		if d, err := Open(filepath.Join(link, "bin", "gcc.debug")); err != nil {
			t.Fatalf("control: %v", err)
		} else {
			d.Close()
		}
	}
	// Relative paths resolve from the working directory, ".." included.
	t.Chdir(own)
	if d, err := openByComponents("../gcc.debug", "../gcc.debug"); err != nil || d.ID() != want {
		t.Fatalf("relative: %v", err)
	}
}
