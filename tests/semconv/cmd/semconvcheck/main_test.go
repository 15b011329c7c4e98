package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testdata(name string) string { return filepath.Join("..", "..", "check", "testdata", name) }

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{testdata("good.jsonl")}, 0},
		{[]string{testdata("enum-value.jsonl")}, 0}, // warnings only
		{[]string{"-closed-enums", testdata("enum-value.jsonl")}, 1},
		{[]string{testdata("good.jsonl"), testdata("span-status.jsonl")}, 1},
		{[]string{testdata("no-such-file.jsonl")}, 2},
		{nil, 2},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(tc.args, &stdout, &stderr); got != tc.code {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, got, tc.code, stdout.String(), stderr.String())
		}
	}
}

func TestSameFindingIsOneLineWithCount(t *testing.T) {
	var stdout, stderr bytes.Buffer
	run([]string{testdata("metric-unit.jsonl"), testdata("metric-unit.jsonl")}, &stdout, &stderr)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "error [metric-unit] ") || !strings.Contains(lines[1], "(2×, first at ") {
		t.Errorf("output:\n%s", stdout.String())
	}
	if !strings.Contains(lines[0], "2 errors, 0 warnings") {
		t.Errorf("summary: %q", lines[0])
	}
}

func TestAllowedDeviationsDoNotFail(t *testing.T) {
	allow := filepath.Join(t.TempDir(), "allowed.txt")
	if err := os.WriteFile(allow, []byte("span-attribute cicd.pipeline.task.run.id documented\nmetric-required cicd.pipeline.name unused\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if got := run([]string{"-allow", allow, testdata("span-attribute.jsonl")}, &stdout, &stderr); got != 0 {
		t.Fatalf("exit %d\n%s%s", got, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"0 errors, 0 warnings, 1 allowed", "allowed [span-attribute] ", "note: allowance metric-required cicd.pipeline.name was not needed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := run([]string{"-allow", allow, testdata("span-status.jsonl")}, &stdout, &stderr); got != 1 {
		t.Errorf("an allowance of another rule made span-status pass: exit %d", got)
	}
}
