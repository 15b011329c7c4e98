package compiletoolsreceiver

import (
	"io/fs"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeProbe is a machine with the given environment, files and cgroup file.
func fakeProbe(env map[string]string, files []string, cgroup string) containerProbe {
	return containerProbe{
		getenv: func(k string) string { return env[k] },
		exists: func(p string) bool {
			for _, f := range files {
				if f == p {
					return true
				}
			}
			return false
		},
		readFile: func(p string) ([]byte, error) {
			if p == "/proc/self/cgroup" && cgroup != "" {
				return []byte(cgroup), nil
			}
			return nil, fs.ErrNotExist
		},
	}
}

const hostCgroupV2 = "0::/system.slice/otelcol-compiletools.service\n"

func TestContainerEvidence(t *testing.T) {
	cases := []struct {
		name  string
		probe containerProbe
		want  string // substring of the evidence; "" = not a container
	}{
		{"plain host", fakeProbe(nil, nil, hostCgroupV2), ""},
		{"nothing readable", fakeProbe(nil, nil, ""), ""},
		{"kubernetes pod", fakeProbe(map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, nil, "0::/\n"), "KUBERNETES_SERVICE_HOST"},
		{"docker", fakeProbe(nil, []string{"/.dockerenv"}, ""), "/.dockerenv"},
		{"podman or buildah", fakeProbe(nil, []string{"/run/.containerenv"}, ""), "/run/.containerenv"},
		{"nspawn", fakeProbe(map[string]string{"container": "systemd-nspawn"}, nil, ""), "container=systemd-nspawn"},
		{"cgroup v1 kubepods", fakeProbe(nil, nil, "12:memory:/kubepods/burstable/pod1234/abcd\n"), "kubepods"},
		{"cgroup v1 docker", fakeProbe(nil, nil, "4:cpu:/docker/0123456789ab\n"), "/docker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.probe.evidence()
			if c.want == "" && got != "" {
				t.Fatalf("evidence %q, want none", got)
			}
			if c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("evidence %q, want it to name %q", got, c.want)
			}
		})
	}
}

func TestUnstableHostNameWarning(t *testing.T) {
	inPod := fakeProbe(map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, nil, "")
	onHost := fakeProbe(nil, nil, hostCgroupV2)
	cases := []struct {
		name       string
		configured string
		probe      containerProbe
		warn       bool
	}{
		{"container, host_name unset", "", inPod, true},
		{"container, host_name set", "node-7", inPod, false},
		{"host, host_name unset", "", onHost, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			warnUnstableHostName(zap.New(core), c.configured, "pod-abc-123", c.probe)
			warnings := logs.FilterMessageSnippet("host_name is not set").All()
			if !c.warn {
				if len(warnings) != 0 {
					t.Fatalf("unexpected warning: %v", warnings)
				}
				return
			}
			if len(warnings) != 1 || warnings[0].Level != zapcore.WarnLevel {
				t.Fatalf("want one warning, got %v", logs.All())
			}
			fields := warnings[0].ContextMap()
			if fields["host.name"] != "pod-abc-123" || !strings.Contains(fields["container_evidence"].(string), "KUBERNETES_SERVICE_HOST") {
				t.Fatalf("warning fields %v", fields)
			}
		})
	}
}

// Start itself warns: the probe is consulted with the configured host_name.
func TestStartWarnsInContainerWithoutHostName(t *testing.T) {
	saved := containerDetector
	t.Cleanup(func() { containerDetector = saved })
	containerDetector = fakeProbe(nil, []string{"/run/.containerenv"}, "")

	for _, hostName := range []string{"", "build-07"} {
		cfg := testConfig(t.TempDir())
		cfg.HostName = hostName
		logs := startTraces(t, cfg, new(consumertest.TracesSink))
		got := logs.FilterMessageSnippet("host_name is not set").Len()
		if want := map[bool]int{true: 1, false: 0}[hostName == ""]; got != want {
			t.Errorf("host_name %q: %d container warnings at start, want %d", hostName, got, want)
		}
	}
}
