package livebuilds

import (
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Descriptors kept open for running builds (issue 22, defect 1). A file
// ct-cake deletes (the auto statslog, a make timing log) is kept open
// while it grows, so its last bytes can be read after the deletion. One
// build can create any number of such files: the descriptors are bounded
// per build (live.max_open_files_per_build) and in total
// (live.max_open_files, and never more than a quarter of the process's
// descriptor limit), the least recently grown one giving way, and a file
// that stopped growing is closed. A closed file is opened again by name
// and read from its offset when it grows.

// idleTicks: a held file that did not grow for this many looks is closed.
const idleTicks = 10

// heldFile is a file kept open for a followed build.
type heldFile struct {
	f        *os.File
	dir      string
	lf       liveFile
	lastGrew uint64 // the look (Tracker.tickNo) it last grew in
}

// heldFiles are the open files of followed builds, by path.
type heldFiles struct {
	files    map[string]*heldFile
	perBuild map[string]int
	maxBuild int
	maxTotal int
}

func newHeldFiles(perBuild, total int) *heldFiles {
	return &heldFiles{files: map[string]*heldFile{}, perBuild: map[string]int{},
		maxBuild: perBuild, maxTotal: min(total, descriptorLimit()/4)}
}

// descriptorLimit is the process's soft RLIMIT_NOFILE (Go raises it to
// the hard limit at start); a large value when unknown.
func descriptorLimit() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 1 << 30
	}
	return int(rl.Cur)
}

func (h *heldFiles) get(path string) *heldFile { return h.files[path] }

func (h *heldFiles) grew(path string, tick uint64) {
	if f := h.files[path]; f != nil {
		f.lastGrew = tick
	}
}

// admit keeps file open for lf of the build in dir when the bounds allow,
// closing the least recently grown file (of the build, or of all builds)
// that did not grow in this look to make room. It reports whether it kept
// the file; the caller closes it otherwise.
func (h *heldFiles) admit(dir string, lf liveFile, file *os.File, tick uint64) bool {
	if h.maxBuild <= 0 || h.maxTotal <= 0 {
		return false
	}
	if h.perBuild[dir] >= h.maxBuild && !h.evictOldest(tick, func(f *heldFile) bool { return f.dir == dir }) {
		return false
	}
	if len(h.files) >= h.maxTotal && !h.evictOldest(tick, func(*heldFile) bool { return true }) {
		return false
	}
	lf.at, lf.onlyHeld = nil, true
	h.files[lf.path] = &heldFile{f: file, dir: dir, lf: lf, lastGrew: tick}
	h.perBuild[dir]++
	return true
}

// evictOldest closes the least recently grown file among those which,
// not grown in this look; false when there is none.
func (h *heldFiles) evictOldest(tick uint64, which func(*heldFile) bool) bool {
	var oldest string
	var at uint64
	for path, f := range h.files {
		if f.lastGrew < tick && which(f) && (oldest == "" || f.lastGrew < at) {
			oldest, at = path, f.lastGrew
		}
	}
	if oldest == "" {
		return false
	}
	h.release(oldest)
	return true
}

// closeIdle closes the files that did not grow in the last idleTicks looks.
func (h *heldFiles) closeIdle(tick uint64) {
	for path, f := range h.files {
		if tick-f.lastGrew >= idleTicks {
			h.release(path)
		}
	}
}

func (h *heldFiles) release(path string) {
	f, ok := h.files[path]
	if !ok {
		return
	}
	_ = f.f.Close()
	delete(h.files, path)
	if h.perBuild[f.dir]--; h.perBuild[f.dir] <= 0 {
		delete(h.perBuild, f.dir)
	}
}

// releaseBuild closes the files kept open for the build in dir.
func (h *heldFiles) releaseBuild(dir string) {
	if h.perBuild[dir] == 0 {
		return
	}
	for path, f := range h.files {
		if f.dir == dir {
			h.release(path)
		}
	}
}

func (h *heldFiles) releaseAll() {
	for path := range h.files {
		h.release(path)
	}
}

// ofBuild lists the files kept open for the build in dir.
func (h *heldFiles) ofBuild(dir string) []liveFile {
	if h.perBuild[dir] == 0 {
		return nil
	}
	var out []liveFile
	for _, f := range h.files {
		if f.dir == dir {
			out = append(out, f.lf)
		}
	}
	slices.SortFunc(out, func(a, b liveFile) int { return strings.Compare(a.path, b.path) })
	return out
}

// count is how many descriptors are kept open.
func (h *heldFiles) count() int { return len(h.files) }
