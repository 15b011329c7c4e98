// Package registry reads the OpenTelemetry semantic-conventions registry
// from its own model YAML (a pinned copy: see the module's pinned.go), so
// that every key, type, enum value, unit, instrument and requirement level
// the checker enforces is the registry's, not a list kept here.
package registry

import (
	"fmt"
	"strings"
)

// Registry is the part of one semconv release that the checker needs.
type Registry struct {
	Version    string
	Namespaces []string
	Attributes map[string]Attribute
	Metrics    map[string]Metric
	// Spans are the registry's span definitions by group id
	// (e.g. span.cicd.pipeline.task.internal).
	Spans map[string]Span
}

// Attribute is one registry attribute (an attribute_group member).
type Attribute struct {
	Key string
	// Type is the registry's spelling (string, int, double, boolean,
	// string[], any, …), or "Enum" for a type with members.
	Type      string
	Stability string
	Enum      []EnumMember // well-known values, for Type Enum
	// Deprecated is the deprecation's reason ("renamed", "obsoleted", …),
	// "" for a current attribute; RenamedTo its replacement, if any.
	Deprecated, RenamedTo string
}

// EnumMember is one well-known value of an enum attribute.
type EnumMember struct {
	Value string // the literal as the registry writes it (unquoted for strings)
	Kind  string // "string" or "int": the attribute's value type
}

// Requirement levels as the model spells them.
const (
	Required              = "required"
	ConditionallyRequired = "conditionally_required"
	Recommended           = "recommended"
	OptIn                 = "opt_in"
)

// Ref is an attribute of a span or metric definition with the requirement
// level the definition gives it; Condition is the model's text for a
// conditional level (conditionally_required, or a qualified recommended).
type Ref struct {
	Key       string
	Level     string
	Condition string
}

// Metric is one metric definition.
type Metric struct {
	Name       string
	Unit       string
	Instrument string // Counter, UpDownCounter, Histogram or Gauge
	Stability  string
	Attributes []Ref
}

// Span is one span definition.
type Span struct {
	ID         string
	Kind       string // the model's span_kind: server, internal, client, …
	Attributes []Ref
}

// Keys returns the keys of refs at level.
func keysAt(refs []Ref, level string) []string {
	var out []string
	for _, r := range refs {
		if r.Level == level {
			out = append(out, r.Key)
		}
	}
	return out
}

// Required lists the metric's required attributes.
func (m Metric) Required() []string { return keysAt(m.Attributes, Required) }

// Conditional returns the ref of key if the metric makes it conditionally
// required.
func (m Metric) Conditional(key string) (Ref, bool) {
	return refAt(m.Attributes, key, ConditionallyRequired)
}

// Conditional returns the ref of key if the span makes it conditionally
// required.
func (s Span) Conditional(key string) (Ref, bool) {
	return refAt(s.Attributes, key, ConditionallyRequired)
}

func refAt(refs []Ref, key, level string) (Ref, bool) {
	for _, r := range refs {
		if r.Key == key && r.Level == level {
			return r, true
		}
	}
	return Ref{}, false
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

// Attribute returns the registry's current (not deprecated) entry for
// key, or an error naming it.
func (r *Registry) Attribute(key string) (Attribute, error) {
	a, ok := r.Attributes[key]
	if !ok || a.Deprecated != "" {
		return Attribute{}, fmt.Errorf("semconv %s: no current attribute %q", r.Version, key)
	}
	return a, nil
}

// Span returns the span definition id, or an error naming it.
func (r *Registry) Span(id string) (Span, error) {
	s, ok := r.Spans[id]
	if !ok {
		return Span{}, fmt.Errorf("semconv %s: no span definition %q", r.Version, id)
	}
	return s, nil
}
