package check

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/compiletools-otel/semconvcheck/registry"
)

// Allowance is one documented deviation of the checked producer: findings
// of Rule about Key are reported as Allowed, with Reason, and never fail.
// It names a rule and a registry key only, never a place: the deviation
// holds wherever it occurs, and everything else still fails.
type Allowance struct {
	Rule, Key, Reason string
	Used              int
}

// allowableRules are the rules about one missing attribute: what a
// producer can document as not applying to it.
var allowableRules = []string{"span-attribute", "metric-required", "metric-conditional", "span-error-type"}

// ParseAllowances reads lines `RULE KEY REASON…`; blank lines and lines
// starting with # are skipped. A rule that is not about a missing key, a
// key the registry does not define, or a line without a reason is an error.
func ParseAllowances(r io.Reader, reg *registry.Registry) ([]*Allowance, error) {
	var out []*Allowance
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d: want RULE KEY REASON", n)
		}
		rule, key := fields[0], fields[1]
		if !contains(allowableRules, rule) {
			return nil, fmt.Errorf("line %d: rule %q cannot be allowed (only %s)", n, rule, strings.Join(allowableRules, ", "))
		}
		if _, err := reg.Attribute(key); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, &Allowance{Rule: rule, Key: key, Reason: strings.Join(fields[2:], " ")})
	}
	return out, sc.Err()
}

// Apply marks the findings an allowance covers as Allowed and counts the
// use.
func Apply(allowances []*Allowance, fs []Finding) {
	for i := range fs {
		for _, a := range allowances {
			if fs[i].Rule == a.Rule && fs[i].Key == a.Key && fs[i].Key != "" {
				fs[i].Severity = Allowed
				fs[i].Message += " — allowed: " + a.Reason
				a.Used++
				break
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
