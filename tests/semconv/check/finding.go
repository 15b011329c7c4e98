// Package check holds the conformance rules: each takes OTLP from the
// otlp package and the registry facts from the registry package.
package check

import "fmt"

type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
	// Allowed is a finding the caller listed as a documented deviation
	// (Allowances): reported, never failing.
	Allowed Severity = "allowed"
)

// Finding is one breach of a rule at one place. Message names no place,
// so that the same breach at many places reads as one line when grouped.
type Finding struct {
	Severity Severity
	Rule     string // short, stable id: see the rules' files
	// Key is the attribute the finding is about, where it is about one
	// missing attribute (span-attribute, metric-required, …): what an
	// allowed deviation names.
	Key     string
	Where   string // e.g. `line 1 span "compile.x"`
	Message string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s [%s] %s: %s", f.Severity, f.Rule, f.Where, f.Message)
}

// findings collects the findings of one line.
type findings []Finding

func (fs *findings) add(sev Severity, rule, where, format string, args ...any) {
	fs.addKey(sev, rule, "", where, format, args...)
}

func (fs *findings) addKey(sev Severity, rule, key, where, format string, args ...any) {
	*fs = append(*fs, Finding{Severity: sev, Rule: rule, Key: key, Where: where, Message: fmt.Sprintf(format, args...)})
}
