// Package regularfile opens files that other processes own (build
// directories, git metadata) for reading without ever blocking in open(2).
//
// Opening a FIFO for reading waits until a writer opens it, and no context
// can interrupt that wait: one FIFO where a statslog or a git ref is
// expected would wedge a poll, and with it Shutdown. O_NONBLOCK makes the
// open return at once; the type is then checked on the open descriptor
// (fstat), so the path cannot be swapped between check and open. For a
// regular file O_NONBLOCK changes nothing.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the errors of Open and ReadFile for anything
// but a regular file (FIFO, socket, device, directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by ReadFile's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading if it is a regular file, without waiting.
// Symlinks are followed, as os.Open does.
func Open(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, typeName(st.Mode()))}
	}
	return f, st, nil
}

// ReadFile reads a whole regular file of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, st.Size(), max)}
	}
	// One byte over the limit shows a file that grew after the fstat.
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: grew beyond %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "type " + m.Type().String()
	}
}
