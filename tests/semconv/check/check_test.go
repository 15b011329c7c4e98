package check

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// Known answers: testdata/good.jsonl conforms (and has every signal and
// place an attribute can be); every other file breaks one rule, at the
// places listed. The registry is the pinned release, read as in use.
var cases = []struct {
	file string
	want []string // "severity rule where"
}{
	{"good.jsonl", nil},
	{"undefined-key.jsonl", []string{
		`error undefined-key line 1 resource`,
		`error undefined-key line 1 resource`,
		`error undefined-key line 1 span "link.app" event "cache"`,
		`error undefined-key line 1 span "link.app" link 0`,
	}},
	{"value-type.jsonl", []string{
		`error value-type line 1 metric "ct.compiles" point 0`,
		`error value-type line 2 log record 0`,
	}},
	{"enum-value.jsonl", []string{`warning enum-value line 1 span "link.app" link 0`}},
	{"undefined-metric.jsonl", []string{`error undefined-metric line 1 metric "cicd.pipeline.task.run.duration"`}},
	{"metric-unit.jsonl", []string{`error metric-unit line 1 metric "cicd.pipeline.run.errors"`}},
	{"metric-instrument.jsonl", []string{`error metric-instrument line 1 metric "cicd.pipeline.run.active"`}},
	{"metric-required.jsonl", []string{`error metric-required line 1 metric "cicd.pipeline.run.duration"`}},
	{"metric-conditional.jsonl", []string{`error metric-conditional line 1 metric "cicd.pipeline.run.duration"`}},
	{"span-status.jsonl", []string{`error span-status line 1 span "compiletools.build"`}},
	{"span-error-type.jsonl", []string{`error span-error-type line 1 span "compile.geom/vec2.cpp"`}},
	{"span-attribute.jsonl", []string{`error span-attribute line 1 span "compile.geom/vec2.cpp"`}},
	{"span-kind.jsonl", []string{`warning span-kind line 1 span "compiletools.build"`}},
}

func newChecker(t *testing.T) *Checker {
	t.Helper()
	reg, err := registry.LoadPinned([]string{"cicd", "vcs", "error", "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkFile(t *testing.T, c *Checker, name string) []Finding {
	t.Helper()
	lines, err := otlp.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var all []Finding
	for _, l := range lines {
		all = append(all, c.Line(l)...)
	}
	return all
}

func summaries(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Rule+" "+f.Where)
	}
	return out
}

func TestKnownAnswers(t *testing.T) {
	c := newChecker(t)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			got := checkFile(t, c, tc.file)
			if !slices.Equal(summaries(got), tc.want) {
				t.Errorf("findings:\n%v\nwant:\n%v", got, tc.want)
			}
		})
	}
}

func TestClosedEnumsMakeUnknownValuesErrors(t *testing.T) {
	c := newChecker(t)
	c.ClosedEnums = true
	if got := summaries(checkFile(t, c, "enum-value.jsonl")); !slices.Equal(got, []string{`error enum-value line 1 span "link.app" link 0`}) {
		t.Errorf("closed enums: %v", got)
	}
	// error.type's enum is only the _OTHER fallback: custom values are the
	// registry's intent, closed or not.
	if got := checkFile(t, c, "good.jsonl"); len(got) != 0 {
		t.Errorf("closed enums, good file: %v", got)
	}
}

func TestMessagesNameKeyAndRegistryValue(t *testing.T) {
	c := newChecker(t)
	for file, want := range map[string]string{
		"metric-unit.jsonl":       `cicd.pipeline.run.errors has unit "1", registry wants "{error}"`,
		"metric-required.jsonl":   "cicd.pipeline.run.duration point lacks required cicd.pipeline.run.state",
		"span-status.jsonl":       "pipeline-run span with cicd.pipeline.result=failure has status UNSET, want ERROR",
		"metric-instrument.jsonl": "cicd.pipeline.run.active is a Counter, registry wants UpDownCounter",
		"span-attribute.jsonl":    "task span lacks cicd.pipeline.task.run.id (span.cicd.pipeline.task.internal: required)",
		"span-kind.jsonl":         "pipeline-run span is INTERNAL, span.cicd.pipeline.run.server wants SERVER",
	} {
		got := checkFile(t, c, file)
		if len(got) != 1 || got[0].Message != want {
			t.Errorf("%s: %v, want message %q", file, got, want)
		}
	}
}

func TestDeprecatedKeyNamesItsReplacement(t *testing.T) {
	c := newChecker(t)
	var msgs []string
	for _, f := range checkFile(t, c, "undefined-key.jsonl") {
		msgs = append(msgs, f.Message)
	}
	want := "vcs.repository.ref.name is deprecated in semconv v1.44.0 (renamed, use vcs.ref.head.name)"
	if !slices.Contains(msgs, want) {
		t.Errorf("messages %q lack %q", msgs, want)
	}
}

func TestAllowancesCoverOnlyTheirRuleAndKey(t *testing.T) {
	c := newChecker(t)
	allow, err := ParseAllowances(strings.NewReader(
		"# comment\nspan-attribute cicd.pipeline.task.run.id no run ids here\nmetric-required cicd.pipeline.run.state not this one\n"), c.reg)
	if err != nil {
		t.Fatal(err)
	}
	got := checkFile(t, c, "span-attribute.jsonl")
	Apply(allow, got)
	if len(got) != 1 || got[0].Severity != Allowed || allow[0].Used != 1 || allow[1].Used != 0 {
		t.Errorf("findings %v, uses %d %d", got, allow[0].Used, allow[1].Used)
	}
	got = checkFile(t, c, "span-status.jsonl")
	Apply(allow, got)
	if len(got) != 1 || got[0].Severity != Error {
		t.Errorf("an allowance covered another rule: %v", got)
	}
	for _, bad := range []string{
		"span-status error.type a status cannot be allowed",
		"span-attribute cicd.pipeline.nope not a registry key",
		"span-attribute cicd.pipeline.task.run.id",
	} {
		if _, err := ParseAllowances(strings.NewReader(bad), c.reg); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
