// Package gitsha reads the commit a source tree's HEAD points at, without
// running git: the receiver must not spawn processes per build.
package gitsha

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) // SHA-1 or SHA-256 object names

// ErrNoRepository means no `.git` was found above the start directory.
var ErrNoRepository = errors.New("no git repository above the build directory")

// maxRefDepth bounds chains of symbolic refs (git itself allows 5).
const maxRefDepth = 5

// maxSmallFile bounds the one-line files read here (HEAD, refs, commondir,
// a `.git` file); git's own are well under 1 KiB.
const maxSmallFile = 64 << 10

// Every file is read through regularfile, which refuses FIFOs and devices
// without waiting: the repository belongs to whoever runs the builds, and
// one FIFO where HEAD should be would otherwise block the poll forever.
func readSmall(path string) ([]byte, error) { return regularfile.ReadFile(path, maxSmallFile) }

// Head returns the commit of HEAD of the repository containing start,
// searching start and its parents for `.git` (a directory, or a file with
// `gitdir:` as in worktrees and submodules).
func Head(start string) (string, error) {
	gitDir, err := findGitDir(start)
	if err != nil {
		return "", err
	}
	return resolve(gitDir, commonDirOf(gitDir), "HEAD", 0)
}

// commonDirOf returns the directory of the shared refs and config: a
// worktree's gitdir names it in `commondir`.
func commonDirOf(gitDir string) string {
	if b, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		return c
	}
	return gitDir
}

// findGitDir returns the git directory of the repository above start: the
// nearest `.git` itself, or where a `.git` file's `gitdir:` line points.
func findGitDir(start string) (string, error) {
	candidate, err := findDotGit(start)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(candidate)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return candidate, nil
	}
	b, err := readSmall(candidate)
	if err != nil {
		return "", err
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", candidate)
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(candidate), target)
	}
	return target, nil
}

// resolve follows ref (HEAD or refs/…) to an object name. Per-worktree refs
// (HEAD) live in gitDir, shared ones in commonDir.
func resolve(gitDir, commonDir, ref string, depth int) (string, error) {
	if depth > maxRefDepth {
		return "", fmt.Errorf("symbolic ref chain too long at %s", ref)
	}
	for _, base := range []string{gitDir, commonDir} {
		b, err := readSmall(filepath.Join(base, filepath.FromSlash(ref)))
		if err != nil {
			continue
		}
		content := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(content, "ref:"); ok {
			return resolve(gitDir, commonDir, strings.TrimSpace(target), depth+1)
		}
		if fullSHA.MatchString(content) {
			return content, nil
		}
		return "", fmt.Errorf("%s: unexpected content", ref)
	}
	return packedRef(commonDir, ref)
}

func packedRef(commonDir, ref string) (string, error) {
	f, _, err := regularfile.Open(filepath.Join(commonDir, "packed-refs"))
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
