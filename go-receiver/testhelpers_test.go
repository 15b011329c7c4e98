package compiletoolsreceiver

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// corpusDir is the shared corpus of real ct-cake builds (read-only).
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CT_CORPUS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("corpus not found at %s (set CT_CORPUS_DIR): %v", abs, err)
	}
	return abs
}

// copyCaseBuild copies the single invocation directory of a corpus case
// into parent and returns the copy's path.
func copyCaseBuild(t *testing.T, caseName, parent string) string {
	t.Helper()
	diag := filepath.Join(corpusDir(t), "cases", caseName, "diagnostics")
	entries, err := os.ReadDir(diag)
	if err != nil || len(entries) != 1 {
		t.Fatalf("case %s: want one invocation directory in %s (err %v)", caseName, diag, err)
	}
	dst := filepath.Join(parent, entries[0].Name())
	copyTree(t, filepath.Join(diag, entries[0].Name()), dst)
	return dst
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// Written aside and renamed into place, as ct-cake writes
		// timing.json: a receiver polling meanwhile must never read half
		// a file (it would settle the build as malformed for good).
		tmp := filepath.Join(filepath.Dir(target), ".tmp.copy."+d.Name())
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, target)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// referenceTraces decodes what ct-cake's own exporter sent for a case.
func referenceTraces(t *testing.T, caseName string) ptrace.Traces {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(corpusDir(t), "cases", caseName, "reference", "001-traces.pb"))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// forEachSpan calls f for every span of td.
func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(spans.At(k))
			}
		}
	}
}

// spanNames returns the multiset of span names in td.
func spanNames(td ptrace.Traces) map[string]int {
	names := map[string]int{}
	forEachSpan(td, func(s ptrace.Span) { names[s.Name()]++ })
	return names
}

// runUntilCleanup starts a created receiver on a nop host and shuts it down
// (which must succeed) when the test ends.
func runUntilCleanup(t *testing.T, r component.Component, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
