package compiletoolsreceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/discovery"
	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

const case16Make = "16-geom-make-cold-native-flock"

// analytics.build_graphs reaches the core: a make build whose Makefile
// (found through the {variant} placeholder) lists its targets gets the
// exact critical path (ct.build.critical_path.method = make_graph) and a
// drag on the path's rule; the same build without the mapping keeps the
// estimate.
func TestBuildGraphMappingGivesTheExactPath(t *testing.T) {
	diag := filepath.Join(t.TempDir(), "diagnostics")
	dir := copyCaseBuild(t, case16Make, diag)
	var doc struct {
		Variant string `json:"variant"`
		Phases  []struct {
			Rules []struct {
				Target string `json:"target"`
			} `json:"rules"`
		} `json:"phases"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "timing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// Independent targets: the path is one rule, the longest.
	var makefile strings.Builder
	makefile.WriteString("# generated\n.PHONY: all\n")
	for _, p := range doc.Phases {
		for _, r := range p.Rules {
			makefile.WriteString(r.Target + ":\n\ttrue\n")
		}
	}
	ws := t.TempDir()
	mk := filepath.Join(ws, "bin", doc.Variant, "Makefile")
	if err := os.MkdirAll(filepath.Dir(mk), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mk, []byte(makefile.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Written before the build ended, as ct-cake's generate phase does.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(mk, old, old); err != nil {
		t.Fatal(err)
	}

	method := func(td ptrace.Traces) (string, int, int) {
		root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		m, _ := strAttr(root.Attributes(), "ct.build.critical_path.method")
		onPath, withDrag := 0, 0
		forEachSpan(td, func(s ptrace.Span) {
			if _, ok := s.Attributes().Get("ct.critical_path"); ok {
				onPath++
			}
			if _, ok := s.Attributes().Get("ct.rule.drag_s"); ok {
				withDrag++
			}
		})
		return m, onPath, withDrag
	}

	cfg := testConfig(diag)
	cfg.Analytics.BuildGraphs = []BuildGraphMapping{{Include: filepath.Join(diag, "*"), Path: filepath.Join(ws, "bin", "{variant}", "Makefile")}}
	if m, onPath, withDrag := method(oneBuild(t, cfg)); m != "make_graph" || onPath != 1 || withDrag != 1 {
		t.Errorf("with the mapping: method %q, %d path rules, %d with drag; want make_graph, 1, 1", m, onPath, withDrag)
	}

	cfg = testConfig(diag)
	if m, onPath, withDrag := method(oneBuild(t, cfg)); m != "estimate" || onPath == 0 || withDrag != 0 {
		t.Errorf("without the mapping: method %q, %d path rules, %d with drag; want estimate, >0, 0", m, onPath, withDrag)
	}
}

func TestBuildGraphMappingValidation(t *testing.T) {
	cfg := testConfig("/x/*")
	cfg.Analytics.BuildGraphs = []BuildGraphMapping{{Include: "[", Path: "/ws/build.ninja"}, {Include: "/x/*"}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("invalid build_graphs accepted")
	}
	for _, want := range []string{"analytics.build_graphs[0].include", "analytics.build_graphs[1].path"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// The build graph is read into memory with the build: what the core may
// hold for it counts towards limits.max_parse_bytes_in_flight (issue 22).
func TestBuildGraphCountsTowardsTheParseBudget(t *testing.T) {
	graph := filepath.Join(t.TempDir(), "build.ninja")
	if err := os.WriteFile(graph, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	b := discovery.Build{Size: 100}
	if got, want := inputBytes(b, ffi.Request{BuildGraphPath: graph}), int64(100+4*4096+graphMemorySlack+graphMaxLine); got != want {
		t.Errorf("inputBytes with a 4096-byte graph = %d, want %d", got, want)
	}
	if got := inputBytes(b, ffi.Request{BuildGraphPath: filepath.Join(t.TempDir(), "bin", "{variant}", "Makefile")}); got != 100 {
		t.Errorf("inputBytes with an unresolved graph path = %d, want 100", got)
	}
}
