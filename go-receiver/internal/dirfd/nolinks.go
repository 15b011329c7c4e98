package dirfd

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// OpenNoLinks opens the directory at path without following a symbolic
// link in any of its components, not only the last: a directory named in
// the configuration (a live.files mapping) under a tree a build's owner
// writes to cannot be redirected to another user's by a link swapped in
// anywhere along it (issue 22, defect 2). A link is
// regularfile.ErrSymlink. openat2(RESOLVE_NO_SYMLINKS) does it in one
// call; where the kernel lacks it (before 5.6, or a seccomp filter), each
// component is opened in turn relative to the previous one with
// O_NOFOLLOW.
func OpenNoLinks(path string) (*Dir, error) {
	clean := filepath.Clean(path)
	how := unix.OpenHow{Flags: uint64(dirFlags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, clean, &how)
	switch {
	case err == nil:
		return fromFd(fd, path)
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.E2BIG):
		return openByComponents(clean, path)
	case errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && isLinkAt(unix.AT_FDCWD, clean)):
		// O_NOFOLLOW|O_DIRECTORY answers ENOTDIR for a last component
		// that is a link.
		return nil, &fs.PathError{Op: "open", Path: path, Err: regularfile.ErrSymlink}
	default:
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
}

// openByComponents is OpenNoLinks one component at a time: each opened
// with O_NOFOLLOW|O_DIRECTORY relative to the handle of the one before, so
// no component is resolved twice and none through a link.
func openByComponents(clean, path string) (*Dir, error) {
	start := "."
	if filepath.IsAbs(clean) {
		start = "/"
	}
	cur, err := openAt(unix.AT_FDCWD, start, start)
	if err != nil {
		return nil, err
	}
	rest := strings.TrimPrefix(clean, "/")
	if rest == "." || rest == "" {
		cur.path = path
		return cur, nil
	}
	for _, name := range strings.Split(rest, "/") {
		next, err := openAt(cur.Fd(), name, path)
		_ = cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// fromFd makes a Dir of a directory descriptor just opened.
func fromFd(fd int, path string) (*Dir, error) {
	id, err := statxID(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &Dir{f: newFile(fd, path), id: id, path: path}, nil
}
