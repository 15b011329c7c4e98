package main

import (
	"bytes"
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
