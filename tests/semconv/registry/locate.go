package registry

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Locate returns the directory of the semconv package SemconvVersion in
// the module cache. A built command knows its otel version from its build
// info; a test binary has none, so there the go command answers from the
// enclosing module's go.mod (go test runs in the package directory).
func Locate() (string, error) {
	query := otelModule
	if v := buildInfoVersion(otelModule); v != "" {
		query += "@" + v
	}
	dir, err := moduleDir(query)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "semconv", SemconvVersion), nil
}

func buildInfoVersion(module string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			return dep.Version
		}
	}
	return ""
}

// moduleDir asks the go command, which downloads the module if the cache
// lacks it, so the registry is always the pinned release's own source.
func moduleDir(query string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", query)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w: %s", query, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: module not in the module cache (run go mod download)", query)
	}
	return dir, nil
}
