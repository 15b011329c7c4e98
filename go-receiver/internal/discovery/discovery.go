// Package discovery finds compiletools builds on disk: invocation
// directories (`YYYYMMDDTHHMMSS-PID`) under the include globs, finished when
// they hold a `timing.json`.
package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

// TimingFile is written last (by atomic rename) and marks a finished build.
const TimingFile = "timing.json"

// invocationID is compiletools' own pattern for an invocation directory name.
var invocationID = regexp.MustCompile(`^(\d{8}T\d{6})-(\d+)$`)

// Build is one finished invocation directory.
type Build struct {
	Dir       string // path as found through the include globs
	Timestamp string // YYYYMMDDTHHMMSS from the name (local time of the build host)
	PID       uint64
	// Identity of timing.json: it is written once, so these never change.
	ModTime time.Time
	Size    int64
}

// ID is the directory name, compiletools' invocation id.
func (b Build) ID() string { return filepath.Base(b.Dir) }

// FileID identifies a timing.json. ct-cake writes it once, by rename, and
// never touches it again, so another modification time or size under the
// same directory is another file: another build, usually another trace.
type FileID struct {
	ModNs int64
	Size  int64
}

// FileID identifies the build's timing.json.
func (b Build) FileID() FileID { return FileID{ModNs: b.ModTime.UnixNano(), Size: b.Size} }

// Problem is a path that could not be examined; discovery goes on without it.
type Problem struct {
	Path string
	Err  error
	// Dir is the invocation directory the problem belongs to; "" for a glob
	// or a diagnostics parent.
	Dir string
}

// Scan is what one pass over the include globs found.
type Scan struct {
	// Finished builds not skipped by the caller, oldest first by
	// (timestamp, numeric PID) — compiletools' own order; plain string
	// order gets PIDs of different widths wrong.
	Finished []Build
	// Running lists invocation directories without timing.json yet.
	Running []string
	// RunningIDs are the identities of the Running directories as this
	// scan found them (never through a link). The live follower and the
	// capture open a directory only if it still is this one, so a
	// directory (or one above it) swapped between this scan and their
	// first open is refused, not read (issue 22, defect 2). A directory
	// whose identity could not be taken is not listed as running.
	RunningIDs map[string]dirfd.ID
	// Seen holds every invocation directory matched, including skipped ones.
	Seen map[string]struct{}
	// Parents lists the diagnostics parents whose children were listed.
	Parents []string
	// Problems are paths that could not be examined.
	Problems []Problem
}

// Finder resolves include/exclude globs into builds.
type Finder struct {
	Include []string
	Exclude []string
}

// IsInvocationDirName reports whether name looks like an invocation id.
func IsInvocationDirName(name string) bool { return invocationID.MatchString(name) }

var errNotRegular = errors.New("not a regular file")

// ErrSymlink marks a timing.json or an invocation directory that is a
// symbolic link: never followed, since it could lead out of the configured
// roots to any file the collector may read.
var ErrSymlink = errors.New("a symbolic link; not followed out of the include roots")

// Find scans the include globs. settled (nil: none) returns, for a
// directory handled before, the timing.json it was handled with. Such a
// directory is recorded in Seen and otherwise returned only as a finished
// build whose timing.json is another file now (two hosts' builds colliding
// on one shared parent, formats.md §1.2); it is never a running build or a
// problem again, and its timing.json is stat'ed but never read.
func (f Finder) Find(settled func(dir string) (FileID, bool)) Scan {
	s := Scan{Seen: map[string]struct{}{}, RunningIDs: map[string]dirfd.ID{}}
	consider := func(dir string) {
		if _, dup := s.Seen[dir]; dup || f.excluded(dir) {
			return
		}
		s.Seen[dir] = struct{}{}
		m := invocationID.FindStringSubmatch(filepath.Base(dir))
		if m == nil {
			return
		}
		pid, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return // PID wider than 64 bits: not something compiletools writes
		}
		timing := filepath.Join(dir, TimingFile)
		// Lstat: a symlinked timing.json is refused here, and the core
		// opens it with O_NOFOLLOW too, in case it is swapped in later.
		st, err := os.Lstat(timing)
		if err == nil && st.Mode()&os.ModeSymlink != 0 {
			err = ErrSymlink
		}
		regular := err == nil && st.Mode().IsRegular()
		var b Build
		if regular {
			b = Build{Dir: dir, Timestamp: m[1], PID: pid, ModTime: st.ModTime(), Size: st.Size()}
		}
		if settled != nil {
			if handled, ok := settled(dir); ok {
				if regular && b.FileID() != handled {
					s.Finished = append(s.Finished, b)
				}
				return
			}
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Still running, died, or timing disabled. Its identity is
			// taken not following a link: a link swapped in since it was
			// listed is no running build.
			id, idErr := dirfd.OfDir(dir)
			if errors.Is(idErr, regularfile.ErrSymlink) {
				s.Problems = append(s.Problems, Problem{Path: dir, Err: ErrSymlink})
			}
			if idErr != nil {
				return
			}
			s.Running = append(s.Running, dir)
			s.RunningIDs[dir] = id
		case err != nil:
			s.Problems = append(s.Problems, Problem{Path: timing, Err: err, Dir: dir})
		case !regular:
			s.Problems = append(s.Problems, Problem{Path: timing, Err: errNotRegular, Dir: dir})
		default:
			s.Finished = append(s.Finished, b)
		}
	}

	for _, pattern := range f.Include {
		matches, err := doublestar.FilepathGlob(pattern, doublestar.WithNoFollow())
		if err != nil {
			s.Problems = append(s.Problems, Problem{Path: pattern, Err: err})
			continue
		}
		for _, match := range matches {
			match = filepath.Clean(match)
			// A wildcard chooses among directories that users create: a
			// link there would take discovery out of the configured tree.
			if link, ok := linkBelowFixedPrefix(pattern, match); ok {
				s.Problems = append(s.Problems, Problem{Path: link, Err: ErrSymlink})
				continue
			}
			// An invocation directory matched by name must be a real one,
			// as below; a matched diagnostics parent is a root, whatever
			// it is.
			if IsInvocationDirName(filepath.Base(match)) {
				if lst, err := os.Lstat(match); err == nil && lst.Mode()&os.ModeSymlink != 0 {
					s.Problems = append(s.Problems, Problem{Path: match, Err: ErrSymlink})
					continue
				}
			}
			info, err := os.Stat(match)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) { // vanished between glob and stat is normal
					s.Problems = append(s.Problems, Problem{Path: match, Err: err})
				}
				continue
			}
			if !info.IsDir() {
				continue
			}
			if IsInvocationDirName(filepath.Base(match)) {
				consider(match)
				continue
			}
			// A diagnostics parent: its invocation directories are its children.
			s.Parents = append(s.Parents, match)
			entries, err := os.ReadDir(match)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					s.Problems = append(s.Problems, Problem{Path: match, Err: err})
				}
				continue
			}
			for _, e := range entries {
				// Only real directories: a symlinked invocation directory
				// could lead out of the configured roots.
				if !IsInvocationDirName(e.Name()) {
					continue
				}
				switch {
				case e.IsDir():
					consider(filepath.Join(match, e.Name()))
				case e.Type()&os.ModeSymlink != 0:
					s.Problems = append(s.Problems, Problem{Path: filepath.Join(match, e.Name()), Err: ErrSymlink})
				}
			}
		}
	}
	sort.Slice(s.Finished, func(i, j int) bool { return Less(s.Finished[i], s.Finished[j]) })
	return s
}

// linkBelowFixedPrefix returns the first component of match that is a
// symbolic link and was chosen by a wildcard of pattern. The pattern's fixed
// prefix is configuration and may hold links (a symlinked /home); a pattern
// without wildcards names its match exactly and is never checked.
func linkBelowFixedPrefix(pattern, match string) (string, bool) {
	if !strings.ContainsAny(pattern, "*?[{") {
		return "", false
	}
	base, _ := doublestar.SplitPattern(filepath.ToSlash(pattern))
	base = filepath.Clean(filepath.FromSlash(base))
	rel, err := filepath.Rel(base, match)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	p := base
	for _, component := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, component)
		if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return p, true
		}
	}
	return "", false
}

// Less orders builds oldest first by (timestamp, numeric PID, path).
func Less(a, b Build) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp < b.Timestamp
	}
	if a.PID != b.PID {
		return a.PID < b.PID
	}
	return a.Dir < b.Dir
}

func (f Finder) excluded(dir string) bool {
	for _, p := range f.Exclude {
		if ok, _ := doublestar.PathMatch(p, dir); ok {
			return true
		}
	}
	return false
}
