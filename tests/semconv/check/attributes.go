package check

import (
	"slices"
	"strings"

	"github.com/compiletools-otel/semconvcheck/otlp"
)

// Rules of any attribute, wherever it is (resource, span, event, link,
// metric point, log record):
//
//	undefined-key  a key in a registry namespace that the registry lacks,
//	               or marks deprecated
//	value-type     a registry key whose value has another type
//	enum-value     an enum key with a value outside the registry's
//	               well-known values. The registry's enums are open (new
//	               values may be added, consumers must expect unknown
//	               ones), so this is a warning unless ClosedEnums; enums
//	               whose members include the `_OTHER` fallback (error.type)
//	               expect custom values and are not checked.
func (c *Checker) checkAttributes(out *findings, where string, kvs []otlp.KeyValue) {
	for _, kv := range kvs {
		if !c.reg.InNamespaces(kv.Key) {
			continue
		}
		a, known := c.reg.Attributes[kv.Key]
		if !known {
			out.add(Error, "undefined-key", where, "%s is not an attribute of semconv %s", kv.Key, c.reg.Version)
			continue
		}
		if a.Deprecated != "" {
			instead := ""
			if a.RenamedTo != "" {
				instead = ", use " + a.RenamedTo
			}
			out.add(Error, "undefined-key", where, "%s is deprecated in semconv %s (%s%s)", kv.Key, c.reg.Version, a.Deprecated, instead)
			continue
		}
		if want := wantKind(a); !kindMatches(want, kv.Value) {
			out.add(Error, "value-type", where, "%s is %s, registry type %s wants %s", kv.Key, kv.Value.Kind(), a.Type, want)
			continue
		}
		if a.Type != "Enum" || slices.Contains(a.EnumValues(), "_OTHER") {
			continue
		}
		if v := kv.Value.Text(); !a.HasEnumValue(v) {
			sev := Warning
			if c.ClosedEnums {
				sev = Error
			}
			out.add(sev, "enum-value", where, "%s=%q is not a well-known value (%s)", kv.Key, v, strings.Join(a.EnumValues(), ", "))
		}
	}
}

// lookup returns the value of key in kvs.
func lookup(kvs []otlp.KeyValue, key string) (otlp.AnyValue, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return otlp.AnyValue{}, false
}
