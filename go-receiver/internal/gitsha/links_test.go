package gitsha

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/regularfile"
)

const (
	ownSHA     = "0123456789abcdef0123456789abcdef01234567"
	foreignSHA = "fedcba9876543210fedcba9876543210fedcba98"
)

// foreignRepo is another user's git directory: every file a link could
// lead to holds foreignSHA, so a followed link shows in the result.
func foreignRepo(t *testing.T) string {
	t.Helper()
	g := filepath.Join(t.TempDir(), "victim", ".git")
	mustMkdir(t, filepath.Join(g, "refs", "heads"))
	write(t, filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(g, "refs", "heads", "main"), foreignSHA+"\n")
	write(t, filepath.Join(g, "config"), "[remote \"origin\"]\n\turl = https://github.com/victim/secret.git\n")
	return g
}

// ownRepo is a plain repository whose main branch is ownSHA.
func ownRepo(t *testing.T) (repo, start string) {
	t.Helper()
	repo = filepath.Join(t.TempDir(), "repo")
	g := filepath.Join(repo, ".git")
	mustMkdir(t, filepath.Join(g, "refs", "heads"))
	write(t, filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(g, "refs", "heads", "main"), ownSHA+"\n")
	write(t, filepath.Join(g, "config"), "[remote \"origin\"]\n\turl = https://github.com/acme/own.git\n")
	start = filepath.Join(repo, "bin", "diagnostics", "20261130T000000-1")
	mustMkdir(t, start)
	return repo, start
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// The unmodified repository reads as itself: the cases below differ from
// it by one link each.
func TestOwnRepositoryWithoutLinks(t *testing.T) {
	repo, start := ownRepo(t)
	if got, err := Head(start); err != nil || got != ownSHA {
		t.Fatalf("Head = %q, %v; want %s", got, err, ownSHA)
	}
	r, err := Inspect(start)
	want := Repo{WorkTree: repo, Head: ownSHA, RefName: "main", RefType: RefBranch,
		OriginURL: "https://github.com/acme/own", Provider: "github"}
	if err != nil || r != want {
		t.Fatalf("Inspect = %+v, %v; want %+v", r, err, want)
	}
}

// A link anywhere the walk goes must stop the read: no commit, no ref name
// and no origin of the repository it points at, and no panic.
func TestLinksInTheRepositoryAreNotFollowed(t *testing.T) {
	for _, c := range []struct {
		name string
		swap func(t *testing.T, repo, foreign string)
	}{
		{"symlinked .git directory", func(t *testing.T, repo, foreign string) {
			mustSymlink(t, foreign, filepath.Join(repo, ".git"))
		}},
		{"symlinked refs/heads file", func(t *testing.T, repo, foreign string) {
			mustSymlink(t, filepath.Join(foreign, "refs", "heads", "main"), filepath.Join(repo, ".git", "refs", "heads", "main"))
		}},
		{"symlinked refs/heads directory", func(t *testing.T, repo, foreign string) {
			mustSymlink(t, filepath.Join(foreign, "refs", "heads"), filepath.Join(repo, ".git", "refs", "heads"))
		}},
		{"HEAD swapped to a symlink", func(t *testing.T, repo, foreign string) {
			// A detached HEAD elsewhere: the link's target is a commit.
			write(t, filepath.Join(foreign, "DETACHED"), foreignSHA+"\n")
			mustSymlink(t, filepath.Join(foreign, "DETACHED"), filepath.Join(repo, ".git", "HEAD"))
		}},
		{"ref escaping the git directory", func(t *testing.T, repo, foreign string) {
			rel, err := filepath.Rel(filepath.Join(repo, ".git"), filepath.Join(foreign, "refs", "heads", "main"))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(repo, ".git", "HEAD"), "ref: "+filepath.ToSlash(rel)+"\n")
		}},
		{"gitdir file through a symlinked directory", func(t *testing.T, repo, foreign string) {
			link := filepath.Join(t.TempDir(), "innocent")
			mustSymlink(t, filepath.Dir(foreign), link)
			if err := os.RemoveAll(filepath.Join(repo, ".git")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(repo, ".git"), "gitdir: "+filepath.Join(link, ".git")+"\n")
		}},
		{"symlinked commondir target", func(t *testing.T, repo, foreign string) {
			write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/other\n")
			link := filepath.Join(t.TempDir(), "common")
			mustSymlink(t, foreign, link)
			write(t, filepath.Join(repo, ".git", "commondir"), link+"\n")
			write(t, filepath.Join(foreign, "refs", "heads", "other"), foreignSHA+"\n")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo, start := ownRepo(t)
			c.swap(t, repo, foreignRepo(t))
			sha, _ := Head(start)
			r, _ := Inspect(start)
			if sha == foreignSHA || r.Head == foreignSHA {
				t.Fatalf("the other repository's commit was read: Head %q, Inspect %+v", sha, r)
			}
			if r.OriginURL == "https://github.com/victim/secret" {
				t.Fatalf("the other repository's origin was read: %+v", r)
			}
			if sha != "" || r.Head != "" {
				t.Fatalf("a commit was reported through a link: Head %q, Inspect %+v", sha, r)
			}
		})
	}
}

// A start directory that is itself a link is refused, as discovery refuses
// a symlinked invocation directory.
func TestSymlinkedStartDirectoryIsRefused(t *testing.T) {
	foreign := foreignRepo(t)
	link := filepath.Join(t.TempDir(), "build")
	mustSymlink(t, filepath.Dir(foreign), link)
	sha, err := Head(link)
	if sha != "" || !errors.Is(err, regularfile.ErrSymlink) {
		t.Fatalf("Head(symlink) = %q, %v; want ErrSymlink", sha, err)
	}
	if _, err := WorkTree(link); !errors.Is(err, regularfile.ErrSymlink) {
		t.Fatalf("WorkTree(symlink): %v; want ErrSymlink", err)
	}
}

// Relative gitdir and commondir pointers (submodules, linked worktrees)
// are walked from their own directories, ".." included.
func TestRelativeGitdirAndCommondir(t *testing.T) {
	super := filepath.Join(t.TempDir(), "super")
	modules := filepath.Join(super, ".git", "modules", "sub")
	mustMkdir(t, filepath.Join(modules, "refs", "heads"))
	write(t, filepath.Join(modules, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(modules, "refs", "heads", "main"), ownSHA+"\n")
	sub := filepath.Join(super, "sub")
	mustMkdir(t, filepath.Join(sub, "bin"))
	write(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
	if got, err := Head(filepath.Join(sub, "bin")); err != nil || got != ownSHA {
		t.Fatalf("submodule: Head = %q, %v; want %s", got, err, ownSHA)
	}

	// A linked worktree's gitdir holds HEAD; its commondir ("../..") the refs.
	wtGit := filepath.Join(modules, "worktrees", "wt")
	mustMkdir(t, wtGit)
	write(t, filepath.Join(wtGit, "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(wtGit, "commondir"), "../..\n")
	wt := filepath.Join(t.TempDir(), "wt")
	mustMkdir(t, wt)
	write(t, filepath.Join(wt, ".git"), "gitdir: "+wtGit+"\n")
	r, err := Inspect(wt)
	if err != nil || r.Head != ownSHA || r.RefName != "main" || r.WorkTree != wt {
		t.Fatalf("worktree: Inspect = %+v, %v", r, err)
	}
}
