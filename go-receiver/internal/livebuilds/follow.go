package livebuilds

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
)

// Which running builds the tracker follows: the running directories of
// each poll, new invocation directories the file watches saw, and builds
// followed before a restart.

// takeBorn follows a directory the watches saw created, before any poll
// lists it; one that is excluded or already finished is left to the polls.
func (t *Tracker) takeBorn(dir string, now time.Time) {
	if !t.haveScan || t.builds[dir] != nil || t.ignored[dir] || exists(filepath.Join(dir, discovery.TimingFile)) {
		return
	}
	for _, p := range t.o.Exclude {
		if ok, _ := doublestar.PathMatch(p, dir); ok {
			return
		}
	}
	t.follow(dir, dirfd.ID{}, now)
}

// follow starts following a running directory not followed yet: resumed
// from its saved state, ignored when ended or dead at first sight. found
// is the directory's identity when discovery found it (zero: a directory
// the watches saw created, which no discovery looked at).
func (t *Tracker) follow(dir string, found dirfd.ID, now time.Time) {
	pid := invocationPID(dir)
	if st, ok := t.states[dir]; ok && st.Ended && t.replacedSince(dir, st) {
		delete(t.states, dir) // its directory was made again: a new build
		t.abandoned.Delete(dir)
	}
	if st, ok := t.states[dir]; ok {
		if st.Ended {
			t.ignored[dir] = true
			if st.Abandoned() {
				// Ended before a restart: the restart's first poll may
				// have captured its files again.
				t.abandoned.Store(dir, struct{}{})
				if t.set.Capturer != nil {
					_ = t.set.Capturer.Release(dir)
				}
			}
		} else {
			t.builds[dir] = &liveBuild{dir: dir, pid: pid, running: true}
		}
		return
	}
	if t.deadAtFirstSight(dir, pid, now) {
		t.ignored[dir] = true
		return
	}
	b := &liveBuild{dir: dir, pid: pid, running: true}
	st, err := t.firstState(b, found, now)
	if errors.Is(err, errNotFound) {
		// Another directory than discovery found: swapped in since (it,
		// or one above it). Not followed now; the next poll looks again.
		t.warnOnce(dir+"\x00swapped", "a running build directory changed between discovery and its first open; not followed", err)
		return
	}
	if err != nil {
		t.ignored[dir] = true // gone, or a link: never followed
		return
	}
	t.builds[dir] = b
	t.states[dir] = st
}

// errNotFound: the directory opened is not the one discovery found.
var errNotFound = errors.New("not the directory discovery found")

// firstState is the state of a build first seen now: the identity of its
// directory, and its shared files read from their size (a missing one
// from 0 once it appears). It fails when the directory cannot be opened
// (gone, or a symbolic link), or (errNotFound) when it is not the
// directory with identity found (unless found is zero).
func (t *Tracker) firstState(b *liveBuild, found dirfd.ID, now time.Time) (liveBuildState, error) {
	d, err := t.openBuildDirs(b.dir)
	if err != nil {
		return liveBuildState{}, err
	}
	defer d.close()
	if !found.IsZero() && d.inv.ID() != found {
		return liveBuildState{}, fmt.Errorf("%w: identity %s, opened %s", errNotFound, found, d.inv.ID())
	}
	offsets := map[string]int64{}
	for _, f := range t.liveFiles(b, d) {
		if f.fromEnd {
			size, _ := sizeOf(f)
			offsets[f.path] = size
		}
	}
	return liveBuildState{FirstSeenNs: now.UnixNano(), Offsets: offsets, Dir: d.inv.ID()}, nil
}

// takeScan updates the followed builds from a poll's running directories.
func (t *Tracker) takeScan(running []string, ids map[string]dirfd.ID, now time.Time) {
	t.haveScan = true
	listed := make(map[string]bool, len(running))
	for _, dir := range running {
		listed[dir] = true
		if b, ok := t.builds[dir]; ok {
			b.running = true
			continue
		}
		if t.ignored[dir] && t.replacedSince(dir, t.states[dir]) {
			delete(t.ignored, dir)
		}
		if !t.ignored[dir] {
			t.follow(dir, ids[dir], now)
		}
	}
	for dir, b := range t.builds {
		b.running = listed[dir]
	}
	for dir := range t.ignored {
		if !listed[dir] {
			delete(t.ignored, dir)
			t.abandoned.Delete(dir)
			if t.states[dir].Ended {
				delete(t.states, dir) // no longer "running" on disk: never followed again
			}
		}
	}
	// Builds followed before a restart that finished meanwhile: end them.
	for dir, st := range t.states {
		if _, ok := t.builds[dir]; ok || listed[dir] || st.Ended {
			continue
		}
		if st.Started {
			t.builds[dir] = &liveBuild{dir: dir, pid: invocationPID(dir)}
		} else {
			delete(t.states, dir) // never announced: nothing to end
		}
	}
}

// deadAtFirstSight: directories without timing.json accumulate (a build
// killed, a run with only a statslog); only a build that looks alive when
// first seen is followed, so old directories never get start records.
func (t *Tracker) deadAtFirstSight(dir string, pid uint64, now time.Time) bool {
	if t.o.AbandonWhenPIDGone && pidGone(pid) {
		return true
	}
	st, err := os.Lstat(dir)
	return err != nil || now.Sub(st.ModTime()) > t.o.AbandonAfter
}

// invocationPID is the ct-cake PID in an invocation directory's name (0
// when the name has none).
func invocationPID(dir string) uint64 {
	name := filepath.Base(dir)
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0
	}
	pid, err := strconv.ParseUint(name[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return pid
}

// pidGone reports whether no process has this PID on this host (PID reuse
// can make a dead build look alive, never the reverse).
func pidGone(pid uint64) bool {
	if pid == 0 {
		return false
	}
	if pid > 1<<22 { // above Linux's PID_MAX_LIMIT
		return true
	}
	err := syscall.Kill(int(pid), 0)
	return errors.Is(err, syscall.ESRCH)
}

// replacedSince reports whether dir is now another directory than the one
// st was taken of (deleted and made again under the same name).
func (t *Tracker) replacedSince(dir string, st liveBuildState) bool {
	if st.Dir.IsZero() {
		return false
	}
	id, err := dirfd.Of(dir)
	return err == nil && id != st.Dir
}
