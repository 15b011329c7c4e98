package compiletoolsreceiver

import (
	"strings"
	"testing"
	"time"
)

// The election keys load from YAML as documented, and the lease defaults
// to three collection intervals.
func TestCASElectionKeysLoad(t *testing.T) {
	cfg := loadConfig(t, map[string]any{
		"include": []any{"/srv/diag/**"},
		"cas": map[string]any{
			"collection_interval": "1m",
			"pools":               []any{map[string]any{"kind": "obj", "path": "/mnt/cas/cas-objdir", "id": "nfs-1/obj", "scan": "elect"}},
		},
	})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := cfg.CAS.Pools[0]
	if p.ID != "nfs-1/obj" || p.Scan != "elect" {
		t.Fatalf("pool %+v", p)
	}
	if got := cfg.CAS.leaseDuration(); got != 3*time.Minute {
		t.Fatalf("default lease %s, want 3m", got)
	}
}

// Bad election settings are refused with the key that is wrong.
func TestValidateRefusesBadCASElection(t *testing.T) {
	store := func(id, scan string) []CASStore {
		return []CASStore{{Kind: "obj", Path: "/mnt/cas/obj/v", ID: id, Scan: scan}}
	}
	for _, c := range []struct {
		name, want string
		set        func(*Config)
	}{
		{"unknown scan mode", "cas.stores[0].scan: must be one of always, never, elect", func(c *Config) { c.CAS.Stores = store("", "leader") }},
		{"id with a space", "cas.stores[0].id", func(c *Config) { c.CAS.Stores = store("my store", "") }},
		{"id too long", "cas.stores[0].id", func(c *Config) { c.CAS.Stores = store(strings.Repeat("a", 129), "") }},
		{"pool id with a newline", "cas.pools[0].id", func(c *Config) { c.CAS.Pools = store("a\nb", "") }},
		{"negative lease", "cas.lease_duration: must not be negative", func(c *Config) {
			c.CAS.Stores, c.CAS.LeaseDuration = store("", "elect"), -time.Second
		}},
		{"lease shorter than two intervals", "cas.lease_duration: must be at least twice", func(c *Config) {
			c.CAS.Stores, c.CAS.LeaseDuration = store("", "elect"), 9*time.Minute
		}},
		{"lease not longer than a scan's timeout", "cas.lease_duration: must be longer than cas.timeout (20m0s), got 15m0s", func(c *Config) {
			c.CAS.Stores, c.CAS.Timeout = store("", "elect"), 20*time.Minute
		}},
	} {
		cfg := validConfig()
		cfg.CAS.ScanInterval = 5 * time.Minute
		c.set(cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an error containing %q, got %v", c.name, c.want, err)
		}
	}
	cfg := validConfig()
	cfg.CAS.Stores, cfg.CAS.LeaseDuration = store("", "elect"), 10*time.Minute
	if err := cfg.Validate(); err != nil {
		t.Errorf("a lease of exactly two intervals refused: %v", err)
	}
	cfg.CAS.Stores = store("", "always")
	cfg.CAS.LeaseDuration = time.Second // no elect: the lease is unused
	if err := cfg.Validate(); err != nil {
		t.Errorf("a short lease without elect refused: %v", err)
	}
}
