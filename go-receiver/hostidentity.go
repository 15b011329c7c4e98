package compiletoolsreceiver

import (
	"bytes"
	"os"

	"go.uber.org/zap"
)

// Trace ids hash host.name. In a container os.Hostname() is the container's
// name (a pod's name, a random id) and changes whenever the container is
// recreated; a build re-sent after such a restart would then get another
// trace id instead of arriving as an exact duplicate. Start warns when it
// sees a container and host_name is not set.

// containerProbe looks for the marks container runtimes leave; its fields
// are the OS by default and fakes in tests.
type containerProbe struct {
	getenv   func(string) string
	exists   func(string) bool
	readFile func(string) ([]byte, error)
}

// containerDetector is the probe Start uses.
var containerDetector = containerProbe{
	getenv: os.Getenv,
	exists: func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	},
	readFile: os.ReadFile,
}

// cgroupHints are path fragments of a process's cgroup under Kubernetes,
// Docker, containerd, Podman or LXC (cgroup v1, and v2 hosts that keep the
// runtime's names in the path).
var cgroupHints = [][]byte{[]byte("kubepods"), []byte("/docker"), []byte("containerd"), []byte("/libpod"), []byte("/lxc")}

// evidence says why this process looks containerised, or "" if it does not.
func (p containerProbe) evidence() string {
	if p.getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "KUBERNETES_SERVICE_HOST is set"
	}
	for _, marker := range []string{"/.dockerenv", "/run/.containerenv"} {
		if p.exists(marker) {
			return marker + " exists"
		}
	}
	// Podman, systemd-nspawn and LXC set $container for the container's processes.
	if v := p.getenv("container"); v != "" {
		return "container=" + v + " is set"
	}
	if cg, err := p.readFile("/proc/self/cgroup"); err == nil {
		for _, hint := range cgroupHints {
			if bytes.Contains(cg, hint) {
				return "/proc/self/cgroup names " + string(hint)
			}
		}
	}
	return ""
}

// warnUnstableHostName logs once at start when host.name fell back to the
// OS host name inside a container.
func warnUnstableHostName(logger *zap.Logger, configured, resolved string, probe containerProbe) {
	if configured != "" {
		return
	}
	why := probe.evidence()
	if why == "" {
		return
	}
	logger.Warn("host_name is not set and this looks like a container: host.name is the container's "+
		"host name, which changes when the container is recreated, and with it the trace id of every "+
		"build sent again after a restart; set host_name to the machine's name "+
		"(Kubernetes: host_name: ${env:K8S_NODE_NAME} from the downward API)",
		zap.String("host.name", resolved), zap.String("container_evidence", why))
}
