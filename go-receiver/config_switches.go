package compiletoolsreceiver

import (
	"errors"

	"go.opentelemetry.io/collector/confmap"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/metadata"
)

// resourceAttributesKey is both mdatagen's key of the resource attribute
// switches and the deprecated spelling of `resource`; the values tell
// which is meant.
const resourceAttributesKey = "resource_attributes"

// takeResourceAttributeSwitches decodes `resource_attributes` when it holds
// mdatagen's switches (every value a map, `{enabled: false}`) and returns
// the configuration without it; attribute values (every value a scalar) are
// left for the deprecated alias of `resource`. Both forms at once is an
// error: one key cannot mean two settings.
func (c *Config) takeResourceAttributeSwitches(conf *confmap.Conf) (*confmap.Conf, error) {
	raw, ok := conf.Get(resourceAttributesKey).(map[string]any)
	if !ok || len(raw) == 0 {
		return conf, nil
	}
	switches := 0
	for _, v := range raw {
		if _, isMap := v.(map[string]any); isMap || v == nil {
			switches++
		}
	}
	switch switches {
	case 0:
		return conf, nil
	case len(raw):
	default:
		return nil, errors.New("resource_attributes: give either switches ({<key>: {enabled: <bool>}}) or attribute values (the deprecated spelling of resource), not both")
	}
	holder := struct {
		Switches metadata.ResourceAttributesConfig `mapstructure:"resource_attributes"`
	}{Switches: c.ResourceAttributeSwitches}
	if err := confmap.NewFromStringMap(map[string]any{resourceAttributesKey: raw}).Unmarshal(&holder); err != nil {
		return nil, err
	}
	c.ResourceAttributeSwitches = holder.Switches
	rest := conf.ToStringMap()
	delete(rest, resourceAttributesKey)
	return confmap.NewFromStringMap(rest), nil
}
