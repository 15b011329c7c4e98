package casscan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// maxSmallFile bounds what is read of a lease or store id file: both are a
// few dozen bytes when written by a receiver, so anything larger is not
// one of ours.
const maxSmallFile = 4096

// errHostile is a lease or store id file that a receiver did not write: a
// symbolic link, not a regular file, too large, or not parseable.
var errHostile = errors.New("not a file the receiver wrote")

// readSmallFile reads path without following a symbolic link and without
// blocking on a FIFO or device, and refuses anything but a regular file of
// at most maxSmallFile bytes. A missing file is os.ErrNotExist.
func readSmallFile(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, os.ErrNotExist
		}
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: a symbolic link", errHostile)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%s)", errHostile, info.Mode().Type())
	}
	if info.Size() > maxSmallFile {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errHostile, info.Size(), maxSmallFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSmallFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSmallFile {
		return nil, fmt.Errorf("%w: grew past %d bytes while read", errHostile, maxSmallFile)
	}
	return data, nil
}

// stagingPath is the temporary file a holder writes before publishing it
// at path: one per holder and target, reused, so crashed writers leave at
// most one behind each. A dot name, so pool enumeration skips it.
func stagingPath(path, holder string) string {
	sum := sha256.Sum256([]byte(holder))
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(sum[:8])+".tmp")
}

// writeStaging writes data to a fresh staging file for path, never through
// a symbolic link someone put there, and returns its name.
func writeStaging(path, holder string, data []byte) (string, error) {
	tmp := stagingPath(path, holder)
	// A leftover (ours from a crash, or anything else) is replaced, not
	// written through: remove what is there, then create exclusively.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// publishExclusive makes data appear at path whole, only if path does not
// exist: a staging file hard-linked to path. link(2) is atomic and
// exclusive on NFS too (unlike O_EXCL on old clients); its answer can be
// lost on a retransmission, so callers read path back to learn who won.
func publishExclusive(path, holder string, data []byte) error {
	tmp, err := writeStaging(path, holder, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, path)
}

// publishReplace makes data appear at path whole, replacing whatever is
// there (a symbolic link is replaced, never followed): rename(2) of a
// staging file, atomic on NFS too.
func publishReplace(path, holder string, data []byte) error {
	tmp, err := writeStaging(path, holder, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
