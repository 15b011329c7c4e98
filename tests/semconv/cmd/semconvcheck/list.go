package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/compiletools-otel/semconvcheck/registry"
)

// printRegistry shows what was read from the package, to see at a glance
// what the checks enforce.
func printRegistry(w io.Writer, reg *registry.Registry) {
	fmt.Fprintf(w, "semconv %s, namespaces %s\n", reg.Version, strings.Join(reg.Namespaces, ", "))
	for _, key := range sortedKeys(reg.Attributes) {
		a := reg.Attributes[key]
		enum := ""
		if len(a.Enum) > 0 {
			enum = " {" + strings.Join(a.EnumValues(), ", ") + "}"
		}
		fmt.Fprintf(w, "attribute %s %s %s %s%s\n", a.Key, a.Type, a.RequirementLevel, a.Stability, enum)
	}
	for _, name := range sortedKeys(reg.Metrics) {
		m := reg.Metrics[name]
		fmt.Fprintf(w, "metric %s %s %q required [%s] optional [%s]\n", m.Name, m.Instrument, m.Unit,
			strings.Join(m.Required, ", "), strings.Join(m.Optional, ", "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
