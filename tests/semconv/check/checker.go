package check

import (
	"fmt"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// Checker applies every rule to decoded OTLP lines.
type Checker struct {
	reg *registry.Registry
	// runSpan and taskSpan are the registry's definitions of a
	// pipeline-run span and of a task span (spans.go).
	runSpan, taskSpan registry.Span
	// ClosedEnums makes a value outside an enum's well-known values an
	// error rather than a warning.
	ClosedEnums bool
}

func New(reg *registry.Registry) (*Checker, error) {
	if err := validateFailedFacts(reg); err != nil {
		return nil, err
	}
	c := &Checker{reg: reg}
	var err error
	if c.runSpan, err = reg.Span(runSpanID); err != nil {
		return nil, err
	}
	if c.taskSpan, err = reg.Span(taskSpanID); err != nil {
		return nil, err
	}
	return c, nil
}

// Line returns the findings of one line, in the order of the line.
func (c *Checker) Line(line otlp.Line) []Finding {
	var out findings
	at := func(format string, args ...any) string {
		return fmt.Sprintf("line %d ", line.Number) + fmt.Sprintf(format, args...)
	}
	b := line.Batch
	for _, rs := range b.ResourceSpans {
		c.checkAttributes(&out, at("resource"), rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				where := at("span %q", s.Name)
				c.checkAttributes(&out, where, s.Attributes)
				for _, e := range s.Events {
					c.checkAttributes(&out, fmt.Sprintf("%s event %q", where, e.Name), e.Attributes)
				}
				for i, l := range s.Links {
					c.checkAttributes(&out, fmt.Sprintf("%s link %d", where, i), l.Attributes)
				}
				c.checkSpan(&out, where, s)
			}
		}
	}
	for _, rm := range b.ResourceMetrics {
		c.checkAttributes(&out, at("resource"), rm.Resource.Attributes)
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for i, p := range m.Points() {
					c.checkAttributes(&out, at("metric %q point %d", m.Name, i), p.Attributes)
				}
				c.checkMetric(&out, at("metric %q", m.Name), m)
			}
		}
	}
	for _, rl := range b.ResourceLogs {
		c.checkAttributes(&out, at("resource"), rl.Resource.Attributes)
		for _, sl := range rl.ScopeLogs {
			for i, r := range sl.LogRecords {
				where := at("log record %d", i)
				if r.EventName != "" {
					where += fmt.Sprintf(" %q", r.EventName)
				}
				c.checkAttributes(&out, where, r.Attributes)
			}
		}
	}
	return out
}
