package check

import (
	"github.com/compiletools-otel/semconvcheck/otlp"
)

// Rules of a metric whose name is in a registry namespace:
//
//	undefined-metric     the registry has no such metric
//	metric-unit          the unit differs from the registry's
//	metric-instrument    the data kind implies another instrument (a
//	                     monotonic Sum is a Counter, a non-monotonic one an
//	                     UpDownCounter)
//	metric-required      a point lacks an attribute the registry requires
//	metric-conditional   a point of a failed run (failed.go) lacks
//	                     error.type, where the metric makes error.type
//	                     conditionally required
func (c *Checker) checkMetric(out *findings, where string, m otlp.Metric) {
	if !c.reg.InNamespaces(m.Name) {
		return
	}
	def, known := c.reg.Metrics[m.Name]
	if !known {
		out.add(Error, "undefined-metric", where, "%s is not a metric of semconv %s", m.Name, c.reg.Version)
		return
	}
	if m.Unit != def.Unit {
		out.add(Error, "metric-unit", where, "%s has unit %q, registry wants %q", m.Name, m.Unit, def.Unit)
	}
	if got := m.Instrument(); got != def.Instrument {
		out.add(Error, "metric-instrument", where, "%s is a %s, registry wants %s", m.Name, got, def.Instrument)
	}
	_, conditionalErrorType := def.Conditional(errorTypeKey)
	for _, p := range m.Points() {
		for _, key := range def.Required() {
			if _, ok := lookup(p.Attributes, key); !ok {
				out.addKey(Error, "metric-required", key, where, "%s point lacks required %s", m.Name, key)
			}
		}
		if !conditionalErrorType {
			continue
		}
		if result, failed := failedResult(p.Attributes); failed {
			if _, ok := lookup(p.Attributes, errorTypeKey); !ok {
				out.addKey(Error, "metric-conditional", errorTypeKey, where, "%s point with %s lacks %s (conditionally required when the run failed)", m.Name, result, errorTypeKey)
			}
		}
	}
}
