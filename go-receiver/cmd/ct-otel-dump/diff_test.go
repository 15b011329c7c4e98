package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeBuild writes an invocation directory under diag whose compiles have
// the given object keys (source name → "<file>_<dep>_<macro>").
func writeBuild(t *testing.T, diag, name, hour string, keys map[string]string, order []string) string {
	t.Helper()
	var rules []string
	for i, src := range order {
		rules = append(rules, fmt.Sprintf(`{"name": "%s.cpp", "rule_type": "compile", "target": "/p/cas-objdir/v/0d/%s_%s.o",
			"source": "/p/src/%s.cpp", "start_s": %d.0, "end_s": %d.5, "metadata": {"cas.hit": false}}`,
			src, src, keys[src], src, 101+i, 101+i))
	}
	doc := fmt.Sprintf(`{"version": 1, "timestamp": "2026-11-30T%s:00:00+00:00", "total_elapsed_s": 10.0,
		"variant": "gcc.debug", "backend": "shake", "start_s": 100.0,
		"phases": [{"name": "build_execution", "start_s": 100.0, "end_s": 110.0, "rules": [%s]}]}`,
		hour, strings.Join(rules, ","))
	dir := filepath.Join(diag, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "timing.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDiffNamesTheReasonOfEveryCompile(t *testing.T) {
	diag := t.TempDir()
	const same = "0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74"
	writeBuild(t, diag, "20261130T010000-1", "01", map[string]string{"a": same, "b": same, "c": same}, []string{"a", "b", "c"})
	// Build 2 compiled only a (a no-op for b and c): OLD for the diff.
	old := writeBuild(t, diag, "20261130T020000-2", "02",
		map[string]string{"a": "1d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74"}, []string{"a"})
	// NEW: b's headers changed, c's flags, a's object gone (same key), d new.
	newer := writeBuild(t, diag, "20261130T030000-3", "03", map[string]string{
		"a": "1d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74",
		"b": "0d99ae76451a_1af5b42cc55ffb_d85fc71f180bdf74",
		"c": "0d99ae76451a_0af5b42cc55ffb_e85fc71f180bdf74",
		"d": same,
	}, []string{"a", "b", "c", "d"})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diff", "--json", "--host-name", testHost, old, newer}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r diffReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	got := map[string][]string{}
	for _, g := range r.Rebuilds {
		got[g.Reason] = g.Sources
	}
	// b and c were last compiled in build 1, found by the history the
	// diff primes with OLD's earlier builds; a's key is OLD's.
	want := map[string][]string{"evicted": {"a.cpp"}, "headers_changed": {"b.cpp"}, "flags_changed": {"c.cpp"}, "new": {"d.cpp"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
	if r.Comparison == nil || !r.Comparison.LinkedToOld || r.Comparison.RulesAdded != 3 || r.Comparison.RulesRemoved != 0 {
		t.Errorf("comparison %+v", r.Comparison)
	}
	// --only: compared with OLD alone, b and c are new.
	out.Reset()
	if code := run(context.Background(), []string{"diff", "--json", "--only", "--host-name", testHost, old, newer}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	r = diffReport{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rebuilds) != 2 || r.Rebuilds[0].Reason != "new" || r.Rebuilds[0].Count != 3 {
		t.Errorf("--only: %+v", r.Rebuilds)
	}
	// The text form names every group.
	out.Reset()
	if code := run(context.Background(), []string{"diff", "--host-name", testHost, old, newer}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, line := range []string{"why each TU was compiled (4):", "headers_changed", "linked to old", "3 added, 0 removed"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, out.String())
		}
	}
	if code := run(context.Background(), []string{"diff", old}, &out, &errOut); code != 2 {
		t.Errorf("one directory: exit %d, want 2", code)
	}
}
