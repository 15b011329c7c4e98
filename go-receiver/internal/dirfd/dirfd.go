// Package dirfd opens the directories of builds that other users own, and
// the files in them, without ever following a symbolic link.
//
// A path is resolved afresh by every open: a build's owner who replaces
// its directory (or one above it) by a link to another user's directory
// between two opens redirects the second one (issue 22, defect 2). A Dir is
// opened once with O_NOFOLLOW|O_DIRECTORY and its files are opened relative
// to it (openat), so they are entries of the very directory that was
// checked; its parents are reached through "..", which names the real
// parent of that directory whatever its path became. Its identity (device
// and inode) lets a caller tell that a path now names another directory.
package dirfd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// ID is a directory's (or file's) identity: a directory deleted and made
// again under the same name gets another one. A filesystem may give the
// new directory the inode number just freed, so the birth time (statx
// btime, where the filesystem keeps one) is part of it.
type ID struct {
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Born int64  `json:"born,omitempty"` // ns since the epoch; 0: unknown
}

// IsZero reports an identity never taken.
func (id ID) IsZero() bool { return id == ID{} }

func (id ID) String() string { return fmt.Sprintf("%d:%d:%d", id.Dev, id.Ino, id.Born) }

// Of is the identity of the entry at path, never following a link in its
// last component.
func Of(path string) (ID, error) {
	return statxID(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW)
}

// OfDir is the identity of the directory at path, taken in one call that
// never follows a link in its last component: a link (to a directory or
// not) is regularfile.ErrSymlink, anything else but a directory ENOTDIR.
func OfDir(path string) (ID, error) {
	var stx unix.Statx_t
	id, err := statxInto(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, &stx)
	if err != nil {
		return ID{}, err
	}
	switch stx.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return id, nil
	case unix.S_IFLNK:
		return ID{}, &fs.PathError{Op: "statx", Path: path, Err: regularfile.ErrSymlink}
	default:
		return ID{}, &fs.PathError{Op: "statx", Path: path, Err: unix.ENOTDIR}
	}
}

func statxID(dirfd int, path string, flags int) (ID, error) {
	var stx unix.Statx_t
	return statxInto(dirfd, path, flags, &stx)
}

func statxInto(dirfd int, path string, flags int, stx *unix.Statx_t) (ID, error) {
	if err := unix.Statx(dirfd, path, flags, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_TYPE, stx); err != nil {
		return ID{}, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	id := ID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_BTIME != 0 {
		id.Born = stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
	}
	return id, nil
}

// Dir is an open directory handle.
type Dir struct {
	f    *os.File
	id   ID
	path string
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// Open opens the directory at path, refusing a symbolic link in its last
// component (regularfile.ErrSymlink).
func Open(path string) (*Dir, error) {
	return openAt(unix.AT_FDCWD, path, path)
}

func openAt(parent int, name, path string) (*Dir, error) {
	fd, err := unix.Openat(parent, name, dirFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && isLinkAt(parent, name)) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: regularfile.ErrSymlink}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fromFd(fd, path)
}

func newFile(fd int, path string) *os.File { return os.NewFile(uintptr(fd), path) }

func isLinkAt(parent int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// ID is the directory's identity, taken when it was opened.
func (d *Dir) ID() ID { return d.id }

// Path is the path the directory was opened by (for messages only).
func (d *Dir) Path() string { return d.path }

// Fd is the descriptor, for the *at calls of other packages.
func (d *Dir) Fd() int { return int(d.f.Fd()) }

// Close closes the handle; safe on nil.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}

// Parent opens the directory's real parent.
func (d *Dir) Parent() (*Dir, error) {
	return openAt(d.Fd(), "..", filepath.Dir(d.path))
}

// Sub opens the subdirectory name (never through a link).
func (d *Dir) Sub(name string) (*Dir, error) {
	return openAt(d.Fd(), name, filepath.Join(d.path, name))
}

// OpenFile opens the regular file name of this directory for reading,
// without following a link and without waiting on a FIFO.
func (d *Dir) OpenFile(name string) (*os.File, os.FileInfo, error) {
	path := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.Fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: regularfile.ErrSymlink}
		}
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: regularfile.ErrNotRegular}
	}
	return f, st, nil
}

// Stat describes the entry name without following a link.
func (d *Dir) Stat(name string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.Fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, &fs.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return Entry{ID: ID{Dev: uint64(st.Dev), Ino: st.Ino}, Size: st.Size, Regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
		Blocks: st.Blocks}, nil
}

// Entry is what Stat tells of a directory entry.
type Entry struct {
	ID      ID
	Size    int64
	Blocks  int64 // 512-byte blocks allocated
	Regular bool
}

// Names lists the directory's entries (read through a fresh handle of the
// same directory, so the handle's own offset is untouched).
func (d *Dir) Names() ([]string, error) {
	fd, err := unix.Openat(d.Fd(), ".", dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// Exists reports whether the entry name exists (of any type).
func (d *Dir) Exists(name string) bool {
	_, err := d.Stat(name)
	return err == nil
}
