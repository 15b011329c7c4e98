package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/compiletools-otel/semconvcheck/registry"
)

// printRegistry shows what was read from the model, to see at a glance
// what the checks enforce.
func printRegistry(w io.Writer, reg *registry.Registry) {
	fmt.Fprintf(w, "semconv %s, namespaces %s\n", reg.Version, strings.Join(reg.Namespaces, ", "))
	for _, key := range sortedKeys(reg.Attributes) {
		a := reg.Attributes[key]
		enum := ""
		if len(a.Enum) > 0 {
			enum = " {" + strings.Join(a.EnumValues(), ", ") + "}"
		}
		deprecated := ""
		if a.Deprecated != "" {
			deprecated = " deprecated:" + a.Deprecated
		}
		fmt.Fprintf(w, "attribute %s %s %s%s%s\n", a.Key, a.Type, a.Stability, deprecated, enum)
	}
	for _, name := range sortedKeys(reg.Metrics) {
		m := reg.Metrics[name]
		fmt.Fprintf(w, "metric %s %s %q %s\n", m.Name, m.Instrument, m.Unit, refs(m.Attributes))
	}
	for _, id := range sortedKeys(reg.Spans) {
		s := reg.Spans[id]
		fmt.Fprintf(w, "span %s %s %s\n", s.ID, s.Kind, refs(s.Attributes))
	}
}

func refs(rs []registry.Ref) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Key + ":" + r.Level
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
