package compiletoolsreceiver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// maxLiveRead bounds the bytes read from one file per look; the rest is
// read at the next look (records are never cut: the core consumes whole
// lines only).
const maxLiveRead = 4 << 20

// liveFile is one growing file of a running build.
type liveFile struct {
	kind ffi.LiveKind
	path string
	// fromEnd: the file is shared with earlier builds (an explicit
	// statslog, a cwd's .ninja_log), so reading starts at its size when the
	// build is first seen, not at 0.
	fromEnd bool
}

// liveFiles lists the growing files of the build in dir whose ct-cake PID
// is pid: its auto statslog, an explicit statslog mapped by
// capture.statslogs, its make timing logs and a ninja log. Without a
// live.files mapping, compiletools' default layout
// (<cwd>/bin/<variant>/diagnostics/<id>) locates the make timing log in
// <bindir> and the ninja log in the cwd.
func (r *compiletoolsReceiver) liveFiles(dir string, pid uint64) []liveFile {
	files := []liveFile{{kind: ffi.LiveStatslog, path: filepath.Join(dir, capture.Statslog)}}
	if p := r.mappedStatslog(dir); p != "" {
		files = append(files, liveFile{kind: ffi.LiveStatslog, path: p, fromEnd: true})
	}
	makeDir, ninjaLog := r.liveLocations(dir)
	if makeDir != "" {
		matches, _ := filepath.Glob(filepath.Join(makeDir, fmt.Sprintf(".ct-make-timing.%d.*.jsonl", pid)))
		for _, m := range matches {
			files = append(files, liveFile{kind: ffi.LiveMakeTiming, path: m})
		}
	}
	if ninjaLog != "" {
		files = append(files, liveFile{kind: ffi.LiveNinjaLog, path: ninjaLog, fromEnd: true})
	}
	return files
}

// liveLocations returns where the build's make timing logs and ninja log
// are: the first live.files mapping matching dir, else the default layout.
func (r *compiletoolsReceiver) liveLocations(dir string) (makeDir, ninjaLog string) {
	for _, m := range r.cfg.Live.Files {
		if ok, _ := doublestar.PathMatch(m.Include, dir); ok {
			return m.MakeTimingDir, m.NinjaLog
		}
	}
	parent := filepath.Dir(dir)
	if filepath.Base(parent) != "diagnostics" {
		return "", ""
	}
	bindir := filepath.Dir(parent)
	if filepath.Base(filepath.Dir(bindir)) != "bin" {
		return bindir, ""
	}
	return bindir, filepath.Join(filepath.Dir(filepath.Dir(bindir)), ".ninja_log")
}

// fileSize is the size of a regular file; 0 when it does not exist yet.
func fileSize(path string) int64 {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}

// readAppended reads at most maxLiveRead bytes of path from offset. A file
// shorter than offset was replaced or rewritten (ninja recompacts its log):
// reset tells where reading starts again, and data is empty. A missing file
// has no data and no error.
func readAppended(path string, offset int64, shared bool) (data []byte, reset int64, wasReset bool, err error) {
	f, st, err := regularfile.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, false, nil
		}
		return nil, 0, false, err
	}
	defer f.Close()
	size := st.Size()
	if size < offset {
		// A shared file's old bytes belong to earlier builds: skip them.
		if shared {
			return nil, size, true, nil
		}
		return nil, 0, true, nil
	}
	n := min(size-offset, maxLiveRead)
	if n == 0 {
		return nil, 0, false, nil
	}
	data = make([]byte, n)
	got, err := f.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, err
	}
	return data[:got], 0, false, nil
}
