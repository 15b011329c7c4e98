package check

import (
	"slices"
	"sort"
	"strings"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// Rules of the spans that stand for a CI/CD run:
//
//	span-attribute  a pipeline-run span (a root span with cicd.pipeline.*
//	                attributes) or a task span (one with
//	                cicd.pipeline.task.* attributes) lacks an attribute of
//	                its part of the registry: an error where the registry
//	                says Required, a warning where Recommended. The Go
//	                package has no span definitions (the generator writes
//	                none), so these are the attribute-level levels of the
//	                registry group, not the span's own: the registry's
//	                model requires cicd.pipeline.result on the run span and
//	                the task's name, run.id, run.url.full and run.result,
//	                which only show here as Recommended.
//	span-status     a span of a failed run or task (failed.go) whose status
//	                is not ERROR (recording-errors)
//	span-error-type a span of a failed run or task without error.type
func (c *Checker) checkSpan(out *findings, where string, s otlp.Span, res otlp.Resource) {
	kind, isTask, ok := runKind(s)
	if !ok {
		return
	}
	keys := c.runKeys
	if isTask {
		keys = c.taskKeys
	}
	for _, key := range keys {
		_, onSpan := lookup(s.Attributes, key)
		_, onResource := lookup(res.Attributes, key)
		if onSpan || onResource {
			continue
		}
		level := c.reg.Attributes[key].RequirementLevel
		sev := Warning
		if strings.EqualFold(level, "Required") {
			sev = Error
		}
		out.add(sev, "span-attribute", where, "%s span lacks %s (registry: %s)", kind, key, level)
	}
	result, failed := failedResult(s.Attributes)
	if !failed {
		return
	}
	if code := s.Status.CodeName(); code != "ERROR" {
		out.add(Error, "span-status", where, "%s span with %s has status %s, want ERROR", kind, result, code)
	}
	if _, ok := lookup(s.Attributes, errorTypeKey); !ok {
		out.add(Error, "span-error-type", where, "%s span with %s lacks %s", kind, result, errorTypeKey)
	}
}

const (
	pipelinePrefix = "cicd.pipeline."
	taskPrefix     = "cicd.pipeline.task."
)

// runKind tells whether s stands for a pipeline run or a task run.
func runKind(s otlp.Span) (kind string, isTask, ok bool) {
	if slices.ContainsFunc(s.Attributes, func(kv otlp.KeyValue) bool { return strings.HasPrefix(kv.Key, taskPrefix) }) {
		return "task", true, true
	}
	isRun := s.ParentSpanID == "" && slices.ContainsFunc(s.Attributes, func(kv otlp.KeyValue) bool { return strings.HasPrefix(kv.Key, pipelinePrefix) })
	return "pipeline-run", false, isRun
}

// spanGroups splits the registry's cicd.pipeline.* keys into those of the
// run (without the task's) and those of a task.
func spanGroups(reg *registry.Registry) (runKeys, taskKeys []string) {
	for key := range reg.Attributes {
		switch {
		case strings.HasPrefix(key, taskPrefix):
			taskKeys = append(taskKeys, key)
		case strings.HasPrefix(key, pipelinePrefix):
			runKeys = append(runKeys, key)
		}
	}
	sort.Strings(runKeys)
	sort.Strings(taskKeys)
	return runKeys, taskKeys
}
