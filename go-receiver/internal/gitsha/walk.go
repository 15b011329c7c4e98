package gitsha

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// The repository belongs to whoever runs the builds, and so does every
// directory on the way to it: a path resolved afresh by each open could be
// pointed, between two opens, at another user's repository (issue 22,
// defect 2). So the walk holds directory handles opened without following
// links (dirfd): the start directory is opened once, its parents are
// reached through "..", the git directory and every file in it are opened
// relative to those handles, and a symbolic link met on the way (a `.git`,
// a directory of refs, HEAD, a ref, config) ends the read instead of being
// followed.

// errBadRefName is the error for a ref or gitdir component git itself would
// never write ("..", "", a leading "/").
var errBadRefName = errors.New("not a ref name git writes")

// dotGit is the nearest `.git` above a start directory.
type dotGit struct {
	// workTree is the directory holding `.git`; name is its path, spelled
	// from the start path (filepath.Dir of it, as before the handles).
	workTree *dirfd.Dir
	name     string
}

func (g dotGit) Close() { _ = g.workTree.Close() }

// findDotGit returns the nearest directory at or above start holding a
// `.git` entry of any type (not followed: a symlinked `.git` is found, and
// then refused by openGitDirs).
func findDotGit(start string) (dotGit, error) {
	name, err := filepath.Abs(start)
	if err != nil {
		return dotGit{}, err
	}
	d, name, err := openStart(name)
	if err != nil {
		return dotGit{}, err
	}
	for {
		if d.Exists(".git") {
			if err := sameDirectory(name, d); err != nil {
				d.Close()
				return dotGit{}, err
			}
			return dotGit{workTree: d, name: name}, nil
		}
		parentName := filepath.Dir(name)
		if parentName == name {
			d.Close()
			return dotGit{}, ErrNoRepository
		}
		parent, err := d.Parent()
		d.Close()
		if err != nil {
			return dotGit{}, err
		}
		d, name = parent, parentName
	}
}

// openStart opens the nearest existing directory at or above the absolute
// path name (a build may name a directory not made yet, or a file; neither
// holds a `.git`). Its last component is never a link: a start directory
// swapped for one is refused, not followed.
func openStart(name string) (*dirfd.Dir, string, error) {
	for {
		d, err := dirfd.Open(name)
		if err == nil {
			return d, name, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return nil, "", err
		}
		parent := filepath.Dir(name)
		if parent == name {
			return nil, "", ErrNoRepository
		}
		name = parent
	}
}

// sameDirectory checks that the path the work tree is reported by names the
// directory the walk found. They differ only when a link in the start
// path's prefix led into another tree whose real parents are not the
// path's parents; the work tree is then left unnamed rather than misnamed.
func sameDirectory(name string, d *dirfd.Dir) error {
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if id := d.ID(); uint64(st.Dev) != id.Dev || st.Ino != id.Ino {
		return fmt.Errorf("%s: the repository found above the start directory is not this path (a link in the start path)", name)
	}
	return nil
}

// gitDirs are the handles of a repository's two git directories: the
// per-worktree one (HEAD) and the common one (shared refs, packed-refs,
// config); the same directory outside linked worktrees.
type gitDirs struct {
	git, common *dirfd.Dir
}

func (g gitDirs) Close() {
	if g.common != g.git {
		_ = g.common.Close()
	}
	_ = g.git.Close()
}

// openGitDirs opens the git directory of the work tree found: `.git`
// itself, or where a `.git` file's `gitdir:` line points (worktrees,
// submodules), then its common directory.
func openGitDirs(found dotGit) (gitDirs, error) {
	gitDir, err := found.workTree.Sub(".git")
	if err != nil {
		if !errors.Is(err, unix.ENOTDIR) {
			return gitDirs{}, err // a symlinked `.git` (regularfile.ErrSymlink) among others
		}
		b, err := readSmallAt(found.workTree, ".git")
		if err != nil {
			return gitDirs{}, err
		}
		target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return gitDirs{}, fmt.Errorf("%s: not a gitdir file", filepath.Join(found.name, ".git"))
		}
		if gitDir, err = walkDirs(found.workTree, strings.TrimSpace(target)); err != nil {
			return gitDirs{}, err
		}
	}
	return gitDirs{git: gitDir, common: commonDirOf(gitDir)}, nil
}

// commonDirOf opens the directory of the shared refs and config: a
// worktree's gitdir names it in `commondir`; without one (or when it
// cannot be opened) it is the git directory itself.
func commonDirOf(gitDir *dirfd.Dir) *dirfd.Dir {
	b, err := readSmallAt(gitDir, "commondir")
	if err != nil {
		return gitDir
	}
	common, err := walkDirs(gitDir, strings.TrimSpace(string(b)))
	if err != nil {
		return gitDir
	}
	return common
}

// walkDirs opens the directory p, relative to base or, when absolute, from
// "/", one component at a time and never through a link. A gitdir pointer
// is written by the repository's owner: following a link anywhere in it
// would let it name any directory the collector can read.
func walkDirs(base *dirfd.Dir, p string) (*dirfd.Dir, error) {
	if p == "" {
		return nil, fmt.Errorf("empty gitdir path: %w", errBadRefName)
	}
	var d *dirfd.Dir
	var err error
	if filepath.IsAbs(p) {
		d, err = dirfd.Open("/")
	} else {
		d, err = base.Sub(".")
	}
	if err != nil {
		return nil, err
	}
	for _, component := range strings.Split(p, "/") {
		if component == "" || component == "." {
			continue
		}
		next, err := d.Sub(component)
		d.Close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// readSmallAt reads the file rel (slash-separated, as git names refs)
// below d: each directory on the way is opened without following a link,
// the file itself too, and a FIFO or device is refused without waiting
// (the poll goroutine runs this). ".." and empty components are refused:
// git writes neither in a ref.
func readSmallAt(d *dirfd.Dir, rel string) ([]byte, error) {
	components := strings.Split(rel, "/")
	for _, c := range components {
		if c == "" || c == "." || c == ".." {
			return nil, fmt.Errorf("%q: %w", rel, errBadRefName)
		}
	}
	dir := d
	for _, c := range components[:len(components)-1] {
		next, err := dir.Sub(c)
		if dir != d {
			dir.Close()
		}
		if err != nil {
			return nil, err
		}
		dir = next
	}
	if dir != d {
		defer dir.Close()
	}
	return readBounded(dir, components[len(components)-1])
}

// readBounded reads the regular file name of dir, at most maxSmallFile
// bytes (one byte more shows a file that grew after the fstat).
func readBounded(dir *dirfd.Dir, name string) ([]byte, error) {
	f, st, err := dir.OpenFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxSmallFile {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: %d bytes, limit %d", regularfile.ErrTooLarge, st.Size(), maxSmallFile)}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSmallFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSmallFile {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("%w: grew beyond %d bytes", regularfile.ErrTooLarge, maxSmallFile)}
	}
	return b, nil
}
