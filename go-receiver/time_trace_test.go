package compiletoolsreceiver

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// stageTimeTraceBuild lays the corpus' shake build with clang traces out
// under dir: its traces in a work tree, its timing.json naming that tree.
// It returns the diagnostics parent.
func stageTimeTraceBuild(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(corpusDir(t), "time-trace", "geom-shake-cold")
	tree := filepath.Join(dir, "tree")
	err := filepath.WalkDir(filepath.Join(src, "traces"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(src, "traces"), p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := os.ReadDir(filepath.Join(src, "diagnostics"))
	if err != nil || len(ids) != 1 {
		t.Fatalf("corpus diagnostics: %v", err)
	}
	timing, err := os.ReadFile(filepath.Join(src, "diagnostics", ids[0].Name(), "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, "diag")
	inv := filepath.Join(parent, ids[0].Name())
	if err := os.MkdirAll(inv, 0o755); err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(timing), "/home/dev/src/geom/", tree+"/")
	if err := os.WriteFile(filepath.Join(inv, "timing.json"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent
}

// A finished build with clang traces: its compile spans have child spans
// and its ct.clang.header records reach the logs consumer, most expensive
// header first (ClangBuildAnalyzer's order, ../shared/corpus).
func TestFinishedBuildClangTracesReachTracesAndLogs(t *testing.T) {
	parent := stageTimeTraceBuild(t, t.TempDir())
	sinks, _ := startLive(t, testConfig(parent), componenttest.NewNopHost(), component.NewID(metadata.Type))
	waitFor(t, "the build's clang records", func() bool { return len(sinks.logs.AllLogs()) > 0 })
	waitFor(t, "the trace", func() bool { return sinks.traces.SpanCount() > 0 })

	var sources, compilesWithTimes int
	for _, td := range sinks.traces.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					if s.Name() == "Source" {
						sources++
					}
					if _, ok := s.Attributes().Get("ct.clang.frontend_s"); ok {
						compilesWithTimes++
					}
				}
			}
		}
	}
	if compilesWithTimes != 29 || sources == 0 {
		t.Fatalf("compile spans with clang times: %d (want 29), Source spans: %d", compilesWithTimes, sources)
	}
	var headers []string
	for _, r := range liveRecords(sinks.logs) {
		if r.EventName() == "ct.clang.header" {
			p, _ := r.Attributes().Get("ct.header.path")
			headers = append(headers, p.Str())
		}
	}
	if len(headers) == 0 || headers[0] != "/usr/include/c++/12/cmath" {
		t.Fatalf("ct.clang.header records: %v", headers)
	}
}
