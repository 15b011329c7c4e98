package main

import (
	"fmt"
	"io"

	"github.com/compiletools-otel/semconvcheck/check"
)

// report groups findings that say the same thing (same severity, rule and
// message): a build has hundreds of task spans, and one line per breach
// with its count reads better than hundreds of equal lines.
type report struct {
	groups                    []*group
	byText                    map[string]*group
	errors, warnings, allowed int
}

type group struct {
	finding check.Finding
	first   string // file and place of the first occurrence
	count   int
}

func (r *report) add(path string, fs []check.Finding) {
	if r.byText == nil {
		r.byText = map[string]*group{}
	}
	for _, f := range fs {
		switch f.Severity {
		case check.Error:
			r.errors++
		case check.Allowed:
			r.allowed++
		default:
			r.warnings++
		}
		text := string(f.Severity) + "\x00" + f.Rule + "\x00" + f.Message
		g := r.byText[text]
		if g == nil {
			g = &group{finding: f, first: path + ": " + f.Where}
			r.byText[text] = g
			r.groups = append(r.groups, g)
		}
		g.count++
	}
}

func (r *report) summary() string {
	return fmt.Sprintf("%d errors, %d warnings, %d allowed", r.errors, r.warnings, r.allowed)
}

// print writes errors, then warnings, then allowed deviations, each in
// the order first seen.
func (r *report) print(w io.Writer) {
	for _, sev := range []check.Severity{check.Error, check.Warning, check.Allowed} {
		for _, g := range r.groups {
			if g.finding.Severity != sev {
				continue
			}
			fmt.Fprintf(w, "%s [%s] %s (%d×, first at %s)\n", sev, g.finding.Rule, g.finding.Message, g.count, g.first)
		}
	}
}
