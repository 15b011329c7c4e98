package compiletoolsreceiver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
)

func TestGitCommitOnlyWithinLag(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "c")
	head := run("rev-parse", "HEAD")

	diag := filepath.Join(repo, "bin", "gcc.debug", "diagnostics")
	fresh := copyCaseBuild(t, case01, diag)
	stale := filepath.Join(diag, "20261130T000000-7")
	copyTree(t, fresh, stale)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(stale, "timing.json"), old, old); err != nil {
		t.Fatal(err)
	}

	sink := new(consumertest.TracesSink)
	startTraces(t, testConfig(diag), sink)
	waitFor(t, "both builds", func() bool { return len(sink.AllTraces()) == 2 })
	for _, td := range sink.AllTraces() {
		res := td.ResourceSpans().At(0).Resource().Attributes()
		id, _ := res.Get("ct.invocation_id")
		sha, ok := res.Get("git.commit.sha")
		switch id.Str() {
		case filepath.Base(fresh):
			if !ok || sha.Str() != head {
				t.Errorf("fresh build: git.commit.sha = %q (present %v), want %s", sha.Str(), ok, head)
			}
		case filepath.Base(stale):
			if ok {
				t.Errorf("a build that ended an hour ago got git.commit.sha %q: HEAD may have moved since", sha.Str())
			}
		}
	}
}
