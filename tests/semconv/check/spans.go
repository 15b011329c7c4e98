package check

import (
	"slices"
	"strings"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// The registry's span definitions the checker applies, by group id
// (model/cicd/spans.yaml). New fails when the registry lacks one, so a
// rename there fails loudly instead of checking nothing.
const (
	runSpanID  = "span.cicd.pipeline.run.server"
	taskSpanID = "span.cicd.pipeline.task.internal"
)

// Rules of the spans that stand for a CI/CD run, from the registry's span
// definitions:
//
//	span-attribute  a pipeline-run span (a root span with cicd.pipeline.*
//	                attributes) or a task span (one with
//	                cicd.pipeline.task.* attributes) lacks an attribute its
//	                definition lists: an error where it is required, a
//	                warning where recommended (opt-in ones are not checked;
//	                the conditional error.type is span-error-type's)
//	span-kind       the span's kind is not the definition's span_kind (a
//	                warning: the definition's SHOULD)
//	span-status     a span of a failed run or task (failed.go) whose status
//	                is not ERROR (recording-errors)
//	span-error-type a span of a failed run or task without error.type, which
//	                its definition makes conditionally required then
func (c *Checker) checkSpan(out *findings, where string, s otlp.Span) {
	def, kind, ok := c.spanDefinition(s)
	if !ok {
		return
	}
	for _, ref := range def.Attributes {
		if ref.Level != registry.Required && ref.Level != registry.Recommended {
			continue
		}
		if _, onSpan := lookup(s.Attributes, ref.Key); onSpan {
			continue
		}
		sev := Warning
		if ref.Level == registry.Required {
			sev = Error
		}
		out.addKey(sev, "span-attribute", ref.Key, where, "%s span lacks %s (%s: %s)", kind, ref.Key, def.ID, ref.Level)
	}
	if want := def.Kind; want != "" && !strings.EqualFold(s.KindName(), want) {
		out.add(Warning, "span-kind", where, "%s span is %s, %s wants %s", kind, s.KindName(), def.ID, strings.ToUpper(want))
	}
	result, failed := failedResult(s.Attributes)
	if !failed {
		return
	}
	if code := s.Status.CodeName(); code != "ERROR" {
		out.add(Error, "span-status", where, "%s span with %s has status %s, want ERROR", kind, result, code)
	}
	if _, conditional := def.Conditional(errorTypeKey); !conditional {
		return
	}
	if _, ok := lookup(s.Attributes, errorTypeKey); !ok {
		out.addKey(Error, "span-error-type", errorTypeKey, where, "%s span with %s lacks %s", kind, result, errorTypeKey)
	}
}

const (
	pipelinePrefix = "cicd.pipeline."
	taskPrefix     = "cicd.pipeline.task."
)

// spanDefinition tells whether s stands for a pipeline run or a task run,
// and returns the registry's definition of that span.
func (c *Checker) spanDefinition(s otlp.Span) (registry.Span, string, bool) {
	if slices.ContainsFunc(s.Attributes, func(kv otlp.KeyValue) bool { return strings.HasPrefix(kv.Key, taskPrefix) }) {
		return c.taskSpan, "task", true
	}
	isRun := s.ParentSpanID == "" && slices.ContainsFunc(s.Attributes, func(kv otlp.KeyValue) bool { return strings.HasPrefix(kv.Key, pipelinePrefix) })
	return c.runSpan, "pipeline-run", isRun
}
