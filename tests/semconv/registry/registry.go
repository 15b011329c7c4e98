// Package registry reads the OpenTelemetry semantic-conventions registry
// from the source of the Go package that the registry's own generator
// writes (go.opentelemetry.io/otel/semconv/vX.Y.Z), so that every key,
// type, enum value, unit and requirement level the checker enforces is the
// registry's, not a list kept here.
package registry

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Registry is the part of one semconv release that the checker needs.
type Registry struct {
	Version    string
	Namespaces []string
	Attributes map[string]Attribute
	Metrics    map[string]Metric
}

// Attribute is one registry attribute, as its generated doc comment
// (Type:, RequirementLevel:, Stability:) and enum block describe it.
type Attribute struct {
	Key              string
	Type             string // the registry's spelling: string, int, double, boolean, string[], Enum, any, …
	RequirementLevel string // attribute-level: the registry's default where a signal does not say otherwise
	Stability        string
	Enum             []EnumMember // well-known values, for Type Enum
}

// EnumMember is one well-known value of an enum attribute.
type EnumMember struct {
	Value string // the literal as the registry writes it (unquoted for strings)
	Kind  string // "string" or "int": the attribute's value type
}

// Metric is one metric instrument of the registry, as its generated
// instrument types describe it.
type Metric struct {
	Name       string
	Unit       string
	Instrument string   // Counter, UpDownCounter, Histogram or Gauge
	Required   []string // the positional attributes of Add/Record
	Optional   []string // the Attr… methods: recommended, opt-in or conditionally required
}

// Load reads the registry package in dir, keeping the attributes and
// metrics of the given namespaces (e.g. "cicd", "vcs").
func Load(dir string, namespaces []string) (*Registry, error) {
	attrs, err := loadAttributes(filepath.Join(dir, "attribute_group.go"), namespaces)
	if err != nil {
		return nil, err
	}
	metrics := map[string]Metric{}
	for _, ns := range namespaces {
		found, err := loadMetrics(filepath.Join(dir, ns+"conv"))
		if err != nil {
			return nil, err
		}
		for name, m := range found {
			metrics[name] = m
		}
	}
	return &Registry{Version: filepath.Base(dir), Namespaces: namespaces, Attributes: attrs, Metrics: metrics}, nil
}

// InNamespaces is whether name (an attribute key or a metric name) lies in
// one of the registry's loaded namespaces, where the registry decides what
// exists.
func (r *Registry) InNamespaces(name string) bool { return inNamespaces(name, r.Namespaces) }

func inNamespaces(name string, namespaces []string) bool {
	for _, ns := range namespaces {
		if strings.HasPrefix(name, ns+".") {
			return true
		}
	}
	return false
}

// HasEnumValue is whether value is one of key's well-known values.
func (a Attribute) HasEnumValue(value string) bool {
	for _, m := range a.Enum {
		if m.Value == value {
			return true
		}
	}
	return false
}

// EnumValues lists the well-known values, for messages.
func (a Attribute) EnumValues() []string {
	out := make([]string, len(a.Enum))
	for i, m := range a.Enum {
		out[i] = m.Value
	}
	return out
}

// Attribute returns the registry's entry for key, or an error naming it.
func (r *Registry) Attribute(key string) (Attribute, error) {
	a, ok := r.Attributes[key]
	if !ok {
		return Attribute{}, fmt.Errorf("semconv %s: no attribute %q", r.Version, key)
	}
	return a, nil
}
