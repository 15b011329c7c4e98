package compiletoolsreceiver

import (
	"reflect"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// buildMetricNames are the metrics the core makes only when asked
// (CT_FLAG_BUILD_METRICS): with all of them disabled it is not asked.
var buildMetricNames = []string{"cicd.pipeline.run.duration", "cicd.pipeline.run.errors", "ct.rule.duration", "ct.compiles",
	"ct.build.critical_path.duration", "ct.build.parallelism", "ct.clang.frontend", "ct.clang.backend", "ct.clang.header.parse"}

// metricSwitches are mdatagen's `metrics` and `resource_attributes`
// switches applied to what the core made: the core writes every metric and
// resource attribute, and the receiver drops the disabled ones before the
// pipeline sees them. Resource attribute switches apply to the metrics
// signal only; a build's trace keeps ct-cake's resource.
type metricSwitches struct {
	disabledMetrics  map[string]bool
	disabledResource map[string]bool
}

func newMetricSwitches(cfg *Config) metricSwitches {
	return metricSwitches{
		disabledMetrics:  disabledByName(cfg.Metrics),
		disabledResource: disabledByName(cfg.ResourceAttributeSwitches),
	}
}

// disabledByName reads a generated switches struct (one field per metric or
// attribute, named by its mapstructure tag, each with an Enabled field) so
// that every name metadata.yaml declares is covered without a list to keep
// in step with it.
func disabledByName[T metadata.MetricsConfig | metadata.ResourceAttributesConfig](switches T) map[string]bool {
	v := reflect.ValueOf(switches)
	out := map[string]bool{}
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("mapstructure")
		if enabled := v.Field(i).FieldByName("Enabled"); enabled.IsValid() && !enabled.Bool() {
			out[name] = true
		}
	}
	return out
}

// buildMetricsWanted is whether any build metric is enabled.
func (s metricSwitches) buildMetricsWanted() bool {
	for _, name := range buildMetricNames {
		if !s.disabledMetrics[name] {
			return true
		}
	}
	return false
}

// apply removes the disabled metrics and resource attributes from md, and
// scopes and resources left without metrics.
func (s metricSwitches) apply(md pmetric.Metrics) {
	if len(s.disabledMetrics) == 0 && len(s.disabledResource) == 0 {
		return
	}
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.Resource().Attributes().RemoveIf(func(key string, _ pcommon.Value) bool {
			return s.disabledResource[key]
		})
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool { return s.disabledMetrics[m.Name()] })
			return sm.Metrics().Len() == 0
		})
		return rm.ScopeMetrics().Len() == 0
	})
}
