package gitsha

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestInspectBranchTagDetachedAndOrigin(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "feature/x")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, repo, "remote", "add", "origin", "https://ci-bot:s3cr3t@github.com/acme/geom.git")
	diag := filepath.Join(repo, "bin", "diagnostics", "20261130T000000-1")
	if err := os.MkdirAll(diag, 0o755); err != nil {
		t.Fatal(err)
	}
	head := git(t, repo, "rev-parse", "HEAD")

	r, err := Inspect(diag)
	if err != nil {
		t.Fatal(err)
	}
	want := Repo{WorkTree: repo, Head: head, RefName: "feature/x", RefType: RefBranch,
		OriginURL: "https://github.com/acme/geom", Provider: "github"}
	if r != want {
		t.Fatalf("branch: got %+v, want %+v", r, want)
	}

	git(t, repo, "tag", "v1.0")
	git(t, repo, "symbolic-ref", "HEAD", "refs/tags/v1.0")
	if r, _ = Inspect(diag); r.RefName != "v1.0" || r.RefType != RefTag || r.Head != head {
		t.Fatalf("tag: got %+v", r)
	}

	git(t, repo, "checkout", "-q", "--detach", head)
	if r, _ = Inspect(diag); r.RefName != "" || r.RefType != "" || r.Head != head {
		t.Fatalf("detached: got %+v", r)
	}
}

func TestCanonicalURLAndProvider(t *testing.T) {
	for _, c := range []struct{ in, url, provider string }{
		{"https://user:tok@gitlab.com/g/p.git", "https://gitlab.com/g/p", "gitlab"},
		{"https://oauth2:glpat-x@git.example.com/g/p", "https://git.example.com/g/p", ""},
		{"ssh://git@bitbucket.org/t/r.git", "https://bitbucket.org/t/r", "bitbucket"},
		{"git@github.com:acme/geom.git", "https://github.com/acme/geom", "github"},
		{"git@codeberg.org:acme/geom.git", "https://codeberg.org/acme/geom", "gitea"},
		{"/srv/git/geom.git", "", ""},
		{"", "", ""},
	} {
		got := CanonicalURL(c.in)
		if got != c.url {
			t.Errorf("CanonicalURL(%q) = %q, want %q", c.in, got, c.url)
		}
		if p := ProviderOf(got); p != c.provider {
			t.Errorf("ProviderOf(%q) = %q, want %q", got, p, c.provider)
		}
	}
}
