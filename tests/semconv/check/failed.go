package check

import (
	"fmt"
	"slices"

	"github.com/compiletools-otel/semconvcheck/otlp"
	"github.com/compiletools-otel/semconvcheck/registry"
)

// The one registry fact that the generated Go package does not carry: the
// text of the conditions of conditionally required attributes (the
// generator calls them all "optional"). The registry's model makes
// error.type conditionally required "if the pipeline result is `failure`
// or `error`" (model/cicd/spans.yaml, both spans) and on
// cicd.pipeline.run.duration "if and only if the pipeline run failed"
// (model/cicd/metrics.yaml); recording-errors asks for status ERROR on a
// span whose operation failed. New checks these names against the loaded
// registry, so a rename there fails loudly instead of checking nothing.
const errorTypeKey = "error.type"

var (
	resultKeys   = []string{"cicd.pipeline.result", "cicd.pipeline.task.run.result"}
	failedValues = []string{"failure", "error"}
)

func validateFailedFacts(reg *registry.Registry) error {
	if _, err := reg.Attribute(errorTypeKey); err != nil {
		return err
	}
	for _, key := range resultKeys {
		a, err := reg.Attribute(key)
		if err != nil {
			return err
		}
		for _, v := range failedValues {
			if !a.HasEnumValue(v) {
				return fmt.Errorf("semconv %s: %s has no enum value %q", reg.Version, key, v)
			}
		}
	}
	return nil
}

// failedResult is the result attribute that says the run failed, if any.
func failedResult(kvs []otlp.KeyValue) (string, bool) {
	for _, key := range resultKeys {
		if v, ok := lookup(kvs, key); ok && slices.Contains(failedValues, v.Text()) {
			return key + "=" + v.Text(), true
		}
	}
	return "", false
}
