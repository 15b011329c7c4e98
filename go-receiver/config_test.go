package compiletoolsreceiver

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/compiletools-otel/compiletoolsreceiver/internal/ffi"
)

func TestDefaultConfigIsValidStruct(t *testing.T) {
	if err := componenttest.CheckConfigStruct(createDefaultConfig()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub("compiletools")
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig()
	if err := sub.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := confmap.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Include) != 2 || cfg.PollInterval != 10*time.Second || cfg.ResourceAttributes["team"] != "core" {
		t.Fatalf("unexpected config %+v", cfg)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Include = []string{"/ok/**", "/bad/[", ""}
	cfg.Exclude = []string{"/x/{a"}
	cfg.PollInterval = 0
	cfg.ServiceName = ""
	cfg.StartAt = "middle"
	cfg.CAS.Stores = []CASStore{{Kind: "lib", Path: ""}}
	cfg.CAS.ScanInterval = 0
	cfg.MaxRequestSpans = 0
	err := cfg.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"include[1]", "include[2]", "exclude[0]", "poll_interval", "service_name", "start_at", "cas.stores[0].kind", "cas.stores[0].path", "cas.scan_interval", "max_request_spans"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if err := (&Config{PollInterval: time.Second, ServiceName: "s"}).Validate(); err == nil || !strings.Contains(err.Error(), "include") {
		t.Errorf("a config without include must be rejected, got %v", err)
	}
}

func TestCASKindIsValidatedAgainstTheCoreTable(t *testing.T) {
	names := ffi.CASKindNames()
	if len(names) == 0 {
		t.Fatal("the ffi package lists no CAS kinds")
	}
	for _, name := range names {
		cfg := createDefaultConfig()
		cfg.Include = []string{"/d"}
		cfg.CAS.Pools = []CASStore{{Kind: name, Path: "/cas"}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("kind %q: %v", name, err)
		}
	}
	cfg := createDefaultConfig()
	cfg.Include = []string{"/d"}
	cfg.CAS.Pools = []CASStore{{Kind: "OBJ", Path: "/cas"}}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "cas.pools[0].kind") {
		t.Fatalf("an unknown kind must be rejected, got %v", err)
	}
	for _, name := range names {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list the valid kind %q", err, name)
		}
	}
}
