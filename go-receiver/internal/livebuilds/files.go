package livebuilds

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/capture"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
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
	// path names the file in offsets, keys and messages; it is opened by
	// name relative to at (a handle of its directory), or by path when at
	// is nil (a file only kept open).
	path string
	at   *dirfd.Dir
	name string
	// fromEnd: the file is shared with earlier builds (an explicit
	// statslog, a cwd's .ninja_log), so reading starts at its size when the
	// build is first seen, not at 0.
	fromEnd bool
	// captured: the file is ct-cake's transient auto statslog, which it
	// deletes right after timing.json; the receiver's capture of it (same
	// bytes) is read instead when it is gone before it was first opened.
	captured bool
	// held: the file belongs to this build alone and ct-cake deletes it
	// (auto statslog, make timing log): it is kept open while it grows
	// (within the descriptor bounds, held.go), so its last bytes can be
	// read after the deletion.
	held bool
	// onlyHeld: listed because a descriptor is kept for it (the name may
	// be gone); never opened again by name.
	onlyHeld bool
}

// buildDirs are the directory handles of one build for one look: every
// file of the build is opened relative to one of them (package dirfd).
type buildDirs struct {
	inv       *dirfd.Dir // the invocation directory
	makeDir   *dirfd.Dir // where its make timing logs are (nil: unknown)
	ninjaDir  *dirfd.Dir // where its ninja log is (nil: unknown)
	ninjaName string
	// statslogDir holds the explicit statslog capture.statslogs maps the
	// build to (nil: none, or not opened).
	statslogDir *dirfd.Dir
}

func (d buildDirs) close() {
	for _, h := range []*dirfd.Dir{d.inv, d.makeDir, d.ninjaDir, d.statslogDir} {
		_ = h.Close()
	}
}

// openBuildDirs opens the invocation directory dir (never through a link)
// and the directories of its other growing files. In compiletools'
// default layout (<cwd>/bin/<variant>/diagnostics/<id>) those are reached
// through ".." from the invocation directory's own handle: whatever its
// path names meanwhile, they are the parents of the directory that was
// checked. A live.files mapping (and an explicit statslog) names them by
// path: each is opened without following a link in any component
// (dirfd.OpenNoLinks), so a link swapped in anywhere along a configured
// path under a build's tree redirects nothing.
func (t *Tracker) openBuildDirs(dir string) (buildDirs, error) {
	inv, err := dirfd.Open(dir)
	if err != nil {
		return buildDirs{}, err
	}
	d := buildDirs{inv: inv}
	if p := t.set.ExplicitStatslog(dir); p != "" {
		d.statslogDir = t.openConfigured(filepath.Dir(p))
	}
	loc := t.liveLocations(dir)
	if loc.mapped {
		if loc.makeDir != "" {
			d.makeDir = t.openConfigured(loc.makeDir)
		}
		if loc.ninjaLog != "" {
			d.ninjaDir = t.openConfigured(filepath.Dir(loc.ninjaLog))
			d.ninjaName = filepath.Base(loc.ninjaLog)
		}
		return d, nil
	}
	if loc.makeDir == "" {
		return d, nil
	}
	diag, err := inv.Parent()
	if err != nil {
		return d, nil
	}
	defer diag.Close()
	if d.makeDir, err = diag.Parent(); err != nil || loc.ninjaLog == "" {
		return d, nil
	}
	bin, err := d.makeDir.Parent()
	if err != nil {
		return d, nil
	}
	defer bin.Close()
	if d.ninjaDir, err = bin.Parent(); err == nil {
		d.ninjaName = filepath.Base(loc.ninjaLog)
	}
	return d, nil
}

// openConfigured opens a configured directory through no link at all; nil
// when it cannot be opened (missing: quietly, a link: warned once).
func (t *Tracker) openConfigured(path string) *dirfd.Dir {
	d, err := dirfd.OpenNoLinks(path)
	if errors.Is(err, regularfile.ErrSymlink) {
		t.warnOnce(path+"\x00link", "a configured live build path goes through a symbolic link; its files are not read", err)
	}
	if err != nil {
		return nil
	}
	return d
}

// liveFiles lists the growing files of build b: its auto statslog, an
// explicit statslog mapped by capture.statslogs, its make timing logs
// (at most what live.max_files_per_build leaves) and a ninja log.
func (t *Tracker) liveFiles(b *liveBuild, d buildDirs) []liveFile {
	dir := b.dir
	files := []liveFile{{kind: ffi.LiveStatslog, path: filepath.Join(dir, capture.Statslog), at: d.inv,
		name: capture.Statslog, captured: true, held: true}}
	if p := t.set.ExplicitStatslog(dir); p != "" && d.statslogDir != nil {
		files = append(files, liveFile{kind: ffi.LiveStatslog, path: p, at: d.statslogDir, name: filepath.Base(p), fromEnd: true})
	}
	loc := t.liveLocations(dir)
	if d.makeDir != nil {
		names := makeTimingLogs(d.makeDir, b.pid)
		room := max(t.o.MaxFilesPerBuild-len(files)-1, 0)
		if len(names) > room {
			t.warnOnce(dir+"\x00files", "a running build has more make timing logs than live.max_files_per_build; the rest are not followed",
				fmt.Errorf("%d make timing logs, %d followed", len(names), room))
			names = names[:room]
		}
		for _, n := range names {
			files = append(files, liveFile{kind: ffi.LiveMakeTiming, path: filepath.Join(loc.makeDir, n), at: d.makeDir, name: n, held: true})
		}
	}
	if d.ninjaDir != nil {
		files = append(files, liveFile{kind: ffi.LiveNinjaLog, path: loc.ninjaLog, at: d.ninjaDir, name: d.ninjaName, fromEnd: true})
	}
	return files
}

// makeTimingLogs lists .ct-make-timing.<pid>.*.jsonl in dir, by name
// (compared, not globbed: the directory may contain glob metacharacters).
func makeTimingLogs(dir *dirfd.Dir, pid uint64) []string {
	names, err := dir.Names()
	if err != nil {
		return nil
	}
	prefix := fmt.Sprintf(".ct-make-timing.%d.", pid)
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".jsonl") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// locations is where a build's make timing logs and ninja log are.
type locations struct {
	makeDir, ninjaLog string
	// mapped: from live.files (opened by path), not the default layout
	// (reached from the invocation directory).
	mapped bool
}

// liveLocations returns where the build's make timing logs and ninja log
// are: the first live.files mapping matching dir, else the default layout.
func (t *Tracker) liveLocations(dir string) locations {
	for _, m := range t.o.Files {
		if ok, _ := doublestar.PathMatch(m.Include, dir); ok {
			return locations{makeDir: m.MakeTimingDir, ninjaLog: m.NinjaLog, mapped: true}
		}
	}
	parent := filepath.Dir(dir)
	if filepath.Base(parent) != "diagnostics" {
		return locations{}
	}
	bindir := filepath.Dir(parent)
	if filepath.Base(filepath.Dir(bindir)) != "bin" {
		return locations{makeDir: bindir}
	}
	return locations{makeDir: bindir, ninjaLog: filepath.Join(filepath.Dir(filepath.Dir(bindir)), ".ninja_log")}
}

// sizeOf is the size of f when it is a regular file; ok false when it
// does not exist (or is something else).
func sizeOf(f liveFile) (size int64, ok bool) {
	if f.at == nil {
		st, err := os.Lstat(f.path)
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		return st.Size(), true
	}
	e, err := f.at.Stat(f.name)
	if err != nil || !e.Regular {
		return 0, false
	}
	return e.Size, true
}

// open opens f, or the capture of a transient file ct-cake deleted; nil,
// nil when neither exists.
func (t *Tracker) open(dir string, f liveFile) (*os.File, error) {
	var file *os.File
	var err error
	if f.at != nil {
		file, _, err = f.at.OpenFile(f.name)
	} else {
		file, _, err = regularfile.Open(f.path)
	}
	if errors.Is(err, fs.ErrNotExist) && f.captured && t.set.Capturer != nil {
		if p := t.set.Capturer.Path(dir, capture.Statslog); p != "" {
			file, _, err = regularfile.Open(p)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return file, err
}

// readAppended reads at most maxLiveRead bytes of f from offset. A file
// shorter than offset was replaced or rewritten (ninja recompacts its log):
// reset tells where reading starts again, and data is empty.
func readAppended(f *os.File, offset int64, shared bool) (data []byte, reset int64, wasReset bool, err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	return readAppendedSized(f, st.Size(), offset, shared)
}

func readAppendedSized(f *os.File, size, offset int64, shared bool) (data []byte, reset int64, wasReset bool, err error) {
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

// read reads what f gained since offset: through the descriptor kept open
// for it, or a fresh open — made only when the file grew (or shrank), so a
// build with many idle files costs a stat each, not an open.
func (t *Tracker) read(dir string, f liveFile, offset int64) ([]byte, int64, bool, error) {
	if h := t.held.get(f.path); h != nil {
		data, reset, wasReset, err := readAppended(h.f, offset, f.fromEnd)
		if len(data) > 0 {
			t.held.grew(f.path, t.tickNo)
		}
		return data, reset, wasReset, err
	}
	if f.onlyHeld {
		return nil, 0, false, nil
	}
	if size, ok := sizeOf(f); ok && size == offset {
		return nil, 0, false, nil
	} else if !ok && !f.captured {
		return nil, 0, false, nil
	}
	file, err := t.open(dir, f)
	if err != nil || file == nil {
		return nil, 0, false, err
	}
	data, reset, wasReset, err := readAppended(file, offset, f.fromEnd)
	if f.held && len(data) > 0 && t.held.admit(dir, f, file, t.tickNo) {
		return data, reset, wasReset, err
	}
	_ = file.Close()
	return data, reset, wasReset, err
}

// filesOf lists b's growing files: those on disk now, and those kept open
// that ct-cake deleted meanwhile (a make timing log after its ingest).
func (t *Tracker) filesOf(b *liveBuild, d buildDirs) []liveFile {
	files := t.liveFiles(b, d)
	listed := make(map[string]bool, len(files))
	for _, f := range files {
		listed[f.path] = true
	}
	for _, lf := range t.held.ofBuild(b.dir) {
		if !listed[lf.path] {
			files = append(files, lf)
		}
	}
	return files
}
