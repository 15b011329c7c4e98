package compiletoolsreceiver

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

func loadConfig(t *testing.T, raw map[string]any) *Config {
	t.Helper()
	cfg := createDefaultConfig()
	if err := confmap.NewFromStringMap(raw).Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The new (contrib) spellings set the value every part of the receiver reads.
func TestNewKeysSetTheValues(t *testing.T) {
	cfg := loadConfig(t, map[string]any{
		"include":            []any{"/d"},
		"resource":           map[string]any{"team": "core"},
		"exclude_older_than": "2h",
		"cas":                map[string]any{"collection_interval": "1m", "timeout": "30s"},
		"pipeline_name":      "geom",
		"semconv_root_span":  true,
	})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.ResourceAttributes["team"] != "core" || cfg.MaxAge != 2*time.Hour || cfg.CAS.ScanInterval != time.Minute || cfg.CAS.Timeout != 30*time.Second {
		t.Fatalf("values not adopted: %+v", cfg)
	}
	if cfg.PipelineName != "geom" || !cfg.SemconvRootSpan || len(cfg.deprecatedKeys) != 0 {
		t.Fatalf("unexpected %+v", cfg)
	}
}

// The old spellings still work and are listed for the start-up warning.
func TestOldKeysStillWorkAndWarn(t *testing.T) {
	cfg := loadConfig(t, map[string]any{
		"include":             []any{"/d"},
		"resource_attributes": map[string]any{"team": "core"},
		"max_age":             "3h",
		"cas":                 map[string]any{"scan_interval": "2m"},
		"root_span_kind":      "server",
	})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.ResourceAttributes["team"] != "core" || cfg.MaxAge != 3*time.Hour || cfg.CAS.ScanInterval != 2*time.Minute || !cfg.SemconvRootSpan {
		t.Fatalf("old values lost: %+v", cfg)
	}
	want := [][2]string{{"resource_attributes", "resource"}, {"max_age", "exclude_older_than"}, {"cas.scan_interval", "cas.collection_interval"},
		{"root_span_kind", "semconv_root_span"}}
	if len(cfg.deprecatedKeys) != len(want) {
		t.Fatalf("deprecated keys %v, want %v", cfg.deprecatedKeys, want)
	}
	for i := range want {
		if cfg.deprecatedKeys[i] != want[i] {
			t.Errorf("deprecated key %d = %v, want %v", i, cfg.deprecatedKeys[i], want[i])
		}
	}
}

// Both spellings at once is an error, even with equal values.
func TestBothSpellingsAreAnError(t *testing.T) {
	cfg := loadConfig(t, map[string]any{
		"include":             []any{"/d"},
		"resource_attributes": map[string]any{"team": "a"},
		"resource":            map[string]any{"team": "a"},
		"max_age":             "1h",
		"exclude_older_than":  "1h",
		"cas":                 map[string]any{"scan_interval": "1m", "collection_interval": "1m"},
		"root_span_kind":      "internal",
		"semconv_root_span":   false,
	})
	err := cfg.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, k := range []string{"resource_attributes and resource", "max_age and exclude_older_than", "cas.scan_interval and cas.collection_interval",
		"root_span_kind and semconv_root_span"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error %q does not name %s", err, k)
		}
	}
}

func TestRootSpanKindIsChecked(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"include": []any{"/d"}, "root_span_kind": "client"})
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "root_span_kind") {
		t.Fatalf("got %v", err)
	}
	if d := createDefaultConfig(); d.SemconvRootSpan {
		t.Fatal("default: the semconv root span, want ct-cake's compiletools.build, INTERNAL")
	}
	// The deprecated key: internal keeps ct-cake's root, server is the
	// semconv root span (name and kind).
	for kind, want := range map[string]bool{"internal": false, "server": true} {
		cfg := loadConfig(t, map[string]any{"include": []any{"/d"}, "root_span_kind": kind})
		if err := cfg.Validate(); err != nil || cfg.SemconvRootSpan != want {
			t.Errorf("root_span_kind %s: semconv root span %v, %v", kind, cfg.SemconvRootSpan, err)
		}
	}
}

// The receiver names each deprecated key and its replacement at start.
func TestDeprecatedKeysAreLoggedAtStart(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"max_age": "3h"})
	cfg.Include = []string{t.TempDir()}
	cfg.PollInterval = 20 * time.Millisecond
	cfg.HostName = "test-host"
	logs := startTraces(t, cfg, new(consumertest.TracesSink))
	waitFor(t, "the deprecation warning", func() bool {
		for _, e := range logs.FilterMessage("deprecated configuration key; it still works").All() {
			m := e.ContextMap()
			if m["key"] == "max_age" && m["use"] == "exclude_older_than" {
				return true
			}
		}
		return false
	})
}
