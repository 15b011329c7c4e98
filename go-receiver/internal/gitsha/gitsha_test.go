package gitsha

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The real git writes the repositories; our reader must agree with rev-parse.
func TestHeadMatchesGitRevParse(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a"), []byte("a"), 0o644)
	git(t, repo, "add", "a")
	git(t, repo, "commit", "-q", "-m", "one")
	diag := filepath.Join(repo, "bin", "gcc.debug", "diagnostics", "20261130T000000-1")
	os.MkdirAll(diag, 0o755)

	check := func(what string) {
		t.Helper()
		got, err := Head(diag)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := git(t, repo, "rev-parse", "HEAD"); got != want {
			t.Fatalf("%s: got %s, want %s", what, got, want)
		}
	}
	check("loose ref")
	git(t, repo, "pack-refs", "--all")
	check("packed ref")
	git(t, repo, "checkout", "-q", "--detach")
	check("detached HEAD")

	wt := filepath.Join(t.TempDir(), "wt")
	git(t, repo, "worktree", "add", "-q", "-b", "side", wt)
	os.WriteFile(filepath.Join(wt, "b"), []byte("b"), 0o644)
	git(t, wt, "add", "b")
	git(t, wt, "commit", "-q", "-m", "two")
	got, err := Head(filepath.Join(wt, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := git(t, wt, "rev-parse", "HEAD"); got != want {
		t.Fatalf("worktree: got %s, want %s", got, want)
	}
}

// Without any `.git` above the start directory, Head must say so with
// ErrNoRepository (not some other error, not a commit). Where the temp dir
// does sit inside a repository, the claim is that Head does not report
// ErrNoRepository there: either way the test can fail.
func TestNoRepository(t *testing.T) {
	start := filepath.Join(t.TempDir(), "bin", "gcc.debug", "diagnostics", "20261130T000000-1")
	if err := os.MkdirAll(start, 0o755); err != nil {
		t.Fatal(err)
	}
	enclosing := ""
	for dir := start; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			enclosing = dir
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	sha, err := Head(start)
	if enclosing != "" {
		t.Logf("the temp dir is inside the repository at %s", enclosing)
		if errors.Is(err, ErrNoRepository) {
			t.Fatalf("Head reported no repository below %s, which has a .git", enclosing)
		}
		return
	}
	if !errors.Is(err, ErrNoRepository) || sha != "" {
		t.Fatalf("Head(%s) = %q, %v; want ErrNoRepository", start, sha, err)
	}
}
