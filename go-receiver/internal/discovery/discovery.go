// Package discovery finds finished compiletools builds on disk: invocation
// directories (`YYYYMMDDTHHMMSS-PID`) that hold a `timing.json`.
package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/bmatcuk/doublestar/v4"
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
}

// ID is the directory name, compiletools' invocation id.
func (b Build) ID() string { return filepath.Base(b.Dir) }

// Problem is a path that could not be examined; discovery goes on without it.
type Problem struct {
	Path string
	Err  error
}

// Finder resolves include/exclude globs into finished builds.
type Finder struct {
	Include []string
	Exclude []string
}

// IsInvocationDirName reports whether name looks like an invocation id.
func IsInvocationDirName(name string) bool { return invocationID.MatchString(name) }

// Find returns every finished build under the include globs, oldest first by
// (timestamp, numeric PID) — compiletools' own "newest" order, which plain
// string order gets wrong for PIDs of different widths.
func (f Finder) Find() ([]Build, []Problem) {
	seen := map[string]bool{}
	var builds []Build
	var problems []Problem
	consider := func(dir string) {
		if seen[dir] || f.excluded(dir) {
			return
		}
		seen[dir] = true
		m := invocationID.FindStringSubmatch(filepath.Base(dir))
		if m == nil {
			return
		}
		pid, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			return // PID wider than 64 bits: not something compiletools writes
		}
		st, err := os.Stat(filepath.Join(dir, TimingFile))
		if err != nil {
			if !os.IsNotExist(err) {
				problems = append(problems, Problem{Path: filepath.Join(dir, TimingFile), Err: err})
			}
			return // no timing.json yet: still running, or timing disabled
		}
		if st.IsDir() {
			problems = append(problems, Problem{Path: filepath.Join(dir, TimingFile), Err: errNotRegular})
			return
		}
		builds = append(builds, Build{Dir: dir, Timestamp: m[1], PID: pid})
	}

	for _, pattern := range f.Include {
		matches, err := doublestar.FilepathGlob(pattern, doublestar.WithNoFollow())
		if err != nil {
			problems = append(problems, Problem{Path: pattern, Err: err})
			continue
		}
		for _, match := range matches {
			info, err := os.Stat(match)
			if err != nil || !info.IsDir() {
				continue
			}
			if IsInvocationDirName(filepath.Base(match)) {
				consider(match)
				continue
			}
			// A diagnostics parent: its invocation directories are its children.
			entries, err := os.ReadDir(match)
			if err != nil {
				problems = append(problems, Problem{Path: match, Err: err})
				continue
			}
			for _, e := range entries {
				if e.IsDir() && IsInvocationDirName(e.Name()) {
					consider(filepath.Join(match, e.Name()))
				}
			}
		}
	}
	sort.Slice(builds, func(i, j int) bool {
		if builds[i].Timestamp != builds[j].Timestamp {
			return builds[i].Timestamp < builds[j].Timestamp
		}
		if builds[i].PID != builds[j].PID {
			return builds[i].PID < builds[j].PID
		}
		return builds[i].Dir < builds[j].Dir
	})
	return builds, problems
}

func (f Finder) excluded(dir string) bool {
	for _, p := range f.Exclude {
		if ok, _ := doublestar.PathMatch(p, dir); ok {
			return true
		}
	}
	return false
}

var errNotRegular = errors.New("not a regular file")
