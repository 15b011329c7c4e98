package compiletoolsreceiver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

const case10Failed = "10-textkit-broken-shake-compile-error"

// gitRepo makes a repository named name with one commit and the given
// origin remote, returning a runner of git commands in it.
func gitRepo(t *testing.T, name, origin string) (string, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "release/2.1")
	run("commit", "-q", "--allow-empty", "-m", "c")
	if origin != "" {
		run("remote", "add", "origin", origin)
	}
	return repo, run
}

// oneBuild runs the receiver (real cgo core) on the builds below diag and
// returns the single trace.
func oneBuild(t *testing.T, cfg *Config) ptrace.Traces {
	t.Helper()
	sink := new(consumertest.TracesSink)
	startTraces(t, cfg, sink)
	waitFor(t, "the build", func() bool { return len(sink.AllTraces()) == 1 })
	return sink.AllTraces()[0]
}

func strAttr(m pcommon.Map, k string) (string, bool) {
	v, ok := m.Get(k)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

func checkAttrs(t *testing.T, what string, m pcommon.Map, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := strAttr(m, k)
		switch {
		case v == "" && ok:
			t.Errorf("%s: %s = %q, want absent", what, k, got)
		case v != "" && (!ok || got != v):
			t.Errorf("%s: %s = %q (present %v), want %q", what, k, got, ok, v)
		}
	}
}

// A corpus build inside a git work tree on a branch with an origin whose
// URL holds credentials: the CI/CD and VCS keys, credentials stripped.
func TestSemconvOnABranchWithCredentials(t *testing.T) {
	repo, run := gitRepo(t, "geom", "https://ci-bot:ghp_s3cr3t@github.com/acme/geom.git")
	head := run("rev-parse", "HEAD")
	diag := filepath.Join(repo, "bin", "gcc.debug", "diagnostics")
	dir := copyCaseBuild(t, case01, diag)

	td := oneBuild(t, testConfig(diag))
	rs := td.ResourceSpans().At(0)
	checkAttrs(t, "resource", rs.Resource().Attributes(), map[string]string{
		"cicd.pipeline.name":      "geom",
		"cicd.pipeline.run.id":    filepath.Base(dir),
		"cicd.worker.id":          "test-host",
		"cicd.worker.name":        "test-host",
		"vcs.repository.url.full": "https://github.com/acme/geom",
		"vcs.provider.name":       "github",
		"vcs.ref.head.name":       "release/2.1",
		"vcs.ref.head.type":       "branch",
		"vcs.ref.head.revision":   head,
		"git.commit.sha":          head,
	})
	rs.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
		if strings.Contains(v.AsString(), "s3cr3t") || strings.Contains(v.AsString(), "ci-bot") {
			t.Errorf("%s leaks the credentials: %q", k, v.AsString())
		}
		return true
	})
	root := rs.ScopeSpans().At(0).Spans().At(0)
	if root.Kind() != ptrace.SpanKindInternal {
		t.Errorf("default root kind %v, want ct-cake's INTERNAL", root.Kind())
	}
	checkAttrs(t, "root", root.Attributes(), map[string]string{
		"cicd.pipeline.action.name": "BUILD",
		"cicd.pipeline.result":      "success",
		"error.type":                "",
	})
	rules := 0
	forEachSpan(td, func(s ptrace.Span) {
		rt, isRule := strAttr(s.Attributes(), "ct.rule_type")
		if !isRule {
			return
		}
		rules++
		target, _ := strAttr(s.Attributes(), "ct.target")
		typ := "build"
		if rt == "test" {
			typ = "test"
		}
		checkAttrs(t, s.Name(), s.Attributes(), map[string]string{"cicd.pipeline.task.name": target, "cicd.pipeline.task.type": typ})
	})
	if rules == 0 {
		t.Fatal("no rule spans")
	}
}

// Detached HEAD: no ref name or type, the revision still; SERVER root on
// request; a failed build's result; pipeline_name from the config.
func TestSemconvDetachedFailedServer(t *testing.T) {
	repo, run := gitRepo(t, "textkit", "git@gitlab.com:acme/textkit.git")
	head := run("rev-parse", "HEAD")
	run("checkout", "-q", "--detach")
	diag := filepath.Join(repo, "diag")
	copyCaseBuild(t, case10Failed, diag)

	cfg := testConfig(diag)
	cfg.SemconvRootSpan = true
	cfg.PipelineName = "Build and Test"
	td := oneBuild(t, cfg)
	rs := td.ResourceSpans().At(0)
	checkAttrs(t, "resource", rs.Resource().Attributes(), map[string]string{
		"cicd.pipeline.name":      "Build and Test",
		"vcs.repository.url.full": "https://gitlab.com/acme/textkit",
		"vcs.provider.name":       "gitlab",
		"vcs.ref.head.name":       "",
		"vcs.ref.head.type":       "",
		"vcs.ref.head.revision":   head,
	})
	spans := rs.ScopeSpans().At(0).Spans()
	root := spans.At(0)
	if root.Kind() != ptrace.SpanKindServer || root.Name() != "BUILD Build and Test" {
		t.Errorf("root %q kind %v, want \"BUILD Build and Test\", SERVER", root.Name(), root.Kind())
	}
	if st := root.Status(); st.Code() != ptrace.StatusCodeError || st.Message() != "build failed in build_execution" {
		t.Errorf("failed build's root status %v %q, want ERROR", st.Code(), st.Message())
	}
	for i := 1; i < spans.Len(); i++ {
		if spans.At(i).Kind() != ptrace.SpanKindInternal {
			t.Errorf("%s: kind %v, want INTERNAL", spans.At(i).Name(), spans.At(i).Kind())
		}
	}
	checkAttrs(t, "root", root.Attributes(), map[string]string{
		"cicd.pipeline.result": "failure",
		"error.type":           "build_execution",
	})
}

// A tag HEAD points to; outside any work tree the pipeline is the
// project's directory name in compiletools' default layout, else the
// diagnostics directory's name, and there are no vcs keys.
func TestSemconvTagAndNoRepository(t *testing.T) {
	repo, run := gitRepo(t, "geom", "")
	run("tag", "v2.1.0")
	run("symbolic-ref", "HEAD", "refs/tags/v2.1.0")
	diag := filepath.Join(repo, "diag")
	copyCaseBuild(t, case01, diag)
	td := oneBuild(t, testConfig(diag))
	checkAttrs(t, "tag", td.ResourceSpans().At(0).Resource().Attributes(), map[string]string{
		"vcs.ref.head.name":       "v2.1.0",
		"vcs.ref.head.type":       "tag",
		"vcs.repository.url.full": "",
		"vcs.provider.name":       "",
	})

	plain := t.TempDir()
	if _, err := exec.Command("git", "-C", plain, "rev-parse", "--git-dir").Output(); err == nil {
		t.Skip("the temp dir is inside a git repository")
	}
	diag = filepath.Join(plain, "diag")
	copyCaseBuild(t, case01, diag)
	td = oneBuild(t, testConfig(diag))
	checkAttrs(t, "no repository", td.ResourceSpans().At(0).Resource().Attributes(), map[string]string{
		"cicd.pipeline.name":    "diag",
		"vcs.ref.head.name":     "",
		"vcs.ref.head.revision": "",
		"git.commit.sha":        "",
	})
	layout := filepath.Join(plain, "textkit", "bin", "gcc.debug", "diagnostics")
	copyCaseBuild(t, case01, layout)
	td = oneBuild(t, testConfig(layout))
	checkAttrs(t, "default layout", td.ResourceSpans().At(0).Resource().Attributes(), map[string]string{
		"cicd.pipeline.name": "textkit",
	})
}
