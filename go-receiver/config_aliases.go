package compiletoolsreceiver

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// configAlias is a key renamed (to contrib's word, or to a wider switch);
// the old spelling still works, warns, and must not be given together
// with the new one.
type configAlias struct {
	old, current string
	// adopt copies the value decoded under current into the field every
	// other part of the receiver reads.
	adopt func(c *Config)
	// fromOld, when the old key holds a value of another shape, sets that
	// field from it (nil: the old key decodes into the field itself).
	fromOld func(c *Config)
}

var configAliases = []configAlias{
	{"resource_attributes", "resource", func(c *Config) { c.ResourceAttributes = c.Resource }, nil},
	{"max_age", "exclude_older_than", func(c *Config) { c.MaxAge = c.ExcludeOlderThan }, nil},
	{"cas::scan_interval", "cas::collection_interval", func(c *Config) { c.CAS.ScanInterval = c.CAS.CollectionInterval }, nil},
	// root_span_kind set only the kind; semconv_root_span sets name and
	// kind together, so `server` now also names the root `BUILD <pipeline>`.
	{"root_span_kind", "semconv_root_span", func(*Config) {}, func(c *Config) { c.SemconvRootSpan = c.RootSpanKind == RootSpanServer }},
}

// Unmarshal decodes the configuration and resolves the renamed keys: the
// new spelling wins over the default, the old one still works (with a
// warning at start), and both at once is an error, whatever the values.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	conf, err := c.takeResourceAttributeSwitches(conf)
	if err != nil {
		return err
	}
	if err := conf.Unmarshal(c); err != nil {
		return err
	}
	for _, a := range configAliases {
		oldSet, newSet := conf.IsSet(a.old), conf.IsSet(a.current)
		switch {
		case oldSet && newSet:
			c.aliasConflicts = append(c.aliasConflicts,
				fmt.Errorf("%s and %s: the same setting twice; keep %s (%s is deprecated)", key(a.old), key(a.current), key(a.current), key(a.old)))
		case oldSet:
			c.deprecatedKeys = append(c.deprecatedKeys, [2]string{key(a.old), key(a.current)})
			if a.fromOld != nil {
				a.fromOld(c)
			}
		case newSet:
			a.adopt(c)
			if c.keysGiven == nil {
				c.keysGiven = map[string]bool{}
			}
			c.keysGiven[key(a.current)] = true
		}
	}
	return nil
}

// spelled is the key the user gave a renamed setting under: current when
// given so, else old (also when given neither: old is the documented key).
func (c *Config) spelled(old, current string) string {
	if c.keysGiven[current] {
		return current
	}
	return old
}

// key spells a confmap path as in the YAML (cas.scan_interval).
func key(path string) string { return strings.ReplaceAll(path, confmap.KeyDelimiter, ".") }
