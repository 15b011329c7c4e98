package livebuilds

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	// captured: the file is ct-cake's transient auto statslog, which it
	// deletes right after timing.json; the receiver's capture of it (same
	// bytes) is read instead when it is gone before it was first opened.
	captured bool
	// held: the file belongs to this build alone and ct-cake deletes it
	// (auto statslog, make timing log): it is kept open once opened, so
	// its last bytes can be read after the deletion — and after the
	// capture was released with the delivered build.
	held bool
}

// liveFiles lists the growing files of the build in dir whose ct-cake PID
// is pid: its auto statslog, an explicit statslog mapped by
// capture.statslogs, its make timing logs and a ninja log. Without a
// live.files mapping, compiletools' default layout
// (<cwd>/bin/<variant>/diagnostics/<id>) locates the make timing log in
// <bindir> and the ninja log in the cwd.
func (t *Tracker) liveFiles(dir string, pid uint64) []liveFile {
	files := []liveFile{{kind: ffi.LiveStatslog, path: filepath.Join(dir, capture.Statslog), captured: true, held: true}}
	if p := t.set.ExplicitStatslog(dir); p != "" {
		files = append(files, liveFile{kind: ffi.LiveStatslog, path: p, fromEnd: true})
	}
	makeDir, ninjaLog := t.liveLocations(dir)
	if makeDir != "" {
		for _, m := range makeTimingLogs(makeDir, pid) {
			files = append(files, liveFile{kind: ffi.LiveMakeTiming, path: m, held: true})
		}
	}
	if ninjaLog != "" {
		files = append(files, liveFile{kind: ffi.LiveNinjaLog, path: ninjaLog, fromEnd: true})
	}
	return files
}

// makeTimingLogs lists <dir>/.ct-make-timing.<pid>.*.jsonl (compared by
// name, not globbed: the directory may contain glob metacharacters).
func makeTimingLogs(dir string, pid uint64) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := fmt.Sprintf(".ct-make-timing.%d.", pid)
	var out []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".jsonl") && e.Type().IsRegular() {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// liveLocations returns where the build's make timing logs and ninja log
// are: the first live.files mapping matching dir, else the default layout.
func (t *Tracker) liveLocations(dir string) (makeDir, ninjaLog string) {
	for _, m := range t.o.Files {
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

// readable is the path to read f from: its own, or the capture of a
// transient file ct-cake deleted.
func (t *Tracker) readable(dir string, f liveFile) string {
	if !f.captured || t.set.Capturer == nil || exists(f.path) {
		return f.path
	}
	if p := t.set.Capturer.Path(dir, filepath.Base(f.path)); p != "" {
		return p
	}
	return f.path
}

// fileSize is the size of a regular file; 0 when it does not exist yet.
func fileSize(path string) int64 {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return st.Size()
}

// openLive opens path (never a symlink, FIFO or device); nil, nil when it
// does not exist.
func openLive(path string) (*os.File, error) {
	f, _, err := regularfile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// readAppended reads at most maxLiveRead bytes of f from offset. A file
// shorter than offset was replaced or rewritten (ninja recompacts its log):
// reset tells where reading starts again, and data is empty.
func readAppended(f *os.File, offset int64, shared bool) (data []byte, reset int64, wasReset bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
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

// heldFile is a file kept open for a followed build.
type heldFile struct {
	f   *os.File
	dir string
	lf  liveFile
}

// read reads what f gained since offset: through the file kept open for
// it, or a fresh open (a shared file, which may be replaced).
func (t *Tracker) read(dir string, f liveFile, offset int64) ([]byte, int64, bool, error) {
	file := t.held[f.path].f
	if file == nil {
		var err error
		if file, err = openLive(t.readable(dir, f)); err != nil || file == nil {
			return nil, 0, false, err
		}
		if f.held {
			t.held[f.path] = heldFile{f: file, dir: dir, lf: f}
		} else {
			defer file.Close()
		}
	}
	return readAppended(file, offset, f.fromEnd)
}

// filesOf lists b's growing files: those on disk now, and those kept open
// that ct-cake deleted meanwhile (a make timing log after its ingest).
func (t *Tracker) filesOf(b *liveBuild) []liveFile {
	files := t.liveFiles(b.dir, b.pid)
	listed := make(map[string]bool, len(files))
	for _, f := range files {
		listed[f.path] = true
	}
	for path, h := range t.held {
		if h.dir == b.dir && !listed[path] {
			files = append(files, h.lf)
		}
	}
	return files
}

func (t *Tracker) release(path string) {
	if h, ok := t.held[path]; ok {
		_ = h.f.Close()
		delete(t.held, path)
	}
}

// releaseBuild closes the files kept open for the build in dir.
func (t *Tracker) releaseBuild(dir string) {
	for path, h := range t.held {
		if h.dir == dir {
			t.release(path)
		}
	}
}
