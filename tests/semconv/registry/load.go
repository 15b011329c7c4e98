package registry

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/compiletools-otel/semconvcheck"
)

// LoadPinned reads the copy of the model this module carries.
func LoadPinned(namespaces []string) (*Registry, error) {
	root, err := fs.Sub(semconvcheck.Model, semconvcheck.ModelRoot)
	if err != nil {
		return nil, err
	}
	return Load(root, namespaces)
}

// Load reads a registry directory laid out as the pinned copy: VERSION
// (its first line is the release) and model/<namespace>/**/*.yaml. Every
// YAML file of the namespaces is read, the deprecated/ ones too: a
// deprecated attribute is known, so a finding can say that it is
// deprecated and what replaced it.
func Load(root fs.FS, namespaces []string) (*Registry, error) {
	version, err := readVersion(root)
	if err != nil {
		return nil, err
	}
	r := &Registry{
		Version:    version,
		Namespaces: namespaces,
		Attributes: map[string]Attribute{},
		Metrics:    map[string]Metric{},
		Spans:      map[string]Span{},
	}
	for _, ns := range namespaces {
		files, err := yamlFiles(root, path.Join("model", ns))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("model/%s: no YAML file", ns)
		}
		for _, name := range files {
			if err := r.readFile(root, name); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if err := r.checkRefs(); err != nil {
		return nil, err
	}
	return r, nil
}

func readVersion(root fs.FS) (string, error) {
	b, err := fs.ReadFile(root, "VERSION")
	if err != nil {
		return "", err
	}
	first, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
	v := strings.TrimSpace(string(first))
	if v == "" {
		return "", fmt.Errorf("VERSION: empty first line")
	}
	return v, nil
}

func yamlFiles(root fs.FS, dir string) ([]string, error) {
	var out []string
	err := fs.WalkDir(root, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// The model's YAML, as far as the checker reads it.
type modelFile struct {
	Groups []modelGroup `yaml:"groups"`
}

type modelGroup struct {
	ID         string      `yaml:"id"`
	Type       string      `yaml:"type"`
	Stability  string      `yaml:"stability"`
	MetricName string      `yaml:"metric_name"`
	Instrument string      `yaml:"instrument"`
	Unit       string      `yaml:"unit"`
	SpanKind   string      `yaml:"span_kind"`
	Attributes []modelAttr `yaml:"attributes"`
}

type modelAttr struct {
	ID               string           `yaml:"id"`
	Ref              string           `yaml:"ref"`
	Type             yaml.Node        `yaml:"type"`
	Stability        string           `yaml:"stability"`
	Deprecated       *modelDeprecated `yaml:"deprecated"`
	RequirementLevel yaml.Node        `yaml:"requirement_level"`
}

type modelDeprecated struct {
	Reason    string `yaml:"reason"`
	RenamedTo string `yaml:"renamed_to"`
}

type modelMember struct {
	Value yaml.Node `yaml:"value"`
}

func (r *Registry) readFile(root fs.FS, name string) error {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return err
	}
	var f modelFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return err
	}
	for _, g := range f.Groups {
		switch g.Type {
		case "attribute_group":
			for _, a := range g.Attributes {
				attr, err := attributeOf(a)
				if err != nil {
					return fmt.Errorf("group %s: %w", g.ID, err)
				}
				if _, dup := r.Attributes[attr.Key]; dup {
					return fmt.Errorf("group %s: attribute %s defined twice", g.ID, attr.Key)
				}
				r.Attributes[attr.Key] = attr
			}
		case "metric":
			refs, err := refsOf(g)
			if err != nil {
				return err
			}
			r.Metrics[g.MetricName] = Metric{
				Name: g.MetricName, Unit: g.Unit, Instrument: instrumentName(g.Instrument),
				Stability: g.Stability, Attributes: refs,
			}
		case "span":
			refs, err := refsOf(g)
			if err != nil {
				return err
			}
			r.Spans[g.ID] = Span{ID: g.ID, Kind: g.SpanKind, Attributes: refs}
		}
	}
	return nil
}

func attributeOf(a modelAttr) (Attribute, error) {
	if a.ID == "" {
		return Attribute{}, fmt.Errorf("an attribute without id")
	}
	out := Attribute{Key: a.ID, Stability: a.Stability}
	if a.Deprecated != nil {
		out.Deprecated, out.RenamedTo = a.Deprecated.Reason, a.Deprecated.RenamedTo
		if out.Deprecated == "" {
			out.Deprecated = "deprecated"
		}
	}
	switch a.Type.Kind {
	case yaml.ScalarNode:
		out.Type = a.Type.Value
	case yaml.MappingNode:
		var enum struct {
			Members []modelMember `yaml:"members"`
		}
		if err := a.Type.Decode(&enum); err != nil {
			return out, fmt.Errorf("%s: %w", a.ID, err)
		}
		out.Type = "Enum"
		for _, m := range enum.Members {
			kind := "string"
			if m.Value.Tag == "!!int" {
				kind = "int"
			}
			out.Enum = append(out.Enum, EnumMember{Value: m.Value.Value, Kind: kind})
		}
	default:
		return out, fmt.Errorf("%s: no type", a.ID)
	}
	return out, nil
}

// refsOf reads a span's or metric's attribute references. A reference
// without a level has the model's default, recommended.
func refsOf(g modelGroup) ([]Ref, error) {
	var out []Ref
	for _, a := range g.Attributes {
		if a.Ref == "" {
			return nil, fmt.Errorf("group %s: an attribute that is not a ref (%q)", g.ID, a.ID)
		}
		ref := Ref{Key: a.Ref, Level: Recommended}
		switch n := a.RequirementLevel; n.Kind {
		case 0:
		case yaml.ScalarNode:
			ref.Level = n.Value
		case yaml.MappingNode:
			if len(n.Content) != 2 {
				return nil, fmt.Errorf("group %s: %s: a requirement_level with %d entries", g.ID, a.Ref, len(n.Content)/2)
			}
			ref.Level, ref.Condition = n.Content[0].Value, n.Content[1].Value
		default:
			return nil, fmt.Errorf("group %s: %s: unreadable requirement_level", g.ID, a.Ref)
		}
		switch ref.Level {
		case Required, ConditionallyRequired, Recommended, OptIn:
		default:
			return nil, fmt.Errorf("group %s: %s: unknown requirement level %q", g.ID, a.Ref, ref.Level)
		}
		out = append(out, ref)
	}
	return out, nil
}

// instrumentName is the API instrument of the model's spelling.
func instrumentName(model string) string {
	switch model {
	case "counter":
		return "Counter"
	case "updowncounter":
		return "UpDownCounter"
	case "histogram":
		return "Histogram"
	case "gauge":
		return "Gauge"
	}
	return model
}

// checkRefs fails on a definition that refers to an attribute of the loaded
// namespaces that the registry lacks: the copy would be incomplete.
func (r *Registry) checkRefs() error {
	check := func(owner string, refs []Ref) error {
		for _, ref := range refs {
			if _, ok := r.Attributes[ref.Key]; !ok && r.InNamespaces(ref.Key) {
				return fmt.Errorf("%s refers to %s, which the registry copy lacks", owner, ref.Key)
			}
		}
		return nil
	}
	for name, m := range r.Metrics {
		if err := check("metric "+name, m.Attributes); err != nil {
			return err
		}
	}
	for id, s := range r.Spans {
		if err := check("span "+id, s.Attributes); err != nil {
			return err
		}
	}
	return nil
}
