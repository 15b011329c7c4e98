// Package gitsha reads the commit a source tree's HEAD points at, without
// running git: the receiver must not spawn processes per build.
package gitsha

import (
	"bufio"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/dirfd"
)

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) // SHA-1 or SHA-256 object names

// ErrNoRepository means no `.git` was found above the start directory.
var ErrNoRepository = errors.New("no git repository above the build directory")

// maxRefDepth bounds chains of symbolic refs (git itself allows 5).
const maxRefDepth = 5

// maxSmallFile bounds the one-line files read here (HEAD, refs, commondir,
// a `.git` file); git's own are well under 1 KiB.
const maxSmallFile = 64 << 10

// Every file is read relative to a directory handle of the repository
// (walk.go), never by path, and never through a link; a FIFO or device is
// refused without waiting: one FIFO where HEAD should be would otherwise
// block the poll forever.

// Head returns the commit of HEAD of the repository containing start,
// searching start and its parents for `.git` (a directory, or a file with
// `gitdir:` as in worktrees and submodules).
func Head(start string) (string, error) {
	found, err := findDotGit(start)
	if err != nil {
		return "", err
	}
	defer found.Close()
	dirs, err := openGitDirs(found)
	if err != nil {
		return "", err
	}
	defer dirs.Close()
	return resolve(dirs, "HEAD", 0)
}

// resolve follows ref (HEAD or refs/…) to an object name. Per-worktree refs
// (HEAD) live in the git directory, shared ones in the common one.
func resolve(dirs gitDirs, ref string, depth int) (string, error) {
	if depth > maxRefDepth {
		return "", fmt.Errorf("symbolic ref chain too long at %s", ref)
	}
	for _, base := range []*dirfd.Dir{dirs.git, dirs.common} {
		b, err := readSmallAt(base, ref)
		if err != nil {
			if errors.Is(err, errBadRefName) {
				return "", err
			}
			continue
		}
		content := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(content, "ref:"); ok {
			return resolve(dirs, strings.TrimSpace(target), depth+1)
		}
		if fullSHA.MatchString(content) {
			return content, nil
		}
		return "", fmt.Errorf("%s: unexpected content", ref)
	}
	return packedRef(dirs.common, ref)
}

func packedRef(common *dirfd.Dir, ref string) (string, error) {
	f, _, err := common.OpenFile("packed-refs")
	if err != nil {
		return "", fmt.Errorf("ref %s not found", ref)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "^") {
			continue
		}
		sha, name, ok := strings.Cut(line, " ")
		if ok && name == ref && fullSHA.MatchString(sha) {
			return sha, nil
		}
	}
	return "", fmt.Errorf("ref %s not found (unborn branch?)", ref)
}
