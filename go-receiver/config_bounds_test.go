package compiletoolsreceiver

import (
	"strings"
	"testing"
	"time"
)

func validConfig() *Config {
	cfg := createDefaultConfig()
	cfg.Include = []string{"/srv/diag/**"}
	return cfg
}

// Values the receiver narrows to 32 bits for the core must be bounded in
// Validate: 2^32+5 would otherwise reach the core as 5, a silently
// different limit.
func TestValidateBoundsValuesNarrowedTo32Bits(t *testing.T) {
	const wraps = 1<<32 + 5
	for _, c := range []struct {
		key   string
		set   func(*Config, int)
		limit int // the largest accepted value
	}{
		{"limits.max_depth", func(c *Config, v int) { c.Limits.MaxDepth = v }, 1024},
		{"limits.max_attribute_length", func(c *Config, v int) { c.Limits.MaxAttributeLength = v }, 16 << 20},
		{"cas.max_threads", func(c *Config, v int) { c.CAS.MaxThreads = v }, 256},
	} {
		for _, v := range []int{wraps, c.limit + 1} {
			cfg := validConfig()
			c.set(cfg, v)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
				t.Errorf("%s = %d: want an error naming %s, got %v", c.key, v, c.key, err)
			}
		}
		cfg := validConfig()
		c.set(cfg, c.limit)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s = %d (the bound) refused: %v", c.key, c.limit, err)
		}
	}
}

// resource_attributes reach the core NUL-separated (key\0value\0…): a NUL
// inside a key or value shifts every later pair, and an odd count fails
// every build. Validate refuses them.
func TestValidateRejectsNULInResourceAttributes(t *testing.T) {
	for _, attrs := range []map[string]string{
		{"team\x00x": "core"},
		{"team": "a\x00b"},
		{"team": "a\x00b\x00c"}, // an even shift: silently wrong pairs
	} {
		cfg := validConfig()
		cfg.ResourceAttributes = attrs
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "resource_attributes") || !strings.Contains(err.Error(), "NUL") {
			t.Errorf("%q: want an error about a NUL in resource_attributes, got %v", attrs, err)
		}
	}
	cfg := validConfig()
	cfg.ResourceAttributes = map[string]string{"team": "core", "empty": ""}
	if err := cfg.Validate(); err != nil {
		t.Errorf("plain attributes refused: %v", err)
	}
}

// Issue 22, defect 8: intervals below the minimum, a relative build graph
// path, and the CAS interval's error under the key the user gave.
func TestValidateRejectsTinyIntervalsAndRelativeGraphs(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Include = []string{"/d"}
	cfg.PollInterval = time.Nanosecond
	cfg.Live.Interval = time.Nanosecond
	cfg.Analytics.BuildGraphs = []BuildGraphMapping{{Include: "/d/*", Path: "build.ninja"}}
	cfg.CAS.Stores = []CASStore{{Kind: "obj", Path: "/cas"}}
	cfg.CAS.ScanInterval = 0
	cfg.keysGiven = map[string]bool{"cas.collection_interval": true}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"poll_interval: must be at least 10ms", "live.interval: must be at least 10ms",
		"analytics.build_graphs[0].path: must be an absolute path", "cas.collection_interval: must be positive"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "cas.scan_interval") {
		t.Errorf("names a key not given: %v", err)
	}
}
